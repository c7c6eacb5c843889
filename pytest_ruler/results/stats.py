"""The statistics of ``--ruler-baseline``: one-sided tests of a drop, and the correction over cells.

    (baseline successes, n, current successes, n) ──two_proportion_z_less / fisher_exact_less──► p-value
    [p-values of all compared cells] ──adjust(p_values, correction)──► adjusted p-values

- ``"two-proportion-z"``: the pooled two-proportion z-test,
  ``z = (p_cur - p_base) / sqrt(p(1-p)(1/n_base + 1/n_cur))``, p-value ``Phi(z)``, no
  continuity correction. When any expected cell count ``n_i * p`` or ``n_i * (1 - p)``
  is below 5 the normal approximation is poor, and Fisher's exact test is used instead.
- ``"fisher"``: one-sided Fisher exact test on the 2×2 table of successes and
  failures, i.e. the lower tail of the hypergeometric distribution of the current
  run's successes given both margins: ``scipy.stats.fisher_exact``; the z-test's normal
  CDF is ``scipy.stats.norm`` (issue 21: they replace hand-written versions).
- Corrections: ``"holm"`` (Holm's step-down method: controls the family-wise error rate
  like Bonferroni, uniformly more powerful), ``"bonferroni"``, ``"none"``.

Per-sample statistics (scipy.stats, imported on first use):

    (baseline scores, current scores) of the same questions ──paired_less──► Paired
        0/1 scores: exact McNemar, one-sided (``binomtest`` of the lost questions among the
        discordant ones at 1/2); fractional: the sign-flip permutation test
        (``sign_flip_less``), or the sign test when every non-zero difference is the same
    scores of one cell, threshold ──mean_above_p──► p-value of "mean score > threshold"
        0/1 scores: exact ``binomtest`` (alternative "greater"); fractional: ``bounded_mean_p``
    0/1 counts ──clopper_pearson──► the exact binomial interval (a 0/1 cell's ``ci95``)
    strata of scores in [0, 1], weights ──bounded_mean_p / bounded_mean_interval──► p-value /
        interval of the weighted mean of the strata's means, by betting (Waudby-Smith & Ramdas,
        "Estimating means of bounded random variables by betting", JRSS-B 2024), valid at any
        n: a partial-credit cell (one stratum) or a Total, Avg, wAvg (one stratum per cell)
    ``t_quantile`` / ``z_quantile``: Student-t and normal quantiles.

    ``round_mean_p``: the same hypothesis, betting on each round's weighted mean (``intervals.drop_p``)
:mod:`.baseline` turns cells into counts and calls these; :mod:`.paired`, :mod:`.intervals` the rest.

Public names: ``BET_CLIP``, ``CORRECTIONS``, ``ORDERS``, ``TESTS``, ``Paired``, ``adjust``,
``bounded_mean_interval``, ``bounded_mean_p``, ``clopper_pearson``, ``fisher_exact_less``, ``is_binary``,
``mcnemar_exact_less``, ``mean_above_p``, ``paired_less``, ``round_mean_p``, ``sign_flip_less``, ``t_quantile``,
``two_proportion_z_less``, ``z_quantile``.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass

from ..errors import RulerUsageError

__all__ = ["BET_CLIP", "CORRECTIONS", "ORDERS", "TESTS", "Paired", "adjust", "bounded_mean_interval", "bounded_mean_p",
           "clopper_pearson", "fisher_exact_less", "is_binary", "mcnemar_exact_less", "mean_above_p", "paired_less", "round_mean_p",
           "sign_flip_less", "t_quantile", "two_proportion_z_less", "z_quantile"]

TESTS = ("two-proportion-z", "fisher")
CORRECTIONS = ("holm", "bonferroni", "none")

# Expected cell counts below this make the z-test fall back to Fisher's exact test.
_MIN_EXPECTED = 5.0


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
    ``P(X <= x2)``: scipy's ``fisher_exact(table, alternative="greater")``.
    """
    _check_counts(x1, n1, x2, n2)
    table = [[x1, n1 - x1], [x2, n2 - x2]]
    return _clamp01(float(_st().fisher_exact(table, alternative="greater").pvalue))


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
    return _clamp01(float(_st().norm.cdf(z))), False


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

    0/1 scores: the exact binomial test. Fractional scores: the betting test of
    :func:`bounded_mean_p` (valid for any scores in [0, 1] at any n; the one-sample t-test
    it replaces was measured liberal on left-skewed partial credit: size 0.104 at n = 20,
    0.073 at n = 100, nominal 0.05). No scores: 1.0 (no evidence).
    """
    n = len(scores)
    if n == 0 or threshold >= 1.0:
        return 1.0
    threshold = max(0.0, threshold)
    if is_binary(scores):
        x = int(round(math.fsum(scores)))
        return _clamp01(float(_st().binomtest(x, n, threshold, alternative="greater").pvalue))
    return bounded_mean_p([scores], threshold)


@functools.lru_cache(maxsize=4096)  # one (x, n) per cell size and count: a large report repeats them
def clopper_pearson(x: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """The Clopper–Pearson ("exact") two-sided interval of a binomial proportion: the beta
    quantiles ``B(a/2; x, n-x+1)`` and ``B(1-a/2; x+1, n-x)``, 0 and 1 at the ends. Its
    coverage is at least ``level`` at every p and n (the Wilson interval it replaces covers
    0.905 at p = 0.995, n = 20: 20/20 covers it, 19/20's upper end 0.991 does not)."""
    a = 1.0 - level
    beta = _st().beta
    low = 0.0 if x == 0 else float(beta.ppf(a / 2, x, n - x + 1))
    high = 1.0 if x == n else float(beta.ppf(1 - a / 2, x + 1, n - x))
    return low, high


# --------------------------------------------------------------------------- betting (bounded means)

BET_CLIP = 0.75  # a bet never stakes more than 75 % of the wealth a score of 0 (or 1) would cost
ORDERS = 16  # pseudo-random sample orders averaged over, each a shuffle of the canonical (sorted) order
_SEED = 20250  # the orders' seed: they depend on the strata's sizes only, never on the samples' order
_GRID = 17  # candidate means per refinement of an interval's end; three refinements: 1/4096 resolution
_CELLS = 2_000_000  # values in one temporary of the wealth computation (memory stays ~100 MB at any n)


def _rounds(strata: Sequence[Sequence[float]], weights: Sequence[float] | None):
    """(Y, e): Y[b, i, j] the mean of stratum j's i-th group (``G = min n_j`` groups of consecutive
    samples) in order ``b``, a fixed-seed shuffle of the stratum's sorted samples, so every p-value
    and interval depends only on each stratum's multiset (issue 38: 50 ones then 50 zeros gave
    [0.487, 0.634], shuffled [0.365, 0.633]); e[j] = w_j / max(w)."""
    import numpy as np

    g = min(len(s) for s in strata)
    rng = np.random.default_rng(_SEED)
    cols = []
    for s in strata:
        canonical = np.clip(np.sort(np.asarray(s, dtype=float)), 0.0, 1.0)
        shuffled = rng.permuted(np.broadcast_to(canonical, (ORDERS, canonical.size)), axis=1)
        cols.append(_group_means(shuffled, g))
    w = np.ones(len(strata)) if weights is None else np.asarray(weights, dtype=float)
    return np.stack(cols, axis=2), w / w.max()


def _group_means(scores, g: int):
    """Per row of ``scores`` (orders × samples): the means of ``g`` groups of consecutive samples
    (``np.array_split``'s groups: the first ``n mod g`` one larger); ``g = n``: the samples themselves."""
    import numpy as np

    n = scores.shape[-1]
    if n == g:
        return scores.copy()
    size, extra = divmod(n, g)
    sizes = np.full(g, size)
    sizes[:extra] += 1
    starts = np.concatenate([[0], np.cumsum(sizes[:-1])])
    return np.add.reduceat(scores, starts, axis=-1) / sizes


def _bets(y, e, alpha: float):
    """The predictable plug-in bet of each round of each order (Waudby-Smith & Ramdas 2024,
    eq. 26, tuned for the fixed number N of pooled values): ``sqrt(2 log(1/alpha) / (N s2))``,
    ``s2`` the e-weighted mean square deviation of the earlier rounds' values, shrunk towards 1/4."""
    import numpy as np

    _, rounds, _ = y.shape
    per = float(e.sum())  # weighted values per round
    zero = np.zeros((y.shape[0], 1))
    sums = np.concatenate([zero, np.cumsum((y * e).sum(axis=2), axis=1)], axis=1)[:, :-1]
    squares = np.concatenate([zero, np.cumsum((y * y * e).sum(axis=2), axis=1)], axis=1)[:, :-1]
    seen = np.arange(rounds)[None, :] * per
    mean = (0.5 + sums) / (1.0 + seen)
    var = (0.25 + np.maximum(squares - 2 * mean * sums + mean * mean * seen, 0.0)) / (1.0 + seen)
    return np.sqrt(2.0 * math.log(1.0 / alpha) / (rounds * per * var))


def _weighed(y, e):
    """(points, weights) the wealth is summed over: every round's values and the strata's exponents
    ``e``, or, when the values take fewer distinct levels than there are strata (0/1 scores), each
    level once with the summed exponents of the strata at it (the same sum, ``k / levels`` times fewer terms)."""
    import numpy as np

    levels = np.unique(y)
    if len(levels) < y.shape[-1]:
        return levels, np.stack([(e * (y == v)).sum(axis=2) for v in levels], axis=-1)  # (levels,), (orders, rounds, levels)
    return y, np.broadcast_to(e, y.shape)


def _log_wealth(weighed, lam, m, side: int):
    """``log mean_b K_n^b(m)`` for each candidate mean ``m`` (array), ``K^b`` the wealth after
    every round of order ``b``: side +1 bets on a mean above m (factors ``(1 + l (y - m))^e``),
    side -1 below it (``(1 - l (y - m))^e``); ``weighed`` is :func:`_weighed`'s. Computed a few
    means at a time, so its temporaries stay near ``_CELLS`` values at any sample size."""
    import numpy as np

    points, per = weighed
    m = np.asarray(m, dtype=float)
    chunk = max(1, _CELLS // max(1, lam.size * points.shape[-1]))
    return np.concatenate([_log_wealth_at(points, per, lam, m[i:i + chunk], side) for i in range(0, len(m), chunk)])


def _log_wealth_at(points, per, lam, m, side: int):
    import numpy as np

    m = m[:, None, None]
    room = m if side > 0 else 1.0 - m
    cap = np.where(room > 0, BET_CLIP / np.maximum(room, 1e-300), np.inf)
    bet = np.minimum(lam[None, :, :], cap)  # (M, orders, rounds)
    dev = side * (points[None, ...] - m[..., None])  # (M, orders, rounds, k), or (M, 1, 1, levels)
    logs = (per * np.log1p(bet[..., None] * dev)).sum(axis=(2, 3))  # (M, orders)
    top = logs.max(axis=1)
    return top + np.log(np.exp(logs - top[:, None]).mean(axis=1))


def bounded_mean_p(strata: Sequence[Sequence[float]], threshold: float, weights: Sequence[float] | None = None,
                   alpha: float = 0.05) -> float:
    """One-sided p-value of "the weighted mean of the strata's true means exceeds ``threshold``",
    for independent scores in [0, 1]: ``1 / K`` for the betting e-value ``K`` below.

    The construction (testing by betting; Waudby-Smith & Ramdas, JRSS-B 2024). Each stratum
    (a task's cell) is cut into ``G`` groups; round ``i`` holds group ``i`` of every stratum,
    ``Y_ij`` in [0, 1] with mean ``mu_j``. The wealth grows by ``F_i = prod_j (1 + l_i (Y_ij -
    m))^(e_j)`` per round, with one bet ``l_i`` in ``[0, BET_CLIP / m]`` for the whole round,
    computed from earlier rounds only (``alpha`` tunes it). Under H0, ``sum w_j mu_j / sum w_j
    <= m``: ``E[F_i | past] <= prod_j (1 + l (mu_j - m))^(e_j)`` (Jensen, ``e_j <= 1``) ``<= (1 +
    l (mean_e(mu) - m))^(sum e) <= 1`` (weighted AM–GM), so the final wealth ``K_n`` has
    ``E[K_n] <= 1``. Order-free (issue 38): ``K`` averages the wealths of ``ORDERS`` shuffles of each
    stratum's sorted samples. Valid: i.i.d. samples are exchangeable, so a uniform random permutation
    of their sorted values has their own order's law, and ``E[K] <= 1`` under H0; the fixed-seed
    shuffles stand in for such permutations (as sign_flip_less's patterns do); coverage is checked by
    simulation (bench/stats_calibration.py, ``issue38.order_free``). Markov's inequality gives ``P(K >= 1/a) <= a`` for every ``a``: the p-value is valid at
    any n, for any mix of 0/1 and partial-credit strata, and it uses the independence of
    the tasks (each perfect answer of each task adds evidence, where a z-test on a 0
    variance claims certainty and a test on round means alone would need ~20 perfect rounds).
    """
    if not strata or any(len(s) == 0 for s in strata) or threshold >= 1.0:
        return 1.0
    y, e = _rounds(strata, weights)
    lam = _bets(y, e, alpha)
    top = float(_log_wealth(_weighed(y, e), lam, [max(0.0, threshold)], +1)[0])
    return _clamp01(math.exp(-top))


def round_mean_p(strata: Sequence[Sequence[float]], threshold: float, weights: Sequence[float] | None = None,
                 alpha: float = 0.05) -> float:
    """:func:`bounded_mean_p`'s hypothesis, by betting on each round's weighted mean ``Z_i = sum_j w_j
    Y_ij / sum_j w_j`` (``E[Z_i | past] <= threshold`` under H0: no inequality spent on the strata).
    For strata whose means are far apart (``intervals.drop_p``), where per-stratum factors lose
    to Jensen's gap (two perfect cells give them nothing to grow on)."""
    import numpy as np

    if not strata or any(len(s) == 0 for s in strata) or threshold >= 1.0:
        return 1.0
    y, e = _rounds(strata, weights)
    z = (y * e).sum(axis=2, keepdims=True) / e.sum()
    one = np.ones(1)
    lam = _bets(z, one, alpha)
    top = float(_log_wealth(_weighed(z, one), lam, [max(0.0, threshold)], +1)[0])
    return _clamp01(math.exp(-top))


def bounded_mean_interval(strata: Sequence[Sequence[float]], level: float = 0.95,
                          weights: Sequence[float] | None = None) -> tuple[float, float]:
    """Two-sided ``level`` confidence interval, in [0, 1], of the weighted mean of the strata's
    true means (scores in [0, 1]): the means ``m`` that neither one-sided betting test of
    :func:`bounded_mean_p` (above m, below m; ``(1 - level) / 2`` each) rejects.

    Each side's wealth decreases in ``m`` on its own side, so the set is an interval; its ends
    are found on a grid of ``_GRID`` means refined three times, and rounded outwards (a wider set
    keeps the level). It never has zero width for a finite sample: ``n`` equal scores of 0.75
    give an interval about 0.75, not the point. A single stratum is the hedged betting
    interval of Waudby-Smith & Ramdas for a bounded mean, at fixed n.
    """
    import numpy as np

    y, e = _rounds(strata, weights)
    a = (1.0 - level) / 2
    lam = _bets(y, e, a)
    weighed = _weighed(y, e)
    bar = math.log(1.0 / a)

    def edge(side: int) -> float:
        # side +1: the lower end, the largest m rejected by the "above m" test
        lo, hi = 0.0, 1.0
        for _ in range(3):
            grid = np.linspace(lo, hi, _GRID)
            rejected = _log_wealth(weighed, lam, grid, side) >= bar
            if side > 0:
                idx = np.flatnonzero(rejected)  # a prefix of the grid
                if idx.size == 0:
                    return lo
                i = int(idx.max())
                if i == _GRID - 1:
                    return hi
                lo, hi = float(grid[i]), float(grid[i + 1])
            else:
                idx = np.flatnonzero(rejected)  # a suffix of the grid
                if idx.size == 0:
                    return hi
                i = int(idx.min())
                if i == 0:
                    return lo
                lo, hi = float(grid[i - 1]), float(grid[i])
        return lo if side > 0 else hi

    return edge(+1), edge(-1)
