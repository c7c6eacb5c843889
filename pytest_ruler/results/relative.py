"""A relative pass mark, ``rel:F``: NoLiMa's effective length.

``--ruler-threshold=rel:0.85`` (``pytest-ruler gate --threshold rel:0.85``) judges each
length against the model's own score at the shortest tested length: a length passes when
its score is above ``F × base``, where base is the Total's score at the shortest tested
length (NoLiMa: "the maximum length at which the score stays above 85 % of the base
score"). Each task is judged against ``F ×`` its own score at the shortest tested length.
The pass rule stays the one rule (``aggregate.passes``: strictly above), so a model that
scores 0 at the base length passes nowhere (0 is not above 0).

    items + RelativeMark ──resolve(items, mark)──► Resolved
        threshold: F × the Total's base (the report's ``threshold``, so every table, Markdown
        and gate line reads an absolute number as before), task_thresholds: F × each task's
        base, items: re-judged (``threshold``, ``passed``), info: the report's
        ``relative_threshold`` entry {fraction, base_length, base_score, task_bases}
    a saved Report + a mark ──rejudge(report, mark)──► the same items judged again (the gate
        command's ``--threshold``; an absolute mark works too)
    cells + info ──relative_bounds(cells, task_scores, info, confidence)──► (Total's bound, {task: bound})

The bound carries the base's own uncertainty (a union bound): at confidence ``1 - α`` the
base is replaced by its one-sided upper confidence bound at level ``1 - α/2`` (the betting
interval of the base cell's samples, or of the Total's cells at the base length), and the
usual fixed-sequence bound (``intervals.effective_length_bounds``) is run against
``F ×`` that upper bound at level ``1 - α/2``. Both errors together stay below ``α``.

Where a task's base is missing (its shortest tested cell errored), its mark is 100 and
nothing of it passes (never the Total's: other tasks' scores are no base for it); where the
Total has no base (an errored shortest length, no task at every length) the mark
is 100 and nothing passes: no verdict rests on missing evidence.

Items during a run: an item's verdict needs its task's base, which another item (another
xdist worker, perhaps) produces, so under ``rel:F`` an item passes at run time when it has a
score above 0 (what every relative mark requires), and the run's end re-judges every item
against its resolved mark (``Report.of_results``); the verdict (results.gate) then decides: the
gate when one is asked, else the items below their marks. A shard's run
(``--ruler-shard``) holds only a share of the items, so it re-judges nothing at its end: its
report's entry says ``"resolved_at": "merge"`` (``describe`` says so in every header and gate
line), and ``pytest-ruler merge`` resolves the marks on the merged items (results.merge).

Public names: ``RelativeMark`` (from ``parsers``), ``Resolved``, ``resolve``, ``rejudge``,
``relative_bounds``, ``describe``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

from ..parsers import RelativeMark
from .aggregate import mean_over_tasks
from .item import ItemResult, judged
from .summary import cell_scores, total_task_set

__all__ = ["RelativeMark", "Resolved", "describe", "rejudge", "relative_bounds", "resolve"]

NO_BASE = 100.0  # nothing is above it


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


def rejudge(report: Any, mark: float | RelativeMark) -> Any:
    """``report`` (a Report or its dict) judged again under ``mark``: a new Report whose marks,
    item verdicts and summaries follow it (the gate command's ``--threshold``)."""
    from .report import Report, as_report

    report = as_report(report)
    fields = {k: v for k, v in report.fields.items() if k not in ("relative_threshold", "summary")}
    if isinstance(mark, RelativeMark):
        res = resolve(report.items, mark)
        items, threshold, task_marks = res.items, res.threshold, res.task_thresholds
        fields["relative_threshold"] = res.info
    else:
        threshold, task_marks = float(mark), {}
        items = tuple(judged(r, threshold) for r in report.items)
    order = tuple(k for k in report.order if k != "relative_threshold")
    order += ("relative_threshold",) if "relative_threshold" in fields else ()
    return Report(items=items, threshold=threshold, task_thresholds=task_marks, model=report.model, backend=report.backend,
                  tokenizer=report.tokenizer, haystack_corpus=report.haystack_corpus, complete=report.complete,
                  interrupted=report.interrupted, items_expected=report.items_expected, items_finished=report.items_finished,
                  warnings=report.warnings, skipped=report.skipped, fields=fields, order=order)


def _upper(strata: Sequence[Sequence[float]], level: float) -> float | None:
    """The one-sided upper confidence bound at ``1 - (1 - level) / 2`` of the strata's mean, in points."""
    from .stats import bounded_mean_interval

    if not strata or any(not s or len(s) < 2 for s in strata):
        return None
    return 100.0 * bounded_mean_interval([list(s) for s in strata], level)[1]


def relative_bounds(cells: Mapping[str, Mapping[int, Any]], task_scores: Mapping[str, Mapping[int, float]],
                    info: Mapping[str, Any], confidence: float, *, total_tasks: Sequence[str] | None = None
                    ) -> tuple[int | None, dict[str, int | None]]:
    """(the Total's bound, {task: bound}) under the relative mark ``info`` (see the module docstring)."""
    from .intervals import effective_length_bounds

    F, L0 = float(info["fraction"]), info.get("base_length")
    alpha = 1.0 - confidence
    if L0 is None:
        return None, {t: None for t in cells}
    in_total = [t for t in cells if total_tasks is None or t in total_tasks]
    hi_total = _upper([cells[t].get(L0) for t in in_total], confidence)
    marks: dict[str, float] = {}
    for task in cells:
        tested = sorted(cells[task])
        hi = _upper([cells[task].get(tested[0])], confidence) if tested else None
        marks[task] = min(F * hi, NO_BASE) if hi is not None else NO_BASE
    total_mark = min(F * hi_total, NO_BASE) if hi_total is not None else NO_BASE
    return effective_length_bounds(cells, task_scores, total_mark, 1.0 - alpha / 2, task_thresholds=marks,
                                   total_tasks=total_tasks)


def describe(info: Mapping[str, Any] | None) -> str | None:
    """``rel:0.85 of 92.3 at 4K = 78.5`` for headers and gate lines; None without a relative mark."""
    if not info:
        return None
    from ..lengths import format_length

    F, base, L0 = info.get("fraction"), info.get("base_score"), info.get("base_length")
    if info.get("resolved_at") == "merge":  # a shard's report: its items are a share of the run's
        return f"rel:{F:g} (resolved at merge: `pytest-ruler merge` judges every shard's items against F x each task's own base)"
    if base is None or L0 is None:
        return f"rel:{F:g} (no base score at the shortest length: nothing passes)"
    return f"rel:{F:g} of {base:.1f} at {format_length(L0)} = {F * base:.1f}"
