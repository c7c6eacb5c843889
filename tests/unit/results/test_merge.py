"""Merging shard reports (results.merge): the merged report's summary is the one its items give,
and a merge of shards of different runs, of overlapping shards or with a shard missing is refused
with one error naming the conflict and the file."""

from __future__ import annotations

import json

import pytest

from pytest_ruler.errors import RulerUsageError
from pytest_ruler.results import ItemResult, gate
from pytest_ruler.results.merge import merge_files, merge_reports
from pytest_ruler.results.report import Report
from pytest_ruler.results.saved import check_report
from pytest_ruler.shard import Shard

SUITE = {"tasks": ["niah_single_1", "vt"], "lengths": [1024, 2048], "seeds": [0], "samples": 4}
CELLS = [(t, L) for t in ("niah_single_1", "vt") for L in (1024, 2048)]
SCORES = {("niah_single_1", 1024): 100.0, ("niah_single_1", 2048): 75.0, ("vt", 1024): 100.0, ("vt", 2048): 50.0}


def _item(task, length, score, samples=4):
    per = [1.0] * round(samples * score / 100) + [0.0] * (samples - round(samples * score / 100))
    return ItemResult(task=task, length=length, seed=0, mode="native", samples=samples, score=score, threshold=85.6,
                      passed=score > 85.6, nulls=0, seconds=0.1, sample_scores=tuple(per),
                      sample_hashes=tuple(f"{task}-{length}-{i}" for i in range(samples)))


def _run(cells, shard=None, **over):
    fields = {"chat_template": "none", "samples_per_item": 4, "seeds": [0], "preset": "ci",
              "items_expected": len(cells), "items_finished": len(cells)}
    if shard is not None:
        fields["shard"] = shard.entry(SUITE)
    args = {"threshold": 85.6, "model": "m", "backend": "scripted", "tokenizer": "t", "haystack_corpus": "noise"}
    args.update(over)
    return Report.of_results([_item(t, L, SCORES[t, L]) for t, L in cells], **args, **fields)


def _shards(count=2):
    from pytest_ruler.shard import shard_of

    ids = {c: f"ruler::{c[0]}[{c[1]}-seed0]" for c in CELLS}
    return [(f"s{k}.json", _run([c for c in CELLS if shard_of(ids[c], count) == k], Shard(k, count))) for k in range(1, count + 1)]


@pytest.mark.parametrize("count", [1, 2, 3, 5])
def test_the_merged_report_is_the_unsharded_one(count):
    whole = _run(CELLS)
    merged = merge_reports(_shards(count))
    a, b = whole.to_dict(), merged.to_dict()
    assert a["items"] == b["items"] and a["summary"] == b["summary"]
    assert b["complete"] is True and b["items_expected"] == b["items_finished"] == len(CELLS)
    assert b["shards"]["merged"] == list(range(1, count + 1)) and b["shards"]["missing"] == [] and "shard" not in b
    check_report(json.loads(json.dumps(b)))  # the one reader takes it: its summary is what its items give
    assert gate(merged, required=1024).passed is True and gate(merged, required=2048).passed is False


def test_a_shards_gate_and_a_partial_merges_gate_are_not_decided():
    shards = _shards(2)
    for _, shard in shards:
        verdict = gate(shard, required=1024)
        assert verdict.passed is None and not verdict.failures
        assert "shard" in verdict.fields["gate"]["reason"] and "pytest-ruler merge" in verdict.fields["gate"]["reason"]
        baseline = gate(shard, baseline={"items": []}, baseline_path="old.json")
        assert baseline.passed is None and baseline.lines()[0][0].startswith("baseline: NOT DECIDED: ")
    partial = merge_reports(shards[:1], partial=True)
    assert partial.field("shards")["missing"] == [2] and partial.complete is False
    verdict = gate(partial, required=1024)
    assert verdict.passed is None and "partial merge (missing shard 2/2)" in verdict.lines()[0][0]
    # a partial merge and the missing shard make the whole run
    whole = merge_reports([("partial.json", partial), shards[1]])
    assert whole.to_dict()["summary"] == _run(CELLS).to_dict()["summary"] and whole.field("shards")["missing"] == []


