"""Issue 14: per-sample statistics (scipy-backed tests against published values), error bars,
the effective length's fixed-sequence lower bound, and the confidence gate."""

from __future__ import annotations

import math

import pytest

from pytest_ruler.results import ItemResult, gate, summarize_results
from pytest_ruler.results.intervals import cell_interval, combine, effective_length_bounds, fixed_sequence_bound, pooled_cells
from hypothesis import given, settings, strategies as st

from pytest_ruler.results.stats import (bounded_mean_interval, bounded_mean_p, clopper_pearson, round_mean_p, mcnemar_exact_less,
                                        mean_above_p, paired_less, t_quantile, z_quantile)
from pytest_ruler.results.table import format_text, table3
from pytest_ruler.report.markdown import markdown


def binom_upper(x, n, p):
    """P(X >= x), X ~ Binomial(n, p), summed exactly."""
    return math.fsum(math.comb(n, k) * p ** k * (1 - p) ** (n - k) for k in range(x, n + 1))


def scores(right, n):
    return (1.0,) * right + (0.0,) * (n - right)


def item(task, length, sample_scores, seed=0, error=None, mode="native"):
    s = tuple(sample_scores)
    score = 100.0 * sum(s) / len(s) if s else 0.0
    return ItemResult(task=task, length=length, seed=seed, mode=mode, samples=len(s), score=score, threshold=85.6,
                      passed=score > 85.6, nulls=0, seconds=0.0, error=error, sample_scores=s)


# ------------------------------------------------------------------ published values


def test_quantiles_match_tables():
    assert z_quantile(0.975) == pytest.approx(1.959964, abs=1e-6)
    assert t_quantile(0.975, 9) == pytest.approx(2.262157, abs=1e-6)  # Student's t table, df = 9


def test_paired_test_on_students_sleep_data():
    # Cushny & Peebles (Student 1908). All 9 non-zero differences are negative, so the exact
    # sign-flip p-value is 1/2^9; R's t.test(extra ~ group, paired = TRUE) gives the 95% CI
    # -2.4598858 to -0.7001142 of the mean difference, which the result reports as its effect.
    drug1 = [0.7, -1.6, -0.2, -1.2, -0.1, 3.4, 3.7, 0.8, 0.0, 2.0]
    drug2 = [1.9, 0.8, 1.1, 0.1, -0.1, 4.4, 5.5, 1.6, 4.6, 3.4]
    r = paired_less(drug2, drug1)
    assert r.test == "sign-flip" and r.n == 10
    assert r.p_value == pytest.approx(1 / 512, rel=1e-9)
    assert r.mean_diff == pytest.approx(-158.0)  # points: 100 x the mean difference
    assert (r.ci_low, r.ci_high) == (pytest.approx(-245.98858, abs=1e-4), pytest.approx(-70.01142, abs=1e-4))


def test_sign_flip_counts_every_sign_pattern_and_stays_valid_when_sampled():
    from pytest_ruler.results.stats import sign_flip_less

    # sums of (+-1, +-2, +-3): 6, 4, 2, 0, 0, -2, -4, -6; observed -1 - 2 + 3 = 0: 5 of 8 are <= 0
    assert sign_flip_less([-1.0, -2.0, 3.0]) == pytest.approx(5 / 8)
    assert sign_flip_less([0.0, 0.0]) == 1.0
    # 40 differences (sampled patterns): a clear drop is small, no change is not, and the
    # sampled p-value is never below 1 / (1 + resamples)
    drop = [-0.25] * 30 + [0.25] * 10
    assert sign_flip_less(drop) < 0.01 and sign_flip_less(drop) >= 1 / 10000
    assert sign_flip_less([-0.25, 0.25] * 20) > 0.4


def test_exact_mcnemar_is_the_binomial_tail_at_one_half():
    assert mcnemar_exact_less(7, 1) == pytest.approx(9 / 256, rel=1e-12)  # P(X >= 7 | 8, 1/2)
    assert mcnemar_exact_less(6, 0) == pytest.approx(1 / 64, rel=1e-12)
    assert mcnemar_exact_less(0, 5) == 1.0 and mcnemar_exact_less(0, 0) == 1.0


def test_clopper_pearson_interval_newcombe_examples():
    # Newcombe (1998), Stat Med 17:857, Table I, method 5 ("exact"): 81/263 0.2527 to 0.3676,
    # 15/148 0.0578 to 0.1617; at 0/n and n/n the ends are closed forms
    ci = cell_interval(scores(81, 263))["ci95"]
    assert ci == [pytest.approx(25.27, abs=0.01), pytest.approx(36.76, abs=0.01)]
    assert clopper_pearson(15, 148) == (pytest.approx(0.0578, abs=1e-4), pytest.approx(0.1617, abs=1e-4))
    assert clopper_pearson(20, 20) == (pytest.approx(0.025 ** (1 / 20)), 1.0)
    assert clopper_pearson(0, 20) == (0.0, pytest.approx(1 - 0.025 ** (1 / 20)))


