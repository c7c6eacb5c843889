"""Generate the samples of one (task, length, seed): the public entry point of the core.

``generate_samples(task, length, samples=N, seed=S, ctx=GenerationContext(...))``
returns N :class:`Sample` objects. Sample i is a pure function of (task name,
task arguments, length, seed, i, tokenizer, frame, data files): generating
samples 0..9 or only sample 7 gives the same sample 7, in any process, so
caches and xdist workers agree without talking to each other. What the
reference fixes once per generator run (the vt example's layout) is fixed
here once per (task, length, seed), so it too is the same in every process.
A family with a ``samples(spec, length, samples=, seed=, ctx=, start=)`` member (the MRCR pack's:
its samples are records of a data set, binned by their tokens) gives its samples itself.
``smallest_length`` says, without a full sample, the fewest tokens a length needs for a
task (the start-up check refuses shorter lengths with it).
"""

from __future__ import annotations

from typing import Iterator

from ..errors import RulerUsageError
from .base import GenerationContext, Sample, sample_rng
from .budget import fill, smallest_length as _smallest
from .registry import TaskSpec, get_family, get_task

__all__ = ["generate_samples", "iter_samples", "haystack_label", "smallest_length"]


def _check(length: object, samples: object, seed: object) -> None:
    if isinstance(length, bool) or not isinstance(length, int) or length < 1:
        raise RulerUsageError("length", length, "give a positive number of tokens, e.g. 4096 or 4k")
    if isinstance(samples, bool) or not isinstance(samples, int) or samples < 1:
        raise RulerUsageError("samples", samples, "give a number of samples >= 1")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise RulerUsageError("seed", seed, "give a non-negative integer seed")


def haystack_label(task: TaskSpec | str, ctx: GenerationContext) -> str:
    """What the task's haystack is made of, for reports (e.g. the essay corpus)."""
    spec = get_task(task)
    return get_family(spec.family).data_label(spec.args, ctx)


def smallest_length(task: TaskSpec | str, length: int, *, seed: int = 0, ctx: GenerationContext) -> int:
    """The fewest tokens sample 0 of (``task``, ``length``, ``seed``) needs: its fixed text, the
    smallest haystack and the answer, counted as the items count (same tokenizer, same frame).

    One render of the smallest draft and one tokenization: cheap enough for the start-up check,
    which asks it once per task at the run's shortest length. Other samples differ by a few
    tokens (their random keys and names).
    """
    spec = get_task(task)
    _check(length, 1, seed)
    family = get_family(spec.family)
    draft = family.draft(spec.args, ctx, sample_rng(spec.name, length, seed, 0), 0, task=spec.name, length=length, seed=seed,
                         tokens_to_generate=spec.tokens_to_generate)
    return _smallest(draft, ctx, spec.tokens_to_generate)


def iter_samples(task: TaskSpec | str, length: int, *, samples: int, seed: int = 0, ctx: GenerationContext, start: int = 0) -> Iterator[Sample]:
    spec = get_task(task)
    _check(length, samples, seed)
    family = get_family(spec.family)
    records = getattr(family, "samples", None)
    if callable(records):  # a family whose samples are records of a data set (tasks.mrcr): nothing to size
        yield from records(spec, length, samples=samples, seed=seed, ctx=ctx, start=start)
        return
    budget = length - spec.tokens_to_generate
    if budget < 1:
        raise RulerUsageError("length", length, f"task {spec.name!r} alone generates {spec.tokens_to_generate} tokens; use a length well above that")
    label = family.data_label(spec.args, ctx)
    for index in range(start, start + samples):
        rng = sample_rng(spec.name, length, seed, index)
        draft = family.draft(spec.args, ctx, rng, index, task=spec.name, length=length, seed=seed,
                             tokens_to_generate=spec.tokens_to_generate)
        fitted = fill(draft, budget, ctx, task=spec.name, length=length, tokens_to_generate=spec.tokens_to_generate)
        r = fitted.rendered
        meta = {
            **r.metadata,
            "family": spec.family,
            "haystack_corpus": label,
            "tokenizer": ctx.tokenizer.name,
            "template": ctx.frame.name,
            "fill": round((fitted.prompt_tokens + spec.tokens_to_generate) / length, 4),
            "passes": fitted.passes,
        }
        yield Sample(
            task=spec.name,
            index=index,
            seed=seed,
            target_length=length,
            input=ctx.frame.wrap(r.input),
            answer_prefix=r.answer_prefix,
            outputs=tuple(r.outputs),
            prompt_tokens=fitted.prompt_tokens,
            tokens_to_generate=spec.tokens_to_generate,
            metadata=meta,
            prompt_ids=fitted.prompt_ids,
            context=r.context,
            around_context=r.around_context(),
        )


def generate_samples(task: TaskSpec | str, length: int, *, samples: int, seed: int = 0, ctx: GenerationContext, start: int = 0) -> list[Sample]:
    return list(iter_samples(task, length, samples=samples, seed=seed, ctx=ctx, start=start))
