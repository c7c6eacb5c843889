"""The paired non-inferiority test (results.noninferiority): its size at the boundary by simulation,
monotone in the margin, and what it decides on clear cases."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_ruler.errors import RulerUsageError
from pytest_ruler.results.noninferiority import NOT_SHOWN, REFUTED, SHOWN, decide, noninferiority

ALPHA = 0.05


def _boundary_pairs(rng, n: int, delta: float, gained: float, partial: bool):
    """Paired scores whose true mean difference (arm - reference) is exactly -delta."""
    u = rng.random(n)
    lost_p = gained + delta
    ref = np.where(u < lost_p, 1.0, np.where(u < lost_p + gained, 0.0, rng.integers(0, 2, n).astype(float)))
    arm = np.where(u < lost_p, 0.0, np.where(u < lost_p + gained, 1.0, ref))
    if partial:  # partial credit: both scores of a question scaled by one factor f (E[f] = 0.625 scales the difference)
        f = rng.choice([0.25, 0.5, 0.75, 1.0], n)
        ref, arm = ref * f, arm * f
    return list(ref), list(arm)


@pytest.mark.parametrize("partial", [False, True], ids=["binary", "partial"])
def test_size_at_the_boundary_is_at_most_alpha(partial):
    """Under H0 at its boundary (true difference = -margin), 'shown' comes out at most alpha of the time
    (plus the Monte Carlo error): 400 simulated cells of 40 pairs, fixed seed."""
    rng = np.random.default_rng(39)
    sims, n, margin = 400, 40, 10.0
    # partial credit scales the difference by E[f] = 0.625: simulate -margin/0.625 so the true difference is -margin
    delta = margin / 100.0 / (0.625 if partial else 1.0)
    shown = 0
    for _ in range(sims):
        ref, arm = _boundary_pairs(rng, n, delta, gained=0.05, partial=partial)
        shown += noninferiority(ref, arm, margin, ALPHA).p_shown < ALPHA
    rate = shown / sims
    mc = math.sqrt(ALPHA * (1 - ALPHA) / sims)
    assert rate <= ALPHA + 2 * mc, f"size {rate:.3f} > {ALPHA} + 2 x {mc:.3f}"


def test_refuted_size_at_the_boundary_is_at_most_alpha():
    rng = np.random.default_rng(40)
    sims, n, margin = 400, 40, 10.0
    refuted = sum(noninferiority(*_boundary_pairs(rng, n, margin / 100.0, 0.05, False), margin, ALPHA).p_refuted < ALPHA
                  for _ in range(sims))
    assert refuted / sims <= ALPHA + 2 * math.sqrt(ALPHA * (1 - ALPHA) / sims)


scores = st.lists(st.sampled_from([0.0, 0.25, 0.5, 0.75, 1.0]), min_size=1, max_size=30)


@settings(max_examples=40, deadline=None)
@given(data=st.data(), d1=st.floats(0, 99), d2=st.floats(0, 99))
def test_monotone_in_the_margin(data, d1, d2):
    ref = data.draw(scores)
    arm = data.draw(st.lists(st.sampled_from([0.0, 0.25, 0.5, 0.75, 1.0]), min_size=len(ref), max_size=len(ref)))
    small, large = sorted((d1, d2))
    a, b = noninferiority(ref, arm, small), noninferiority(ref, arm, large)
    assert b.p_shown <= a.p_shown + 1e-9  # a wider margin is easier to show
    assert b.p_refuted >= a.p_refuted - 1e-9  # and harder to refute
    assert a.difference == b.difference and a.ci_low <= a.difference + 1e-9 <= a.ci_high + 2e-9


@settings(max_examples=30, deadline=None)
@given(ref=scores)
def test_identical_arms_are_never_refuted_and_have_no_flips(ref):
    r = noninferiority(ref, list(ref), 5.0)
    assert r.difference == 0 and r.lost == r.gained == 0
    assert r.p_refuted >= ALPHA


def test_identical_arms_show_noninferiority_with_enough_pairs():
    ref = [1.0, 0.0] * 25
    assert noninferiority(ref, ref, 10.0).p_shown < ALPHA / 2


def test_an_arm_that_loses_every_question_is_refuted():
    r = noninferiority([1.0] * 20, [0.0] * 20, 10.0)
    assert r.p_refuted < 0.01 and r.p_shown == 1.0 and r.lost == 20 and r.difference == -100.0
    assert r.ci_high < -10


def test_decide_uses_holm_over_the_cells():
    good = noninferiority([1.0, 0.0] * 50, [1.0, 0.0] * 50, 10.0)
    bad = noninferiority([1.0] * 20, [0.0] * 20, 10.0)
    few = noninferiority([1.0] * 3, [1.0] * 3, 10.0)
    statuses = [s for s, _, _ in decide([good, bad, few])]
    assert statuses == [SHOWN, REFUTED, NOT_SHOWN]
    (_, p_alone, _), = decide([good])
    (_, p_holm, _), _, _ = decide([good, bad, few])
    assert p_holm >= p_alone


@pytest.mark.parametrize("margin", [-1, 100, float("nan"), True])
def test_a_bad_margin_is_refused(margin):
    with pytest.raises(RulerUsageError):
        noninferiority([1.0], [1.0], margin)
