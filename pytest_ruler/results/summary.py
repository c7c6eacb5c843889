"""The one aggregation of item results: the paper's Table 3 per mode, errors as missing evidence.

    [ItemResult] ──cell_scores(results, mode)──► {task: {length: mean over seeds}}, errored cells
                 ──summarize_results(results, threshold, mode, task_thresholds)──► the mode's summary dict
                   (per_length, avg, wavg_inc, wavg_dec, effective_length,
                    per_task_effective_length, task_thresholds, total_tasks, partial_tasks,
                    errors, errored_lengths, errored,
                    intervals, effective_length_bound, per_task_effective_length_bound, bound_confidence)

The terminal table, the JSON report, Markdown, plots, the snapshot extension and
``pytest-ruler gate`` all read this one summary. Its error bars (``intervals``: stderr and
95 % interval per cell, per length, for Avg and wAvg) and the effective length's 95 % lower
confidence bound come from the items' per-sample scores (:mod:`pytest_ruler.results.intervals`).

Public names: ``cell_scores``, ``summarize_results``, ``total_task_set``, ``mapreduce_vs_native``.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Iterable, Mapping

from .aggregate import avg, effective_length, mean_over_tasks, wavg_dec, wavg_inc
from .intervals import LEVEL, effective_length_bounds, pooled_cells, relative_bounds, summary_intervals
from .item import ItemResult

__all__ = ["cell_scores", "mapreduce_vs_native", "summarize_results", "total_task_set"]


def cell_scores(results: Iterable[ItemResult], mode: str = "native") -> tuple[dict[str, dict[int, float]], dict[str, set[int]]]:
    """Per (task, length): the mean score over seeds of the items that did not error, and
    the cells where some item errored (those have no score)."""
    by_task: dict[str, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    errored: dict[str, set[int]] = defaultdict(set)
    for r in results:
        if r.mode != mode:
            continue
        if r.error is not None:
            errored[r.task].add(r.length)
        else:
            by_task[r.task][r.length].append(r.score)
    means = {t: {L: sum(v) / len(v) for L, v in ls.items() if L not in errored.get(t, ())} for t, ls in by_task.items()}
    return {t: ls for t, ls in means.items() if ls}, dict(errored)


def total_task_set(task_scores: Mapping[str, Mapping[int, float]],
                   errored: Mapping[str, set[int]]) -> tuple[list[str], dict[str, list[int]]]:
    """Which tasks the Total averages: those tested at every length of the run.

    With ``-k``, a user test at one length, or a task skipped at some lengths, the
    lengths would otherwise average different task sets (1K over one task, 4K over
    five), and the Total, Avg, wAvg and the effective length would compare unlike
    things. A task counts as tested at a length when it has a score or an errored item
    there. Returns (the Total's tasks, sorted; {left-out task: the lengths it was tested at}).
    """
    tested = {t: set(task_scores.get(t, {})) | set(errored.get(t, ())) for t in set(task_scores) | set(errored)}
    lengths = set().union(*tested.values()) if tested else set()
    total = sorted(t for t, ls in tested.items() if ls == lengths)
    return total, {t: sorted(ls) for t, ls in sorted(tested.items()) if ls != lengths}


def summarize_results(results: Iterable[ItemResult], threshold: float, mode: str = "native",
                      task_thresholds: Mapping[str, float] | None = None, *,
                      cells: tuple[Mapping[str, Mapping[int, float]], Mapping[str, set[int]]] | None = None,
                      relative: Mapping[str, Any] | None = None) -> dict[str, Any] | None:
    """Table 3 for one mode: item scores averaged over seeds, then the paper's formulas.

    One pass rule (``aggregate.passes``: above the mark). The overall effective length and
    its bound apply ``threshold`` to the Total; each task's effective length and bound apply
    that task's own mark (``task_thresholds``, the ini ``ruler_task_thresholds``), the
    same mark its items passed or failed by. ``task_thresholds`` in the summary lists the
    mark used for every task in it.

    Errored items are missing evidence, never scores: a (task, length) cell with an
    errored item has no score, a length with an errored cell has no Total, the averages
    over lengths are not established (None) while any length errored, and effective
    lengths (per task and overall) are computed only below the first errored length.
    ``errors`` counts the errored items; ``errored`` lists them with their reasons.
    ``intervals`` is ``None`` and the bounds are ``None`` when no item carries per-sample
    scores (a report from an older version).

    The Total row (and with it Avg, wAvg, the overall effective length and its bound) is
    over ``total_tasks``, the tasks tested at every length (:func:`total_task_set`);
    ``partial_tasks`` names the others with their lengths. They keep their own cells
    and per-task effective lengths. When no task was tested at every length the Total
    is empty and the effective length is not established.

    ``relative``: the report's ``relative_threshold`` entry under ``rel:F`` (``threshold`` and
    ``task_thresholds`` are then its resolved marks); the bounds then carry the base's own
    uncertainty (:func:`pytest_ruler.results.intervals.relative_bounds`).

    ``cells``: the mode's ``cell_scores`` when the caller has them (``results.report`` computes
    them once per mode and passes them here, so they are not derived a second time).
    """
    results = [r for r in results if r.mode == mode]
    if not results:
        return None
    task_scores, errored_cells = cell_scores(results, mode) if cells is None else cells
    bad_lengths = sorted({L for ls in errored_cells.values() for L in ls})
    total_tasks, partial = total_task_set(task_scores, errored_cells)
    total_scores = {t: task_scores[t] for t in total_tasks if t in task_scores}
    per_length = {L: v for L, v in mean_over_tasks(total_scores).items() if L not in bad_lengths} if total_scores else {}
    first_bad = bad_lengths[0] if bad_lengths else None

    def below(scores: dict[int, float], limit: int | None) -> dict[int, float]:
        return {L: v for L, v in scores.items() if limit is None or L < limit}

    trusted = below(per_length, first_bad)
    tasks = sorted(set(task_scores) | set(errored_cells))
    marks = {t: float((task_thresholds or {}).get(t, threshold)) for t in tasks}
    per_task_eff: dict[str, int | None] = {}
    for t in tasks:
        ok = below(task_scores.get(t, {}), min(errored_cells[t]) if errored_cells.get(t) else None)
        per_task_eff[t] = effective_length(ok, marks[t]) if ok else None
    complete = bool(per_length) and not bad_lengths
    averages = {"avg": avg(per_length) if complete else None,
                "wavg_inc": wavg_inc(per_length) if complete else None,
                "wavg_dec": wavg_dec(per_length) if complete else None}
    cells = pooled_cells(results, mode)
    intervals = summary_intervals(cells, task_scores, per_length, averages, total_tasks=total_tasks)
    if intervals and relative:  # rel:F: the bound carries the base score's own uncertainty (results.relative)
        bound, per_task_bound = relative_bounds(cells, task_scores, relative, LEVEL, total_tasks=total_tasks)
    elif intervals:
        bound, per_task_bound = effective_length_bounds(cells, task_scores, threshold, task_thresholds=marks, total_tasks=total_tasks)
    else:
        bound, per_task_bound = None, {}
    return {
        "per_length": {str(L): v for L, v in per_length.items()},
        **averages,
        "effective_length": effective_length(trusted, threshold) if trusted else None,
        "per_task_effective_length": per_task_eff,
        "intervals": intervals,
        "effective_length_bound": bound,
        "per_task_effective_length_bound": per_task_bound if intervals else {},
        "bound_confidence": LEVEL,
        "threshold": threshold,
        "task_thresholds": marks,
        "total_tasks": total_tasks,
        "partial_tasks": partial,
        "errors": sum(r.error is not None for r in results),
        "errored_lengths": bad_lengths,
        "errored": [
            {"task": r.task, "length": r.length, "seed": r.seed, "error": r.error}
            for r in sorted(results, key=lambda r: (r.length, r.task, r.seed)) if r.error is not None
        ],
    }


def mapreduce_vs_native(results: Iterable[ItemResult]) -> list[dict[str, Any]]:
    """Each item run both ways: scores side by side; ``rescued`` = native fails, map-reduce passes."""
    native = {(r.task, r.length, r.seed): r for r in results if r.mode == "native"}
    out = []
    for r in results:
        n = native.get((r.task, r.length, r.seed)) if r.mode == "mapreduce" else None
        if n is not None:
            out.append({"task": r.task, "length": r.length, "seed": r.seed, "native": n.score, "mapreduce": r.score,
                        "native_passed": n.passed, "mapreduce_passed": r.passed, "rescued": (not n.passed) and r.passed,
                        "grounding": (r.mapreduce or {}).get("grounding")})
    return out
