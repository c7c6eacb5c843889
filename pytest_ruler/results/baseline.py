"""Regression against a baseline report (``--ruler-baseline=old.json``).

Each (task, length, mode) cell of the current run is compared with the same cell of an
earlier report, and the run fails only on a drop that is statistically significant for
the sample counts involved, so that CI does not flap on sampling noise.

    old.json ──load_baseline──► Report (results.saved.read_report: the one reader and check)
    report dict, current items ──compare(...)──► Comparisons ──regressions.summarize_regressions──► (passed, lines)

The statistics, in order:

1. **Pooling.** Items are grouped by ``(task, length, mode)`` and pooled over seeds: the
   cell's sample count ``n`` is the sum of the items' ``samples`` and its score the
   sample-weighted mean of their scores. Cells present on one side only are not compared
   (they are listed in ``Comparisons.not_compared``), nor are cells with no samples.
2. **Counts.** A RULER score is 100 × the mean over samples of a per-sample value in
   [0, 1]. For ``string_match_part`` (QA) that value is 0 or 1, so the score is exactly a
   binomial proportion. ``string_match_all`` gives partial credit (e.g. 2 of 4 needles
   = 0.5); it is *approximated* as a proportion with
   ``successes = round(score / 100 * n)`` (half up). Partial credit has at most the
   variance of a 0/1 outcome with the same mean, so treating it as binomial overstates
   the noise: the test is conservative there, which is the safe side for CI.
3. **Test.** One-sided, H1: "current proportion < baseline proportion" (an improvement
   is never a failure). **Paired first**: where both runs carry per-sample prompt hashes
   and share questions (same tokenizer and template: RULER's samples are deterministic),
   the shared questions are compared pairwise (:mod:`pytest_ruler.results.paired`):
   exact McNemar for 0/1 scores, a one-sided sign-flip permutation test of the mean
   per-question change for fractional ones (exact enumeration for few nonzero changes,
   Monte Carlo with a fixed seed beyond; the paired t-test it replaced was measured
   liberal on bounded scores); ``Comparison.paired`` counts the pairs and ``effect`` is the mean
   change per question in points with its 95 % interval. Pairing removes the
   between-question variance, so it detects a real drop with far fewer samples. Where
   they share none, or a side has no hashes (an older report), the unpaired test below
   is used and ``Comparison.note`` says why:

   - ``"two-proportion-z"`` (default): the pooled two-proportion z-test,
     ``z = (p_cur - p_base) / sqrt(p(1-p)(1/n_base + 1/n_cur))``, p-value ``Phi(z)``, no
     continuity correction. When any expected cell count ``n_i * p`` or
     ``n_i * (1 - p)`` is below 5 the normal approximation is poor, and the exact test
     below is used instead (``Comparison.exact_fallback`` is then true and ``test`` is
     ``"fisher"``).
   - ``"fisher"``: one-sided Fisher exact test on the 2×2 table of successes and
     failures, i.e. the lower tail of the hypergeometric distribution of the current
     run's successes given both margins: scipy's ``fisher_exact`` (``alternative="greater"``
     on the table ``[[baseline successes, failures], [current successes, failures]]``).
4. **Multiple comparisons.** With many cells some would cross ``alpha`` by chance, so
   the p-values are adjusted over all compared cells: ``"holm"`` (default; Holm's
   step-down method, which controls the family-wise error rate like Bonferroni but is
   uniformly more powerful), ``"bonferroni"``, or ``"none"``.
5. **Non-inferiority** (``margin``, ``--ruler-noninferiority-margin=D``): instead of "did it drop?",
   "is it shown to score at least the baseline minus D points?": each paired cell's
   :func:`pytest_ruler.results.noninferiority.noninferiority`, Holm over the paired cells; a cell is shown,
   refuted (``significant``: it fails) or not shown (an unpaired cell too: the test needs the same
   questions). The verdict (results.gate) passes only when every cell is shown.
6. **Decision.** A cell is a significant drop when its adjusted p-value is below
   ``alpha`` *and* its score fell by at least ``min_drop`` points (``delta < 0`` and
   ``delta <= -min_drop``; ``min_drop`` lets users ignore drops that are real but too
   small to matter).

Adjusted p-values do not depend on ``alpha``, so raising ``alpha`` never removes a
flagged drop; identical reports never flag one (their one-sided p-value is ≥ 0.5).

Public names:

- :func:`load_baseline` -- read a saved report (``results.saved.read_report``) that has items.
- :class:`Comparison`, :class:`NotCompared`, :class:`Comparisons` -- results.
- :func:`compare` -- the cell-by-cell comparison.
- :data:`DEFAULT_ALPHA`, :data:`SCHEMA`.

The two tests and the correction are in :mod:`pytest_ruler.results.stats`
(``fisher_exact_less``, ``two_proportion_z_less``, ``adjust``, ``TESTS``,
``CORRECTIONS``); the lines a comparison prints are in
:mod:`pytest_ruler.results.regressions` (``summarize_regressions``,
``effective_length_drop``).

Option names used in error messages (the plugin maps its options onto the keyword
arguments): ``--ruler-baseline-alpha``, ``--ruler-baseline-test``. ``correction`` and
``min_drop`` are keyword arguments of :func:`compare` only (the plugin uses Holm and no
minimum drop); their errors name the keyword.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from numbers import Real
from pathlib import Path
from typing import Any

from ..errors import RulerUsageError
from .report import Report
from .saved import item_problem, read_report
from .noninferiority import NOT_SHOWN, decide, noninferiority
from .paired import paired_scores, question_scores
from .stats import CORRECTIONS, TESTS, adjust, fisher_exact_less, paired_less, two_proportion_z_less

__all__ = ["DEFAULT_ALPHA", "SCHEMA", "Comparison", "Comparisons", "NotCompared", "compare", "load_baseline"]

from .item import SCHEMA
DEFAULT_ALPHA = 0.05


# --------------------------------------------------------------------------- loading


def load_baseline(path: str | Path, parameter: str = "--ruler-baseline") -> Report:
    """Read a JSON report written by ``--ruler-report`` and check it can serve as a baseline.

    The one reader of saved reports (:func:`pytest_ruler.results.saved.read_report`; errors
    name ``parameter``), then: a baseline needs items to compare against.
    """
    report = read_report(path, parameter)
    if not report.items:
        raise RulerUsageError(
            parameter, str(path),
            "the report has no items to compare against; it must come from a run that "
            "executed RULER items (use --ruler-report on such a run).",
        )
    return report


def _is_number(value: object) -> bool:
    return isinstance(value, Real) and not isinstance(value, bool)


# --------------------------------------------------------------------------- results


@dataclass(frozen=True)
class Comparison:
    """One (task, length, mode) cell, baseline against current.

    Scores are percentages pooled over seeds; ``*_n`` are total samples; ``delta`` is
    ``current_score - baseline_score`` (negative = drop). ``p_value`` is the adjusted
    p-value the decision uses (``raw_p_value`` before the multiple-comparison
    correction). ``test`` names the test actually used (``"fisher"`` when the z-test
    fell back to it, with ``exact_fallback`` true; ``"mcnemar"``, ``"sign-flip"`` or
    ``"sign"`` for a paired comparison over ``paired`` shared questions, of which
    ``lost`` got a lower score and ``gained`` a higher one; ``effect`` is then their mean
    change in points and ``effect_ci`` its 95 % interval). ``note`` says why a cell whose
    runs record prompt hashes was not paired.
    """

    task: str
    length: int
    mode: str
    baseline_score: float
    current_score: float
    baseline_n: int
    current_n: int
    delta: float
    p_value: float
    significant: bool
    test: str
    alpha: float
    raw_p_value: float = 1.0
    correction: str = "holm"
    baseline_successes: int = 0
    current_successes: int = 0
    min_drop: float = 0.0
    exact_fallback: bool = False
    cells: int = 1  # how many comparisons the correction was over
    paired: int = 0  # shared questions compared pairwise (0: unpaired test)
    lost: int = 0
    gained: int = 0
    effect: float | None = None  # paired: mean change per question, points
    effect_ci: tuple[float, float] | None = None
    note: str | None = None
    # --ruler-noninferiority-margin (results.noninferiority): the margin, points, and the cell's status
    # (shown, refuted, not shown) with its Holm-adjusted p-values; None without a margin
    margin: float | None = None
    noninferiority: str | None = None
    p_shown: float | None = None
    p_refuted: float | None = None

    @property
    def key(self) -> tuple[str, int, str]:
        return (self.task, self.length, self.mode)


@dataclass(frozen=True)
class NotCompared:
    """A cell present in only one of the two runs, or without samples."""

    task: str
    length: int
    mode: str
    reason: str  # "missing in baseline" | "missing in current run" | "no samples"


class Comparisons(list):
    """``list[Comparison]`` with the cells that could not be compared in ``not_compared``."""

    not_compared: tuple[NotCompared, ...]

    def __init__(self, comparisons: Iterable[Comparison] = (), not_compared: Iterable[NotCompared] = ()) -> None:
        super().__init__(comparisons)
        self.not_compared = tuple(not_compared)


# --------------------------------------------------------------------------- comparing


def _items(report: Any) -> list[Any]:
    """A report's items: a ``Report``'s ItemResults, or a report dict's ``items``."""
    if isinstance(report, Report):
        return list(report.items)
    if not isinstance(report, Mapping) or not isinstance(report.get("items"), list):
        raise RulerUsageError("baseline_report", type(report).__name__, "pass a report (see load_baseline) or a dict with 'items'.")
    return report["items"]