@pytest.mark.parametrize("p", [0.95, 0.99, 0.995, 0.999])
def test_a_binary_cells_interval_covers_near_100_at_any_n(p):
    """Exact coverage (summed over every count): the Wilson interval covered 0.905 at p = 0.995, n = 20."""
    for n in (20, 50):
        covered = 0.0
        for x in range(n + 1):
            low, high = cell_interval(scores(x, n))["ci95"]
            if low <= 100 * p <= high:
                covered += math.comb(n, x) * p ** x * (1 - p) ** (n - x)
        assert covered >= 0.95


def test_mean_above_threshold_exact_binomial():
    assert mean_above_p(scores(19, 20), 0.856) == pytest.approx(binom_upper(19, 20, 0.856), rel=1e-9)
    assert mean_above_p(scores(1, 1), 0.856) == pytest.approx(0.856)  # one right answer proves little
    assert mean_above_p([], 0.5) == 1.0 and mean_above_p(scores(5, 5), 1.0) == 1.0


def test_mean_above_threshold_fractional():
    s = [1.0, 0.75, 1.0, 1.0, 0.5, 1.0, 1.0, 0.75] * 5
    assert mean_above_p(s, 0.8) == bounded_mean_p([s], 0.8)  # partial credit: the betting test
    assert 0.0 < mean_above_p(s * 5, 0.8) < 0.01  # mean 0.875, sd 0.18: clear at n = 200
    assert mean_above_p(s * 5, 0.875) > 0.5 and mean_above_p(s, 0.95) == 1.0  # no evidence against the truth
    ps = [mean_above_p(s * 3, t) for t in (0.5, 0.7, 0.8, 0.85)]
    assert ps == sorted(ps)  # a higher threshold is harder to clear
    assert 0.0 < mean_above_p([0.75] * 200, 0.7) < 0.05  # no variance is evidence, but not certainty
    assert mean_above_p([0.75] * 5, 0.7) > 0.05


def test_the_partial_credit_test_holds_its_level_on_left_skewed_scores():
    """Issue 19: the t-test's size at a true mean on the threshold was 0.104 at n = 20 (0.16 here)."""
    import numpy as np

    values, probs = np.array([1.0, 0.75, 0.5, 0.0]), np.array([0.75, 0.13, 0.05, 0.07])
    mean = float(values @ probs)
    draws = np.random.default_rng(1).choice(values, p=probs, size=(1000, 20))
    size = np.mean([mean_above_p(list(x), mean) <= 0.05 for x in draws])
    assert size <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / 1000)


def test_betting_intervals_cover_bounded_means_near_100():
    import numpy as np

    rng = np.random.default_rng(2)
    values, probs = np.array([1.0, 0.75, 0.5]), np.array([0.97, 0.02, 0.01])
    mean = float(values @ probs)  # 0.99
    draws = rng.choice(values, p=probs, size=(300, 20))
    covered = [lo <= mean <= hi for lo, hi in (bounded_mean_interval([list(x)]) for x in draws)]
    assert np.mean(covered) >= 0.95 - 3 * math.sqrt(0.05 * 0.95 / 300)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from([0.0, 0.25, 0.5, 0.75, 1.0]), min_size=2, max_size=60))
def test_a_cells_interval_is_never_a_point_and_holds_its_score(xs):
    iv = cell_interval(xs)
    low, high = iv["ci95"]
    assert 0.0 <= low <= iv["score"] <= high <= 100.0 and high - low > 1.0


# ------------------------------------------------------------------ error bars


def test_cell_interval_fractional_is_the_betting_interval():
    s = [0.5, 0.75, 1.0, 0.25, 1.0]
    sd = math.sqrt(sum((x - 0.7) ** 2 for x in s) / 4)
    iv = cell_interval(s)
    assert iv["n"] == 5 and iv["stderr"] == pytest.approx(100 * sd / math.sqrt(5))  # the plug-in SE, for reference
    low, high = bounded_mean_interval([s])
    assert iv["ci95"] == [pytest.approx(100 * low), pytest.approx(100 * high)]
    flat = cell_interval([0.75] * 20)  # issue 19: no variance gave a zero-width interval
    assert flat["stderr"] == 0.0 and 55 < flat["ci95"][0] < 75 < flat["ci95"][1] < 90
    # a wider interval for fewer samples; no order effect at all (issue 38)
    assert cell_interval(s * 10)["ci95"][0] > low * 100 and bounded_mean_interval([sorted(s * 10)]) == bounded_mean_interval([s * 10])


