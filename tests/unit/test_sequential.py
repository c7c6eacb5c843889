"""Sequential early stopping (run/sequential.py): betting martingales over seeded Bernoulli streams."""

from __future__ import annotations

import random

import pytest

from pytest_ruler.run.sequential import ALPHA, SequentialTest, batch_size


def stream(p: float, n: int, seed: int) -> list[float]:
    rng = random.Random(seed)
    return [1.0 if rng.random() < p else 0.0 for _ in range(n)]


def test_a_model_that_fails_everything_is_stopped_after_a_few_samples():
    test = SequentialTest(0.856)
    assert test.update([0.0] * 20) == "fail"
    assert test.n <= 8  # the growth-optimal bet doubles the evidence per wrong answer: 1 + 6 samples
    assert "below the threshold 85.6" in test.reason(20)


def test_clear_passes_and_failures_stop_well_before_the_end():
    for seed in range(20):
        low = SequentialTest(0.856)
        assert low.update(stream(0.3, 500, seed)) == "fail" and low.n < 30
        high = SequentialTest(0.856)
        assert high.update(stream(0.995, 500, seed)) == "pass" and high.n < 200


def test_no_bet_before_the_first_score_and_no_decision_on_an_even_stream():
    test = SequentialTest(0.5)
    assert test.update([1.0, 0.0] * 50) is None  # a mean exactly at the threshold: never decided
    assert test.n == 100


def test_at_the_threshold_a_wrong_early_verdict_is_rare():
    """Both nulls hold when the true mean equals p0: any decision is an error (goal <= ALPHA)."""
    runs = 400
    decided = sum(SequentialTest(0.856).update(stream(0.856, 300, seed)) is not None for seed in range(runs))
    assert decided / runs <= ALPHA + 0.03


@pytest.mark.parametrize("size", [1, 4, 7, 64])
def test_the_verdict_does_not_depend_on_the_batching(size):
    scores = stream(0.6, 200, 7)
    whole = SequentialTest(0.856)
    whole.update(scores)
    parts = SequentialTest(0.856)
    for i in range(0, len(scores), size):
        if parts.update(scores[i:i + size]):
            break
    assert (parts.decision, parts.n) == (whole.decision, whole.n)


def test_batch_size_is_a_tenth_of_the_item_within_bounds():
    assert [batch_size(n) for n in (2, 20, 100, 500, 5000)] == [4, 4, 10, 50, 64]