def _as_mapping(item: Any) -> Mapping[str, Any]:
    if isinstance(item, Mapping):
        return item
    to_dict = getattr(item, "to_dict", None)
    if callable(to_dict):
        return to_dict()
    raise RulerUsageError("items", item, "each item must be a report item (a mapping) or an ItemResult.")


def _pool(items: Iterable[Any], parameter: str) -> dict[tuple[str, int, str], tuple[float, int]]:
    """``{(task, length, mode): (score %, total samples)}``, pooled over seeds."""
    sums: dict[tuple[str, int, str], list[float]] = {}
    for raw in items:
        item = _as_mapping(raw)
        problem = item_problem(item)
        if problem:
            raise RulerUsageError(parameter, dict(item), f"an item {problem}.")
        key = (item["task"], int(item["length"]), item.get("mode", "native"))
        acc = sums.setdefault(key, [0.0, 0, 0.0, 0])
        n = int(item["samples"])
        acc[0] += float(item["score"]) * n
        acc[1] += n
        acc[2] += float(item["score"])  # unweighted, for cells with no samples
        acc[3] += 1
    return {k: ((s / n) if n else (u / c), n) for k, (s, n, u, c) in sums.items()}


def _successes(score: float, n: int) -> int:
    return min(n, max(0, int(math.floor(score / 100.0 * n + 0.5))))