def test_the_issue_38_example_is_order_free():
    ordered = [1.0] * 50 + [0.0] * 50  # gave [0.487, 0.634], shuffled [0.365, 0.633]
    shuffled = [ordered[(7 * i) % 100] for i in range(100)]
    assert bounded_mean_interval([ordered]) == bounded_mean_interval([shuffled])
    low, high = bounded_mean_interval([ordered])
    assert low < 0.5 < high


@settings(max_examples=30, deadline=None)
@given(st.lists(st.lists(st.sampled_from([0.0, 0.25, 0.5, 0.75, 1.0]), min_size=2, max_size=30), min_size=1, max_size=3),
       st.randoms(use_true_random=False))
def test_any_permutation_of_the_same_scores_gives_the_same_interval_and_p(strata, rnd):
    shuffled = [rnd.sample(s, len(s)) for s in strata]
    weights = [1.0 + i for i in range(len(strata))]
    assert bounded_mean_interval(strata, 0.95, weights) == bounded_mean_interval(shuffled, 0.95, weights)
    assert bounded_mean_p(strata, 0.6) == bounded_mean_p(shuffled, 0.6)
    assert round_mean_p(strata, 0.6, weights) == round_mean_p(shuffled, 0.6, weights)


def test_no_made_up_intervals():
    assert cell_interval(()) is None and cell_interval([1.0]) is None
    assert combine([{"score": 50.0, "stderr": 1.0}, None]) is None
    old = [ItemResult(task="vt", length=1024, seed=0, mode="native", samples=10, score=90.0, threshold=85.6,
                      passed=True, nulls=0, seconds=0.0)]
    s = summarize_results(old, 85.6)
    assert s["intervals"] is None and s["effective_length_bound"] is None and s["per_task_effective_length_bound"] == {}


def test_combine_is_the_se_of_a_mean_of_independent_means():
    c = combine([{"score": 80.0, "stderr": 3.0}, {"score": 90.0, "stderr": 4.0}])
    assert c["score"] == 85.0 and c["stderr"] == pytest.approx(2.5)  # sqrt(9 + 16) / 2
    w = combine([{"score": 80.0, "stderr": 3.0}, {"score": 90.0, "stderr": 4.0}], [1, 2])
    assert w["stderr"] == pytest.approx(math.sqrt(9 + 4 * 16) / 3)
    assert w["ci95"][0] == pytest.approx(w["score"] - 1.959964 * w["stderr"], abs=1e-4)


def test_summary_intervals_pool_seeds_and_combine_cells():
    results = [item("a", 1024, scores(18, 20), seed=0), item("a", 1024, scores(16, 20), seed=1),
               item("b", 1024, [1.0, 0.5, 0.75, 1.0] * 5), item("a", 2048, scores(10, 20)), item("b", 2048, scores(20, 20))]
    s = summarize_results(results, 85.6)
    iv = s["intervals"]
    a = iv["cells"]["a"]["1024"]
    pooled = scores(18, 20) + scores(16, 20)
    assert a["n"] == 40 and a["score"] == pytest.approx(85.0)
    assert a["stderr"] == pytest.approx(100 * math.sqrt(0.85 * 0.15 * 40 / 39) / math.sqrt(40))
    assert a == cell_interval(pooled, 85.0)
    total = iv["per_length"]["1024"]
    assert total["score"] == pytest.approx(s["per_length"]["1024"])
    assert total["stderr"] == pytest.approx(math.hypot(a["stderr"], iv["cells"]["b"]["1024"]["stderr"]) / 2)
    assert iv["avg"]["stderr"] == pytest.approx(math.hypot(total["stderr"], iv["per_length"]["2048"]["stderr"]) / 2)
    assert iv["wavg_inc"]["score"] == pytest.approx(s["wavg_inc"])
    assert iv["cells"]["b"]["2048"]["ci95"] == [pytest.approx(100 * 0.025 ** (1 / 20)), 100.0]  # Clopper-Pearson at 20/20
    strata = [list(pooled), [1.0, 0.5, 0.75, 1.0] * 5]
    assert total["ci95"] == [pytest.approx(100 * v) for v in bounded_mean_interval(strata)]
    assert total["ci95"][0] < total["score"] < total["ci95"][1]