@pytest.mark.parametrize("change, named", [
    ({"model": "other"}, "its model is 'other'"),
    ({"tokenizer": "other"}, "its tokenizer is 'other'"),
    ({"threshold": 50.0}, "its threshold is 50.0"),
    ({"task_thresholds": {"vt": 50.0}}, "its task_thresholds is {'vt': 50.0}"),
    ({"backend": "hf"}, "its backend is 'hf'"),
])
def test_shards_of_different_runs_are_refused_naming_the_setting(change, named):
    (n1, s1), (n2, _) = _shards(2)
    other = _run([c for c in CELLS if c not in {(r.task, r.length) for r in s1.items}], Shard(2, 2), **change)
    with pytest.raises(RulerUsageError) as exc:
        merge_reports([(n1, s1), (n2, other)])
    assert named in str(exc.value) and "s2.json" in str(exc.value) and "s1.json" in str(exc.value)


def test_another_suite_or_shard_count_is_refused():
    (n1, s1), (n2, s2) = _shards(2)
    other_suite = Report.from_dict(dict(s2.to_dict(), shard={"index": 2, "count": 2, "suite": dict(SUITE, lengths=[4096])}))
    with pytest.raises(RulerUsageError, match="its run's lengths is \\[4096\\]"):
        merge_reports([(n1, s1), (n2, other_suite)])
    other_count = Report.from_dict(dict(s2.to_dict(), shard={"index": 2, "count": 3, "suite": SUITE}))
    with pytest.raises(RulerUsageError, match="it is a shard of 3, s1.json one of 2"):
        merge_reports([(n1, s1), (n2, other_count)])


def test_overlaps_missing_shards_and_unsharded_reports_are_refused():
    (n1, s1), (n2, s2) = _shards(2)
    assert s1.items and s2.items  # the premise: both shards hold items
    with pytest.raises(RulerUsageError, match="shard 1/2 is also in s1.json"):
        merge_reports([(n1, s1), ("copy.json", s1)])
    overlapping = Report.from_dict(dict(_run(CELLS).to_dict(), shard=Shard(2, 2).entry(SUITE)))
    with pytest.raises(RulerUsageError, match=r"item .* is also in s1.json: shards of one run never share an item"):
        merge_reports([(n1, s1), ("all.json", overlapping)])
    with pytest.raises(RulerUsageError, match="shard 2/2 missing: pass every shard's report, or --partial"):
        merge_reports([(n1, s1)])
    with pytest.raises(RulerUsageError, match="not a shard's report"):
        merge_reports([(n1, s1), ("whole.json", _run(CELLS))])


def test_merge_files_reads_through_the_one_checked_reader(tmp_path):
    (n1, s1), (n2, s2) = _shards(2)
    (tmp_path / n1).write_text(json.dumps(s1.to_dict()))
    edited = s2.to_dict()
    edited["summary"]["native"]["effective_length"] = 131072  # a summary its items do not give
    (tmp_path / n2).write_text(json.dumps(edited))
    with pytest.raises(RulerUsageError, match="its summary disagrees with its items"):
        merge_files([tmp_path / n1, tmp_path / n2])


def test_shards_under_a_relative_mark_merge_to_the_unsharded_relative_report():
    """Under rel:F each shard resolved its marks on its own items, where a task's base cell may be
    another shard's; the merge agrees on F and resolves the marks again on the whole run's items."""
    from pytest_ruler.parsers import RelativeMark
    from pytest_ruler.results.relative import rejudge
    from pytest_ruler.shard import shard_of

    mark = RelativeMark(0.6)
    ids = {c: f"ruler::{c[0]}[{c[1]}-seed0]" for c in CELLS}
    shards = [(f"s{k}.json", rejudge(_run([c for c in CELLS if shard_of(ids[c], 2) == k], Shard(k, 2)), mark)) for k in (1, 2)]
    # the premise: some shard misses a base cell, so its own resolution differs from the whole run's
    whole = rejudge(_run(CELLS), mark)
    assert any(r.threshold != whole.threshold or r.task_thresholds != whole.task_thresholds for _, r in shards)
    merged = merge_reports(shards)
    a, b = whole.to_dict(), merged.to_dict()
    assert a["items"] == b["items"] and a["summary"] == b["summary"]
    assert b["relative_threshold"] == a["relative_threshold"] and b["threshold"] == a["threshold"]
    # at 2K: niah_single_1's 75 is above 0.6 x 100, vt's 50 is not
    assert {(r.task, r.length): r.passed for r in merged.items}[("niah_single_1", 2048)] is True
    assert {(r.task, r.length): r.passed for r in merged.items}[("vt", 2048)] is False
    other = [(n, rejudge(r, RelativeMark(0.7))) if n == "s2.json" else (n, r) for n, r in shards]
    with pytest.raises(RulerUsageError, match="rel:0.7"):
        merge_reports(other)


