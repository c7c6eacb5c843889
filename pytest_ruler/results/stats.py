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

:mod:`pytest_ruler.results.baseline` turns cells into counts and calls these.

Public names: ``CORRECTIONS``, ``TESTS``, ``adjust``, ``fisher_exact_less``, ``two_proportion_z_less``.
"""

from __future__ import annotations

import math

from ..errors import RulerUsageError

__all__ = ["CORRECTIONS", "TESTS", "adjust", "fisher_exact_less", "two_proportion_z_less"]

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
