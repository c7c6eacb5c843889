"""--ruler-baseline: loading, the two one-sided tests, multiple-comparison correction,
pooling over seeds, the human summary and the effective-length note."""

from __future__ import annotations

import json
import math
import re
from fractions import Fraction
from statistics import NormalDist

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_ruler.results import stats
from pytest_ruler.results.baseline import Comparison, Comparisons, compare, load_baseline
from pytest_ruler.results.regressions import effective_length_drop, summarize_regressions
from pytest_ruler.results.stats import CORRECTIONS, TESTS, adjust, fisher_exact_less, two_proportion_z_less
from pytest_ruler.errors import RulerUsageError


def item(task="niah_single_1", length=8192, score=90.0, samples=100, seed=0, mode="native", **extra):
    d = {"task": task, "length": length, "seed": seed, "mode": mode, "samples": samples, "score": score,
         "threshold": 85.6, "passed": score > 85.6, "nulls": 0, "seconds": 1.0}
    d.update(extra)
    return d


def report(*items):
    return {"schema": "pytest-ruler/1", "model": "m", "threshold": 85.6, "items": list(items)}


def one(base_score, base_n, cur_score, cur_n, **kw):
    [c] = compare(report(item(score=base_score, samples=base_n)), [item(score=cur_score, samples=cur_n)], **kw)
    return c


# ----------------------------------------------------------------- the tests' p-values


def brute_fisher_less(x1, n1, x2, n2):
    """Independent check: enumerate every table with the same margins, exact fractions."""
    N, K = n1 + n2, x1 + x2
    tables = {k: Fraction(math.comb(K, k) * math.comb(N - K, n2 - k)) for k in range(0, n2 + 1) if 0 <= K - k <= n1}
    total = sum(tables.values())
    return sum(v for k, v in tables.items() if k <= x2) / total


def test_fisher_lady_tasting_tea():
    # Fisher's tea-tasting table [[3, 1], [1, 3]]: one-sided p = 17/70.
    assert fisher_exact_less(3, 4, 1, 4) == pytest.approx(17 / 70, rel=1e-12)


def test_fisher_convicted_twins():
    # Fisher (1935): monozygotic twins 10/13 convicted, dizygotic 2/17; one-sided p = 0.000465.
    assert fisher_exact_less(10, 13, 2, 17) == pytest.approx(0.000465, abs=5e-7)


def test_fisher_extreme_table_is_one_over_binomial():
    # all 5 successes in the baseline row: p = 1 / C(10, 5)
    assert fisher_exact_less(5, 5, 0, 5) == pytest.approx(1 / 252, rel=1e-12)
    assert fisher_exact_less(0, 5, 5, 5) == 1.0


def test_fisher_matches_enumeration_of_every_table():
    # scipy's fisher_exact (issue 21) against exact fractions, small and moderately large tables
    for x1, n1, x2, n2 in [(540, 600, 400, 500), (300, 600, 280, 500), (10, 600, 0, 500), (7, 9, 2, 11), (0, 3, 0, 4)]:
        assert fisher_exact_less(x1, n1, x2, n2) == pytest.approx(float(brute_fisher_less(x1, n1, x2, n2)), rel=1e-9, abs=1e-300)


def test_fisher_large_counts_are_fast_and_sane():
    # 90% vs 88% of 5000: z = -3.196 (p = 0.0007); Fisher is close to it at this size
    p = fisher_exact_less(4500, 5000, 4400, 5000)
    assert p == pytest.approx(two_proportion_z_less(4500, 5000, 4400, 5000)[0], rel=0.2)
    assert 0.0 < fisher_exact_less(4500, 5000, 3000, 5000) < 1e-100


def test_z_test_known_value():
    # 60/100 vs 45/100: pooled p = .525, z = -0.15 / sqrt(.525*.475*.02) = -2.1240, p = 0.01684
    p, fallback = two_proportion_z_less(60, 100, 45, 100)
    assert not fallback
    z = -0.15 / math.sqrt(0.525 * 0.475 * 0.02)
    assert z == pytest.approx(-2.1240, abs=1e-4)
    assert p == pytest.approx(NormalDist().cdf(z), rel=1e-12)
    assert p == pytest.approx(0.01684, abs=1e-5)


