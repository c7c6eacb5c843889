"""Per-endpoint counts (results/endpoints.py): tallied per item, summed into the report, said on the terminal."""

from __future__ import annotations

import json

from pytest_ruler.engines.base import Completion
from pytest_ruler.report.lines import lines
from pytest_ruler.results import ItemResult
from pytest_ruler.results.endpoints import endpoint_lines, endpoint_total, failover_notes, tally
from pytest_ruler.results.report import Report
from pytest_ruler.results.saved import item_problem

A, B = "http://10.0.0.1:8000/v1", "http://10.0.0.2:8000/v1"


def _c(endpoint, moved=(), cached=None, prompt=100, seconds=0.5):
    return Completion("x", prompt, 1, "stop", seconds, cached_tokens=cached, endpoint=endpoint, moved_from=tuple(moved))


def _item(task, endpoints):
    return ItemResult(task=task, length=1024, seed=0, mode="native", samples=4, score=100.0, threshold=85.6, passed=True,
                      nulls=0, seconds=1.0, endpoints=endpoints)


def test_tally_counts_answers_their_cached_tokens_and_the_moves():
    rec = {}
    for c in (_c(A, cached=64), _c(A, cached=96), _c(B, moved=[A]), _c(None)):
        tally(rec, c)
    assert rec[A] == {"requests": 2, "seconds": 1.0, "prompt_tokens": 200, "cached_tokens": 160, "moved_off": 1}
    assert rec[B] == {"requests": 1, "seconds": 0.5, "prompt_tokens": 100, "moved_off": 0}  # no cached_tokens: not reported


def test_the_report_sums_the_items_per_endpoint_with_the_cached_share():
    one, two = {}, {}
    for c in (_c(A, cached=50), _c(B, cached=0)):
        tally(one, c)
    for c in (_c(A, cached=100), _c(A, moved=[B], cached=0)):
        tally(two, c)
    items = [_item("niah_single_1", one), _item("vt", two)]
    report = Report.of_results(items, threshold=85.6, model="m", backend="openai", tokenizer="t", haystack_corpus="")
    data = json.loads(json.dumps(report.to_dict()))
    assert data["endpoints"] == {
        A: {"requests": 3, "seconds": 1.5, "prompt_tokens": 300, "moved_off": 0, "cached_tokens": 150, "cached_share": 0.5},
        B: {"requests": 1, "seconds": 0.5, "prompt_tokens": 100, "moved_off": 1, "cached_tokens": 0, "cached_share": 0.0},
    }
    back = Report.from_dict(data)
    assert [r.endpoints for r in back.items] == [r.endpoints for r in report.items]  # the items keep theirs
    assert all(item_problem(it) is None for it in data["items"])
    shown = [line.text for line in lines(back)]
    assert any(t.startswith("endpoints: ") and A in t and "50% of prompt tokens" in t for t in shown), shown
    assert any(f"endpoint {B} failed mid-run: 1 request moved to {A}" in t for t in shown), shown


def test_engines_without_endpoints_add_nothing():
    item = _item("vt", {})
    report = Report.of_results([item], threshold=85.6, model="m", backend="hf", tokenizer="t", haystack_corpus="")
    assert "endpoints" not in report.to_dict() and endpoint_total([item]) is None
    assert endpoint_lines(None) == [] and failover_notes(None) == []
    assert endpoint_lines({A: {"requests": 3, "seconds": 1.0}}) == []  # one endpoint, nothing moved: no line
