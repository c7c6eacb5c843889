"""The JSON report's per-item error bar (user contract: stderr, a 95 % interval, samples_used)."""

from __future__ import annotations

import pytest

from pytest_ruler.report.build import build_report
from pytest_ruler.results import ItemResult


def _item(**kw):
    base = dict(task="vt", length=1024, seed=0, mode="native", samples=4, score=75.0, threshold=85.6, passed=False,
                nulls=0, seconds=1.0)
    return ItemResult(**{**base, **kw})


def _report(*results):
    return build_report(model="m", backend="scripted", tokenizer="t", haystack_corpus="noise", threshold=85.6, results=results)


def test_an_item_carries_its_standard_error_and_interval():
    (item,) = _report(_item(sample_scores=(1.0, 1.0, 1.0, 0.0), sample_hashes=("a", "b", "c", "d")))["items"]
    assert item["samples_used"] == 4
    assert item["stderr"] == pytest.approx(25.0)  # sd 0.5 / sqrt(4), in points
    low, high = item["ci95"]
    assert 0 < low < 75 < high <= 100  # Wilson for 0/1 scores


def test_no_interval_without_per_sample_scores_or_for_an_errored_item():
    items = {i["task"]: i for i in _report(_item(), _item(task="cwe", error="engine died", sample_scores=(1.0, 0.0)))["items"]}
    old, bad = items["vt"], items["cwe"]
    assert (old["stderr"], old["ci95"], old["samples_used"]) == (None, None, 4)
    assert (bad["stderr"], bad["ci95"]) == (None, None)


def test_a_sequential_item_reports_the_samples_it_used():
    (item,) = _report(_item(samples=8, sample_scores=(0.0,) * 8, stopped="sequential: ..."))["items"]
    assert item["samples_used"] == 8 and item["stopped"] == "sequential: ..."