def test_z_test_falls_back_to_exact_on_small_counts():
    p, fallback = two_proportion_z_less(9, 10, 8, 10)
    assert fallback and p == pytest.approx(fisher_exact_less(9, 10, 8, 10))
    p, fallback = two_proportion_z_less(100, 100, 100, 100)  # pooled proportion 1: no variance
    assert fallback and p == 1.0


@pytest.mark.parametrize("bad", [(-1, 10, 1, 10), (11, 10, 1, 10), (1, 0, 1, 10), (1.5, 10, 1, 10)])
def test_counts_are_validated(bad):
    with pytest.raises(RulerUsageError):
        fisher_exact_less(*bad)


# ----------------------------------------------------------------- decisions


def test_significant_drop_fails():
    c = one(96.0, 100, 60.0, 100)
    assert c.significant and c.delta == pytest.approx(-36.0)
    assert c.p_value < 1e-6 and c.test == "two-proportion-z" and not c.exact_fallback
    assert (c.baseline_successes, c.current_successes) == (96, 60)
    passed, lines = summarize_regressions(Comparisons([c]))
    assert not passed
    assert any("significant drop" in line for line in lines)


def test_drop_within_noise_passes():
    c = one(90.0, 10, 80.0, 10)
    assert not c.significant and c.delta == pytest.approx(-10.0)
    assert c.exact_fallback and c.test == "fisher"  # counts too small for the normal approximation
    assert summarize_regressions([c])[0]


def test_improvement_passes():
    c = one(60.0, 100, 96.0, 100)
    assert not c.significant and c.p_value > 0.5
    passed, lines = summarize_regressions([c])
    assert passed and lines[-1].endswith("— significant gain")  # a gain is named, and never fails


def test_alpha_changes_the_outcome():
    # 90/100 -> 80/100: z-test p = 0.0238
    assert one(90.0, 100, 80.0, 100, alpha=0.05).significant
    assert not one(90.0, 100, 80.0, 100, alpha=0.01).significant


def test_test_choice_changes_the_outcome():
    # 85/100 -> 75/100: z p = 0.0385, Fisher p = 0.0554
    z, f = one(85.0, 100, 75.0, 100), one(85.0, 100, 75.0, 100, test="fisher")
    assert z.significant and not f.significant
    assert f.test == "fisher" and not f.exact_fallback
    assert z.raw_p_value == pytest.approx(0.03855, abs=1e-4)
    assert f.raw_p_value == pytest.approx(0.05544, abs=1e-4)


def test_min_drop_ignores_small_real_drops():
    assert one(96.0, 1000, 90.0, 1000).significant
    c = one(96.0, 1000, 90.0, 1000, min_drop=10.0)
    assert not c.significant
    assert "under the minimum drop" in summarize_regressions([c])[1][-1]


def test_tiny_n():
    assert not one(100.0, 1, 0.0, 1).significant  # p = 0.5
    c = one(100.0, 5, 0.0, 5)  # p = 1/252
    assert c.significant and c.p_value == pytest.approx(1 / 252)


def test_holm_vs_none_on_many_cells():
    # 20 cells, each 90/100 -> 80/100 (raw p = 0.024): each alone is "significant",
    # together it is what chance gives; Holm flags none of them.
    tasks = [f"t{i}" for i in range(20)]
    base = report(*(item(task=t, score=90.0) for t in tasks))
    cur = [item(task=t, score=80.0) for t in tasks]
    assert all(c.significant for c in compare(base, cur, correction="none"))
    holm = compare(base, cur)
    assert not any(c.significant for c in holm)
    assert all(c.cells == 20 and c.correction == "holm" for c in holm)
    # one real collapse among them still fails under Holm
    cur[0] = item(task="t0", score=30.0)
    flagged = [c.task for c in compare(base, cur) if c.significant]
    assert flagged == ["t0"]