def test_the_totals_interval_near_100_is_not_a_point():
    """Issue 19: 13 perfect cells gave the Total a zero-width z interval (100.0±0.0)."""
    results = [item(f"t{i}", 1024, scores(20, 20)) for i in range(13)]
    s = summarize_results(results, 85.6)
    total = s["intervals"]["per_length"]["1024"]
    assert total["stderr"] == 0.0 and 90.0 < total["ci95"][0] < 100.0 == total["ci95"][1]
    assert s["intervals"]["avg"]["ci95"] == total["ci95"]
    assert s["effective_length_bound"] == 1024  # 260 perfect answers over 13 independent tasks: clear


def test_an_errored_or_scoreless_item_gives_its_cell_no_interval():
    results = [item("a", 1024, scores(20, 20)), item("a", 1024, scores(20, 20), seed=1),
               ItemResult(task="a", length=2048, seed=0, mode="native", samples=20, score=90.0, threshold=85.6,
                          passed=True, nulls=0, seconds=0.0)]
    cells = pooled_cells(results)
    assert len(cells["a"][1024]) == 40 and cells["a"][2048] is None
    s = summarize_results(results, 85.6)
    assert s["intervals"]["cells"]["a"]["2048"] is None and s["intervals"]["per_length"]["2048"] is None
    assert s["intervals"]["avg"] is None
    errored = results[:2] + [item("a", 2048, (), error="boom")]
    assert pooled_cells(errored)["a"][2048] is None


# ------------------------------------------------------------------ the fixed-sequence bound


def test_fixed_sequence_stops_at_the_first_non_rejection():
    assert fixed_sequence_bound({1: 0.001, 2: 0.04, 4: 0.2, 8: 0.0001}, 0.05) == 2
    assert fixed_sequence_bound({1: 0.06, 2: 0.0}, 0.05) is None
    assert fixed_sequence_bound({1: 0.01, 2: None, 4: 0.0}, 0.05) == 1  # no evidence stops it
    assert fixed_sequence_bound({1: 0.05}, 0.05) == 1  # p <= alpha rejects


def test_bound_on_crafted_per_sample_scores():
    # 50 samples per length, threshold 85.6: 50/50 and 48/50 are above it with 95% confidence,
    # 44/50 (88%) is above it only as a point estimate, and 50/50 at 8K comes after that failure.
    p48 = binom_upper(48, 50, 0.856)
    assert p48 < 0.05 < binom_upper(44, 50, 0.856)
    results = [item("a", 1024, scores(50, 50)), item("a", 2048, scores(48, 50)),
               item("a", 4096, scores(44, 50)), item("a", 8192, scores(50, 50))]
    s = summarize_results(results, 85.6)
    assert s["per_task_effective_length"]["a"] == 8192  # the paper's point estimate: longest passing
    assert s["per_task_effective_length_bound"]["a"] == 2048
    assert s["effective_length_bound"] == 2048  # one task: the Total uses its exact test
    # lowering the confidence can only lengthen the bound
    cells = pooled_cells(results)
    scores_ = {"a": {1024: 100.0, 2048: 96.0, 4096: 88.0, 8192: 100.0}}
    assert effective_length_bounds(cells, scores_, 85.6, 0.5)[0] == 8192
    assert effective_length_bounds(cells, scores_, 85.6, 0.999)[0] in (None, 1024)


def test_bound_of_the_total_over_tasks():
    # two tasks, 100 samples each: Total 95% at 1K (clearly above), 88% at 2K (not clearly)
    results = [item("a", 1024, scores(96, 100)), item("b", 1024, scores(94, 100)),
               item("a", 2048, scores(90, 100)), item("b", 2048, scores(86, 100))]
    s = summarize_results(results, 85.6)
    assert s["effective_length"] == 2048 and s["effective_length_bound"] == 1024
    assert s["bound_confidence"] == 0.95


def test_a_few_perfect_answers_are_not_certainty_in_the_total():
    results = [item(t, 1024, scores(3, 3)) for t in ("a", "b")]
    s = summarize_results(results, 85.6)
    assert s["effective_length"] == 1024 and s["effective_length_bound"] is None


def test_the_totals_test_holds_its_level_with_partial_credit_in_the_mix():
    """Issue 19: the z-test's size was 0.059-0.064 at a true Total of 85.6. Here: one 0/1 task
    and one partial-credit task whose means average exactly the threshold."""
    import numpy as np

    rng = np.random.default_rng(3)
    values, probs = np.array([1.0, 0.75, 0.5, 0.0]), np.array([0.75, 0.13, 0.05, 0.07])  # mean 0.8725
    binary_p = 2 * 0.856 - float(values @ probs)
    rejected = 0
    for _ in range(400):
        a = list(rng.choice(values, p=probs, size=50))
        b = list((rng.random(50) < binary_p).astype(float))
        rejected += bounded_mean_p([a, b], 0.856) <= 0.05
    assert rejected / 400 <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / 400)


