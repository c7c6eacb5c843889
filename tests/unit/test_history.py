"""The history folder (issue 40, items 1-3): one file per complete run, an index rebuilt from the files
under a lock, the label, the groups, the trend page (self-contained HTML with inline SVG charts) and
the github-action-benchmark export. Reports here are built from item results (no engine)."""

from __future__ import annotations

import json
import multiprocessing
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

from pytest_ruler.cli import main
from pytest_ruler.errors import RulerUsageError
from pytest_ruler.history import store
from pytest_ruler.history.export import benchmark_entries
from pytest_ruler.report.build import build_report
from pytest_ruler.results import ItemResult
from pytest_ruler.results.saved import read_report


def _item(task, length, score, samples=8, mode="native"):
    ones = round(samples * score / 100)
    per = [1.0] * ones + [0.0] * (samples - ones)
    return ItemResult(task=task, length=length, seed=0, mode=mode, samples=samples, score=100.0 * ones / samples,
                      threshold=85.6, passed=100.0 * ones / samples > 85.6, nulls=0, seconds=0.1, sample_scores=tuple(per),
                      sample_hashes=tuple(f"{task}-{length}-{i}" for i in range(samples)))


def _report(scores=(100.0, 100.0), *, model="m", created="2026-12-01T10:00:00Z", label=None, lengths=(1024, 2048),
            tasks=("niah_single_1", "vt"), complete=True, **extra):
    results = [_item(t, L, s) for t in tasks for L, s in zip(lengths, scores)]
    fields = {"provenance": {"created": created, "versions": {"pytest-ruler": "0.1.0"}, "command": [], "git_commit": "ab" * 20},
              "engine": {"backend": "scripted", "class": "pytest_ruler.engines.scripted.ScriptedEngine", "mode": "oracle",
                         "options": {}, "versions": {"torch": "2.0"}},
              "samples_per_item": 8, "seeds": [0], "items_expected": len(results),
              "items_finished": len(results) if complete else len(results) - 1, **extra}
    if label is not None:
        fields["label"] = label
    return build_report(model=model, backend="scripted", tokenizer="t", haystack_corpus="noise", threshold=85.6,
                        results=results, complete=complete, extra=fields)


# --------------------------------------------------------------------------- names and labels


def test_safe_name_keeps_only_safe_characters():
    assert store.safe_name("v1.2.0-3-gabc/dirty branch*") == "v1.2.0-3-gabc-dirty-branch"
    assert store.safe_name("../../etc") == "etc"
    assert store.safe_name("") == "run" and store.safe_name("///") == "run"
    assert len(store.safe_name("x" * 500)) == 60