@pytest.mark.parametrize(("setting", "value"), [("think_budget", 256), ("chat_template_kwargs", {"enable_thinking": False}),
                                                 ("think_start", "<reasoning>"), ("think_end", "</reasoning>")])
def test_shards_run_with_other_thinking_settings_are_refused_naming_it(setting, value):
    """The shard entry records the run's thinking settings (shard.suite_settings of its config)."""
    import dataclasses

    from pytest_ruler.run_config import RulerConfig
    from pytest_ruler.shard import suite_settings

    (n1, s1), (n2, s2) = _shards(2)
    config = RulerConfig(model="m")
    suites = [suite_settings(config), suite_settings(dataclasses.replace(config, **{setting: value}))]
    s1, s2 = (Report.from_dict(dict(s.to_dict(), shard={"index": k, "count": 2, "suite": suite}))
              for k, s, suite in ((1, s1, suites[0]), (2, s2, suites[1])))
    merge_reports([(n1, s1), (n2, Report.from_dict(dict(s2.to_dict(), shard={"index": 2, "count": 2, "suite": suites[0]})))])
    with pytest.raises(RulerUsageError, match=f"its run's {setting} is ") as exc:
        merge_reports([(n1, s1), (n2, s2)])
    assert "s2.json" in str(exc.value) and "same options on every shard" in str(exc.value)


ENGINE = {"backend": "hf", "class": "pytest_ruler.engines.hf.HFEngine", "dtype": "bfloat16", "model": {"hub_id": "m", "revision": "abc"},
          "options": {"attn": "sdpa"}, "versions": {"torch": "2.5.1", "transformers": "4.46.0", "vllm": None}}


@pytest.mark.parametrize("change, named", [
    ({"dtype": "float32"}, "engine.dtype: bfloat16 -> float32"),
    ({"class": "conftest.Mine"}, "engine.class: pytest_ruler.engines.hf.HFEngine -> conftest.Mine"),
    ({"model": {"hub_id": "m", "revision": "def"}}, "engine.model.revision: abc -> def"),
    ({"versions": {**ENGINE["versions"], "torch": "2.6.0"}}, "engine.versions.torch: 2.5.1 -> 2.6.0"),
])
def test_shards_run_on_other_engines_are_refused_naming_the_field_and_both_values(change, named):
    (n1, s1), (n2, s2) = _shards(2)
    first, other = s1.with_fields(engine=ENGINE), s2.with_fields(engine={**ENGINE, **change})
    with pytest.raises(RulerUsageError) as exc:
        merge_reports([(n1, first), (n2, other)])
    assert named in str(exc.value) and "s1.json" in str(exc.value) and "s2.json" in str(exc.value)
    # the same engine (options aside: they are not its identity) merges, and the merged report keeps it
    merged = merge_reports([(n1, first), (n2, s2.with_fields(engine={**ENGINE, "options": {}}))])
    assert merged.field("engine") == ENGINE
    # reports from before the field: nothing to compare
    assert merge_reports([(n1, s1), (n2, s2.with_fields(engine=ENGINE))]).items


def test_the_merged_report_keeps_no_shards_verdict():
    """A shard's report says its verdict is not decided (a shard): the merged report must not carry that
    verdict as the whole run's; the merged run is decided by gating it (pytest-ruler gate)."""
    shards = [(name, report.with_fields(verdict={"status": "not decided", "passed": None, "exit_status": 2,
                                                 "line": "ruler verdict: NOT DECIDED (shard)"}))
              for name, report in _shards(2)]
    merged = merge_reports(shards)
    assert merged.field("verdict") is None and "verdict" not in merged.to_dict()
    assert gate(merged, required=1024).passed is True
