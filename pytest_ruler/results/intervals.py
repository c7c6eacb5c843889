"""Error bars and the effective length's confidence bound, from the items' per-sample scores.

    items (ItemResult or report dicts) ──pooled_cells(items, mode)──► {task: {length: [per-sample scores] | None}}
    pooled cells, cell scores ──summary_intervals(...)──► the summary's "intervals" entry
        cells: {task: {"4096": {"score", "n", "stderr", "ci95"} | None}}
        per_length (Total), avg, wavg_inc, wavg_dec: {"score", "stderr", "ci95"} | None
    pooled cells, cell scores, threshold ──effective_length_bounds(..., confidence)──► (overall, {task: bound})

Standard errors (Miller, "Adding Error Bars to Evals", arXiv 2411.00640):

- **A cell** (task × length) is the mean over seeds of its items' scores. Its samples are
  pooled over the seeds: each sample is one question, drawn independently, so the cell's
  standard error is ``sd / sqrt(n)`` of the pooled per-sample scores (``sd`` with n - 1).
  No clustered standard error is used: a sample is its own cluster (one question, one
  score); RULER has no groups of questions sharing a passage within an item. With equal
  samples per seed the pooled mean is the cell's score; otherwise ``score`` is the cell's
  (the table's number) and the SE the pooled one. The 95 % interval: for 0/1 scores (QA
  tasks) the Wilson score interval of the pooled counts (it stays inside [0, 100] and is
  not empty at 0 % or 100 %, where ``sd`` is 0); for fractional scores
  ``score ± t(0.975, n-1) * SE``, clipped to [0, 100].
- **A Total, Avg, wAvg** is a (weighted) mean of independent cell means (different
  questions), so ``SE = sqrt(sum w_i^2 SE_i^2) / sum w_i`` and the interval is
  ``± z(0.975) * SE`` (normal: the sum of many samples). Total at a length weights its
  tasks equally; Avg its lengths equally; wAvg 1..n / n..1 as in the paper. This is the
  plug-in SE: where every cell scores 0 % or 100 % it is 0 and the interval has no width
  (the cells' Wilson intervals are the informative ones there; the bound below does not
  take a zero variance at face value).
- **No made-up intervals**: a cell with an item without per-sample scores (an older
  report, an errored item) or with fewer than two samples has none (``None``), and
  neither has any Total or average that includes it.

The bound (item 3 of issue 14): the largest tested length ``L`` such that the score is
above the threshold at every tested length ``<= L`` with the given confidence. At each
length in ascending order a one-sided test of "score > threshold" is made at level
``alpha = 1 - confidence``, stopping at the first length it does not reject (a
fixed-sequence procedure: the first true null in the order can be rejected only with
probability ``alpha``, so the family-wise error is ``alpha`` without splitting it). A
task's test is :func:`~pytest_ruler.results.stats.mean_above_p` on its pooled samples
(exact binomial for 0/1 scores). The Total's is a z-test of the mean of the task cells,
its variance ``sum var_i / n_i / k^2``; a cell whose scores do not vary counts with the
variance of a 0/1 score at the Laplace estimate ``(n*m + 1) / (n + 2)`` instead of 0 (so
20 perfect answers are not certainty); a one-task Total uses the task's own test. An
errored or sample-less cell stops the sequence (no evidence). The bound is never above
the point estimate's prefix, and so never above the paper's effective length.

Public names: ``LEVEL``, ``cell_interval``, ``combine``, ``effective_length_bounds``,
``fixed_sequence_bound``, ``pooled_cells``, ``summary_intervals``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .stats import is_binary, mean_above_p, t_quantile, z_quantile

__all__ = ["LEVEL", "cell_interval", "combine", "effective_length_bounds", "fixed_sequence_bound", "pooled_cells",
           "summary_intervals"]

LEVEL = 0.95  # the intervals' level (the JSON's "ci95")

Cells = dict[str, dict[int, "list[float] | None"]]


def _get(item: Any, key: str, default: Any = None) -> Any:
    return item.get(key, default) if isinstance(item, Mapping) else getattr(item, key, default)


def pooled_cells(items: Iterable[Any], mode: str = "native") -> Cells:
    """Per (task, length) of ``mode``: the per-sample scores of its items pooled over seeds,
    or ``None`` when an item errored or carries no per-sample score for each of its samples."""
    out: Cells = {}
    for it in items:
        if _get(it, "mode", "native") != mode:
            continue
        task, length = str(_get(it, "task")), int(_get(it, "length"))
        scores = [float(s) for s in (_get(it, "sample_scores") or ())]
        cell = out.setdefault(task, {}).setdefault(length, [])
        ok = _get(it, "error") is None and scores and len(scores) == int(_get(it, "samples", len(scores)) or 0)
        if cell is None or not ok:
            out[task][length] = None
        else:
            cell.extend(scores)
    return out


def _mean_sd(scores: Sequence[float]) -> tuple[float, float]:
    n = len(scores)
    mean = math.fsum(scores) / n
    return mean, math.sqrt(math.fsum((s - mean) ** 2 for s in scores) / (n - 1))


def _wilson(x: int, n: int) -> tuple[float, float]:
    z = z_quantile(0.5 + LEVEL / 2)
    p, z2 = x / n, z * z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n)
    return (0.0 if x == 0 else max(0.0, centre - half)), (1.0 if x == n else min(1.0, centre + half))


def cell_interval(scores: Sequence[float] | None, score: float | None = None) -> dict[str, Any] | None:
    """``{"score", "n", "stderr", "ci95"}`` in points for one cell's pooled per-sample scores
    (``score``, in points, is the cell's own number; the pooled mean when omitted), or ``None``."""
    if not scores or len(scores) < 2:
        return None
    n = len(scores)
    mean, sd = _mean_sd(scores)
    centre = mean if score is None else score / 100.0
    se = sd / math.sqrt(n)
    if is_binary(scores):
        low, high = _wilson(int(round(mean * n)), n)
    else:
        half = t_quantile(0.5 + LEVEL / 2, n - 1) * se
        low, high = max(0.0, centre - half), min(1.0, centre + half)
    return {"score": 100 * centre, "n": n, "stderr": 100 * se, "ci95": [100 * low, 100 * high]}


def combine(parts: Sequence[dict[str, Any] | None], weights: Sequence[float] | None = None,
            score: float | None = None) -> dict[str, Any] | None:
    """The interval of a weighted mean of independent parts (each with ``score`` and
    ``stderr``); ``None`` when any part has none. ``score`` overrides the centre."""
    if not parts or any(p is None for p in parts):
        return None
    w = list(weights) if weights is not None else [1.0] * len(parts)
    total = math.fsum(w)
    centre = math.fsum(wi * p["score"] for wi, p in zip(w, parts)) / total if score is None else score
    se = math.sqrt(math.fsum((wi * p["stderr"]) ** 2 for wi, p in zip(w, parts))) / total
    half = z_quantile(0.5 + LEVEL / 2) * se
    return {"score": centre, "stderr": se, "ci95": [max(0.0, centre - half), min(100.0, centre + half)]}


def summary_intervals(cells: Cells, task_scores: Mapping[str, Mapping[int, float]],
                      per_length: Mapping[int, float], averages: Mapping[str, float | None], *,
                      total_tasks: Sequence[str] | None = None) -> dict[str, Any] | None:
    """The summary's ``intervals`` entry (see the module docstring); ``None`` when no cell has
    per-sample scores (a report from before they were recorded). The Total's intervals are
    over ``total_tasks`` (default: every task), the tasks the Total averages."""
    if not any(v for ls in cells.values() for v in ls.values()):
        return None
    by_cell = {t: {L: cell_interval(cells.get(t, {}).get(L), s) for L, s in ls.items()} for t, ls in task_scores.items()}
    in_total = set(by_cell if total_tasks is None else total_tasks)
    lengths = sorted(per_length)
    totals = {L: combine([by_cell[t][L] for t in by_cell if t in in_total and L in by_cell[t]], score=per_length[L]) for L in lengths}
    n = len(lengths)
    weights = {"avg": [1] * n, "wavg_inc": list(range(1, n + 1)), "wavg_dec": list(range(n, 0, -1))}
    out: dict[str, Any] = {"level": LEVEL, "cells": {t: {str(L): v for L, v in sorted(ls.items())} for t, ls in by_cell.items()},
                           "per_length": {str(L): totals[L] for L in lengths}}
    for key, w in weights.items():
        value = averages.get(key)
        out[key] = None if value is None or not lengths else combine([totals[L] for L in lengths], w, score=value)
    return out


def fixed_sequence_bound(p_values: Mapping[int, float | None], alpha: float) -> int | None:
    """The longest length reached by rejecting at every length in ascending order (``p <= alpha``);
    ``None`` when the shortest is not rejected. A ``None`` p-value (no evidence) stops."""
    bound = None
    for length in sorted(p_values):
        p = p_values[length]
        if p is None or p > alpha:
            break
        bound = length
    return bound


def _total_p(parts: Sequence[tuple[list[float], float]], threshold: float) -> float:
    """One-sided p of "mean over tasks > threshold" (all in [0, 1]); parts are (scores, cell mean)."""
    if len(parts) == 1:
        return mean_above_p(parts[0][0], threshold)
    k = len(parts)
    var = 0.0
    for scores, m in parts:
        n = len(scores)
        v = _mean_sd(scores)[1] ** 2 if n > 1 else 0.0
        if v == 0.0:
            laplace = (n * m + 1) / (n + 2)
            v = laplace * (1 - laplace)
        var += v / n
    se = math.sqrt(var) / k
    mean = math.fsum(m for _, m in parts) / k
    z = (mean - threshold) / se
    return 0.5 * math.erfc(z / math.sqrt(2.0))


def effective_length_bounds(cells: Cells, task_scores: Mapping[str, Mapping[int, float]], threshold: float,
                            confidence: float = LEVEL, *, task_thresholds: Mapping[str, float] | None = None,
                            total_tasks: Sequence[str] | None = None) -> tuple[int | None, dict[str, int | None]]:
    """(the Total's bound, {task: its bound}) at ``confidence`` (thresholds in points): the
    Total (over ``total_tasks``, default every task) against ``threshold``, each task
    against its own mark in ``task_thresholds``."""
    alpha, thr = 1.0 - confidence, threshold / 100.0
    marks = task_thresholds or {}
    per_task = {}
    for task in sorted(cells):
        task_thr = float(marks.get(task, threshold)) / 100.0
        ps = {L: (None if s is None else mean_above_p(s, task_thr)) for L, s in cells[task].items()}
        per_task[task] = fixed_sequence_bound(ps, alpha)
    lengths = sorted({L for ls in cells.values() for L in ls})
    total_ps: dict[int, float | None] = {}
    for L in lengths:
        parts = [(cells[t][L], task_scores.get(t, {}).get(L)) for t in cells
                 if L in cells[t] and (total_tasks is None or t in total_tasks)]
        if not parts or any(s is None or m is None for s, m in parts):
            total_ps[L] = None
        else:
            total_ps[L] = _total_p([(s, m / 100.0) for s, m in parts], thr)
    return fixed_sequence_bound(total_ps, alpha), per_task