def test_default_label_is_git_describe_in_a_repository(tmp_path):
    git = ["git", "-c", "user.email=t@t", "-c", "user.name=t"]
    subprocess.run([*git, "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "f").write_text("a")
    subprocess.run([*git, "-C", str(tmp_path), "add", "f"], check=True)
    subprocess.run([*git, "-C", str(tmp_path), "commit", "-qm", "c"], check=True)
    head = subprocess.run(["git", "-C", str(tmp_path), "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    assert store.default_label(tmp_path) == head
    (tmp_path / "f").write_text("b")
    assert store.default_label(tmp_path) == f"{head}-dirty"


def test_default_label_outside_a_repository_is_the_utc_time(tmp_path, monkeypatch):
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", store.default_label(tmp_path))


# --------------------------------------------------------------------------- adding runs


def test_a_run_becomes_one_file_named_by_time_and_label_and_the_index_lists_it(tmp_path):
    path = store.add_run(tmp_path, _report(label="v1.0 rc/1"))
    assert path.name == "20261201T100000Z_v1.0-rc-1.json"
    report = read_report(path)  # the run file is a report every reader takes
    assert report.field("label") == "v1.0 rc/1"
    index = json.loads((tmp_path / "index.json").read_text())
    assert index["schema"] == store.HISTORY_SCHEMA and index["skipped"] == []
    [entry] = index["runs"]
    assert entry["file"] == path.name and entry["label"] == "v1.0 rc/1" and entry["commit"] == "ab" * 20
    assert entry["model"] == "m" and entry["engine"].startswith("scripted (mode=oracle")
    assert entry["engine_identity"]["mode"] == "oracle" and entry["versions"] == {"pytest-ruler": "0.1.0"}
    assert entry["verdict"]["status"] in ("passed", "failed", "not decided")
    assert entry["modes"]["native"]["effective_length"] == 2048
    assert entry["modes"]["native"]["per_length"] == {"1024": 100.0, "2048": 100.0}
    assert set(entry["modes"]["native"]) >= {"effective_length_bound", "bound_confidence", "cells"}


def test_the_same_time_and_label_never_replaces_a_run(tmp_path):
    first = store.add_run(tmp_path, _report(label="same"))
    second = store.add_run(tmp_path, _report(scores=(0.0, 0.0), label="same"))
    assert (first.name, second.name) == ("20261201T100000Z_same.json", "20261201T100000Z_same-2.json")
    assert read_report(first).mode("native").effective_length == 2048  # the first run is still there
    assert len(json.loads((tmp_path / "index.json").read_text())["runs"]) == 2


def test_the_label_defaults_to_the_reports_then_git_describe(tmp_path, monkeypatch):
    monkeypatch.setattr(store, "default_label", lambda: "described")
    assert read_report(store.add_run(tmp_path / "a", _report(label="given"))).field("label") == "given"
    assert read_report(store.add_run(tmp_path / "b", _report())).field("label") == "described"
    assert read_report(store.add_run(tmp_path / "c", _report(label="given"), "override")).field("label") == "override"


@pytest.mark.parametrize("kw, why", [
    ({"complete": False}, "incomplete (3 of 4 items)"),
    ({"interrupted": True}, "interrupted"),
    ({"shard": {"index": 1, "count": 2, "suite": {}}}, "shard 1/2"),
    ({"shards": {"count": 2, "merged": [1], "missing": [2]}}, "partial merge"),
])
def test_a_partial_run_is_not_added(tmp_path, kw, why):
    report = _report(**kw)
    assert why in store.not_addable(report)
    with pytest.raises(RulerUsageError) as info:
        store.add_run(tmp_path, report)
    assert why in info.value.fix and "not added to the history" in info.value.fix
    assert not list(tmp_path.glob("*.json"))


def test_a_run_with_no_items_is_not_added():
    assert store.not_addable(build_report(model="m", backend="b", tokenizer="t", haystack_corpus="", threshold=85.6,
                                          results=[])) == "the run has no items"


def test_the_index_is_rebuilt_from_the_files_and_names_those_it_skips(tmp_path):
    store.add_run(tmp_path, _report(label="a", created="2026-12-01T10:00:00Z"))
    store.add_run(tmp_path, _report(label="b", created="2026-12-02T10:00:00Z"))
    (tmp_path / "20261203T000000Z_broken.json").write_text("{not json")
    (tmp_path / "notes.json").write_text("{}")  # not a run file's name: ignored
    (tmp_path / "index.json").write_text("garbage")  # a damaged index is rebuilt, never read
    store.rebuild_index(tmp_path)
    index = json.loads((tmp_path / "index.json").read_text())
    assert [r["label"] for r in index["runs"]] == ["a", "b"]
    assert [s["file"] for s in index["skipped"]] == ["20261203T000000Z_broken.json"]
    assert "not valid JSON" in index["skipped"][0]["reason"]
    (tmp_path / "20261201T100000Z_a.json").unlink()
    store.rebuild_index(tmp_path)
    assert [r["label"] for r in json.loads((tmp_path / "index.json").read_text())["runs"]] == ["b"]


def _writer(folder: str, who: int, count: int) -> None:
    for i in range(count):
        store.add_run(folder, _report(label=f"w{who}-{i}", created=f"2026-12-01T10:00:{i:02d}Z"))


def test_two_processes_adding_runs_at_once_lose_no_run_and_leave_a_whole_index(tmp_path):
    ctx = multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn")
    count = 6
    procs = [ctx.Process(target=_writer, args=(str(tmp_path), who, count)) for who in (1, 2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=300)
    assert [p.exitcode for p in procs] == [0, 0]
    files = sorted(p.name for p in tmp_path.glob("2026*.json"))
    assert len(files) == 2 * count
    index = json.loads((tmp_path / "index.json").read_text())  # whole JSON: never half-written
    assert sorted(r["file"] for r in index["runs"]) == files
    assert {r["label"] for r in index["runs"]} == {f"w{w}-{i}" for w in (1, 2) for i in range(count)}
    assert not list(tmp_path.glob("*.tmp")) and not list(tmp_path.glob(".add-*"))


# --------------------------------------------------------------------------- groups and export


def test_runs_of_other_models_or_settings_are_other_groups(tmp_path):
    store.add_run(tmp_path, _report(label="a"))
    store.add_run(tmp_path, _report(label="b", created="2026-12-02T10:00:00Z",
                                    engine={"backend": "scripted", "class": "x", "mode": "oracle", "weights_digest": "new",
                                            "versions": {"torch": "9.9"}}))
    store.add_run(tmp_path, _report(label="c", model="other"))
    store.add_run(tmp_path, _report(label="d", lengths=(1024, 4096)))
    store.add_run(tmp_path, _report(label="e", tasks=("vt",)))
    store.add_run(tmp_path, _report(label="f", engine={"backend": "scripted", "class": "pytest_ruler.engines.scripted.ScriptedEngine",
                                                       "mode": "oracle", "options": {}, "versions": {"torch": "3.0"}}))
    runs, _ = store.read_runs(tmp_path)
    group = {r.entry["label"]: r.entry["group"] for r in runs}
    assert len({group[x] for x in "acde"}) == 4  # model, lengths, tasks: each its own group
    assert group["a"] == group["f"]  # another torch version is the same series (a release changes it)
    assert group["b"] != group["a"]  # another engine class
    assert group["b"] == store.group_of(runs[[r.entry["label"] for r in runs].index("b")].report)[0]


def test_github_action_benchmark_export_is_the_newest_run_of_each_group(tmp_path):
    store.add_run(tmp_path, _report(scores=(100.0, 0.0), label="old", created="2026-12-01T10:00:00Z"))
    store.add_run(tmp_path, _report(scores=(100.0, 100.0), label="new", created="2026-12-02T10:00:00Z"))
    store.add_run(tmp_path, _report(scores=(0.0, 0.0), label="other", model="m2"))
    runs, _ = store.read_runs(tmp_path)
    entries = benchmark_entries(runs)
    for e in entries:  # customBiggerIsBetter: name, unit (strings), value (a number), range and extra (strings)
        assert set(e) <= {"name", "unit", "value", "range", "extra"} and {"name", "unit", "value"} <= set(e)
        assert isinstance(e["name"], str) and isinstance(e["unit"], str) and isinstance(e["value"], (int, float))
        assert all(isinstance(e[k], str) for k in ("range", "extra") if k in e)
    assert len({e["name"] for e in entries}) == len(entries)
    by = {e["name"].split(" [")[0]: e for e in entries}
    assert by["m native effective length"]["value"] == 2048 and "label: new" in by["m native effective length"]["extra"]
    assert by["m native effective length"]["unit"] == "tokens" and "lower bound" in by["m native effective length"]["range"]
    assert by["m native Total at 2K"]["value"] == 100.0 and by["m native Total at 2K"]["range"].startswith("± ")
    assert by["m2 native effective length"]["value"] == 0  # below the shortest length
    assert "label: old" not in json.dumps(entries)


def test_history_command_exports_json_to_stdout_and_lists_runs(tmp_path, capsys):
    store.add_run(tmp_path, _report(label="one"))
    assert main(["history", str(tmp_path), "--format", "github-action-benchmark"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert isinstance(data, list) and data and all("value" in e for e in data)
    (tmp_path / "index.json").unlink()
    assert main(["history", str(tmp_path)]) == 0
    assert "one" in capsys.readouterr().out and (tmp_path / "index.json").is_file()


def test_history_command_on_a_missing_folder_is_one_error_line(tmp_path, capsys):
    assert main(["history", str(tmp_path / "nope"), "--format", "github-action-benchmark"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "DIR" in err[0] and "not a folder" in err[0]


# --------------------------------------------------------------------------- the page


class _Page(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags: list[str] = []
        self.urls: list[str] = []
        self.links: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        for key, value in attrs:
            if key in ("src", "href", "xlink:href", "action", "data") and value:
                self.urls.append(value)
                if tag == "a" and key == "href":
                    self.links.append(value)


def _parsed(text: str) -> _Page:
    parser = _Page()
    parser.feed(text)
    parser.close()
    return parser


def test_trend_page_is_self_contained_html_with_svg_charts(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    folder = tmp_path / "hist"
    store.add_run(folder, _report(scores=(100.0, 50.0), label="v1", created="2026-12-01T10:00:00Z"))
    second = store.add_run(folder, _report(scores=(100.0, 100.0), label="v2", created="2026-12-02T10:00:00Z"))
    store.add_run(folder, _report(label="x", model="another <model>"))
    second.with_suffix(".html").write_text("<html></html>")  # its per-run page, beside it
    out = tmp_path / "site" / "trend.html"
    assert main(["history", str(folder), "--html", str(out)]) == 0
    assert capsys.readouterr().out.strip() == str(out)
    text = out.read_text(encoding="utf-8")
    page = _parsed(text)
    assert page.tags.count("svg") >= 4 + 3  # group 1: effective length, Total, heat map, change; group 2: three
    assert "script" not in page.tags and "link" not in page.tags and "img" not in page.tags
    assert not [u for u in page.urls if re.match(r"(?i)\s*(https?:)?//", u)], page.urls
    assert "../hist/" + second.with_suffix(".html").name in page.links  # the per-run page, relative to the page
    assert "another &lt;model&gt;" in text and "another <model>" not in text
    assert "change from v1 to v2" in text and "v2" in text
    assert len(set(re.findall(r'\bid="([^"]+)"', text))) == len(re.findall(r'\bid="([^"]+)"', text))  # ids unique


def test_trend_page_without_matplotlib_names_the_plot_extra(tmp_path, monkeypatch, capsys):
    store.add_run(tmp_path, _report(label="v1"))
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    monkeypatch.setitem(sys.modules, "matplotlib.backends.backend_agg", None)
    assert main(["history", str(tmp_path), "--html", str(tmp_path / "t.html")]) == 2
    err = capsys.readouterr().err
    assert "--html" in err and 'pytest-ruler[plot]' in err
    assert not (tmp_path / "t.html").exists()


def test_merge_adds_the_merged_run_to_the_history(tmp_path, capsys):
    shards = []
    for i, task in ((1, "niah_single_1"), (2, "vt")):
        data = _report(tasks=(task,), label="rc", shard={"index": i, "count": 2, "suite": {}})
        path = tmp_path / f"s{i}.json"
        path.write_text(json.dumps(data))
        shards.append(str(path))
    assert main(["merge", *shards, "--out", str(tmp_path / "m.json"), "--history", str(tmp_path / "h")]) == 0
    assert "added to the history" in capsys.readouterr().out
    [run] = store.read_runs(tmp_path / "h")[0]
    assert run.entry["label"] == "rc" and run.entry["items"] == 4
    assert run.entry["verdict"]["status"] != "not decided"  # decided again on the merged items, not a shard's
    assert main(["merge", shards[0], "--partial", "--out", str(tmp_path / "p.json"), "--history", str(tmp_path / "h2")]) == 2
    assert "partial merge" in capsys.readouterr().err and not (tmp_path / "h2").exists()
