"""Non-inferiority on paired scores: does an arm score at least the reference minus a margin?

    (reference scores, arm scores) of the same questions, margin D points
        ──noninferiority(reference, arm, margin)──► NonInferiority (both means, the mean paired difference and
          its 95 % interval, lost / gained questions, p_shown, p_refuted)
    [NonInferiority per cell], alpha ──decide(results, alpha, correction)──► per cell: "shown", "refuted" or "not shown"

The hypotheses, per cell, with ``d_i = arm_i - reference_i`` (scores in [0, 1], so ``d_i`` in [-1, 1]) and
``delta = D / 100``:

- shown: H0 ``mean(d) <= -delta`` (the arm is worse than the margin allows) against H1 ``mean(d) > -delta``;
  its p-value is ``p_shown``: non-inferiority is shown when H0 is rejected;
- refuted: H0' ``mean(d) >= -delta`` against H1' ``mean(d) < -delta``; ``p_refuted``: the arm is shown
  to be worse than the reference by more than the margin.

Both are one-sided tests of a bounded mean: ``x_i = (1 + d_i) / 2`` lies in [0, 1] and ``mean(d) > -delta``
exactly when ``mean(x) > (1 - delta) / 2``, which is :func:`~pytest_ruler.results.stats.bounded_mean_p`'s
betting test (Waudby-Smith & Ramdas 2024): valid at any sample size, for 0/1 and partial-credit scores
alike, with no normal approximation (a Wald or score test of paired proportions is liberal at the small
counts a CI run has: a size check at its boundary is ``tests/unit/results/test_noninferiority.py``). Its
p-value falls as D grows (the threshold falls, and the betting wealth decreases in it), so a larger margin
never undoes a shown non-inferiority. The interval is the same construction's two-sided 95 % interval
(``bounded_mean_interval``), mapped back to points.

``decide`` corrects each family (the ``p_shown`` of every cell, the ``p_refuted`` of every cell) over the
cells (Holm by default, ``stats.adjust``) and calls a cell refuted when its adjusted ``p_refuted < alpha``,
shown when its adjusted ``p_shown < alpha``, else not shown (more samples would decide it).

Public names: ``NonInferiority``, ``decide``, ``noninferiority``, ``SHOWN``, ``REFUTED``, ``NOT_SHOWN``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from ..errors import RulerUsageError
from .stats import adjust, bounded_mean_interval, bounded_mean_p

__all__ = ["NOT_SHOWN", "REFUTED", "SHOWN", "NonInferiority", "decide", "noninferiority"]

SHOWN, REFUTED, NOT_SHOWN = "shown", "refuted", "not shown"


@dataclass(frozen=True)
class NonInferiority:
    """One cell's paired comparison (points: 100 x the mean per-question score)."""

    n: int
    reference_score: float
    arm_score: float
    difference: float  # mean of arm - reference, points
    ci_low: float
    ci_high: float
    lost: int  # questions the arm scored lower on
    gained: int  # questions it scored higher on
    margin: float
    p_shown: float
    p_refuted: float


def _check(reference: Sequence[float], arm: Sequence[float], margin: float) -> None:
    if len(reference) != len(arm) or not reference:
        raise RulerUsageError("paired scores", (len(reference), len(arm)), "pass the same, non-zero number of scores on both sides.")
    if not isinstance(margin, (int, float)) or isinstance(margin, bool) or not 0.0 <= float(margin) < 100.0:
        raise RulerUsageError("--ruler-noninferiority-margin", margin, "give the margin in points, in [0, 100).")


def noninferiority(reference: Sequence[float], arm: Sequence[float], margin: float, alpha: float = 0.05) -> NonInferiority:
    """The paired non-inferiority test of ``arm`` against ``reference`` (scores in [0, 1] of the same
    questions, in the same order) at ``margin`` points (see the module docstring). ``alpha`` tunes the bets."""
    _check(reference, arm, margin)
    n = len(reference)
    delta = float(margin) / 100.0
    x = [min(1.0, max(0.0, (1.0 + float(a) - float(r)) / 2.0)) for r, a in zip(reference, arm)]
    p_shown = bounded_mean_p([x], (1.0 - delta) / 2.0, alpha=alpha)
    p_refuted = bounded_mean_p([[1.0 - v for v in x]], (1.0 + delta) / 2.0, alpha=alpha)
    low, high = bounded_mean_interval([x], 0.95)
    diffs = [float(a) - float(r) for r, a in zip(reference, arm)]
    return NonInferiority(
        n=n, reference_score=100.0 * math.fsum(reference) / n, arm_score=100.0 * math.fsum(arm) / n,
        difference=100.0 * math.fsum(diffs) / n, ci_low=100.0 * (2 * low - 1), ci_high=100.0 * (2 * high - 1),
        lost=sum(d < 0 for d in diffs), gained=sum(d > 0 for d in diffs), margin=float(margin),
        p_shown=p_shown, p_refuted=p_refuted)


def decide(results: Sequence[NonInferiority], alpha: float = 0.05, correction: str = "holm") -> list[tuple[str, float, float]]:
    """Per cell: (status, adjusted p_shown, adjusted p_refuted), each family corrected over the cells."""
    shown = adjust([r.p_shown for r in results], correction)
    refuted = adjust([r.p_refuted for r in results], correction)
    out = []
    for s, f in zip(shown, refuted):
        status = REFUTED if f < alpha else SHOWN if s < alpha else NOT_SHOWN
        out.append((status, s, f))
    return out