def test_holm_is_step_down_and_bonferroni_is_not():
    raw = [0.001, 0.02, 0.02]
    assert adjust(raw, "holm") == pytest.approx([0.003, 0.04, 0.04])
    assert adjust(raw, "bonferroni") == pytest.approx([0.003, 0.06, 0.06])
    assert adjust(raw, "none") == raw
    assert adjust([0.04, 0.01], "holm") == pytest.approx([0.04, 0.02])  # monotone in rank


def test_fisher_and_z_agree_on_direction():
    for (x1, x2) in [(96, 60), (60, 96), (50, 50), (80, 70)]:
        z, f = two_proportion_z_less(x1, 100, x2, 100)[0], fisher_exact_less(x1, 100, x2, 100)
        assert (z < 0.5) == (f < 0.5) == (x2 < x1)


def test_pooled_over_seeds_weighted_by_samples():
    base = report(item(seed=0, score=96.0, samples=50), item(seed=1, score=96.0, samples=50))
    cur = [item(seed=0, score=58.0, samples=50), item(seed=1, score=62.0, samples=50)]
    [c] = compare(base, cur)
    assert (c.baseline_n, c.current_n) == (100, 100)
    assert c.current_score == pytest.approx(60.0) and c.significant
    # weighting: 100 samples at 90 and 10 samples at 0 pool to 900/11
    [c] = compare(report(item(score=90.0)), [item(seed=0, score=90.0, samples=100), item(seed=1, score=0.0, samples=10)])
    assert c.current_score == pytest.approx(900 / 11) and c.current_n == 110


def test_modes_are_separate_cells():
    base = report(item(mode="native", score=96.0), item(mode="mapreduce", score=96.0))
    cur = [item(mode="native", score=96.0), item(mode="mapreduce", score=50.0)]
    res = compare(base, cur)
    assert [(c.mode, c.significant) for c in res] == [("native", False), ("mapreduce", True)]
    assert "niah_single_1 @ 8K [mapreduce]: 96.0 → 50.0" in summarize_regressions(res)[1][1]


def test_missing_cells_are_reported_not_compared():
    base = report(item(task="a", length=4096), item(task="a", length=8192), item(task="c", length=4096, samples=0))
    cur = [item(task="a", length=4096), item(task="b", length=4096), item(task="c", length=4096, samples=0)]
    res = compare(base, cur)
    assert [c.key for c in res] == [("a", 4096, "native")]
    assert {(n.task, n.length, n.reason) for n in res.not_compared} == {
        ("a", 8192, "missing in current run"), ("b", 4096, "missing in baseline"), ("c", 4096, "no samples")}
    passed, lines = summarize_regressions(res)
    assert passed
    assert "1 cell not compared (missing in current run): a @ 8K" in lines
    assert "1 cell not compared (missing in baseline): b @ 4K" in lines


def test_nothing_in_common():
    res = compare(report(item(task="a")), [item(task="b")])
    assert res == [] and len(res.not_compared) == 2
    passed, lines = summarize_regressions(res)
    assert passed and "nothing compared" in lines[0]


def test_summary_line_format():
    res = compare(report(item(score=96.0, samples=50)), [item(score=62.0, samples=50)])
    passed, lines = summarize_regressions(res)
    assert not passed
    assert lines[0].startswith("baseline: 1 cell compared, 1 significant drop")
    assert "one-sided two-proportion z-test, alpha=0.05, Holm correction over 1" in lines[0]  # the test, once
    assert re.fullmatch(r"niah_single_1 @ 8K: 96\.0 → 62\.0 \(−34\.0, n=50/50\), p=\S+ — significant drop", lines[1]), lines[1]
    quiet = summarize_regressions(compare(report(item(task="x")), [item(task="x")]), verbose=False)[1]
    assert len(quiet) == 1  # header only


def test_current_items_may_be_item_results():
    class Fake:
        def to_dict(self):
            return item(score=60.0)

    [c] = compare(report(item(score=96.0)), [Fake()])
    assert c.significant


@pytest.mark.parametrize("kw, parameter", [
    ({"alpha": 0}, "--ruler-baseline-alpha"), ({"alpha": 1.5}, "--ruler-baseline-alpha"),
    ({"test": "t-test"}, "--ruler-baseline-test"), ({"correction": "fdr"}, "correction"),
    ({"min_drop": -1}, "min_drop"),
])
def test_bad_options(kw, parameter):
    with pytest.raises(RulerUsageError) as e:
        compare(report(item()), [item()], **kw)
    assert e.value.parameter == parameter


