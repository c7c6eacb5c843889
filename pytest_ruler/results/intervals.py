"""Error bars and the effective length's confidence bound, from the items' per-sample scores.

    items (ItemResult or report dicts) ──pooled_cells(items, mode)──► {task: {length: [per-sample scores] | None}}
    pooled cells, cell scores ──summary_intervals(...)──► the summary's "intervals" entry
        cells: {task: {"4096": {"score", "n", "stderr", "ci95"} | None}}
        per_length (Total), avg, wavg_inc, wavg_dec: {"score", "stderr", "ci95"} | None
    pooled cells, cell scores, threshold ──effective_length_bounds(..., confidence)──► (overall, {task: bound})

Every score lies in [0, 1] (0/1 for most tasks, partial credit for multi-answer ones), and the
intervals and tests here are valid for bounded scores at any sample size, not only
asymptotically (issue 19: the t and z constructions they replace under-covered near 100 %:
a t interval covered 0.87–0.91 at p = 0.99, n = 20, the Total's z interval 0.73, with zero
width in 27 % of runs).

- **A cell** (task × length) is the mean over seeds of its items' scores; its samples are
  pooled over the seeds (each sample is one question, drawn independently; a sample is its
  own cluster, RULER has no groups of questions sharing a passage within an item). With equal
  samples per seed the pooled mean is the cell's score; otherwise ``score`` is the cell's
  (the table's number) and the interval the pooled samples'. ``ci95``: for 0/1 scores the
  Clopper–Pearson interval of the pooled counts (coverage >= 95 % at every p and n; the
  Wilson interval it replaces covered 0.905 at p = 0.995, n = 20); for partial credit the
  betting interval :func:`~pytest_ruler.results.stats.bounded_mean_interval` (Waudby-Smith
  & Ramdas), valid for any scores in [0, 1]; never of zero width (20 scores of 0.75 give
  about [59, 81]). ``stderr`` is the plug-in standard error ``sd / sqrt(n)`` (``sd`` with
  n - 1; Miller, arXiv 2411.00640), kept for reference: it is 0 when the scores do not
  vary, and the interval is the error bar to read.
- **A Total, Avg, wAvg** is a (weighted) mean of independent cell means (different
  questions). ``ci95`` is the stratified betting interval of that weighted mean over all
  its cells' samples (:func:`~pytest_ruler.results.stats.bounded_mean_interval` with one
  stratum per cell, weight ``w_L / tasks at L``): valid because the tasks are independent
  (weighted AM–GM, see its docstring), not because their sum is normal. ``stderr`` is the
  plug-in ``sqrt(sum w_i^2 SE_i^2) / sum w_i``. Total at a length weights its tasks
  equally; Avg its lengths equally; wAvg 1..n / n..1 as in the paper.
- Each interval is widened, if need be, to contain its ``score`` (a superset keeps the level).
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
(exact binomial for 0/1 scores, the betting test for partial credit; the t-test it
replaces had size 0.104 at n = 20 in the issue-19 audit, 0.068 in bench/stats_calibration.py). The Total's is the stratified betting test
:func:`~pytest_ruler.results.stats.bounded_mean_p` over its tasks' cells (the z-test it
replaces had size 0.059–0.064 with partial-credit tasks in the mix, and took 0 variance
at face value); a one-task Total uses the task's own test. An errored or sample-less cell
stops the sequence (no evidence). The bound is never above the point estimate's prefix,
and so never above the paper's effective length.

Under a relative mark (``rel:F``, :mod:`.relative`) the bound is :func:`relative_bounds`: the
same fixed sequence from the base length up, each later length by the drop test :func:`drop_rejects`
("score(L) > F × base", both lengths' samples in it) at the full α (see its docstring).

Public names: ``LEVEL``, ``NO_BASE``, ``cell_interval``, ``combine``, ``drop_p``, ``drop_rejects``,
``effective_length_bounds``, ``fixed_sequence_bound``, ``pooled_cells``, ``relative_bounds``, ``summary_intervals``.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .item import ItemResult
from .stats import bounded_mean_interval, bounded_mean_p, clopper_pearson, is_binary, mean_above_p, round_mean_p, z_quantile

__all__ = ["LEVEL", "NO_BASE", "cell_interval", "combine", "drop_p", "drop_rejects", "effective_length_bounds",
           "fixed_sequence_bound", "pooled_cells", "relative_bounds", "summary_intervals"]

LEVEL = 0.95  # the intervals' level (the JSON's "ci95")

Cells = dict[str, dict[int, "list[float] | None"]]


def _get(item: Any, key: str, default: Any = None) -> Any:
    kind = type(item)  # ItemResult and dict first: the ABC check is slow over many items
    if kind is not ItemResult and (kind is dict or isinstance(item, Mapping)):
        return item.get(key, default)
    return getattr(item, key, default)


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


def _around(low: float, high: float, centre: float) -> tuple[float, float]:
    return min(low, centre), max(high, centre)


def cell_interval(scores: Sequence[float] | None, score: float | None = None) -> dict[str, Any] | None:
    """``{"score", "n", "stderr", "ci95"}`` in points for one cell's pooled per-sample scores
    (``score``, in points, is the cell's own number; the pooled mean when omitted), or ``None``.
    ``ci95``: Clopper–Pearson for 0/1 scores, the betting interval for partial credit."""
    if not scores or len(scores) < 2:
        return None
    n = len(scores)
    mean, sd = _mean_sd(scores)
    centre = mean if score is None else score / 100.0
    if is_binary(scores):
        low, high = clopper_pearson(int(round(mean * n)), n, LEVEL)
    else:
        low, high = bounded_mean_interval([scores], LEVEL)
    low, high = _around(low, high, centre)
    return {"score": 100 * centre, "n": n, "stderr": 100 * sd / math.sqrt(n), "ci95": [100 * low, 100 * high]}


def combine(parts: Sequence[dict[str, Any] | None], weights: Sequence[float] | None = None,
            score: float | None = None, strata: Sequence[Sequence[float]] | None = None) -> dict[str, Any] | None:
    """The interval of a weighted mean of independent parts (each with ``score`` and
    ``stderr``); ``None`` when any part has none. ``score`` overrides the centre.
    ``stderr`` is the plug-in ``sqrt(sum w^2 SE^2) / sum w``. ``ci95``: with ``strata`` (the
    parts' per-sample scores, in order) the stratified betting interval, valid for bounded
    scores; one part: that cell's interval); without, the normal ``± z * stderr`` (a plug-in)."""
    if not parts or any(p is None for p in parts):
        return None
    w = list(weights) if weights is not None else [1.0] * len(parts)
    total = math.fsum(w)
    centre = math.fsum(wi * p["score"] for wi, p in zip(w, parts)) / total if score is None else score
    se = math.sqrt(math.fsum((wi * p["stderr"]) ** 2 for wi, p in zip(w, parts))) / total
    if strata is not None:
        if len(strata) == 1:  # one part: its own interval (Clopper-Pearson for 0/1 scores)
            low, high = cell_interval(strata[0])["ci95"]
        else:
            low, high = (100 * v for v in bounded_mean_interval(strata, LEVEL, w))
        low, high = _around(low, high, centre)
        return {"score": centre, "stderr": se, "ci95": [low, high]}
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
    at = {L: [t for t in by_cell if t in in_total and L in by_cell[t]] for L in lengths}
    totals = {L: combine([by_cell[t][L] for t in at[L]], score=per_length[L], strata=_strata(cells, at[L], L)) for L in lengths}
    n = len(lengths)
    weights = {"avg": [1] * n, "wavg_inc": list(range(1, n + 1)), "wavg_dec": list(range(n, 0, -1))}
    out: dict[str, Any] = {"level": LEVEL, "cells": {t: {str(L): v for L, v in sorted(ls.items())} for t, ls in by_cell.items()},
                           "per_length": {str(L): totals[L] for L in lengths}}
    for key, w in weights.items():
        value = averages.get(key)
        if value is None or not lengths or any(totals[L] is None for L in lengths):
            out[key] = None
            continue
        se = combine([totals[L] for L in lengths], w, score=value)
        strata = [s for L in lengths for s in _strata(cells, at[L], L)]
        cell_w = [wL / len(at[L]) for wL, L in zip(w, lengths) for _ in at[L]]
        low, high = bounded_mean_interval(strata, LEVEL, cell_w)
        low, high = _around(100 * low, 100 * high, value)
        out[key] = {"score": value, "stderr": se["stderr"], "ci95": [low, high]}
    return out


def _strata(cells: Cells, tasks: Sequence[str], length: int) -> list[list[float]] | None:
    got = [cells.get(t, {}).get(length) for t in tasks]
    return None if any(not s or len(s) < 2 for s in got) else got


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


def _total_p(parts: Sequence[tuple[list[float], float]], threshold: float, alpha: float) -> float:
    """One-sided p of "mean over tasks > threshold" (all in [0, 1]); parts are (scores, cell mean).
    One task: its own test; more: the stratified betting test (see the module docstring)."""
    if len(parts) == 1:
        return mean_above_p(parts[0][0], threshold)
    return bounded_mean_p([s for s, _ in parts], threshold, alpha=alpha)


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
            total_ps[L] = _total_p([(s, m / 100.0) for s, m in parts], thr, alpha)
    return fixed_sequence_bound(total_ps, alpha), per_task


# --------------------------------------------------------------------------- under a relative mark

NO_BASE = 100.0  # the mark of a task (or Total) without a base score under rel:F: nothing is above it


_EXACT_CELLS = 1_100_000  # outcome pairs of the exact drop test (about 1,000 samples a side); beyond: betting
_NULL_GRID = 401  # points per axis of the grid the exact test's supremum over the null is taken on


def drop_p(current: Sequence[float], base: Sequence[float], fraction: float, alpha: float = 1.0 - LEVEL) -> float:
    """One-sided p-value of "this cell's true mean is above ``fraction`` times the base cell's"
    (scores in [0, 1], the two cells independent): the drop test of ``rel:F`` for one task. Both
    cells' sampling errors are in it, at the one level ``alpha``.

    0/1 scores: the exact unconditional test (:func:`_exact_drop_p`). Partial credit: ``mean(cur) - F
    mean(base) > 0`` is ``(mean(cur) + F mean(1 - base)) / (1 + F) > F / (1 + F)``, the weighted mean
    of the cell and the base's scores flipped to ``1 - y`` (weights 1 and F), tested at any n by
    betting on each round's weighted mean (:func:`~pytest_ruler.results.stats.round_mean_p`)."""
    if is_binary(current) and is_binary(base) and (len(current) + 1) * (len(base) + 1) <= _EXACT_CELLS:
        return _exact_drop_p(int(round(math.fsum(current))), len(current), int(round(math.fsum(base))), len(base), fraction)
    strata = [list(current), [1.0 - y for y in base]]
    return round_mean_p(strata, fraction / (1.0 + fraction), [1.0, fraction], alpha=alpha)


def drop_rejects(current: Sequence[Sequence[float]], base: Sequence[Sequence[float]], fraction: float, alpha: float) -> bool:
    """Whether the drop test rejects "mean of the current cells' true means <= ``fraction`` x the base
    cells'" at level ``alpha``. One cell a side: :func:`drop_p`. The Total over several tasks: the
    base's upper confidence bound at ``1 - alpha/2`` (the stratified betting interval of its cells),
    and the stratified betting test of the current cells against ``fraction x`` that bound at
    ``alpha/2``: both errors together stay below ``alpha`` (a union bound). For several tasks this
    keeps the stratified test's power; the round-mean betting of :func:`drop_p` would pool each
    round of 2k cells into one bounded value and bet little on it (0.1 against 0.55 at 4 tasks,
    n = 20, base 95: bench/stats_calibration.py)."""
    if len(current) == len(base) == 1:
        return drop_p(current[0], base[0], fraction, alpha) <= alpha
    high = bounded_mean_interval([list(s) for s in base], 1.0 - alpha)[1]
    return bounded_mean_p([list(s) for s in current], fraction * high, alpha=alpha / 2) <= alpha / 2


@functools.lru_cache(maxsize=64)
def _binomial_rows(n: int):
    """``P(X = k)`` for ``X ~ Binomial(n, p)``: rows over the null grid's ``p``, columns ``k = 0..n``."""
    import numpy as np
    from scipy.stats import binom

    return binom.pmf(np.arange(n + 1)[None, :], n, np.linspace(0.0, 1.0, _NULL_GRID)[:, None])


def _exact_drop_p(x1: int, n1: int, x0: int, n0: int, fraction: float) -> float:
    """The exact unconditional test of ``H0: p1 <= F p0`` (``x1`` of ``n1`` now, ``x0`` of ``n0`` at the
    base; Barnard's construction, generalised to a ratio): order the outcomes by the Wald statistic
    ``(p1^ - F p0^) / sqrt(p1^(1-p1^)/n1 + F^2 p0^(1-p0^)/n0 + 1/(4 n1 n0))`` (the last term ranks a
    perfect cell, of no variance, as the most extreme); the p-value is the largest probability of an
    outcome at least as extreme as the observed one over every (p1, p0) of the null, taken on a
    ``_NULL_GRID`` x ``_NULL_GRID`` grid. Where a betting test needs many samples (two perfect 20-sample
    cells: power 0.1 at rel:0.85) this one uses the binomial law itself (0.4; bench/stats_calibration.py)."""
    import numpy as np

    a = np.arange(n1 + 1)[:, None] / n1
    b = np.arange(n0 + 1)[None, :] / n0
    stat = (a - fraction * b) / np.sqrt(a * (1 - a) / n1 + fraction ** 2 * b * (1 - b) / n0 + 0.25 / (n1 * n0))
    extreme = (stat >= stat[x1, x0] - 1e-12).astype(float)
    probs = _binomial_rows(n1) @ extreme @ _binomial_rows(n0).T  # [i, j]: P(extreme) at p1 = grid[i], p0 = grid[j]
    return min(1.0, float(np.where(_null(fraction), probs, 0.0).max()))


@functools.lru_cache(maxsize=16)
def _null(fraction: float):
    """The null's grid points: ``p1 <= F p0`` (rows p1, columns p0)."""
    import numpy as np

    grid = np.linspace(0.0, 1.0, _NULL_GRID)
    return grid[:, None] <= fraction * grid[None, :] + 1e-12


def _relative_ps(cells: Mapping[int, Sequence[Sequence[float]] | None], base_length: int, fraction: float,
                 alpha: float) -> dict[int, float | None]:
    """The fixed sequence's outcomes under ``rel:F`` (0.0 rejected, 1.0 not, None no evidence):
    ``cells`` maps each length to its strata. At the base length H0 is ``base <= F base``, i.e.
    ``base <= 0``: rejected, with size 0, when any base score is above 0 (a mean-0 cell of scores in
    [0, 1] has only zeros); after it, the drop test :func:`drop_rejects` at the full ``alpha``."""
    base = cells.get(base_length)
    if base is None:
        return {base_length: None}
    ps: dict[int, float | None] = {base_length: 0.0 if any(y > 0 for s in base for y in s) else 1.0}
    for length in sorted(L for L in cells if L > base_length):
        cur = cells[length]
        ps[length] = None if cur is None else (0.0 if drop_rejects(cur, base, fraction, alpha) else 1.0)
    return ps


def _strata_or_none(cells: Mapping[str, Mapping[int, Any]], tasks: Sequence[str], length: int) -> list[list[float]] | None:
    got = [cells[t].get(length) for t in tasks if length in cells[t]]
    return None if not got or any(not s or len(s) < 2 for s in got) else [list(s) for s in got]


def relative_bounds(cells: Mapping[str, Mapping[int, Any]], task_scores: Mapping[str, Mapping[int, float]],
                    info: Mapping[str, Any], confidence: float, *, total_tasks: Sequence[str] | None = None
                    ) -> tuple[int | None, dict[str, int | None]]:
    """(the Total's bound, {task: bound}) under the relative mark ``info`` (the report's
    ``relative_threshold`` entry, :mod:`.relative`), at ``confidence = 1 - α``: the fixed-sequence
    procedure over the lengths from the base one up, of the hypotheses "score(L) <= F × base"
    (:func:`_relative_ps`): the base length is in the bound when its score is above 0, each later
    length when the drop test :func:`drop_p` (this length's samples against the base cell's, or the
    Total's cells against the Total's base cells) rejects at the full α; the first non-rejection stops.
    A task's base is its shortest tested cell, the Total's the cells at ``base_length`` (issue 38:
    testing the base against F × its own upper bound at α/2 left the bound None in every run at n = 20)."""
    F, L0 = float(info["fraction"]), info.get("base_length")
    alpha = 1.0 - confidence
    if L0 is None:
        return None, {t: None for t in cells}
    per_task: dict[str, int | None] = {}
    for task in sorted(cells):
        tested = sorted(cells[task])
        by_length = {L: _strata_or_none(cells, [task], L) for L in tested}
        per_task[task] = fixed_sequence_bound(_relative_ps(by_length, tested[0], F, alpha), alpha) if tested else None
    in_total = [t for t in cells if total_tasks is None or t in total_tasks]
    lengths = sorted({L for t in in_total for L in cells[t] if L >= L0})
    total_cells = {L: _strata_or_none(cells, in_total, L) for L in lengths}
    if L0 not in total_cells or any(L0 not in cells[t] for t in in_total):
        return None, per_task
    return fixed_sequence_bound(_relative_ps(total_cells, L0, F, alpha), alpha), per_task
