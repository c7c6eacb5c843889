"""What a report keeps (issue 35): long texts stored once, and prefix-cache counts that cannot be true left out."""

from __future__ import annotations

import json

from pytest_ruler.results import ItemResult
from pytest_ruler.results.endpoints import endpoint_total
from pytest_ruler.results.report import Report, prefix_cache_total

LONG = "the model went on " * 2000  # 36K characters


def _item(task="niah_single_1", **fields):
    base = dict(task=task, length=1024, seed=0, mode="native", samples=2, score=0.0, threshold=85.6, passed=False, nulls=0,
                seconds=1.0)
    return ItemResult(**{**base, **fields})


def _report(items):
    return Report.of_results(items, threshold=85.6, model="m", backend="openai", tokenizer="t", haystack_corpus="")


def test_a_failing_prediction_is_stored_once_and_read_back_whole():
    item = _item(
        predictions=({"index": 0, "prediction": LONG, "answers": ["12345"], "score": 0.0, "prompt_hash": "a"},
                     {"index": 1, "prediction": "", "answers": ["67890"], "score": 0.0, "prompt_hash": "b"}),
        failures=({"index": 0, "pred": LONG, "outputs": ["12345"]},
                  {"index": 1, "pred": "<error: HTTP 500>", "outputs": ["67890"]}),  # not the prediction: kept as it is
        sample_scores=(0.0, 0.0))
    text = json.dumps(_report([item]).to_dict())
    assert text.count(LONG) == 1, text.count(LONG)  # not once in predictions and again in failures
    assert "<error: HTTP 500>" in text
    back = Report.from_dict(json.loads(text)).items[0]
    assert back.failures == item.failures
    assert ItemResult.from_dict(json.loads(json.dumps(item.to_dict()))) == item  # the xdist hand-off too
    assert LONG[:100] in back.failure_message()


def test_an_item_before_per_sample_records_keeps_its_failures():
    item = _item(failures=({"index": 3, "pred": "wrong", "outputs": ["right"]},))
    data = json.loads(json.dumps(_report([item]).to_dict()))
    assert data["items"][0]["failures"] == [{"index": 3, "pred": "wrong", "outputs": ["right"]}]


def test_prefix_cache_counts_that_cannot_be_true_are_left_out_and_said():
    fine = _item("vt", prefix_cache={"prompt_tokens": 1000, "cached_tokens": 400})
    absurd = _item("niah_single_1", prefix_cache={"prompt_tokens": 900, "cached_tokens": 10**12})  # a saved report's
    counted = _item("cwe", prefix_cache={"prompt_tokens": 0, "cached_tokens": 0, "untrusted": 2})  # counted at run time
    total = prefix_cache_total([fine, absurd, counted])
    assert total == {"prompt_tokens": 1000, "cached_tokens": 400, "share": 0.4, "untrusted": 3}
    assert json.loads(json.dumps(_report([fine, absurd, counted]).to_dict()))["prefix_cache"] == total
    from pytest_ruler.results.endpoints import prefix_cache_notes

    [note] = prefix_cache_notes([fine, absurd, counted])
    assert "cached_tokens > prompt_tokens" in note and "3 answers" in note and "not trusted" in note
    assert prefix_cache_notes([fine]) == [] and prefix_cache_total([fine])["share"] == 0.4


def test_an_endpoint_record_that_cannot_be_true_gives_no_share_above_one():
    url = "http://10.0.0.1:8000/v1"
    saved = _item(endpoints={url: {"requests": 2, "seconds": 1.0, "prompt_tokens": 900, "cached_tokens": 10**12, "moved_off": 0}})
    total = endpoint_total([saved])
    assert total[url]["cached_share"] is None and total[url]["cached_untrusted"] == 2
    twin = _item(mode="mapreduce", endpoints={url: {"requests": 1, "seconds": 1.0, "prompt_tokens": 10, "moved_off": 0,
                                                   "cached_untrusted": 1}})
    from pytest_ruler.results.endpoints import prefix_cache_notes

    [note] = prefix_cache_notes([twin])
    assert url in note and "for 1 answer," in note
