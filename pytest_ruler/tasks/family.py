"""The task family contract: what a family gives the sample generator, checked once.

A task is a family plus its arguments (``make_task(name, family, ...)``). A family is
any object with the members of :class:`Family`; the five RULER families are built in
and a user adds one with ``register_family(family)`` (from a conftest:
``registry.family(family)`` in a ``pytest_ruler_register`` hook).

Data flow of one sample (``generate.iter_samples``)::

    make_task ──► family.validate(args) ──► TaskSpec.args (frozen; an unknown or bad
                                            argument raises RulerUsageError)
    family.data_needs(args)            ──► the kinds of data it reads (``data.registry``:
                                            "essays", "squad", ... or a registered kind); the
                                            run skips its items while one is missing and checks
                                            a given path at start; the family reads the data
                                            with ``ctx.read(kind)``
    family.data_label(args, ctx)       ──► what the haystack is, for reports
    family.draft(args, ctx, rng, index, task=, length=, seed=, tokens_to_generate=)
        ──► Draft (estimate(n), render(n) -> Rendered) ──► budget.fill ──► Sample

A family that also has ``mapreduce_strategy(question)`` can be answered by chunked
inference: from the question text alone it returns the name of a map-reduce strategy
(``retrieve``, ``union``, ``chain``, ``count`` or ``facts``; or a strategy object of
its own) and the hints that strategy reads (the question's keys, its query value, ...).
The name is the whole seam: this part imports nothing of ``mapreduce``, and the
runner hands the family to ``mapreduce.document_for``.

A family without ``data_needs`` (one written before it was a member) needs no data: a task's
needs are asked through ``registry.data_needs(spec)``, which finds its family by name (this
module imports nothing of the registry; the registry imports it).

Public names: ``Family``, ``ChunkableFamily``, ``check_family``.
"""

from __future__ import annotations

import random
from typing import Any, Mapping, Protocol, runtime_checkable

from ..errors import RulerUsageError
from .base import Draft, GenerationContext

__all__ = ["ChunkableFamily", "Family", "check_family"]


@runtime_checkable
class Family(Protocol):
    """A task family: validates its arguments and drafts samples (see the module doc)."""

    name: str

    def validate(self, args: Mapping[str, Any]) -> dict[str, Any]:
        """The arguments with defaults filled in; raises RulerUsageError naming a bad one."""

    def data_needs(self, args: Mapping[str, Any]) -> tuple[str, ...]:
        """The kinds of data (``data.registry``) a task with these (validated) arguments reads."""

    def data_label(self, args: Mapping[str, Any], ctx: GenerationContext) -> str:
        """What the haystack is made of (e.g. the essay corpus), for reports."""

    def draft(self, args: Mapping[str, Any], ctx: GenerationContext, rng: random.Random, index: int, *,
              task: str, length: int, seed: int, tokens_to_generate: int) -> Draft:
        """Every random choice of sample ``index``, renderable at any haystack size."""


@runtime_checkable
class ChunkableFamily(Family, Protocol):
    """A family whose questions map-reduce can answer over chunks."""

    def mapreduce_strategy(self, question: str) -> tuple[Any, Mapping[str, Any]]:
        """(strategy name or object, hints), read from the question text alone."""


_MEMBERS = ("validate", "data_label", "draft")


def check_family(family: Any) -> Any:
    """``family`` if it has what a family needs, else one RulerUsageError naming what is missing."""
    name = getattr(family, "name", None)
    if not isinstance(name, str) or not name or any(c in name for c in " ,[]*?"):
        raise RulerUsageError("family", repr(family), "a task family needs a `name`: non-empty text without spaces, commas, brackets or glob characters")
    missing = [m for m in _MEMBERS if not callable(getattr(family, m, None))]
    if missing:
        raise RulerUsageError("family", name, f"a task family needs the methods validate(args), data_label(args, ctx) and "
                              f"draft(args, ctx, rng, index, **where); {', '.join(missing)} missing (see pytest_ruler.tasks.Family)")
    return family