def _sort_key(key: tuple[str, int, str]) -> tuple:
    task, length, mode = key
    return (mode != "native", mode, task, length)


def _check_options(alpha: float, test: str, min_drop: float, correction: str) -> None:
    if not _is_number(alpha) or not 0.0 < float(alpha) < 1.0:
        raise RulerUsageError("--ruler-baseline-alpha", alpha, "the significance level must be in (0, 1), e.g. 0.05 or 0.01.")
    if test not in TESTS:
        raise RulerUsageError("--ruler-baseline-test", test, f"choose one of {', '.join(TESTS)}.")
    if correction not in CORRECTIONS:
        raise RulerUsageError("correction", correction, f"choose one of {', '.join(CORRECTIONS)}.")
    if not _is_number(min_drop) or not 0.0 <= float(min_drop) <= 100.0 or math.isnan(float(min_drop)):
        raise RulerUsageError("min_drop", min_drop, "give a score drop in points, in [0, 100] (0 = any significant drop).")


def compare(
    baseline_report: Mapping[str, Any],
    current_items: Iterable[Mapping[str, Any]],
    *,
    alpha: float = DEFAULT_ALPHA,
    test: str = "two-proportion-z",
    min_drop: float = 0.0,
    correction: str = "holm",
    paired: bool = True,
    margin: float | None = None,
) -> Comparisons:
    """Compare each (task, length, mode) cell of ``current_items`` with the baseline's.

    ``baseline_report`` is a report (from :func:`load_baseline`) or a report dict;
    ``current_items`` are report items (mappings) or ``ItemResult`` objects. Returns a
    :class:`Comparisons` list ordered native first, then by task and length; the cells
    present on one side only are in its ``not_compared`` attribute. ``paired=False``
    uses the unpaired test everywhere.
    """
    _check_options(alpha, test, min_drop, correction)
    base_items = [_as_mapping(i) for i in _items(baseline_report)]
    current_items = [_as_mapping(i) for i in current_items]
    base = _pool(base_items, "--ruler-baseline")
    cur = _pool(current_items, "items")
    base_q = question_scores(base_items) if paired else {}
    cur_q = question_scores(current_items) if paired else {}

    not_compared: list[NotCompared] = []
    keys: list[tuple[str, int, str]] = []
    for key in sorted(set(base) | set(cur), key=_sort_key):
        if key not in cur:
            not_compared.append(NotCompared(*key, reason="missing in current run"))
        elif key not in base:
            not_compared.append(NotCompared(*key, reason="missing in baseline"))
        elif base[key][1] == 0 or cur[key][1] == 0:
            not_compared.append(NotCompared(*key, reason="no samples"))
        else:
            keys.append(key)

    raw: list[tuple[float, bool, int, int, dict[str, Any]]] = []
    for key in keys:
        (bs, bn), (cs, cn) = base[key], cur[key]
        bx, cx = _successes(bs, bn), _successes(cs, cn)
        extra = _paired(base_q.get(key), cur_q.get(key))
        if "test" in extra:
            p, fallback = extra.pop("p_value"), False
        elif test == "fisher":
            p, fallback = fisher_exact_less(bx, bn, cx, cn), False
        else:
            p, fallback = two_proportion_z_less(bx, bn, cx, cn)
        raw.append((p, fallback, bx, cx, extra))

    adjusted = adjust([r[0] for r in raw], correction)
    if margin is not None:  # non-inferiority instead of a drop: the cells' own statuses (results.noninferiority)
        _noninferior(keys, base_q, cur_q, raw, float(margin), float(alpha), correction)
    out: list[Comparison] = []
    for key, (p, fallback, bx, cx, extra), adj in zip(keys, raw, adjusted):
        (bs, bn), (cs, cn) = base[key], cur[key]
        delta = cs - bs
        change = extra.get("effect", delta)  # paired: the change of the questions tested
        significant = adj < alpha and change < 0 and change <= -float(min_drop)
        if margin is not None:  # a failure is a refuted non-inferiority, not a drop
            significant = extra.get("noninferiority") == "refuted"
        out.append(Comparison(**{
            "task": key[0], "length": key[1], "mode": key[2],
            "baseline_score": bs, "current_score": cs, "baseline_n": bn, "current_n": cn,
            "delta": delta, "p_value": adj, "significant": significant,
            "test": "fisher" if (test == "fisher" or fallback) else test,
            "alpha": float(alpha), "raw_p_value": p, "correction": correction,
            "baseline_successes": bx, "current_successes": cx, "min_drop": float(min_drop),
            "exact_fallback": fallback, "cells": len(keys), **extra,
        }))
    return Comparisons(out, not_compared)