def test_no_bound_past_an_errored_length():
    results = [item("a", 1024, scores(50, 50)), item("a", 2048, (), error="boom"), item("a", 4096, scores(50, 50))]
    s = summarize_results(results, 85.6)
    assert s["effective_length_bound"] == 1024 and s["per_task_effective_length_bound"]["a"] == 1024


# ------------------------------------------------------------------ gate, table, Markdown


def _report(results):
    return {"threshold": 85.6, "complete": True, "items": [r.to_dict() for r in results],
            "summary": {"native": summarize_results(results, 85.6), "mapreduce": summarize_results(results, 85.6, "mapreduce")}}


CRAFTED = [item("a", 1024, scores(50, 50)), item("a", 2048, scores(48, 50)),
           item("a", 4096, scores(44, 50)), item("a", 8192, scores(50, 50))]


def test_gate_on_the_bound():
    report = _report(CRAFTED)
    assert gate(report, required=8192).passed is True  # the point estimate
    v = gate(report, required=8192, confidence=0.95)
    assert v.passed is False
    g = v.fields["gate"]
    assert g["confidence"] == 0.95 and g["effective_length_bound"] == 2048 and g["effective_length"] == 8192
    assert v.failures == ["95% lower confidence bound of the effective length: 2K < required 8K (point estimate 8K) at threshold 85.6"]
    assert gate(report, required=2048, confidence=0.95).passed is True
    assert gate(report, required=4096, confidence=0.5).passed is True  # recomputed at the gate's level


def test_gate_on_the_bound_needs_per_sample_scores():
    old = _report([ItemResult(task="a", length=1024, seed=0, mode="native", samples=10, score=100.0, threshold=85.6,
                              passed=True, nulls=0, seconds=0.0)])
    v = gate(old, required=1024, confidence=0.95)
    assert v.passed is False and "no per-sample scores" in v.failures[0]


def test_table_bound_column_and_standard_errors():
    report = _report(CRAFTED)
    t = table3(report)
    assert t.header[-2:] == ["Eff.LB", "Effective"]
    assert t.rows[0][-2:] == ["2K", "≥8K"] and t.rows[-1][-2:] == ["2K", "≥8K"]
    plain = format_text(t)
    assert "+" not in "\n".join(plain)
    ci = table3(report, ci=True)
    low, high = report["summary"]["native"]["intervals"]["cells"]["a"]["2048"]["ci95"]
    assert ci.rows[0][2] == f"96.0+{high - 96.0:.1f}/-{96.0 - low:.1f}"
    perfect = report["summary"]["native"]["intervals"]["cells"]["a"]["1024"]["ci95"]
    assert ci.rows[0][1] == f"100.0+0.0/-{100 - perfect[0]:.1f}" != "100.0+0.0/-0.0"  # issue 19: never a zero-width bar
    assert all(" " not in c for row in ci.rows for c in row)  # one token per cell (the terminal splits on spaces)
    old = _report([ItemResult(task="a", length=1024, seed=0, mode="native", samples=10, score=100.0, threshold=85.6,
                              passed=True, nulls=0, seconds=0.0)])
    assert "Eff.LB" not in table3(old).header and table3(old, ci=True).rows[0][1] == "100.0"


def test_markdown_shows_the_bound_and_intervals_on_request():
    report = _report(CRAFTED)
    md = markdown(report)
    assert "Effective (95% lower bound)" in md and "+0.0/-" not in md
    md_ci = markdown(report, ci=True)
    assert "| a | 100.0+0.0/-7.1 | 96.0+" in md_ci and "95% intervals of the Total: 1K [92.9, 100.0]" in md_ci


def test_a_tiny_interval_half_is_not_printed_as_zero():
    from pytest_ruler.results.table import _score

    assert _score(100.0, {"ci95": [99.993, 100.0]}) == "100.0+0.0/-0.007"
    assert _score(50.0, {"ci95": [45.0, 56.25]}) == "50.0+6.2/-5.0" and _score(50.0) == "50.0"


def test_plots_draw_interval_bands(tmp_path):
    pytest.importorskip("matplotlib")
    from pytest_ruler.report.plots import plot_scores

    [png] = plot_scores(_report(CRAFTED), tmp_path, prefix="r")
    assert png.name == "r.scores.png" and png.stat().st_size > 0
