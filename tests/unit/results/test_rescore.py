"""A saved report is checked down to its samples (issue 35, item 2): each item's score re-derived
from its sample scores, each sample score from its prediction and answers by the task's own metric
(results.rescore, called by results.saved.check_report); a disagreement is one RulerUsageError naming
the item, the field and both values. Items here are built as the runner builds them (scores rounded
to 4 digits, the item's score from the task's corpus metric), from made-up predictions."""

from __future__ import annotations

import dataclasses
import json

import pytest

from pytest_ruler.errors import RulerUsageError
from pytest_ruler.report.build import build_report
from pytest_ruler.results import ItemResult
from pytest_ruler.results.rescore import MEAN_TOLERANCE, item_disagreement, items_disagreement, metric_of
from pytest_ruler.results.saved import check_report
from pytest_ruler.results.scoring import get_metric, sample_scorer


def honest(task: str, preds, answers, *, length=4096, seed=0, mode="native", depths=None, metric=None) -> ItemResult:
    """An item as run.runner writes it: per-sample scores and the score rounded to 4 digits, one record per sample."""
    metric = metric or metric_of(task)
    per = sample_scorer(metric)
    scores = tuple(round(per(p, a), 4) for p, a in zip(preds, answers))
    score = round(get_metric(metric)(list(preds), [list(a) for a in answers]), 4)
    records = tuple({"index": i, "prediction": p, "answers": list(a), "score": s, "prompt_hash": f"h{i}"}
                    for i, (p, a, s) in enumerate(zip(preds, answers, scores)))
    sweep = {}
    if depths:
        groups: dict[float, list[float]] = {}
        for i, (p, a) in enumerate(zip(preds, answers)):
            groups.setdefault(depths[i % len(depths)], []).append(per(p, a))
        sweep = {f"{d:g}": round(100 * sum(v) / len(v), 4) for d, v in sorted(groups.items())}
    return ItemResult(task=task, length=length, seed=seed, mode=mode, samples=len(preds), score=score, threshold=50.0,
                      passed=score > 50.0, nulls=0, seconds=0.1, sample_scores=scores, predictions=records,
                      sample_hashes=tuple(f"h{i}" for i in range(len(preds))), depth_scores=sweep)


def saved(*items: ItemResult) -> dict:
    return json.loads(json.dumps(build_report(model="m", backend="scripted", tokenizer="t", haystack_corpus="noise",
                                              threshold=50.0, results=list(items))))


def refused(data: dict) -> str:
    with pytest.raises(RulerUsageError) as info:
        check_report(data, "REPORT.json", "r.json")
    text = str(info.value)
    assert text.startswith("REPORT.json='r.json' is invalid: item ") and "\n" not in text
    return text


# one honest item per metric of RULER (all, part) and RULERv2 (the soft matches, multichoice), with partial credit
EVERY_METRIC = [
    pytest.param("niah_multikey_1", ["1234567 and 7654321", "nothing", "1234567"], [["1234567"], ["2345678"], ["1234567", "99"]], id="niah-all"),
    pytest.param("vt", ["VAR ABCDE VAR FGHIJ", "VAR ABCDE"], [["ABCDE", "FGHIJ", "KLMNO"], ["ABCDE", "XYZWV"]], id="vt-all"),
    pytest.param("cwe", ["1. apple 2. pear", "apple"] * 3, [["apple", "pear", "plum"]] * 6, id="cwe-thirds"),
    pytest.param("fwe", ["the: 1, cat", ""], [["the", "cat", "dog"], ["the", "cat", "dog"]], id="fwe-all"),
    pytest.param("qa_1", ["Paris, I think", "London"], [["Paris", "paris city"], ["Rome"]], id="qa-part"),
    pytest.param("mk_niah_basic", ["Answer: the special magic number is 12 34", "12"], [["12 34 56"], ["12 34"]], id="ruler2-all"),
    pytest.param("qa_basic", ["Document 1:\nfoo\n\nAnswer: a red house", "blue"], [["red house on the hill"], ["green"]], id="ruler2-part"),
    pytest.param("mv_niah_medium", ["a b\n\nc d e", "x\n\nq"], [["c d", "e f"], ["q r s"]], id="ruler2-2steps"),
    pytest.param("mk_niah_medium", ["so \\boxed{B}", "Answer: C", "none"], [["B"], ["D"], ["A"]], id="multichoice"),
]


