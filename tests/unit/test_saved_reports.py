"""Saved reports are input (issue 23): the one reader (results.saved.read_report) checks types and
recomputes the summary from the items; gate, report, compare and --ruler-baseline refuse a damaged or
edited report with one line, never a traceback or a verdict on numbers its items do not give."""

from __future__ import annotations

import copy
import json

import pytest

from pytest_ruler.cli import main
from pytest_ruler.errors import RulerUsageError
from pytest_ruler.report.build import build_report, write_report
from pytest_ruler.results import ItemResult


def _item(task, length, score, seed=0, samples=4):
    per = [1.0] * round(samples * score / 100) + [0.0] * (samples - round(samples * score / 100))
    return ItemResult(task=task, length=length, seed=seed, mode="native", samples=samples, score=score, threshold=85.6,
                      passed=score > 85.6, nulls=0, seconds=0.1, sample_scores=tuple(per),
                      sample_hashes=tuple(f"{task}-{length}-{seed}-{i}" for i in range(samples)))


def _report(scores=(100.0, 100.0), tasks=("niah_single_1", "vt")):
    results = [_item(t, L, s) for t in tasks for L, s in zip((1024, 2048), scores)]
    return json.loads(json.dumps(build_report(model="m", backend="scripted", tokenizer="t", haystack_corpus="essays: test",
                                              threshold=85.6, results=results)))


def _save(tmp_path, data, name="r.json"):
    path = tmp_path / name
    path.write_text(json.dumps(data), encoding="utf-8")
    return str(path)


def _one_error_line(capsys) -> str:
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("pytest-ruler: error: "), captured.err
    assert "Traceback" not in captured.err + captured.out
    return lines[0]


def test_a_summary_its_items_do_not_give_is_refused_by_gate(tmp_path, capsys):
    good = _report()
    assert main(["gate", _save(tmp_path, good), "--require-effective-length=2k"]) == 0
    zeros = _report(scores=(0.0, 0.0))
    zeros["summary"] = good["summary"]  # every item scores 0, the stored summary says 2K
    capsys.readouterr()
    assert main(["gate", _save(tmp_path, zeros), "--require-effective-length=2k"]) == 4
    line = _one_error_line(capsys)
    assert "REPORT.json=" in line and "summary disagrees with its items" in line
    assert "summary.native.effective_length is 2048, its items give None" in line


def test_a_careless_merge_of_shards_is_refused(tmp_path, capsys):
    a, b = _report(tasks=("niah_single_1",)), _report(scores=(0.0, 0.0), tasks=("vt",))
    merged = copy.deepcopy(a)
    merged["items"] += b["items"]  # the items of both shards, the summary of one
    assert main(["gate", _save(tmp_path, merged), "--require-effective-length=1k"]) == 4
    assert "summary disagrees with its items" in _one_error_line(capsys)


@pytest.mark.parametrize("edit, fragment", [
    pytest.param(lambda r: r.update(threshold=float("nan")), "\"threshold\" must be a number in [0, 100], found nan", id="NaN threshold"),
    pytest.param(lambda r: r.update(complete="false"), "\"complete\" must be true or false, found 'false'", id="complete as a string"),
    pytest.param(lambda r: r["items"][0].update(sample_scores=1.0), "items[0] has no valid 'sample_scores'", id="sample scores not a list"),
    pytest.param(lambda r: r["items"][0].update(sample_scores="0101"), "items[0] has no valid 'sample_scores'", id="sample scores a string"),
])
def test_gate_refuses_fields_of_the_wrong_type(tmp_path, capsys, edit, fragment):
    data = _report()
    edit(data)
    assert main(["gate", _save(tmp_path, data), "--require-effective-length=1k"]) == 4
    assert fragment in _one_error_line(capsys)


@pytest.mark.parametrize("edit, fragment", [
    pytest.param(lambda r: r["items"][0].update(score=float("nan")), "items[0] has no valid 'score'", id="NaN cell"),
    pytest.param(lambda r: r["items"][0].update(length=-1024), "items[0] has no valid 'length'", id="negative length"),
    pytest.param(lambda r: r.update(threshold="85.6"), "\"threshold\" must be a number in [0, 100], found '85.6'", id="string threshold"),
    pytest.param(lambda r: r["summary"]["native"].update(avg=12.5), "summary.native.avg is 12.5, its items give 100.0", id="stored Total edited"),
])
def test_report_checks_as_much_as_gate(tmp_path, capsys, edit, fragment):
    data = _report()
    edit(data)
    assert main(["report", _save(tmp_path, data), "--no-plots"]) == 2
    assert fragment in _one_error_line(capsys)
    assert not (tmp_path / "r.md").exists()


def test_compare_refuses_wrongly_typed_sample_lists(tmp_path, capsys):
    old, new = _report(), _report()
    new["items"][0]["sample_hashes"] = 7
    assert main(["compare", _save(tmp_path, old, "old.json"), _save(tmp_path, new, "new.json")]) == 2
    line = _one_error_line(capsys)
    assert "NEW.json=" in line and "items[0] has no valid 'sample_hashes': expected a list of strings, found 7" in line


@pytest.mark.parametrize("argv, code", [
    (["gate", "{path}", "--require-effective-length=1k"], 4),
    (["report", "{path}", "--no-plots"], 2),
    (["compare", "{path}", "{path}"], 2),
])
def test_json_nested_200000_deep_is_one_line(tmp_path, capsys, argv, code):
    path = tmp_path / "deep.json"
    path.write_text("[" * 200_000 + "]" * 200_000, encoding="utf-8")
    assert main([a.format(path=path) for a in argv]) == code
    assert "nested too deeply" in _one_error_line(capsys)


def test_the_plugins_baseline_goes_through_the_same_reader(tmp_path):
    zeros = _report(scores=(0.0, 0.0))
    zeros["summary"] = _report()["summary"]
    with pytest.raises(RulerUsageError) as info:
        from pytest_ruler.results.baseline import load_baseline

        load_baseline(_save(tmp_path, zeros))
    assert info.value.parameter == "--ruler-baseline" and "summary disagrees with its items" in info.value.fix


def test_what_is_read_is_the_summary_the_items_give(tmp_path):
    from pytest_ruler.results.saved import read_report

    data = _report(scores=(100.0, 0.0))
    report = read_report(write_report(tmp_path / "r.json", data))
    assert report.mode("native").effective_length == 1024
    assert report.mode("native").summary == data["summary"]["native"]
    assert report.to_dict() == data
