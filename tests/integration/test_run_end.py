"""The run's end survives impatient users and full disks (issue 23): pytester runs of the plugin
with the scripted engine and ``fake``, a slow test engine built on it (not a model).

- a second Ctrl-C while the reports are written is held: the JSON report and the JUnit XML are kept;
- a run interrupted before any item finished still prints its section, the partial mark and the gate line;
- a full disk under ``--junitxml`` (``/dev/full``: every write fails with ENOSPC) or under our own
  outputs is one ``RULER ERROR`` line each, after Table 3 and the verdict, and a failing exit status.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from pytest_ruler.folders import cache_root

from .helpers import SCRIPTED, report, run

# read now, before pytester points HOME at a temporary folder: the subprocess finds the
# tokenizer the in-process runs use instead of converting its GGUF file again
TOKENIZERS = str(cache_root())

# ``fake``: the scripted oracle, except that a vt prompt makes it wait (up to two minutes) after
# saying so in a file, so a test can interrupt it mid-call; FAKE_ACTION=interrupt: it raises
# KeyboardInterrupt on its first call instead. The summary hook, when FAKE_SLOW_END is set, says
# the run's end has begun and waits for the test's second Ctrl-C (the file ``sent``), standing
# for a slow end of run (a big report, the plots).
FAKE_CONFTEST = '''
import os
import time
from pathlib import Path

from pytest_ruler.engines.scripted import ScriptedEngine


def _wait_for(name):
    deadline = time.monotonic() + 120
    while not Path(name).exists() and time.monotonic() < deadline:
        time.sleep(0.02)


class FakeEngine(ScriptedEngine):
    name = "fake"

    @staticmethod
    def describe(config):
        return {"engine": "fake (test engine, not a model)"}

    def generate(self, requests, on_result=None):
        if os.environ.get("FAKE_ACTION") == "interrupt":
            raise KeyboardInterrupt
        if any("VAR " in r.prompt for r in requests):
            Path("engine-waiting").touch()
            _wait_for("never")
        return super().generate(requests, on_result)


def pytest_ruler_register(registry):
    registry.engine("fake", FakeEngine)


def pytest_ruler_summary(config, report):
    if os.environ.get("FAKE_SLOW_END"):
        Path("ending").touch()
        _wait_for("sent")
    return []
'''
FAKE = ["--ruler-model=smollm2-135m", "--ruler-backend=fake", "--ruler-tasks=niah_single_1,vt", "--ruler-lengths=1k",
        "--ruler-samples=1", "--ruler-no-cache", "--ruler-require-effective-length=1k",
        "--ruler-batch-items=1"]  # one item per engine call: niah_single_1 finishes before vt's call waits


def _wait_for(path: Path, proc: subprocess.Popen) -> None:
    deadline = time.monotonic() + 120
    while not path.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert path.exists(), "the run never got there"


def test_a_second_ctrl_c_while_the_reports_are_written_loses_neither_report(pytester, monkeypatch):
    pytester.makeconftest(FAKE_CONFTEST)
    monkeypatch.setenv("FAKE_SLOW_END", "1")
    # a shell's background job starts with SIGINT ignored: give the run the disposition a terminal would
    proc = subprocess.Popen([sys.executable, "-m", "pytest", "-p", "no:hypothesispytest", "-p", "no:cacheprovider", *FAKE,
                             "--ruler-report=r.json", "--junitxml=j.xml"], cwd=pytester.path, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env={**os.environ, "RULER_CACHE_DIR": TOKENIZERS}, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        _wait_for(pytester.path / "engine-waiting", proc)
        proc.send_signal(signal.SIGINT)  # the first Ctrl-C: the vt item is in the engine
        _wait_for(pytester.path / "ending", proc)
        proc.send_signal(signal.SIGINT)  # the second, while the run's end is under way
        (pytester.path / "sent").touch()
        out, _ = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert "Ctrl-C held until the reports are written" in out
    assert proc.returncode == pytest.ExitCode.INTERRUPTED, out
    data = report(pytester)
    assert data["complete"] is False and data["interrupted"] is True and data["items_finished"] == 1, out
    suite = ET.parse(pytester.path / "j.xml").getroot().find("testsuite")
    assert suite is not None and int(suite.get("tests")) >= 1, out
    assert "interrupted after 1 of 2 items" in out and "gate NOT DECIDED" in out
    assert "they are complete; stopping" in out


def _full_disk() -> Path:
    full = Path("/dev/full")
    if not full.is_char_device():
        pytest.skip("needs /dev/full (a device where every write fails with ENOSPC)")
    return full


def _table_and_verdict(out: str) -> None:
    assert "RULER: effective context length" in out
    assert any(line.startswith("niah_single_1 ") and "100.0" in line for line in out.splitlines()), out
    assert "gate PASSED: effective length 1K (required 1K)" in out
    assert "INTERNALERROR" not in out and "Traceback" not in out


def test_a_full_disk_under_junitxml_still_prints_table_3_and_the_verdict(pytester):
    full = _full_disk()
    result = run(pytester, *SCRIPTED, "--ruler-tasks=niah_single_1", "--ruler-lengths=1k", "--ruler-samples=1",
                 "--ruler-require-effective-length=1k", "--ruler-report=r.json", f"--junitxml={full}")
    out = result.stdout.str() + result.stderr.str()
    _table_and_verdict(out)
    errors = [line for line in out.splitlines() if line.startswith("RULER ERROR:")]
    assert errors == [f"RULER ERROR: writing the JUnit XML {full}: OSError: [Errno 28] No space left on device"], out
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # an output asked for was lost
    assert report(pytester)["items"][0]["passed"] is True


def test_our_own_outputs_on_a_full_disk_are_one_error_line_each_and_a_failing_run(pytester, monkeypatch):
    full = _full_disk()
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(full))
    result = run(pytester, *SCRIPTED, "--ruler-tasks=niah_single_1", "--ruler-lengths=1k", "--ruler-samples=1",
                 "--ruler-require-effective-length=1k", f"--ruler-report={full}", f"--ruler-markdown={full}")
    out = result.stdout.str() + result.stderr.str()
    assert full.is_char_device()  # written into, never replaced by a file
    _table_and_verdict(out)
    errors = [line for line in out.splitlines() if line.startswith("RULER ERROR:")]
    assert errors == [f"RULER ERROR: writing the report {full}: OSError: [Errno 28] No space left on device",
                      f"RULER ERROR: writing the Markdown {full}: OSError: [Errno 28] No space left on device",
                      "RULER ERROR: GitHub Actions output: OSError: [Errno 28] No space left on device"], out
    assert result.ret == pytest.ExitCode.TESTS_FAILED


def test_an_interrupt_before_the_first_item_finished_still_prints_the_partial_mark_and_the_gate(pytester, monkeypatch):
    pytester.makeconftest(FAKE_CONFTEST)
    monkeypatch.setenv("FAKE_ACTION", "interrupt")
    # in-process pytester re-raises a Ctrl-C in the outer run unless told not to
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(pytester.path / "step.md"))
    result = pytester.runpytest("-p", "no:hypothesispytest", *FAKE, "--ruler-report=r.json", "--ruler-markdown=r.md",
                                no_reraise_ctrlc=True)
    lines = result.stdout.lines
    assert result.ret == pytest.ExitCode.INTERRUPTED
    assert any("RULER: effective context length" in line for line in lines), result.stdout.str()
    assert "no RULER item finished, so nothing was measured" in lines
    assert "interrupted after 0 of 2 items: the table and report are partial (\"complete\": false)" in lines
    gate = report(pytester)["gate"]
    assert gate["passed"] is None
    assert f"gate NOT DECIDED: {gate['reason']} (required 1K)" in lines  # the JSON's verdict, on the terminal
    assert "wrote: r.json, r.md" in lines
    mark = '> **Interrupted** after 0 of 2 items: the tables are partial ("complete": false)'
    assert mark in (pytester.path / "r.md").read_text().splitlines()
    assert mark in (pytester.path / "step.md").read_text().splitlines()  # the GitHub step summary is that Markdown