@pytest.mark.parametrize("task, preds, answers", EVERY_METRIC)
def test_an_honest_item_of_every_metric_is_read(task, preds, answers):
    item = honest(task, preds, answers)
    assert 0 < item.score < 100 or task == "vt"  # the premise: partial credit, where rounding shows
    report = check_report(saved(item, honest(task, preds, answers, mode="mapreduce")))
    assert [r.score for r in report.items] == [item.score, item.score]


def test_rounding_is_allowed_and_no_more():
    thirds = honest("cwe", ["apple"] * 500, [["apple", "pear", "plum"]] * 500)  # 0.3333 each, the score 33.3333
    assert thirds.score == 33.3333 and item_disagreement(thirds, "all") is None
    # against the stored sample scores (0.3333 each: 33.33) within their rounding: one more unit is too many
    data = saved(dataclasses.replace(thirds, score=round(33.33 + MEAN_TOLERANCE + 1e-4, 4)))
    assert "item cwe[4096-seed0]: score 33.3352 but its sample_scores give 33.33 (100 × the mean of 500)" in refused(data)
    # against the predictions re-scored, unrounded (33.33333...): one unit of the 4th digit is too many
    data = saved(dataclasses.replace(thirds, score=33.3334))
    assert "item cwe[4096-seed0]: score 33.3334 but its 500 predictions, re-scored by the metric 'all', give 33.3333" in refused(data)
    two_of_three = honest("niah_single_1", ["1", "1", "2"], [["1"]] * 3)
    edited = saved(dataclasses.replace(two_of_three, score=66.67))
    assert "score 66.67 but its 3 predictions, re-scored by the metric 'all', give 66.6667" in refused(edited)


def test_a_score_its_sample_scores_do_not_give_is_refused():
    data = saved(honest("vt", ["x", "y", "z"], [["ABCDE"]] * 3))
    data["items"][0].update(score=100.0, passed=True)
    assert "item vt[4096-seed0]: score 100.0 but its sample_scores give 0.0 (100 × the mean of 3)" in refused(data)


def test_predictions_replaced_with_their_scores_left_at_one_are_refused():
    data = saved(honest("niah_single_1", ["1234567", "7654321"], [["1234567"], ["7654321"]], length=8192, seed=3))
    for rec in data["items"][0]["predictions"]:
        rec["prediction"] = "I have no idea"
    line = refused(data)
    assert ("item niah_single_1[8192-seed3]: sample_scores[0] is 1.0 but its prediction 'I have no idea' scores 0.0 "
            "against its answers ['1234567'] by the task's metric 'all'") in line


def test_tampered_sample_scores_are_refused_even_when_score_and_records_agree():
    data = saved(honest("qa_2", ["no", "no"], [["Paris"], ["Rome"]]))
    item = data["items"][0]
    item.update(score=100.0, sample_scores=[1.0, 1.0])
    for rec in item["predictions"]:
        rec["score"] = 1.0
    assert "item qa_2[4096-seed0]: sample_scores[0] is 1.0 but its prediction 'no' scores 0.0" in refused(data)


def test_a_records_own_score_must_be_its_sample_score():
    data = saved(honest("vt", ["ABCDE", "no"], [["ABCDE"], ["ABCDE"]]))
    data["items"][0]["predictions"][1]["score"] = 1.0
    assert "predictions[1].score is 1.0 but sample_scores[1] is 0.0" in refused(data)


