"""Outputs are reporters chosen by name: a user's own, added from a conftest in a subfolder through
``pytest_ruler_add_reporters``, reads the typed report and the terminal's lines; it writes, it does not
gate (runs of the plugin use the scripted test engine, not a model)."""

from __future__ import annotations

import json

import pytest

from .helpers import SCRIPTED, run

SUB_CONFTEST = """
import json
from pathlib import Path

from pytest_ruler.results.table import mode_table


def pytest_ruler_add_reporters(config, reporters):
    def write(end):
        path = Path(config.rootpath) / "mine.json"
        native = end.report.mode("native")
        path.write_text(json.dumps({
            "names": reporters.names(),
            "effective": native.effective,
            "effective_length": native.effective_length,
            "total": mode_table(native).rows[-1],
            "passed": end.verdict.passed,
            "lines": [line.text for line in end.lines()],
        }))
        return [path]

    reporters.add("mine", write)
"""

RAISING_CONFTEST = """
def pytest_ruler_add_reporters(config, reporters):
    def write(end):
        raise RuntimeError("my reporter broke")

    reporters.add("broken", write)
    reporters.add("json", lambda end: [], replace=True)  # a reporter replaced by name: no JSON report
"""

ARGS = [*SCRIPTED, "--ruler-tasks=niah_single_1", "--ruler-lengths=1k,2k", "--ruler-samples=1", "--ruler-report=r.json"]


def _subfolder(pytester, conftest):
    sub = pytester.mkpydir("sub")
    (sub / "conftest.py").write_text(conftest)
    (sub / "test_mine.py").write_text("def test_mine():\n    assert 1 + 1 == 2\n")  # so pytest collects sub/ and loads its conftest


def test_a_reporter_from_a_subfolder_conftest_reads_the_typed_report(pytester):
    _subfolder(pytester, SUB_CONFTEST)
    result = run(pytester, *ARGS, "--ruler-require-effective-length=1k")
    assert result.ret == 0, result.stdout.str()
    mine = json.loads((pytester.path / "mine.json").read_text())
    assert mine["names"] == ["json", "markdown", "plots", "github", "html", "history", "mine"]
    report = json.loads((pytester.path / "r.json").read_text())
    assert mine["effective_length"] == report["summary"]["native"]["effective_length"] == 2048
    assert mine["effective"] == "≥2K" == mine["total"][-1] and mine["passed"] is True
    assert "gate PASSED: effective length 2K (required 1K)" in mine["lines"]
    out = result.stdout.str()
    assert "gate PASSED: effective length 2K (required 1K)" in out
    assert f"wrote: r.json, {pytester.path / 'mine.json'}" in out


def test_a_reporter_is_not_a_gate_and_one_that_breaks_is_one_error(pytester):
    _subfolder(pytester, RAISING_CONFTEST)
    result = run(pytester, *ARGS)
    out = result.stdout.str()
    assert "RULER ERROR: reporter 'broken': RuntimeError: my reporter broke" in out
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # an output was lost: the run says so and fails
    assert not (pytester.path / "r.json").exists()  # "json" was replaced by the user's (which writes nothing)
    assert "RULER: effective context length" in out and "INTERNALERROR" not in out
