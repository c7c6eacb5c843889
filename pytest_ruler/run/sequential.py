"""Sequential early stopping (``--ruler-sequential``): stop an item once its verdict is clear.

An item's per-sample scores ``x_1, x_2, ...`` lie in [0, 1]; the item passes when
their mean reaches ``p0`` (the threshold / 100). Two one-sided tests run side by
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

Batches: scores arrive one engine call at a time (``batch_size``); the bets inside
a batch use only scores from earlier batches and earlier samples of the same
batch, in sample order, so the result does not depend on how samples were batched.

Public names: ``ALPHA``, ``SequentialTest``, ``batch_size``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Iterable

__all__ = ["ALPHA", "CLIP", "SequentialTest", "batch_size"]

ALPHA = 0.05  # the chance of a wrong early verdict, both sides together
CLIP = 0.8  # a bet never risks more than 80 % of the current wealth


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
        """Add scores in sample order; return "pass" or "fail" once the verdict is clear."""
        bound = math.log(2 / self.alpha)
        for x in scores:
            if self.decision is not None:
                break
            up, down = self._bets()
            self.log_pass += math.log1p(up * (x - self.p0))
            self.log_fail += math.log1p(down * (self.p0 - x))
            self.n += 1
            self.total += x
            self.squares += x * x
            if self.log_pass >= bound:
                self.decision = "pass"
            elif self.log_fail >= bound:
                self.decision = "fail"
        return self.decision

    def reason(self, planned: int, used: int | None = None) -> str:
        """Why the item stopped early, in words, for the result and the report (``used``: samples
        answered, whole batches, which can be more than the ``n`` the verdict needed)."""
        side = "above" if self.decision == "pass" else "below"
        used = self.n if used is None else used
        return (f"sequential: the score is {side} the threshold {100 * self.p0:g} with {100 * (1 - self.alpha):g}% "
                f"anytime-valid confidence after {self.n} samples ({used} of {planned} answered; betting test, "
                f"evidence {math.exp(max(self.log_pass, self.log_fail)):.0f} >= {2 / self.alpha:g})")
