"""--ruler-history (issue 40, item 1): pytester runs of the plugin with the scripted test engine (not a
model), with and without ``-n 2``: each complete run adds its report to the folder and the index lists
it under its label; a shard's run is not added (the terminal says why); ``pytest-ruler history`` draws
the folder's trend page."""

from __future__ import annotations

import json

import pytest

from .helpers import SCRIPTED, XDIST, run

ARGS = [*SCRIPTED, "--ruler-tasks=niah_single_1", "--ruler-lengths=1k,2k", "--ruler-samples=2", "--ruler-report=r.json"]


@pytest.mark.parametrize("xdist", XDIST)
def test_each_complete_run_is_added_to_the_history_folder(pytester, xdist):
    for label in ("v1", "v2"):
        result = run(pytester, *ARGS, "--ruler-history=hist", f"--ruler-label={label}", *xdist)
        assert result.ret == 0, result.stdout.str()
    files = sorted(p.name for p in (pytester.path / "hist").glob("*_v*.json"))
    assert [f.split("_", 1)[1] for f in files] == ["v1.json", "v2.json"]
    index = json.loads((pytester.path / "hist" / "index.json").read_text())
    assert [r["label"] for r in index["runs"]] == ["v1", "v2"]
    entry = index["runs"][-1]
    assert entry["model"] == "smollm2-135m" and entry["backend"] == "scripted" and entry["verdict"]["status"] == "passed"
    assert entry["engine"].startswith("scripted") and entry["modes"]["native"]["effective_length"] == 2048
    assert json.loads((pytester.path / "r.json").read_text())["label"] == "v2"  # the report carries the label too
    assert "hist/" in result.stdout.str()  # listed after "wrote:"
    from pytest_ruler.report.schema import build_schema, validate_report

    run_file = json.loads((pytester.path / "hist" / files[-1]).read_text())
    assert run_file["label"] == "v2" and validate_report(run_file, strict=True, schema=build_schema()) == []


@pytest.mark.parametrize("xdist", XDIST)
def test_a_shards_run_is_not_added_and_the_terminal_says_why(pytester, xdist):
    result = run(pytester, *ARGS, "--ruler-history=hist", "--ruler-label=s", "--ruler-shard=1/2", *xdist)
    out = result.stdout.str()
    assert "not added to the history" in out and "shard 1/2" in out, out
    assert not list((pytester.path / "hist").glob("*.json")) if (pytester.path / "hist").exists() else True


def test_the_label_defaults_to_the_date_outside_a_repository(pytester, monkeypatch):
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(pytester.path.parent))
    result = run(pytester, *ARGS, "--ruler-history=hist")
    assert result.ret == 0, result.stdout.str()
    [entry] = json.loads((pytester.path / "hist" / "index.json").read_text())["runs"]
    assert entry["label"].endswith("Z") and entry["label"][:2] == "20"


def test_history_command_draws_the_folder(pytester):
    pytest.importorskip("matplotlib")
    from pytest_ruler.cli import main

    for label in ("a", "b"):
        assert run(pytester, *ARGS, "--ruler-history=hist", f"--ruler-label={label}").ret == 0
    assert main(["history", str(pytester.path / "hist"), "--html", str(pytester.path / "trend.html")]) == 0
    text = (pytester.path / "trend.html").read_text()
    assert text.count("<svg") >= 4 and "http://" not in text.split("<svg")[0]


def test_a_history_path_that_is_a_file_is_refused_at_start(pytester):
    """--ruler-history names a file: one clear error before any item runs (exit 4), not a note at the end."""
    pytester.path.joinpath("hist").write_text("not a folder")
    result = run(pytester, *ARGS, "--ruler-history=hist")
    assert result.ret == 4
    result.stderr.fnmatch_lines(["*--ruler-history='hist' is invalid: this is a file; pass a folder*"])
    assert not pytester.path.joinpath("r.json").exists()
