"""The registry: task families by name, tasks by name, and the 13 standard RULER tasks.

A task (``TaskSpec``) is a family plus arguments (``make_task``); the 13 tasks of the paper
are registered at import (``STANDARD_TASKS``), and so are task packs beside
them (``PACKS``: ``ruler2``, RULERv2's 12 tasks, ``tasks.ruler2``; ``mrcr``, ``tasks.mrcr``; ``pack_of``). Users add tasks with
``register_task`` and families (any object meeting :class:`~.family.Family`)
with ``register_family``; from a conftest, ``registry.task(...)`` and
``registry.family(...)`` in a ``pytest_ruler_register`` hook do the same.
``FAMILIES`` is a read-only view of every family known now, built-in or registered.

Imports go one way: this module imports the families (``niah``, ``qa``, ... and each pack's
modules); a family imports ``base`` (and ``words``, ``haystack``), never this registry, so what
needs a family by name (``TaskSpec.with_args``, ``data_needs``) lives here. A pack is a module
beside the families that gives its name, its task rows and its family classes; adding one is
importing it, adding its families to ``_BUILTIN_FAMILIES`` and one entry to ``_PACK_ROWS``.

Public names: ``TaskSpec``, ``FAMILIES``, ``PACKS``, ``pack_of``, ``STANDARD_TASKS``, ``make_task``,
``register_task``, ``register_family``, ``get_family``, ``family_names``, ``get_task``, ``task_names``,
``resolve_tasks``, ``data_needs``.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Iterable, Mapping

from ..data.registry import data_kind
from ..errors import RulerUsageError
from .aggregation import CommonWordsFamily, FrequentWordsFamily
from .family import Family, check_family
from .niah import NiahFamily
from .qa import QAFamily
from .ruler2 import PACK, PACK_TASKS, Ruler2MMLUFamily, Ruler2NiahFamily, Ruler2QAFamily
from .mrcr import PACK as MRCR, PACK_ROWS as MRCR_ROWS, MrcrFamily
from .variable_tracking import VariableTrackingFamily

__all__ = ["FAMILIES", "PACKS", "STANDARD_TASKS", "TaskSpec", "data_needs", "family_names", "pack_of", "get_family", "get_task", "make_task",
           "register_family", "register_task", "resolve_tasks", "task_names"]


@dataclass(frozen=True)
class TaskSpec:
    """A task: a family with its arguments, the tokens it generates and its metric."""

    name: str
    family: str
    args: Mapping[str, Any]
    tokens_to_generate: int
    metric: str  # "all" | "part"

    def with_args(self, name: str | None = None, **overrides: Any) -> "TaskSpec":
        """A custom task: the same family with other arguments (validated again by ``make_task``)."""
        tokens = overrides.pop("tokens_to_generate", self.tokens_to_generate)
        metric = overrides.pop("metric", self.metric)
        return make_task(name or self.name, self.family, tokens_to_generate=tokens, metric=metric, **{**self.args, **overrides})


_BUILTIN_FAMILIES: tuple[Family, ...] = (NiahFamily(), VariableTrackingFamily(), CommonWordsFamily(), FrequentWordsFamily(), QAFamily(),
                                         Ruler2NiahFamily(), Ruler2MMLUFamily(), Ruler2QAFamily(), MrcrFamily())
_FAMILIES: dict[str, Family] = {f.name: f for f in _BUILTIN_FAMILIES}
FAMILIES: "MappingProxyType[str, Family]" = MappingProxyType(_FAMILIES)  # a live view: registered families appear
METRICS = ("all", "part", "ruler2_all", "ruler2_part", "ruler2_2steps", "multichoice", "mrcr")


def register_family(family: Family, *, replace: bool = False) -> Family:
    """Make ``family`` usable by name in ``make_task(..., family=family.name)``.

    Its members are checked here (:func:`~.family.check_family`); a built-in family's
    name is refused, and so is another family under a registered name unless ``replace``.
    """
    check_family(family)
    name = family.name
    if any(f.name == name for f in _BUILTIN_FAMILIES):
        raise RulerUsageError("family", name, "is a built-in RULER family; register the custom family under another name")
    if name in _FAMILIES and _FAMILIES[name] is not family and not replace:
        raise RulerUsageError("family", name, "is already registered; pass replace=True or pick another name")
    _FAMILIES[name] = family
    return family


def family_names() -> list[str]:
    return list(_FAMILIES)


def get_family(name: str) -> Family:
    family = _FAMILIES.get(name)
    if family is None:
        raise RulerUsageError("family", name, f"choose one of {', '.join(sorted(_FAMILIES))}, or register yours with register_family")
    return family


def data_needs(spec: Any) -> tuple[str, ...]:
    """The kinds of data a task (a TaskSpec) reads: its family's ``data_needs(args)``, each a
    registered kind (``data.registry.data_kind``; an unknown one raises RulerUsageError). A family
    without the member (one written before it was one) needs no data."""
    ask = getattr(get_family(spec.family), "data_needs", None)
    needs = tuple(ask(spec.args)) if callable(ask) else ()
    for name in needs:
        data_kind(name)
    return needs


def make_task(name: str, family: str, *, tokens_to_generate: int, metric: str = "all", **args: Any) -> TaskSpec:
    """Build (and validate) a task from a family and its arguments."""
    validator = get_family(family)
    if metric not in METRICS:
        raise RulerUsageError("metric", metric, "choose 'all' (string_match_all), 'part' (string_match_part), or a RULERv2 "
                              "scorer: 'ruler2_all', 'ruler2_part', 'ruler2_2steps', 'multichoice', or MRCR's grade 'mrcr'")
    if isinstance(tokens_to_generate, bool) or not isinstance(tokens_to_generate, int) or tokens_to_generate < 1:
        raise RulerUsageError("tokens_to_generate", tokens_to_generate, "must be an integer >= 1")
    if not name or not isinstance(name, str) or any(c in name for c in "[]*?, "):
        raise RulerUsageError("task name", name, "use a non-empty name without spaces, commas, brackets or glob characters")
    validated = validator.validate(args)
    return TaskSpec(name, family, MappingProxyType(validated), tokens_to_generate, metric)


def _standard() -> dict[str, TaskSpec]:
    niah = dict(type_needle_k="words", type_needle_v="numbers")
    specs = [
        make_task("niah_single_1", "niah", tokens_to_generate=128, type_haystack="noise", **niah),
        make_task("niah_single_2", "niah", tokens_to_generate=128, type_haystack="essay", **niah),
        make_task("niah_single_3", "niah", tokens_to_generate=128, type_haystack="essay", type_needle_k="words", type_needle_v="uuids"),
        make_task("niah_multikey_1", "niah", tokens_to_generate=128, type_haystack="essay", num_needle_k=4, **niah),
        make_task("niah_multikey_2", "niah", tokens_to_generate=128, type_haystack="needle", **niah),
        make_task("niah_multikey_3", "niah", tokens_to_generate=128, type_haystack="needle", type_needle_k="uuids", type_needle_v="uuids"),
        make_task("niah_multivalue", "niah", tokens_to_generate=128, type_haystack="essay", num_needle_v=4, **niah),
        make_task("niah_multiquery", "niah", tokens_to_generate=128, type_haystack="essay", num_needle_q=4, **niah),
        make_task("vt", "variable_tracking", tokens_to_generate=30, num_chains=1, num_hops=4),
        make_task("cwe", "common_words_extraction", tokens_to_generate=120, freq_cw=30, freq_ucw=3, num_cw=10),
        make_task("fwe", "freq_words_extraction", tokens_to_generate=50, alpha=2.0),
        make_task("qa_1", "qa", tokens_to_generate=32, metric="part", dataset="squad"),
        make_task("qa_2", "qa", tokens_to_generate=32, metric="part", dataset="hotpotqa"),
    ]
    return {s.name: s for s in specs}


STANDARD_TASKS: "MappingProxyType[str, TaskSpec]" = MappingProxyType(_standard())


# pack name -> its task rows (name, family, tokens_to_generate, metric, args); its families are in _BUILTIN_FAMILIES
_PACK_ROWS: dict[str, Any] = {PACK: PACK_TASKS, MRCR: MRCR_ROWS}


def _pack(rows: Any) -> dict[str, TaskSpec]:
    return {name: make_task(name, family, tokens_to_generate=tokens, metric=metric, **args)
            for name, family, tokens, metric, args in rows if family in _FAMILIES}


#: task packs beside the paper's 13: ``ruler2`` (RULERv2's 12 tasks, ``tasks.ruler2``)
PACKS: "MappingProxyType[str, MappingProxyType[str, TaskSpec]]" = MappingProxyType(
    {pack: MappingProxyType(_pack(rows)) for pack, rows in _PACK_ROWS.items()})
_PACKED: dict[str, TaskSpec] = {n: s for tasks in PACKS.values() for n, s in tasks.items()}
PACK_SIZES: "MappingProxyType[str, int]" = MappingProxyType({pack: len(rows) for pack, rows in _PACK_ROWS.items()})  # the tasks each pack declares
_CUSTOM: dict[str, TaskSpec] = {}


def register_task(spec: TaskSpec, *, replace: bool = False) -> TaskSpec:
    """Make a custom task selectable by name (``--ruler-tasks``, ``generate --task``)."""
    if spec.name in STANDARD_TASKS or spec.name in _PACKED:
        raise RulerUsageError("task name", spec.name, "is a standard RULER task; give the custom task another name")
    if spec.name in _CUSTOM and not replace and _CUSTOM[spec.name] != spec:
        raise RulerUsageError("task name", spec.name, "is already registered with other arguments; pass replace=True or pick another name")
    _CUSTOM[spec.name] = spec
    return spec


def task_names() -> list[str]:
    return list(STANDARD_TASKS) + list(_PACKED) + sorted(_CUSTOM)


def pack_of(task: str) -> str | None:
    """The pack a task belongs to (``ruler2``), or None for the paper's 13 and custom tasks."""
    return next((p for p, tasks in PACKS.items() if task in tasks), None)