def test_comparison_is_frozen():
    c = one(90.0, 100, 90.0, 100)
    assert isinstance(c, Comparison)
    with pytest.raises(Exception):
        c.p_value = 0.0  # type: ignore[misc]


# ----------------------------------------------------------------- load_baseline


def test_load_baseline_ok(tmp_path):
    p = tmp_path / "old.json"
    p.write_text(json.dumps(report(item())))
    assert load_baseline(p).items[0].task == "niah_single_1"  # the typed report (results.report.Report)
    assert load_baseline(str(p)).to_dict()["schema"] == "pytest-ruler/1"


@pytest.mark.parametrize("content, words", [
    (None, "no such file"),
    ("{not json", "not valid JSON"),
    ("[1, 2]", "must be an object"),
    (json.dumps({"schema": "other/2", "items": [item()]}), "found schema 'other/2'"),
    (json.dumps({"items": [item()]}), "found no \"schema\" field"),
    (json.dumps(report()), "no items"),
    (json.dumps({"schema": "pytest-ruler/1"}), "no items"),
    (json.dumps(report({"task": "a", "length": 4096, "samples": 5})), "no valid 'score'"),
    (json.dumps(report(item(score=150.0))), "'score': expected a number in [0, 100], found 150.0"),
])
def test_load_baseline_errors(tmp_path, content, words):
    p = tmp_path / "old.json"
    if content is not None:
        p.write_text(content)
    with pytest.raises(RulerUsageError) as e:
        load_baseline(p)
    assert e.value.parameter == "--ruler-baseline"
    assert e.value.value == str(p)
    assert words in e.value.fix


# ----------------------------------------------------------------- effective length


def summ(eff, per_length=None, threshold=85.6):
    per_length = per_length or {"4096": 99.0, "8192": 90.0, "16384": 80.0}
    return {"per_length": per_length, "avg": 0.0, "wavg_inc": 0.0, "wavg_dec": 0.0,
            "effective_length": eff, "per_task_effective_length": {}, "threshold": threshold}


def test_effective_length_drop():
    msg = effective_length_drop(summ(16384), summ(8192))
    assert msg and "16K → 8K" in msg and "native" in msg and "informational" in msg
    assert effective_length_drop(summ(8192), summ(8192)) is None
    assert effective_length_drop(summ(8192), summ(16384)) is None
    assert effective_length_drop(summ(None), summ(None)) is None
    assert "8K → <4K" in effective_length_drop(summ(8192), summ(None))
    assert "thresholds differ" in effective_length_drop(summ(8192, threshold=80.0), summ(4096))


def test_effective_length_drop_whole_summary_and_missing_modes():
    base = {"native": summ(8192), "mapreduce": summ(16384)}
    cur = {"native": summ(8192), "mapreduce": summ(4096)}
    msg = effective_length_drop(base, cur)
    assert msg.startswith("effective length (mapreduce) dropped: 16K → 4K")
    assert effective_length_drop({"native": summ(8192), "mapreduce": None}, {"native": summ(8192), "mapreduce": None}) is None
    assert effective_length_drop(None, {"native": summ(8192)}) is None


def test_effective_length_drop_accepts_length_summary():
    from pytest_ruler.results.aggregate import summarize

    a = summarize({"t": {4096: 99.0, 8192: 95.0}})
    b = summarize({"t": {4096: 99.0, 8192: 50.0}})
    assert "8K → 4K" in effective_length_drop(a, b)


# ----------------------------------------------------------------- properties

cells = st.lists(
    st.tuples(st.floats(0, 100, allow_nan=False), st.integers(1, 300)), min_size=1, max_size=6)


def _reports(base_cells, cur_cells):
    base = report(*(item(task=f"t{i}", score=s, samples=n) for i, (s, n) in enumerate(base_cells)))
    cur = [item(task=f"t{i}", score=s, samples=n) for i, (s, n) in enumerate(cur_cells)]
    return base, cur


