"""Sequential early stopping (``--ruler-sequential``): stop an item once its verdict is clear.

An item's per-sample scores ``x_1, x_2, ...`` lie in [0, 1]; the item passes when
their mean is above ``p0`` (the threshold / 100; the one pass rule, results.aggregate.passes). Two one-sided tests run side by
side over the samples as they arrive, each a *testing-by-betting* martingale
(Waudby-Smith & Ramdas, "Estimating means of bounded random variables by
betting", JRSS-B 2024; Ville's inequality)::

    pass side, H0: mean <= p0:   K+_t = prod_{i<=t} (1 + l+_i (x_i - p0))
    fail side, H0: mean >= p0:   K-_t = prod_{i<=t} (1 + l-_i (p0 - x_i))

Each bet ``l_i`` is *predictable* (computed from ``x_1 .. x_{i-1}`` only: the
aGRAPA rule, a plug-in of the growth-optimal bet, ``(m - p0) / (v + (m - p0)^2)``
with the running mean ``m`` and variance ``v``; no bet before the first score) and
clipped so that a factor never goes below ``1 - CLIP``. Under H0 each ``K`` is a non-negative supermartingale, so
``P(sup_t K_t >= 2 / alpha) <= alpha / 2`` (Ville): stopping the first time either
side reaches ``2 / alpha`` decides wrongly with probability at most ``alpha``, at
whatever sample the run stops — an anytime-valid guarantee, unlike peeking at a
fixed-sample test. When neither side decides, the item runs to ``--ruler-samples``
and is graded as usual.

Batches, and what the verdict rests on (issue 19): scores arrive one engine call at a
time (``batch_size``), and every sample of a batch is graded. So the martingales take
*every* score of the batch (the bets inside it still use only earlier scores, in sample
order: the wealth after a given set of samples does not depend on the batching), and
the verdict is looked at only at the end of a batch, on all the samples answered so far:
the samples the item is graded on are exactly the ones the verdict rests on (before,
the item stopped "below 85.6 after 9 samples" while its 50 graded samples scored 86.0
and passed). Still valid: the batch ends are fixed in advance, so checking only there
is a stopping time of the same supermartingales, and ``P(K >= 2/alpha at some batch
end) <= P(sup_t K_t >= 2/alpha) <= alpha / 2``. A verdict also needs the graded mean on
its side ("pass": the mean of the samples so far at or above ``p0``, "fail": below it):
this only removes stops, so it keeps the guarantee, and a stopped item's grade always
agrees with its verdict.

Public names: ``ALPHA``, ``SequentialTest``, ``batch_size``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Iterable

__all__ = ["ALPHA", "CLIP", "SequentialTest", "batch_size"]

ALPHA = 0.05  # the chance of a wrong early verdict, both sides together
CLIP = 0.8  # a bet never risks more than 80 % of the current wealth
_TIE = 1e-9  # the graded score is computed apart from this mean: keep clear of a float tie at p0


def batch_size(samples: int) -> int:
    """Samples per engine call in a sequential item: a tenth of the item, at least 4."""
    return max(4, min(64, math.ceil(samples / 10)))


@dataclass
class SequentialTest:
    """The two betting martingales of one item (see the module docstring)."""

    p0: float  # the threshold as a mean score in [0, 1]
    alpha: float = ALPHA
    n: int = 0
    total: float = 0.0
    squares: float = 0.0
    log_pass: float = 0.0  # log K+
    log_fail: float = 0.0  # log K-
    decision: str | None = field(default=None)  # "pass" | "fail" once decided

    def _bets(self) -> tuple[float, float]:
        if not self.n:
            return 0.0, 0.0
        mean = self.total / self.n
        var = max(self.squares / self.n - mean * mean, 0.0)
        gap = mean - self.p0
        raw = gap / (var + gap * gap) if var + gap * gap > 0 else 0.0
        up = min(max(raw, 0.0), CLIP / self.p0) if self.p0 > 0 else 0.0
        down = min(max(-raw, 0.0), CLIP / (1 - self.p0)) if self.p0 < 1 else 0.0
        return up, down

    def update(self, scores: Iterable[float]) -> str | None:
        """Add one batch of scores, in sample order, all of them; at its end, return "pass" or
        "fail" once the verdict is clear on the samples so far (None while it is not)."""
        if self.decision is not None:
            return self.decision
        for x in scores:
            up, down = self._bets()
            self.log_pass += math.log1p(up * (x - self.p0))
            self.log_fail += math.log1p(down * (self.p0 - x))
            self.n += 1
            self.total += x
            self.squares += x * x
        bound = math.log(2 / self.alpha)
        mean = self.total / self.n if self.n else self.p0
        if self.log_pass >= bound and mean >= self.p0 + _TIE:
            self.decision = "pass"
        elif self.log_fail >= bound and mean < self.p0 - _TIE:
            self.decision = "fail"
        return self.decision

    def reason(self, planned: int, used: int | None = None) -> str:
        """Why the item stopped early, in words, for the result and the report (``used``: samples
        answered; the verdict is taken on all of them, so it is ``n`` in the runner)."""
        side = "above" if self.decision == "pass" else "below"
        used = self.n if used is None else used
        evidence = math.exp(self.log_pass if self.decision == "pass" else self.log_fail)
        return (f"sequential: the score is {side} the threshold {100 * self.p0:g} with {100 * (1 - self.alpha):g}% "
                f"anytime-valid confidence after {self.n} samples ({used} of {planned} answered and graded; "
                f"betting test, evidence {evidence:.0f} >= {2 / self.alpha:g})")
