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
    for _ in range(20):  # one sample per batch
        if test.update([0.0]):
            break
    assert test.decision == "fail"
    assert test.n <= 8  # the growth-optimal bet doubles the evidence per wrong answer: 1 + 6 samples
    assert "below the threshold 85.6" in test.reason(20)


def test_clear_passes_and_failures_stop_well_before_the_end():
    def run(p, seed):
        test, scores = SequentialTest(0.856), stream(p, 500, seed)
        for i in range(0, 500, batch_size(500) // 5):  # batches of 10
            if test.update(scores[i:i + 10]):
                break
        return test
    for seed in range(20):
        low, high = run(0.3, seed), run(0.995, seed)
        assert low.decision == "fail" and low.n <= 30
        assert high.decision == "pass" and high.n < 200


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
def test_the_evidence_does_not_depend_on_the_batching_and_the_verdict_is_at_a_batch_end(size):
    scores = stream(0.6, 200, 7)
    parts = SequentialTest(0.856)
    for i in range(0, len(scores), size):
        if parts.update(scores[i:i + size]):
            break
    assert parts.decision == "fail"
    assert parts.n == min(len(scores), i + size)  # every score of the deciding batch was taken
    whole = SequentialTest(0.856, alpha=1e-300)  # never decides: the wealth after the same samples
    whole.update(scores[:parts.n])
    assert (whole.log_pass, whole.log_fail) == (pytest.approx(parts.log_pass), pytest.approx(parts.log_fail))


def test_a_stopped_item_never_contradicts_its_graded_samples():
    """Issue 19: the verdict was taken mid-batch (after 8 samples) while all 50 graded samples
    scored 86 % and passed. Now it rests on the whole batch, the one that is graded."""
    batch = [0.0] * 7 + [1.0] * 43  # mean 0.86 >= 0.856
    test = SequentialTest(0.856)
    test.update(batch)
    assert test.n == 50
    assert test.decision != "fail"
    # a batch whose samples stay low is still stopped, on all of them
    low = SequentialTest(0.856)
    assert low.update([0.0] * 10 + [1.0] * 10) == "fail" and low.n == 20 and "after 20 samples" in low.reason(100)


def test_a_decision_agrees_with_the_mean_of_the_samples_it_rests_on():
    for seed in range(200):
        test = SequentialTest(0.856)
        scores = stream(0.856, 100, seed)
        for i in range(0, 100, 10):
            if test.update(scores[i:i + 10]):
                break
        if test.decision is not None:
            mean = sum(scores[:test.n]) / test.n
            assert (test.decision == "pass") == (mean >= 0.856)


def test_batch_size_is_a_tenth_of_the_item_within_bounds():
    assert [batch_size(n) for n in (2, 20, 100, 500, 5000)] == [4, 4, 10, 50, 64]
