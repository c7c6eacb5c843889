"""One judging rule (issue 34): an item is judged against a mark by ``results.item.item_passes``
wherever it happens: at run time (``run.runner.item_result``), under a relative mark
(``results.relative.resolve``), when a saved report is read (``results.report``), and by
``pytest-ruler gate --threshold`` (``results.relative.rejudge``). The decision it encodes: an
over-length sample scores 0 like any failing sample and does not fail its item by itself."""

from __future__ import annotations

import time

import pytest

from pytest_ruler.run_config import RulerConfig
from pytest_ruler.parsers import RelativeMark
from pytest_ruler.results import gate
from pytest_ruler.results.item import item_passes, judged
from pytest_ruler.results.relative import rejudge, resolve
from pytest_ruler.results.report import Report
from pytest_ruler.run.runner import item_result


def _twin(score: float, over_length: int = 1, length: int = 2048):
    """A map-reduce twin of 10 samples, one of whose engine calls did not fit the context."""
    return item_result(RulerConfig(model="m"), "niah_single_1", length, 0, "mapreduce", threshold=85.6, started=time.perf_counter(),
                       samples=10, score=score, preds=["x"] * 10, over_length=over_length,
                       sample_scores=tuple([1.0] * 9 + [0.0]))


def _native(score: float, length: int):
    return item_result(RulerConfig(model="m"), "niah_single_1", length, 0, "native", threshold=85.6, started=time.perf_counter(),
                       samples=10, score=score, preds=["x"] * 10, sample_scores=tuple([1.0] * 10))


def test_the_rule():
    assert item_passes(90.0, 85.6, None) and not item_passes(85.6, 85.6, None)  # strictly above
    assert not item_passes(100.0, 0.0, "RuntimeError: boom")  # an error is never a score
    assert judged(_twin(90.0), 95.0).passed is False and judged(_twin(90.0), 80.0).passed is True


def test_a_twin_with_one_over_length_call_is_judged_alike_everywhere():
    twin = _twin(90.0)
    assert twin.over_length == 1 and twin.passed is True  # at run time: the score decides
    report = Report.of_results([twin], threshold=85.6, model="m", backend="scripted", tokenizer="t", haystack_corpus="")
    again = Report.from_dict(report.to_dict())  # a saved report read back
    assert again.items[0].passed is True
    assert rejudge(again, 85.6).items[0].passed is True  # `pytest-ruler gate --threshold 85.6`
    # rel:0.8 of the native base at 1K (100) is 80: the twin's 90 is above it, as at run time
    native = [_native(100.0, 1024), _native(100.0, 2048)]
    twin_1k = _twin(100.0, over_length=0, length=1024)
    resolved = resolve([*native, twin_1k, twin], RelativeMark(0.8))
    assert next(r for r in resolved.items if r.mode == "mapreduce" and r.length == 2048).passed is True
    # and the verdict without a gate (every item's mark) passes on it
    assert gate(report).status == "passed"


def test_an_all_over_length_item_scores_zero_and_fails_even_at_mark_zero():
    item = item_result(RulerConfig(model="m"), "vt", 8192, 0, "native", threshold=0.0, started=time.perf_counter(),
                       samples=4, score=50.0, over_length=4, failed=True)
    assert item.score == 0.0 and item.passed is False
    assert Report.from_dict({"threshold": 0.0, "items": [item.to_dict()]}).items[0].passed is False


@pytest.mark.parametrize("stored", [True, False])
def test_a_saved_items_passed_flag_is_never_trusted(stored):
    report = Report.of_results([_native(40.0, 1024)], threshold=85.6, model="m", backend="b", tokenizer="t", haystack_corpus="")
    data = report.to_dict()
    data["items"][0]["passed"] = stored  # edited by hand, or written by another version
    assert Report.from_dict(data).items[0].passed is False
