"""The relative pass mark rel:F (NoLiMa's effective length): parsing, resolution, re-judging, bound, gate."""

from __future__ import annotations

import pytest

from pytest_ruler.errors import RulerUsageError
from pytest_ruler.parsers import RelativeMark, parse_threshold
from pytest_ruler.results import ItemResult, gate
from pytest_ruler.results.relative import describe, rejudge, resolve
from pytest_ruler.results.report import Report
from pytest_ruler.results.table import mode_table


def item(task, length, score, n=40, error=None):
    k = round(score / 100 * n)
    # the k right answers spread evenly over the samples (the betting tests read samples in order)
    scores = tuple(float((i + 1) * k // n > i * k // n) for i in range(n))
    return ItemResult(task=task, length=length, seed=0, mode="native", samples=n, score=100 * k / n, threshold=0.0,
                      passed=k > 0, nulls=0, seconds=0.0, sample_scores=scores, error=error)


# a model that is weak everywhere (60 at 4K) but holds 85 % of that up to 16K
ITEMS = [item("a", 4096, 60), item("a", 8192, 55), item("a", 16384, 52.5), item("a", 32768, 30),
         item("b", 4096, 60), item("b", 8192, 57.5), item("b", 16384, 50), item("b", 32768, 20)]


def test_parse_threshold():
    assert parse_threshold("--ruler-threshold", "85.6") == 85.6
    assert parse_threshold("--ruler-threshold", "rel:0.85") == RelativeMark(0.85)
    assert str(RelativeMark(0.85)) == "rel:0.85"
    for bad in ("rel:0", "rel:1.5", "rel:x", "rel:"):
        with pytest.raises(RulerUsageError, match="rel:F"):
            parse_threshold("--ruler-threshold", bad)


def test_resolve_uses_the_shortest_lengths_own_scores():
    res = resolve(ITEMS, RelativeMark(0.85))
    assert res.info["base_length"] == 4096 and res.info["base_score"] == 60
    assert res.threshold == pytest.approx(51.0)
    assert res.task_thresholds == {"a": pytest.approx(51.0), "b": pytest.approx(51.0)}
    verdicts = {(r.task, r.length): r.passed for r in res.items}
    assert verdicts[("a", 16384)] and not verdicts[("b", 16384)] and not verdicts[("a", 32768)]


def _report(items, threshold):
    return Report.of_results(items, threshold=threshold, model="m", backend="fake", tokenizer="t", haystack_corpus="h")


def test_the_same_report_gated_both_ways():
    absolute = _report(ITEMS, 85.6)
    assert absolute.mode("native").effective_length is None  # 60 is below 85.6 everywhere
    relative = rejudge(absolute, RelativeMark(0.85))
    summary = relative.mode("native").summary
    # Total: 60, 56.25, 51.25, 25 -> above 51 up to 16K
    assert summary["effective_length"] == 16384
    assert mode_table(relative.mode("native")).header[0] == "rel:0.85 of 60.0 at 4K = 51.0"
    v_abs = gate(absolute, required=16384)
    v_rel = gate(relative, required=16384)
    assert v_abs.passed is False and v_rel.passed is True
    assert "rel:0.85 of 60.0 at 4K = 51.0" in v_rel.lines()[0][0]
    # back to an absolute mark: every item judged by it again
    again = rejudge(relative, 55.0)
    assert [r.passed for r in again.items] == [r.score > 55.0 for r in again.items]
    assert {r.threshold for r in again.items} == {55.0} and again.field("relative_threshold") is None


def test_the_bound_starts_at_the_base_and_tests_each_drop_with_the_bases_uncertainty():
    def summary(n, mark):
        return _report([item(r.task, r.length, r.score, n=n) for r in ITEMS], mark).mode("native").summary

    # 40 samples per cell: the base length is in the bound (its score is above 0, the only way it can
    # fail its own mark); 8K's 56.25 against 0.85 x 60 is too close to establish (issue 38: the base
    # used to be tested against F x its own upper bound at alpha/2, and the bound was None)
    assert summary(40, RelativeMark(0.85))["effective_length_bound"] == 4096
    # 400: the same resolved mark (51) taken as exact gives 8K; the drop test also pays for the
    # base's own sampling error, so the relative bound is shorter
    rel, exact = summary(400, RelativeMark(0.85)), summary(400, 51.0)
    assert rel["effective_length"] == exact["effective_length"] == 16384
    assert exact["effective_length_bound"] == 8192 and rel["effective_length_bound"] == 4096
    # more samples: the base is pinned down and the bound reaches 8K (16K's 51.25 is too close to 51)
    assert summary(2000, RelativeMark(0.85))["effective_length_bound"] == 8192
    # a base of 0 fails its own mark (0 is not above 0): no bound
    zeros = [item("a", 4096, 0), item("a", 8192, 0)]
    assert _report(zeros, RelativeMark(0.85)).mode("native").summary["effective_length_bound"] is None


def test_a_zero_base_passes_nowhere_and_an_errored_base_has_no_mark():
    zeros = [item("a", 4096, 0), item("a", 8192, 0)]
    assert _report(zeros, RelativeMark(0.85)).mode("native").summary["effective_length"] is None
    errored = [item("a", 4096, 60, error="engine died"), item("a", 8192, 60)]
    res = resolve(errored, RelativeMark(0.85))
    assert res.info["base_score"] is None and not any(r.passed for r in res.items)
    assert "nothing passes" in describe(res.info)


def test_the_report_records_the_mark():
    data = _report(ITEMS, RelativeMark(0.85)).to_dict()
    assert data["relative_threshold"]["fraction"] == 0.85 and data["threshold"] == pytest.approx(51.0)
    assert {i["threshold"] for i in data["items"]} == {51.0}
    back = Report.from_dict(data)
    assert back.mode("native").summary["effective_length"] == 16384


def test_a_task_whose_own_base_errored_has_no_mark_not_the_totals():
    # task c is tested from 8K on and its 8K cell errored: the Total's base (a and b at 4K) is no base for it
    items = ITEMS + [item("c", 8192, 90, error="engine died"), item("c", 16384, 55)]
    res = resolve(items, RelativeMark(0.85))
    assert res.threshold == pytest.approx(51.0)  # the premise: the Total has a base, 55 is above its mark
    assert res.info["task_bases"]["c"] is None and res.task_thresholds["c"] == 100.0
    assert not any(r.passed for r in res.items if r.task == "c")


def test_the_table_notes_name_the_resolved_marks_as_relative_not_the_ini():
    from pytest_ruler.results.table import table_notes

    items = [item("a", 4096, 60), item("a", 8192, 55), item("b", 4096, 80), item("b", 8192, 70)]
    notes = " | ".join(table_notes(_report(items, RelativeMark(0.5)), "native"))
    assert "per-task marks under rel:0.5 (0.5 x each task's own base score" in notes and "a 30.0, b 40.0" in notes
    assert "ruler_task_thresholds" not in notes
    ini = " | ".join(table_notes(Report.of_results(items, threshold=50.0, task_thresholds={"b": 75.0}, model="m", backend="b",
                                                    tokenizer="t", haystack_corpus="h"), "native"))
    assert "per-task pass marks (ini ruler_task_thresholds): b 75" in ini  # an ini mark keeps its label


def test_the_drop_test_holds_its_level_on_the_mark_and_has_power_above_it():
    """Issue 38: on the mark (8K's truth exactly F x base) the bound reaches 8K at a rate <= alpha."""
    import math

    import numpy as np

    from pytest_ruler.results.intervals import drop_p, relative_bounds

    rng = np.random.default_rng(38)
    info, runs = {"fraction": 0.8, "base_length": 4096}, 200

    def bound(base, second, n):
        cells = {"t": {4096: list(map(float, rng.random(n) < base)), 8192: list(map(float, rng.random(n) < second))}}
        return relative_bounds(cells, {}, info, 0.95)[1]["t"]

    size = np.mean([bound(0.9, 0.8 * 0.9, 30) == 8192 for _ in range(runs)])
    assert size <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / runs)
    assert np.mean([bound(0.9, 0.9, 100) == 8192 for _ in range(50)]) > 0.3  # no drop, 100 samples: found
    # a higher fraction is harder to clear; two perfect cells at n = 20 clear rel:0.85
    cur, base = [1.0] * 18 + [0.0] * 2, [1.0] * 19 + [0.0]
    assert drop_p(cur, base, 0.5) <= drop_p(cur, base, 0.85) <= drop_p(cur, base, 0.95)
    assert drop_p([1.0] * 20, [1.0] * 20, 0.85) <= 0.05 < drop_p([1.0] * 10, [1.0] * 10, 0.85)
    partial = [1.0, 0.75] * 25  # partial credit: the betting test, the same direction
    assert drop_p(partial, partial, 0.5) < 0.05 < drop_p(partial, partial, 0.95)


from hypothesis import given, settings, strategies as st  # noqa: E402


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 30), st.integers(2, 30), st.data(), st.sampled_from([0.5, 0.8, 0.85, 0.95]))
def test_the_exact_drop_test_rejects_only_above_the_mark_and_more_successes_help(n1, n0, data, fraction):
    from pytest_ruler.results.intervals import drop_p

    x1, x0 = data.draw(st.integers(0, n1)), data.draw(st.integers(0, n0))

    def p(a, b):
        return drop_p([1.0] * a + [0.0] * (n1 - a), [1.0] * b + [0.0] * (n0 - b), fraction)

    if p(x1, x0) <= 0.05:  # a rejection needs the point estimate above the mark
        assert x1 / n1 > fraction * x0 / n0
    if x1 < n1:
        assert p(x1 + 1, x0) <= p(x1, x0) + 1e-12
    if x0 < n0:
        assert p(x1, x0 + 1) >= p(x1, x0) - 1e-12