@settings(max_examples=60, deadline=None)
@given(cells, st.sampled_from(TESTS), st.sampled_from(CORRECTIONS), st.floats(0.001, 0.5))
def test_identical_reports_never_flag(cs, test, correction, alpha):
    base, cur = _reports(cs, cs)
    res = compare(base, cur, test=test, correction=correction, alpha=alpha)
    assert not any(c.significant for c in res)
    assert all(c.raw_p_value >= 0.5 for c in res)
    assert summarize_regressions(res)[0]


@settings(max_examples=60, deadline=None)
@given(cells, cells, st.sampled_from(TESTS), st.sampled_from(CORRECTIONS),
       st.floats(0.001, 0.5), st.floats(0.001, 0.5))
def test_p_values_in_range_and_alpha_monotone(b, c, test, correction, a1, a2):
    c = (c * 6)[: len(b)]
    base, cur = _reports(b, c)
    lo, hi = sorted((a1, a2))
    r_lo = compare(base, cur, test=test, correction=correction, alpha=lo)
    r_hi = compare(base, cur, test=test, correction=correction, alpha=hi)
    for x in r_lo:
        assert 0.0 <= x.raw_p_value <= 1.0 and 0.0 <= x.p_value <= 1.0
        assert x.p_value >= x.raw_p_value - 1e-15
    assert {x.key for x in r_lo if x.significant} <= {x.key for x in r_hi if x.significant}


@settings(max_examples=80, deadline=None)
@given(st.integers(1, 25), st.integers(1, 25), st.data())
def test_fisher_matches_brute_force(n1, n2, data):
    x1, x2 = data.draw(st.integers(0, n1)), data.draw(st.integers(0, n2))
    assert fisher_exact_less(x1, n1, x2, n2) == pytest.approx(float(brute_fisher_less(x1, n1, x2, n2)), rel=1e-12)


@settings(max_examples=80, deadline=None)
@given(st.integers(20, 400), st.integers(20, 400), st.data())
def test_both_tests_agree_on_direction(n1, n2, data):
    x1, x2 = data.draw(st.integers(0, n1)), data.draw(st.integers(0, n2))
    z = two_proportion_z_less(x1, n1, x2, n2)[0]
    f = fisher_exact_less(x1, n1, x2, n2)
    if x2 * n1 >= x1 * n2:  # current proportion not lower: neither test sees a drop
        assert z >= 0.5 - 1e-12 and f >= 0.5 - 1e-12


# ----------------------------------------------------------------- paired (same questions)


def qitem(scores, hashes=None, **kw):
    """An item with per-sample scores and prompt hashes (question i is hash q{i} unless given)."""
    scores = list(scores)
    hashes = [f"q{i:03d}" for i in range(len(scores))] if hashes is None else hashes
    return item(samples=len(scores), score=100.0 * sum(scores) / len(scores), sample_scores=scores, sample_hashes=hashes, **kw)


def _lose(base, k, gain=0):
    """The baseline's answers with the first k right ones now wrong and the first `gain` wrong ones now right."""
    cur = list(base)
    right = [i for i, s in enumerate(base) if s == 1.0][:k]
    wrong = [i for i, s in enumerate(base) if s == 0.0][:gain]
    for i in right:
        cur[i] = 0.0
    for i in wrong:
        cur[i] = 1.0
    return cur


BASE50 = [1.0] * 40 + [0.0] * 10  # 80% of 50 questions


def test_paired_catches_a_drop_at_n50_that_the_unpaired_test_misses():
    cur = _lose(BASE50, 6)  # 80% -> 68%: six questions lost, none gained
    [c] = compare(report(qitem(BASE50)), [qitem(cur)])
    assert c.test == "mcnemar" and c.paired == 50 and (c.lost, c.gained) == (6, 0)
    assert c.raw_p_value == pytest.approx(1 / 64) and c.significant
    assert c.effect == pytest.approx(-12.0) and c.delta == pytest.approx(-12.0)
    # the same scores without hashes: the unpaired z-test, p = 0.086, does not flag it
    [u] = compare(report(item(score=80.0, samples=50)), [item(score=68.0, samples=50)])
    assert u.test == "two-proportion-z" and u.paired == 0 and not u.significant
    passed, lines = summarize_regressions(Comparisons([c]))
    assert not passed
    assert lines[1] == "niah_single_1 @ 8K: 80.0 → 68.0 (−12.0, n=50/50; paired: 6 lost, 0 gained), p=0.0156 — significant drop"
    assert c.effect_ci is not None and -22 < c.effect_ci[0] < c.effect_ci[1] < -2  # the interval stays in the JSON's comparison
    assert "paired on the shared questions" in lines[0]