@pytest.mark.parametrize("edit, fragment", [
    pytest.param(lambda it: it["predictions"].pop(), "it has 1 predictions but 2 sample_scores", id="one record dropped"),
    pytest.param(lambda it: it["predictions"][0].update(answers=[]), "predictions[0] has no 'answers' list of strings (found [])", id="no answers"),
    pytest.param(lambda it: it["predictions"][0].update(answers=[""]), "predictions[0] cannot be scored by the metric 'all'", id="empty answer"),
    pytest.param(lambda it: it["predictions"][0].update(prediction=None), "predictions[0] has no 'prediction' string (found None)", id="no prediction"),
    pytest.param(lambda it: it["predictions"][0].update(score="1"), "predictions[0].score is not a number (found '1')", id="score a string"),
    pytest.param(lambda it: it.update(depth_scores={"0.5": "x"}), "depth_scores['0.5'] is not a number", id="depth score a string"),
])
def test_malformed_records_are_one_line_not_a_traceback(edit, fragment):
    data = saved(honest("vt", ["ABCDE", "no"], [["ABCDE"], ["ABCDE"]]))
    edit(data["items"][0])
    assert fragment in refused(data)


def test_a_map_reduce_twin_is_named_as_the_run_names_it():
    data = saved(honest("vt", ["ABCDE"], [["ABCDE"]]), honest("vt", ["ABCDE"], [["ABCDE"]], mode="mapreduce"))
    (twin,) = [it for it in data["items"] if it["mode"] == "mapreduce"]
    twin["predictions"][0]["prediction"] = "I have no idea"
    assert "item vt[4096-seed0-mapreduce]: sample_scores[0] is 1.0" in refused(data)


def test_a_depth_sweep_is_checked_in_any_order_of_its_depths():
    preds = ["1", "0", "1", "0", "1"]  # samples 0, 2, 4 at the first depth given, 1 and 3 at the second
    sweep = honest("niah_single_1", preds, [["1"]] * 5, depths=(0.8, 0.2))  # --ruler-depths=0.8,0.2: not sorted
    assert sweep.depth_scores == {"0.2": 0.0, "0.8": 100.0}
    check_report(saved(sweep))
    data = saved(sweep)
    data["items"][0]["depth_scores"] = {"0.2": 100.0, "0.8": 100.0}  # the deep needle "found" too
    assert "depth_scores is {'0.2': 100.0, '0.8': 100.0} but its samples, at depth i mod 2, give [100.0, 0.0]" in refused(data)


def test_an_old_report_without_the_fields_still_loads():
    data = saved(honest("vt", ["ABCDE", "no"], [["ABCDE"], ["ABCDE"]]))
    for key in ("sample_scores", "predictions", "sample_hashes", "stderr", "ci95", "samples_used"):
        del data["items"][0][key]
    report = check_report(data)
    assert report.items[0].score == 50.0 and not report.items[0].predictions
    data["items"][0]["sample_scores"] = [1.0, 0.0]  # sample scores without predictions: what is there is checked
    check_report(data)
    data["items"][0]["score"] = 100.0
    assert "score 100.0 but its sample_scores give 50.0" in refused(data)


def test_a_task_this_process_does_not_know_is_checked_as_far_as_its_fields_go():
    item = honest("my_custom_task", ["I have no idea", "I have no idea"], [["1"], ["2"]], metric="all")
    faked = dataclasses.replace(item, score=100.0, sample_scores=(1.0, 1.0),
                                predictions=tuple(dict(p, score=1.0) for p in item.predictions))
    assert metric_of("my_custom_task") is None
    check_report(saved(faked))  # the metric is unknown here: its predictions are not re-scored
    assert items_disagreement([faked], metric=lambda task: "all").startswith("item my_custom_task[4096-seed0]: sample_scores[0] is 1.0")
    data = saved(faked)
    data["items"][0]["score"] = 50.0
    assert "score 50.0 but its sample_scores give 100.0" in refused(data)  # what its fields give is still checked


def test_a_prediction_masked_after_it_was_scored_is_not_re_scored():
    item = honest("niah_single_1", ["the key sk-abcdef123456 and 1234567", "7654321"], [["1234567"], ["7654321"]])
    masked = dataclasses.replace(item, predictions=(dict(item.predictions[0], prediction="<secret>"), item.predictions[1]))
    check_report(saved(masked))
    data = saved(masked)
    data["items"][0]["predictions"][1]["prediction"] = "I have no idea"  # the other records still are
    assert "sample_scores[1] is 1.0 but its prediction 'I have no idea' scores 0.0" in refused(data)
