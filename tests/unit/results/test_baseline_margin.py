"""--ruler-baseline with --ruler-noninferiority-margin: the baseline comparison becomes a paired
non-inferiority test (results.baseline.compare(margin=), results.gate); without a margin it stays the drop test."""

from __future__ import annotations

from pytest_ruler.results import gate
from pytest_ruler.results.baseline import compare
from pytest_ruler.results.report import Report
from pytest_ruler.results import ItemResult


def _item(length, scores, hashes=None):
    n = len(scores)
    return ItemResult(task="niah_single_1", length=length, seed=0, mode="native", samples=n, score=100 * sum(scores) / n,
                      threshold=50.0, passed=sum(scores) / n > 0.5, nulls=0, seconds=0.0, sample_scores=tuple(scores),
                      sample_hashes=tuple(hashes or [f"q{length}-{i}" for i in range(n)]))


def _report(*items):
    return Report.of_results(list(items), threshold=50.0, model="m", backend="scripted", tokenizer="t", haystack_corpus="noise")


def test_without_a_margin_a_small_run_with_a_real_drop_passes_for_lack_of_evidence():
    base = _report(_item(1024, [1.0] * 4))
    now = _report(_item(1024, [1.0, 1.0, 1.0, 0.0]))
    verdict = gate(now, baseline=base, baseline_path="old.json")
    assert verdict.status == "passed"  # the drop test: one lost question is not significant
    [c] = verdict.fields["baseline"]["comparisons"]
    assert "margin" not in c and "noninferiority" not in c  # reports without a margin are as before


def test_with_a_margin_the_same_run_is_not_decided_and_says_why():
    base = _report(_item(1024, [1.0] * 4))
    now = _report(_item(1024, [1.0, 1.0, 1.0, 0.0]))
    verdict = gate(now, baseline=base, baseline_path="old.json", margin=5.0)
    assert verdict.status == "not decided" and verdict.exit_status == 2
    assert "non-inferiority to old.json (margin 5 points) not shown at niah_single_1 @ 1K" in verdict.line()
    assert verdict.fields["baseline"]["passed"] is None and verdict.fields["baseline"]["margin"] == 5.0


def test_with_a_margin_a_clear_regression_fails_and_an_equal_run_passes():
    base = _report(_item(1024, [1.0, 0.0] * 30), _item(2048, [1.0] * 60))
    worse = _report(_item(1024, [1.0, 0.0] * 30), _item(2048, [0.0] * 60))
    verdict = gate(worse, baseline=base, baseline_path="old.json", margin=10.0)
    assert verdict.status == "failed" and "niah_single_1 @ 2K" in verdict.line() and "niah_single_1 @ 1K" not in verdict.line()
    same = gate(base, baseline=base, baseline_path="old.json", margin=10.0)
    assert same.status == "passed" and "non-inferior to old.json (margin 10 points) in 2 cells" in same.line()


def test_an_unpaired_cell_is_not_shown():
    base = {"schema": "pytest-ruler/1", "threshold": 50.0, "items": [
        {"task": "niah_single_1", "length": 1024, "seed": 0, "mode": "native", "samples": 60, "score": 100.0,
         "threshold": 50.0, "passed": True, "nulls": 0, "seconds": 0.0}]}  # an older report: no per-sample hashes
    [c] = compare(base, [_item(1024, [1.0] * 60)], margin=10.0)
    assert c.noninferiority == "not shown" and not c.significant
