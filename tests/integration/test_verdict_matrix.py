"""One verdict, every surface (issue 34): a pytester matrix of runs × what each surface says.

Rows: a gate met, a gate missed, a baseline regression, a clean baseline, an errored item, an
interrupted run, ``--collect-only``, one shard, a relative mark. Surfaces: the exit code, pytest's
own last line, the terminal's last ruler line (``ruler verdict: ...``), the JSON report's
``verdict``, the Markdown's first section, the GitHub step summary's first section, the JUnit test
suite's properties, and ``pytest-ruler gate`` on the saved report with the same gate. Every row
runs with and without ``-n 2``.

The engines are test engines, not models: the scripted oracle (it reads the answer out of the
prompt), and ``short_memory``, the oracle for prompts up to 1,300 tokens and an empty answer past
them (a stand-in for a model that holds 1K and fails 2K).
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from pytest_ruler.cli import main

from .helpers import XDIST, wait_for_cached

SHORT_MEMORY = '''
import os
from pytest_ruler.engines.base import Completion
from pytest_ruler.engines.scripted import ScriptedEngine


class ShortMemory(ScriptedEngine):
    """A test engine (not a model): the scripted oracle up to 1,300 prompt tokens, nothing past them;
    RULER_TEST_ACTION=raise makes every vt prompt raise."""

    name = "short_memory"

    @staticmethod
    def describe(config):
        return {**ScriptedEngine.describe(config), "engine": "short_memory (test engine, not a model)"}

    def generate(self, requests, on_result=None):
        action = os.environ.get("RULER_TEST_ACTION")
        if action and any("VAR " in r.prompt for r in requests):
            raise RuntimeError("CUDA error: an illegal memory access was encountered")
        out = super().generate(requests)
        out = [c if r.prompt_tokens <= 1300 else Completion("", r.prompt_tokens, 0, "stop", 0.0) for r, c in zip(requests, out)]
        for i, c in enumerate(out):
            if on_result:
                on_result(i, c)
        return out


def pytest_ruler_register(registry):
    registry.engine("short_memory", ShortMemory)
'''

BASE = ["--ruler-model=smollm2-135m", "--ruler-backend=short_memory", "--ruler-tasks=niah_single_1,vt", "--ruler-samples=4",
        "--ruler-batch-items=1"]
OUTPUTS = ["--ruler-report=r.json", "--ruler-markdown=r.md", "--junitxml=j.xml"]
WORD = {"passed": "PASSED", "failed": "FAILED", "not decided": "NOT DECIDED"}
CODE = {"passed": 0, "failed": 1, "not decided": 2}

# row: (run arguments, gate arguments for `pytest-ruler gate` (None: not run on this row), status)
ROWS = {
    "gate met": (["--ruler-lengths=1k,2k", "--ruler-require-effective-length=1k"], ["--require-effective-length=1k"], "passed"),
    "gate missed": (["--ruler-lengths=1k,2k", "--ruler-require-effective-length=2k"], ["--require-effective-length=2k"], "failed"),
    "baseline regression": (["--ruler-lengths=1k", "--ruler-samples=8", "--ruler-engine-option=mode=empty", "--ruler-baseline=base.json"],
                            ["--baseline", "base.json"], "failed"),
    "baseline clean": (["--ruler-lengths=1k", "--ruler-samples=8", "--ruler-baseline=base.json"], ["--baseline", "base.json"], "passed"),
    "errored item": (["--ruler-lengths=1k", "--ruler-require-effective-length=1k"], ["--require-effective-length=1k"], "failed"),
    "interrupted": (["--ruler-lengths=1k", "--ruler-seeds=2", "--ruler-samples=6", "--ruler-require-effective-length=1k"], ["--require-effective-length=1k"], "not decided"),
    "collect-only": (["--ruler-lengths=1k", "--ruler-require-effective-length=1k", "--collect-only"], None, "not decided"),
    "one shard": (["--ruler-lengths=1k,2k", "--ruler-require-effective-length=1k", "--ruler-shard=1/2"],
                  ["--require-effective-length=1k"], "not decided"),
    "rel:F": (["--ruler-lengths=1k,2k", "--ruler-threshold=rel:0.9", "--ruler-require-effective-length=2k"],
              ["--require-effective-length=2k"], "failed"),
}
KEPT = {"schema": "pytest-ruler/1", "note": "an earlier complete report"}


def _last_ruler_line(out: str) -> str:
    """The ruler summary's last line (the summary ends where pytest's own sections begin)."""
    lines = []
    for ln in out.split("RULER: effective context length")[-1].splitlines()[1:]:
        if ln.startswith(("=", "!", "--", "- generated xml")):
            break
        lines.append(ln)
    return [ln for ln in lines if ln.strip()][-1]


def _interrupted(pytester, args: list[str]) -> tuple[int, str]:
    """A run stopped by SIGINT to pytest's process (a Ctrl-C) once an item's 6 answers are cached."""
    db = pytester.path / "cache" / "predictions.sqlite"
    proc = subprocess.Popen([sys.executable, "-m", "pytest", "-p", "no:hypothesispytest", *args, f"--ruler-cache-dir={db.parent}",
                             "--ruler-engine-option=delay=0.5"], cwd=pytester.path, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))  # as a terminal would
    try:
        if wait_for_cached(db, 6) < 6:
            proc.kill()
            pytest.fail(f"the run never cached 6 answers: {proc.communicate()[0]}")
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=120)
    finally:
        proc.kill()
    return proc.returncode, out


@pytest.mark.parametrize("xdist", XDIST)
@pytest.mark.parametrize("row", list(ROWS))
def test_every_surface_says_the_same_verdict(pytester, monkeypatch, capsys, row, xdist):
    args, gate_args, status = ROWS[row]
    pytester.makeconftest(SHORT_MEMORY)
    if "base.json" in " ".join(args):  # the baseline: the oracle at 1K, 8 samples per item
        base = pytester.runpytest("-p", "no:hypothesispytest", *BASE, "--ruler-lengths=1k", "--ruler-samples=8", "--ruler-report=base.json")
        assert base.ret == 0, base.stdout.str()
    if row == "collect-only":  # a dry run must leave an earlier report as it was
        (pytester.path / "r.json").write_text(json.dumps(KEPT))
    if row == "errored item":
        monkeypatch.setenv("RULER_TEST_ACTION", "raise")
    summary = pytester.path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    if row == "interrupted":  # a real Ctrl-C once the first item's answers are in (serial: in the second item)
        ret, out = _interrupted(pytester, [*BASE, *args, *OUTPUTS, *xdist])
    else:
        result = pytester.runpytest("-p", "no:hypothesispytest", *BASE, *args, *OUTPUTS, *xdist)
        ret, out = result.ret, result.stdout.str()
    word, code = WORD[status], CODE[status]

    # the exit code is the verdict
    assert ret == code, out
    # pytest's own last line never contradicts it
    last = out.strip().splitlines()[-1]
    assert bool(re.search(r"\b\d+ failed", last)) == (status == "failed"), last
    if status == "passed":
        assert re.search(r"\b\d+ passed", last) and "not decided" not in last and "error" not in last, last
    if status == "not decided" and row != "collect-only":
        assert "1 not decided" in last, last
    # the terminal's last ruler line
    verdict_line = _last_ruler_line(out)
    assert verdict_line.startswith(f"ruler verdict: {word}"), out

    if row == "collect-only":  # nothing measured, nothing written, nothing destroyed
        assert json.loads((pytester.path / "r.json").read_text()) == KEPT
        assert not (pytester.path / "r.md").exists() and not summary.exists()
        assert "dry run" in verdict_line or "--collect-only" in verdict_line
        return

    # the JSON report
    data = json.loads((pytester.path / "r.json").read_text())
    assert data["verdict"]["status"] == status and data["verdict"]["exit_status"] == code
    assert data["verdict"]["line"] == verdict_line and data["verdict"]["gated"] is True
    # the Markdown and the step summary: the verdict is their first section
    for text in ((pytester.path / "r.md").read_text(), summary.read_text()):
        sections = [ln for ln in text.splitlines() if ln.startswith("## ")]
        assert sections[0] == "## Verdict", sections
        first = text.split("## Verdict", 1)[1].split("\n## ", 1)[0]
        assert f"**{word}**" in first, first
    # JUnit: the suite's properties, and the verdict's own test case
    root = ET.parse(pytester.path / "j.xml").getroot()
    suite = root if root.tag == "testsuite" else root.find("testsuite")
    props = {p.get("name"): p.get("value") for p in suite.iter("property") if p.get("name", "").startswith("ruler_verdict")}
    assert props["ruler_verdict"] == status and props["ruler_verdict_exit_status"] == str(code)
    assert props["ruler_verdict_line"] == verdict_line
    case = next(c for c in suite.iter("testcase") if c.get("name") == "verdict")
    assert (case.find("failure") is not None) == (status == "failed")
    assert (case.find("skipped") is not None) == (status == "not decided")
    # items never fail on their marks alone: only errors fail a measurement
    failed_cases = [c.get("name") for c in suite.iter("testcase") if c.find("failure") is not None and c.get("name") != "verdict"]
    assert failed_cases == (["vt[1024-seed0]"] if row == "errored item" else []), failed_cases
    # `pytest-ruler gate` on the saved report says the same
    capsys.readouterr()
    assert main(["gate", str(pytester.path / "r.json"), *gate_args]) == code
    printed = capsys.readouterr().out.strip().splitlines()
    assert printed[-1] == verdict_line, printed


def test_a_passing_release_with_longer_lengths_exits_0(pytester):
    """The friction: a model that holds 1K and fails 4K, gated at 1K, printed `gate PASSED` and `2 failed`, exit 1."""
    pytester.makeconftest(SHORT_MEMORY)
    result = pytester.runpytest("-p", "no:hypothesispytest", *BASE, "--ruler-lengths=1k,4k", "--ruler-require-effective-length=1k")
    assert result.ret == 0
    result.assert_outcomes(passed=3, xfailed=2)  # two 1K items and the verdict; the 4K items fall short, measured
    assert "ruler verdict: PASSED" in result.stdout.str()


def test_a_regression_with_every_item_above_its_mark_has_a_verdict_line(pytester):
    """The friction: every item passed, the baseline did not, and no line said so last."""
    pytester.makeconftest(SHORT_MEMORY)
    assert pytester.runpytest("-p", "no:hypothesispytest", *BASE, "--ruler-lengths=1k", "--ruler-samples=24",
                              "--ruler-report=v1.json").ret == 0
    result = pytester.runpytest("-p", "no:hypothesispytest", *BASE, "--ruler-lengths=1k", "--ruler-samples=24",
                                "--ruler-threshold=20", "--ruler-engine-option=mode=echo", "--ruler-baseline=v1.json")
    out = result.stdout.str()
    assert result.ret == 1
    assert _last_ruler_line(out).startswith("ruler verdict: FAILED \u2014 ")
    assert "against v1.json (p = " in _last_ruler_line(out)


def test_the_cli_gate_prints_the_verdict_last_and_exits_with_it(pytester, capsys):
    """The friction: `pytest-ruler gate v2.json --baseline v1.json` printed `gate PASSED` last and exited 1."""
    pytester.makeconftest(SHORT_MEMORY)
    pytester.runpytest("-p", "no:hypothesispytest", *BASE, "--ruler-lengths=1k", "--ruler-samples=12", "--ruler-report=v1.json")
    pytester.runpytest("-p", "no:hypothesispytest", *BASE, "--ruler-lengths=1k", "--ruler-samples=12", "--ruler-report=v2.json",
                       "--ruler-engine-option=mode=empty")
    capsys.readouterr()
    code = main(["gate", str(pytester.path / "v2.json"), "--require-effective-length=1k", "--baseline", str(pytester.path / "v1.json")])
    printed = capsys.readouterr().out.strip().splitlines()
    assert code == 1 and printed[-1].startswith("ruler verdict: FAILED")
    assert not any(ln.startswith("gate PASSED") for ln in printed)


def test_a_baseline_from_another_engine_is_compared_and_named(pytester, capsys):
    """A baseline measured with other engine settings is still compared; the verdict names what differs."""
    pytester.makeconftest(SHORT_MEMORY)
    pytester.runpytest("-p", "no:hypothesispytest", *BASE, "--ruler-lengths=1k", "--ruler-report=v1.json")
    result = pytester.runpytest("-p", "no:hypothesispytest", *BASE, "--ruler-lengths=1k", "--ruler-report=v2.json",
                                "--ruler-engine-option=mode=echo", "--ruler-baseline=v1.json")
    line = _last_ruler_line(result.stdout.str())
    assert "v1.json was measured on another engine (" in line and "mode: oracle -> echo" in line, line
    data = json.loads((pytester.path / "v2.json").read_text())
    assert data["baseline"]["engine_differences"] and data["verdict"]["line"] == line
    assert [r["kind"] for r in data["verdict"]["reasons"]].count("identity") == 1


def test_x_stops_at_an_error_not_at_a_measurement(pytester, monkeypatch):
    """-x with a gate: a measurement below its mark (xfailed) does not stop the run; an errored item does."""
    pytester.makeconftest(SHORT_MEMORY)
    result = pytester.runpytest("-p", "no:hypothesispytest", *BASE, "--ruler-lengths=2k,1k", "--ruler-require-effective-length=1k", "-x")
    result.assert_outcomes(passed=3, xfailed=2)  # the 2K items fall short and the 1K ones still ran
    monkeypatch.setenv("RULER_TEST_ACTION", "raise")
    result = pytester.runpytest("-p", "no:hypothesispytest", *BASE, "--ruler-lengths=1k,2k", "--ruler-require-effective-length=1k", "-x",
                                "--ruler-no-cache")
    assert result.ret == 1 and "ruler verdict: FAILED" in result.stdout.str()
    result.assert_outcomes(passed=1, failed=2)  # niah at 1K, then vt errored: stopped there; the verdict failed


def test_lf_after_a_failed_verdict_reruns_the_selection_from_the_cache(pytester):
    pytester.makeconftest(SHORT_MEMORY)
    pytester.runpytest("-p", "no:hypothesispytest", *BASE, "--ruler-lengths=1k,2k", "--ruler-require-effective-length=2k",
                       "-p", "cacheprovider")
    again = pytester.runpytest("-p", "no:hypothesispytest", *BASE, "--ruler-lengths=1k,2k", "--ruler-require-effective-length=2k",
                               "--lf", "--ruler-report=r.json")
    assert again.ret == 1 and "known failures not in selected tests" in again.stdout.str()
    data = json.loads((pytester.path / "r.json").read_text())
    assert len(data["items"]) == 4 and all(i["cached"] == i["samples"] for i in data["items"])


@pytest.mark.parametrize("xdist", XDIST)
def test_rel_f_without_a_gate_fails_on_the_items_below_their_resolved_marks(pytester, xdist):
    """rel:F alone: the marks are known only at the run's end, so the items are measurements and the
    verdict (a test of its own) fails on those below their resolved marks, naming them."""
    pytester.makeconftest(SHORT_MEMORY)
    result = pytester.runpytest("-p", "no:hypothesispytest", *BASE, "--ruler-lengths=1k,2k", "--ruler-threshold=rel:0.9",
                                "--ruler-report=r.json", "--junitxml=j.xml", *xdist)
    out = result.stdout.str()
    assert result.ret == 1
    result.assert_outcomes(passed=2, xfailed=2, failed=1)  # 1K measured, 2K scored 0 (xfailed), the verdict failed
    line = _last_ruler_line(out)
    assert line.startswith("ruler verdict: FAILED \u2014 2 items below the relative mark rel:0.9") and "vt @ 2K" in line
    data = json.loads((pytester.path / "r.json").read_text())
    assert data["verdict"]["line"] == line and {r["kind"] for r in data["verdict"]["reasons"]} == {"relative"}
    case = next(c for c in ET.parse(pytester.path / "j.xml").getroot().iter("testcase") if c.get("name") == "verdict")
    assert case.find("failure") is not None