def test_paired_within_noise_change_is_not_flagged():
    cur = _lose(BASE50, 5, gain=3)  # 80% -> 76%: five lost, three gained; P(X >= 5 | 8, 1/2) = 93/256
    [c] = compare(report(qitem(BASE50)), [qitem(cur)])
    assert c.test == "mcnemar" and (c.lost, c.gained) == (5, 3)
    assert c.raw_p_value == pytest.approx(93 / 256) and not c.significant
    # −4 points, not significant: summed up with the unchanged cells, not listed
    assert summarize_regressions([c])[1][1:] == ["baseline: 1 other cell unchanged (change under 5 points, none significant)"]


def test_identical_paired_runs_never_flag():
    [c] = compare(report(qitem(BASE50)), [qitem(BASE50)])
    assert c.test == "mcnemar" and c.raw_p_value == 1.0 and not c.significant


def test_paired_fractional_scores_use_the_paired_t_test():
    base = [1.0, 0.75, 1.0, 0.5, 1.0] * 10
    cur = [s - 0.25 if i % 2 == 0 and s > 0.25 else s for i, s in enumerate(base)]  # half the questions lose a needle
    [c] = compare(report(qitem(base)), [qitem(cur)])
    assert c.test == "sign-flip" and c.significant and c.effect == pytest.approx(-12.5)
    same = [s - 0.25 for s in base]  # every question loses exactly one needle: no variance, the sign test
    [s] = compare(report(qitem(base)), [qitem(same)])
    assert s.test == "sign" and s.raw_p_value == pytest.approx(0.5 ** 50) and s.significant


def test_pairs_by_question_over_seeds_and_partial_overlap():
    base = report(qitem(BASE50[:25], [f"a{i}" for i in range(25)], seed=0), qitem(BASE50[25:], [f"b{i}" for i in range(25)], seed=1))
    # the current run asked the seed-0 questions only (plus unrelated ones)
    cur = [qitem(_lose(BASE50[:25], 6), [f"a{i}" for i in range(25)], seed=0), qitem([1.0] * 5, [f"z{i}" for i in range(5)], seed=1)]
    [c] = compare(base, cur)
    assert c.paired == 25 and (c.lost, c.gained) == (6, 0) and c.significant


def test_no_shared_question_falls_back_to_unpaired_and_says_so():
    other = [f"x{i:03d}" for i in range(50)]  # another tokenizer: other prompts
    [c] = compare(report(qitem(BASE50)), [qitem(_lose(BASE50, 6), other)])
    assert c.paired == 0 and c.test == "two-proportion-z" and c.note and "share no question" in c.note
    assert summarize_regressions([c])[1][-1].startswith("1 cell compared unpaired because the runs share no question")
    [old] = compare(report(item(score=80.0, samples=50)), [qitem(_lose(BASE50, 6))])  # baseline without hashes
    assert old.paired == 0 and old.note is None


def test_paired_and_unpaired_cells_share_one_holm_correction():
    base = report(qitem(BASE50, task="a"), item(task="b", score=80.0, samples=50))
    cur = [qitem(_lose(BASE50, 6), task="a"), item(task="b", score=80.0, samples=50)]
    res = compare(base, cur)
    a = next(c for c in res if c.task == "a")
    assert a.cells == 2 and a.p_value == pytest.approx(2 / 64) and a.significant
    header = summarize_regressions(res)[1][0]
    assert "paired on the shared questions in 1 cell" in header and "unpaired" in header


def test_paired_can_be_switched_off():
    [c] = compare(report(qitem(BASE50)), [qitem(_lose(BASE50, 6))], paired=False)
    assert c.paired == 0 and c.test == "two-proportion-z"
