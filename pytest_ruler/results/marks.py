"""A relative pass mark resolved on items: the marks ``rel:F`` stands for, and the items judged.

    items + RelativeMark ──resolve(items, mark)──► Resolved(threshold, task_thresholds, items, info)
    the report's relative_threshold entry ──describe(info)──► "rel:0.85 of 92.3 at 4K = 78.5"

The rule and its reasons are :mod:`.relative`'s docstring (the public module of ``rel:F``,
which re-exports these names). This module sits below the typed report (:mod:`.report`
resolves a run's relative mark when it is built) and above the aggregation it reads
(:mod:`.summary`), so neither imports the other's user.

Public names: ``Resolved``, ``describe``, ``resolve``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from ..lengths import format_length
from ..parsers import RelativeMark
from .aggregate import mean_over_tasks
from .intervals import NO_BASE
from .item import ItemResult, judged
from .summary import cell_scores, total_task_set

__all__ = ["Resolved", "describe", "resolve"]


@dataclass(frozen=True)
class Resolved:
    threshold: float
    task_thresholds: dict[str, float]
    items: tuple[ItemResult, ...]
    info: dict[str, Any]


def resolve(items: Iterable[ItemResult], mark: RelativeMark) -> Resolved:
    """The marks ``mark`` resolves to on these items (native mode's bases), and the items re-judged."""
    items = tuple(items)
    F = mark.fraction
    task_scores, errored = cell_scores(items, "native")
    total_tasks, _ = total_task_set(task_scores, errored)
    lengths = sorted({r.length for r in items if r.mode == "native"})
    base_length = lengths[0] if lengths else None
    per_length = mean_over_tasks({t: task_scores[t] for t in total_tasks if t in task_scores}) if total_tasks else {}
    base_score = per_length.get(base_length) if base_length is not None and not any(base_length in ls for ls in errored.values()) else None
    threshold = F * base_score if base_score is not None else NO_BASE
    task_bases: dict[str, float | None] = {}
    for task in sorted(set(task_scores) | set(errored)):
        tested = sorted(set(task_scores.get(task, {})) | set(errored.get(task, ())))
        first = tested[0] if tested else None
        task_bases[task] = task_scores.get(task, {}).get(first) if first is not None else None
    marks = {t: (F * b if b is not None else NO_BASE) for t, b in task_bases.items()}  # no base of its own: nothing passes
    rejudged = tuple(judged(r, marks.get(r.task, threshold)) for r in items)
    info = {"fraction": F, "base_length": base_length, "base_score": base_score,
            "task_bases": {t: b for t, b in task_bases.items()}}
    return Resolved(threshold, marks, rejudged, info)


def describe(info: Mapping[str, Any] | None) -> str | None:
    """``rel:0.85 of 92.3 at 4K = 78.5`` for headers and gate lines; None without a relative mark."""
    if not info:
        return None
    F, base, L0 = info.get("fraction"), info.get("base_score"), info.get("base_length")
    if info.get("resolved_at") == "merge":  # a shard's report: its items are a share of the run's
        return f"rel:{F:g} (resolved at merge: `pytest-ruler merge` judges every shard's items against F x each task's own base)"
    if base is None or L0 is None:
        return f"rel:{F:g} (no base score at the shortest length: nothing passes)"
    return f"rel:{F:g} of {base:.1f} at {format_length(L0)} = {F * base:.1f}"
