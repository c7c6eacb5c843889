"""The statistics of ``--ruler-baseline``: one-sided tests of a drop, and the correction over cells.

    (baseline successes, n, current successes, n) ──two_proportion_z_less / fisher_exact_less──► p-value
    [p-values of all compared cells] ──adjust(p_values, correction)──► adjusted p-values

- ``"two-proportion-z"``: the pooled two-proportion z-test,
  ``z = (p_cur - p_base) / sqrt(p(1-p)(1/n_base + 1/n_cur))``, p-value ``Phi(z)``, no
  continuity correction. When any expected cell count ``n_i * p`` or ``n_i * (1 - p)``
  is below 5 the normal approximation is poor, and Fisher's exact test is used instead.
- ``"fisher"``: one-sided Fisher exact test on the 2×2 table of successes and
  failures, i.e. the lower tail of the hypergeometric distribution of the current
  run's successes given both margins. Exact integers (``math.comb``) for small tables,
  ``math.lgamma`` in log space for large ones; no scipy.
- Corrections: ``"holm"`` (Holm's step-down method: controls the family-wise error rate
  like Bonferroni, uniformly more powerful), ``"bonferroni"``, ``"none"``.

Per-sample statistics (scipy.stats, imported on first use):

    (baseline scores, current scores) of the same questions ──paired_less──► Paired
        0/1 scores: exact McNemar, one-sided (``binomtest`` of the lost questions among the
        discordant ones at 1/2); fractional: the sign-flip permutation test
        (``sign_flip_less``), or the sign test when every non-zero difference is the same
    scores of one cell, threshold ──mean_above_p──► p-value of "mean score > threshold"
        0/1 scores: exact ``binomtest`` (alternative "greater"); fractional: ``ttest_1samp``,
        or the binomial test on the rounded successes when the scores do not vary
    ``t_quantile`` / ``z_quantile``: Student-t and normal quantiles.

:mod:`pytest_ruler.results.baseline` turns cells into counts and calls these;
:mod:`pytest_ruler.results.paired` and :mod:`pytest_ruler.results.intervals` call the
per-sample ones.

Public names: ``CORRECTIONS``, ``TESTS``, ``Paired``, ``adjust``, ``fisher_exact_less``, ``is_binary``,
``mcnemar_exact_less``, ``mean_above_p``, ``paired_less``, ``t_quantile``, ``two_proportion_z_less``,
``z_quantile``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from ..errors import RulerUsageError

__all__ = ["CORRECTIONS", "TESTS", "Paired", "adjust", "fisher_exact_less", "is_binary", "mcnemar_exact_less",
           "mean_above_p", "paired_less", "t_quantile", "two_proportion_z_less", "z_quantile"]

TESTS = ("two-proportion-z", "fisher")
CORRECTIONS = ("holm", "bonferroni", "none")

# Expected cell counts below this make the z-test fall back to Fisher's exact test.
_MIN_EXPECTED = 5.0
# Above this table size the exact-integer Fisher sum switches to log space.
_EXACT_INT_LIMIT = 4000


def _norm_cdf(z: float) -> float:
    return 0.5 * math.erfc(-z / math.sqrt(2.0))


def _check_counts(x1: int, n1: int, x2: int, n2: int) -> None:
    for name, v in (("baseline successes", x1), ("baseline n", n1), ("current successes", x2), ("current n", n2)):
        if not isinstance(v, int) or isinstance(v, bool) or v < 0:
            raise RulerUsageError(name, v, "counts must be non-negative ints.")
    if x1 > n1 or x2 > n2:
        raise RulerUsageError("successes", (x1, n1, x2, n2), "successes cannot exceed the sample count.")
    if n1 == 0 or n2 == 0:
        raise RulerUsageError("n", (n1, n2), "both sides need at least one sample.")


def _clamp01(p: float) -> float:
    return min(1.0, max(0.0, p))


def fisher_exact_less(x1: int, n1: int, x2: int, n2: int) -> float:
    """One-sided Fisher exact p-value for "current proportion < baseline proportion".

    The 2×2 table is ``[[x1, n1 - x1], [x2, n2 - x2]]`` (baseline row, current row).
    Given the margins, the current successes follow a hypergeometric law; the p-value is
    ``P(X <= x2)``. (This equals scipy's ``fisher_exact(table, alternative="greater")``.)
    """
    _check_counts(x1, n1, x2, n2)
    N, K = n1 + n2, x1 + x2
    lo, hi = max(0, K - n1), min(K, n2)
    if x2 >= hi:
        return 1.0
    if N <= _EXACT_INT_LIMIT:
        total = math.comb(N, n2)
        weight = lambda k: math.comb(K, k) * math.comb(N - K, n2 - k)  # noqa: E731
        if x2 - lo <= hi - x2:
            tail = sum(weight(k) for k in range(lo, x2 + 1))
        else:  # fewer terms on the other side; exact integers, so no cancellation
            tail = total - sum(weight(k) for k in range(x2 + 1, hi + 1))
        return _clamp01(tail / total)
    # Large tables: log space. Sum the lower tail directly (its terms, not its
    # complement, so tiny p-values keep their precision).
    log_total = _log_comb(N, n2)
    logs = [_log_comb(K, k) + _log_comb(N - K, n2 - k) - log_total for k in range(lo, x2 + 1)]
    top = max(logs)
    return _clamp01(math.exp(top) * math.fsum(math.exp(v - top) for v in logs))


def _log_comb(n: int, k: int) -> float:
    return math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)


def two_proportion_z_less(x1: int, n1: int, x2: int, n2: int) -> tuple[float, bool]:
    """One-sided pooled two-proportion z-test for "current < baseline".

    Returns ``(p_value, exact_fallback)``: when an expected count is below 5 (or the
    pooled proportion is 0 or 1), the p-value is Fisher's exact one instead.
    """
    _check_counts(x1, n1, x2, n2)
    p = (x1 + x2) / (n1 + n2)
    expected = min(n1 * p, n1 * (1 - p), n2 * p, n2 * (1 - p))
    if expected < _MIN_EXPECTED:
        return fisher_exact_less(x1, n1, x2, n2), True
    se = math.sqrt(p * (1 - p) * (1 / n1 + 1 / n2))
    z = (x2 / n2 - x1 / n1) / se
    return _clamp01(_norm_cdf(z)), False


def adjust(p_values: list[float], correction: str) -> list[float]:
    """The p-values adjusted over all of them by ``correction`` (one of :data:`CORRECTIONS`)."""
    m = len(p_values)
    if correction == "none" or m <= 1:
        return list(p_values)
    if correction == "bonferroni":
        return [min(1.0, m * p) for p in p_values]
    # Holm step-down: sorted ascending, p_(i) * (m - i), made monotone by a running max.
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted


# --------------------------------------------------------------------------- per-sample scores (scipy)


def _st():
    from scipy import stats as st  # imported on first use: a run without per-sample scores never needs it

    return st


def is_binary(scores: Sequence[float]) -> bool:
    """Every score is 0 or 1 (RULER's ``string_match_part`` metric on one answer)."""
    return all(s == 0.0 or s == 1.0 for s in scores)


def z_quantile(q: float) -> float:
    """The standard normal quantile ``Phi^-1(q)``."""
    return float(_st().norm.ppf(q))


def t_quantile(q: float, df: int) -> float:
    """Student's t quantile with ``df`` degrees of freedom."""
    return float(_st().t.ppf(q, df))


def mcnemar_exact_less(lost: int, gained: int) -> float:
    """One-sided exact McNemar p-value for "the current run answers fewer questions right".

    ``lost`` questions were right in the baseline and wrong now, ``gained`` the reverse.
    Under no change each discordant question is lost or gained with probability 1/2, so
    the p-value is ``P(X >= lost)`` for ``X ~ Binomial(lost + gained, 1/2)``.
    """
    if lost < 0 or gained < 0:
        raise RulerUsageError("discordant counts", (lost, gained), "counts must be non-negative.")
    if lost + gained == 0:
        return 1.0
    return _clamp01(float(_st().binomtest(lost, lost + gained, 0.5, alternative="greater").pvalue))


@dataclass(frozen=True)
class Paired:
    """A paired one-sided test of "current < baseline" on the same questions.

    ``mean_diff`` is the mean of ``current - baseline`` per question, in points (the
    effect size), with its two-sided 95 % t interval (``None`` with under two pairs or
    no variance); ``lost`` / ``gained`` count the questions whose score fell / rose.
    """

    p_value: float
    test: str  # "mcnemar" | "sign-flip" | "sign"
    n: int
    lost: int
    gained: int
    mean_diff: float
    ci_low: float | None
    ci_high: float | None


def paired_less(baseline: Sequence[float], current: Sequence[float]) -> Paired:
    """One-sided paired test of a drop, question by question (see the module docstring)."""
    if len(baseline) != len(current) or not baseline:
        raise RulerUsageError("paired scores", (len(baseline), len(current)), "pass the same, non-zero number of scores on both sides.")
    diffs = [c - b for b, c in zip(baseline, current)]
    n = len(diffs)
    lost, gained = sum(d < 0 for d in diffs), sum(d > 0 for d in diffs)
    mean = math.fsum(diffs) / n
    sd = math.sqrt(math.fsum((d - mean) ** 2 for d in diffs) / (n - 1)) if n > 1 else 0.0
    low = high = None
    if n > 1 and sd > 0:
        half = t_quantile(0.975, n - 1) * sd / math.sqrt(n)
        low, high = 100 * (mean - half), 100 * (mean + half)
    if is_binary(baseline) and is_binary(current):
        p, test = mcnemar_exact_less(lost, gained), "mcnemar"
    elif sd > 0:
        p, test = sign_flip_less(diffs), "sign-flip"
    else:  # every difference equal: a t-test has no variance to work with; the sign test does
        p, test = mcnemar_exact_less(lost, gained), "sign"
    return Paired(p_value=p, test=test, n=n, lost=lost, gained=gained, mean_diff=100 * mean, ci_low=low, ci_high=high)


SIGN_FLIPS = 9999  # random sign patterns when exact enumeration is too large (2^16 patterns at most)


def sign_flip_less(diffs: Sequence[float], resamples: int = SIGN_FLIPS) -> float:
    """One-sided p-value that the mean paired difference is below 0, by sign flipping.

    Under "no change" each question's difference is as likely to be +d as -d (two runs
    of the same model are exchangeable), so the observed sum is compared with the sums
    under every sign pattern: all 2^m patterns of the m non-zero differences when m <= 16,
    else ``resamples`` random patterns from a fixed seed, counted with the observed one
    ((1 + hits) / (1 + resamples)), which keeps the test valid at any sample size. The
    paired t-test it replaces was measured liberal on partial-credit scores (A/A false
    alarms 0.053-0.058 at alpha 0.05, n = 500; bench/stats_calibration.py); scipy's
    ``permutation_test`` does the same computation about 200x slower.
    """
    import numpy as np

    d = np.asarray([x for x in diffs if x != 0], dtype=float)
    if d.size == 0:
        return 1.0
    bound = d.sum() + 1e-12 * max(1.0, float(abs(d).sum()))  # sums equal to the observed one count as extreme
    if d.size <= 16:
        patterns = ((np.arange(2 ** d.size)[:, None] >> np.arange(d.size)) & 1) * 2 - 1
        return _clamp01(float(np.mean(patterns @ d <= bound)))
    rng = np.random.default_rng(20241)
    hits = 0
    for start in range(0, resamples, 2000):
        signs = rng.integers(0, 2, size=(min(2000, resamples - start), d.size)) * 2 - 1
        hits += int(np.count_nonzero(signs @ d <= bound))
    return _clamp01((1 + hits) / (1 + resamples))


def mean_above_p(scores: Sequence[float], threshold: float) -> float:
    """One-sided p-value of "the mean per-sample score exceeds ``threshold``" (both in [0, 1]).

    0/1 scores: the exact binomial test. Fractional scores: the one-sample t-test; when
    they do not vary, the binomial test on ``round(n * mean)`` successes (partial credit
    has at most a 0/1 score's variance, so this errs on the side of not rejecting).
    No scores: 1.0 (no evidence).
    """
    n = len(scores)
    if n == 0 or threshold >= 1.0:
        return 1.0
    threshold = max(0.0, threshold)
    mean = math.fsum(scores) / n
    varies = n > 1 and any(s != scores[0] for s in scores)
    if not is_binary(scores) and varies:
        return _clamp01(float(_st().ttest_1samp(scores, threshold, alternative="greater").pvalue))
    x = min(n, max(0, int(math.floor(mean * n + 0.5))))
    return _clamp01(float(_st().binomtest(x, n, threshold, alternative="greater").pvalue))