def get_task(name: str | TaskSpec) -> TaskSpec:
    if isinstance(name, TaskSpec) or (not isinstance(name, str) and hasattr(name, "family") and hasattr(name, "args")):
        return name
    spec = STANDARD_TASKS.get(name) or _PACKED.get(name) or _CUSTOM.get(name)
    if spec is None:
        raise RulerUsageError("task", name, f"{_did_you_mean(name)}choose from {', '.join(task_names())} (globs like 'niah_*', "
                              f"'all' and packs like {', '.join(f'{p!r} or {p}:<glob>' for p in PACKS)} work in lists)")
    return spec


def _did_you_mean(name: Any) -> str:
    """``did you mean 'niah_single_1'? `` for a misspelt task name (the closest registered name), else ''."""
    import difflib

    close = difflib.get_close_matches(str(name).lower(), task_names() + ["all", *PACKS], n=1, cutoff=0.6)
    return f"did you mean {close[0]!r}? " if close else ""


def resolve_tasks(selection: str | Iterable[str]) -> list[TaskSpec]:
    """Names, globs (``niah_*``), ``all`` (the paper's 13), a pack (``ruler2``) or a glob in a
    pack (``ruler2:mk_*``), comma-separated or as a list, in registry order. A bare glob
    matches the paper's tasks and custom ones, not a pack's (``qa_*`` stays qa_1, qa_2)."""
    items = selection.split(",") if isinstance(selection, str) else list(selection)
    items = [s.strip() for s in items if s and s.strip()]
    if not items:
        raise RulerUsageError("tasks", selection, f"name at least one task: {', '.join(task_names())}, a glob, or 'all'")
    names = [n for n in task_names() if n not in _PACKED]
    chosen: list[str] = []
    for item in items:
        pack, _, glob = item.partition(":")
        if item == "all":
            matched = list(STANDARD_TASKS)
        elif pack in PACKS:
            matched = fnmatch.filter(list(PACKS[pack]), glob or "*")
            if not matched:
                raise RulerUsageError("tasks", item, f"matches no task of the {pack} pack; choose from {', '.join(PACKS[pack])}")
        elif any(c in item for c in "*?["):
            matched = fnmatch.filter(names, item)
            if not matched:
                raise RulerUsageError("tasks", item, f"the glob matches no task; choose from {', '.join(names)}")
        else:
            matched = [get_task(item).name]
        chosen += [m for m in matched if m not in chosen]
    return [get_task(n) for n in chosen]