def _noninferior(keys: list[tuple[str, int, str]], base_q: Mapping[Any, Any], cur_q: Mapping[Any, Any], raw: list[Any],
                 margin: float, alpha: float, correction: str) -> None:
    """With a margin: each paired cell's non-inferiority test (Holm over the paired cells), into its
    Comparison fields (``raw``'s extras); an unpaired cell is not shown (the test needs the same questions)."""
    tests, where = [], []
    for n, key in enumerate(keys):
        b, c = paired_scores(base_q[key], cur_q[key]) if base_q.get(key) and cur_q.get(key) else ([], [])
        raw[n][4].update(margin=margin, noninferiority=NOT_SHOWN)
        if b:
            tests.append(noninferiority(b, c, margin, alpha))
            where.append(n)
    for n, (status, p_shown, p_refuted) in zip(where, decide(tests, alpha, correction)):
        raw[n][4].update(noninferiority=status, p_shown=p_shown, p_refuted=p_refuted)


def _paired(base: Mapping[str, float] | None, cur: Mapping[str, float] | None) -> dict[str, Any]:
    """The paired test's Comparison fields for one cell, or only a ``note`` (or nothing)
    when the cell falls back to the unpaired test."""
    if base is None or cur is None:
        return {}  # a side without per-sample hashes (an older report): unpaired, as before
    b, c = paired_scores(base, cur)
    if not b:
        return {"note": "unpaired: the runs share no question (another tokenizer or chat template?)"}
    r = paired_less(b, c)
    ci = None if r.ci_low is None else (r.ci_low, r.ci_high)
    return {"test": r.test, "p_value": r.p_value, "paired": r.n, "lost": r.lost, "gained": r.gained,
            "effect": r.mean_diff, "effect_ci": ci}
