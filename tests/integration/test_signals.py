"""A Ctrl-C or SIGTERM at the run's end loses nothing (issue 35, items 1 and 7): pytester subprocess
runs of the plugin with the scripted engine (an oracle, not a model), signalled at a moment the
conftest below makes last until the test says so (files ``ending``/``sent``), so no timing is assumed.

- at ``[100%]`` (the last item finished, the run's end under way: a slow ``pytest_ruler_summary`` hook,
  or an xdist worker that is slow to shut down), serial and ``-n 2``: the stop is held and said, Table 3,
  the verdict line, the JSON, the JUnit XML and the Markdown are all written, the verdict is NOT DECIDED
  on each of them, and the exit status is "interrupted" (2);
- a second stop request while the first is held stops at once, through pytest (no traceback);
- a stop that comes after the verdict was settled (a slow reporter of the user's) changes no output;
- under ``-n 2``, a Ctrl-C while the workers collect says so (no "0 of 0 items").

A shell's background job starts with SIGINT ignored: each run gets the disposition a terminal would.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from pytest_ruler.folders import cache_root

# read now, before pytester points HOME at a temporary folder (the tokenizer the other runs use)
TOKENIZERS = str(cache_root())
WAIT = 240  # seconds any wait may take at a load of 10; no assertion is about time

# SLOW=summary: the summary hook (on the controller, inside RunRecord.finish, before the verdict is
# settled) waits; SLOW=worker_end: an xdist worker that ran an item waits in its session end (the
# controller has had every item's report, and its workers shut down); SLOW=collect: a worker waits
# while it collects; SLOW=reporter: a reporter of the user's waits (after the verdict is settled).
CONFTEST = f'''
import os
import time
from pathlib import Path

import pytest

SLOW = os.environ.get("SLOW")
RAN = []


def _wait_for(name):
    deadline = time.monotonic() + {WAIT}
    while not Path(name).exists() and time.monotonic() < deadline:
        time.sleep(0.02)


def _slow(where):
    if SLOW == where:
        Path("ending").touch()
        _wait_for("sent")


def pytest_ruler_summary(config, report):
    _slow("summary")
    return []


def pytest_ruler_add_reporters(config, reporters):
    reporters.add("slow", lambda end: _slow("reporter"))


def pytest_collection_modifyitems(config, items):
    if hasattr(config, "workerinput"):
        _slow("collect")


class _Ended:
    @pytest.hookimpl(trylast=True)
    def pytest_runtest_logfinish(self, nodeid, location):  # after the plugin's own: the controller has the item's end
        if not os.environ.get("PYTEST_XDIST_WORKER"):
            Path("logfinished").touch()


def pytest_configure(config):  # a plugin, not a conftest hook: item.ihook of a ruler item skips this conftest
    config.pluginmanager.register(_Ended(), "ended-marker")


def pytest_runtest_protocol(item, nextitem):  # a worker calls it through config.hook: every conftest sees it
    RAN.append(item.nodeid)


def pytest_sessionfinish(session):
    if hasattr(session.config, "workerinput") and RAN:
        _slow("worker_end")
'''
ARGS = ["--ruler-model=smollm2-135m", "--ruler-backend=scripted", "--ruler-tasks=niah_single_1", "--ruler-lengths=1k",
        "--ruler-samples=1", "--ruler-no-cache", "--ruler-require-effective-length=1k",
        "--ruler-report=r.json", "--ruler-markdown=r.md", "--junitxml=j.xml"]
HELD = {signal.SIGINT: "ruler: Ctrl-C held until the reports are written", signal.SIGTERM: "ruler: SIGTERM held until the reports are written"}


def _signalled(pytester, slow: str, *signals: int, extra=(), then_release: bool = True) -> tuple[subprocess.Popen, str]:
    """Run pytest with SLOW=slow; once the slow moment has come, send ``signals`` (each after the one
    before was said held), then let the run go on (``then_release``); its exit and its output."""
    pytester.makeconftest(CONFTEST)
    env = {**os.environ, "RULER_CACHE_DIR": TOKENIZERS, "SLOW": slow}
    env.pop("GITHUB_STEP_SUMMARY", None)
    proc = subprocess.Popen([sys.executable, "-m", "pytest", "-p", "no:hypothesispytest", "-p", "no:cacheprovider", *ARGS, *extra],
                            cwd=pytester.path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    lines: list[str] = []  # the output as read, in pieces (the progress line ends only when the run's end is over)

    def pump() -> None:
        while piece := proc.stdout.read(1):
            lines.append(piece)

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()

    def wait(done) -> None:
        deadline = time.monotonic() + WAIT
        while not done() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)

    try:
        wait((pytester.path / "ending").exists)
        assert (pytester.path / "ending").exists(), "the run never got there:\n" + "".join(lines)
        if slow != "collect":
            # the run's end means the controller has had every item's end (logfinish): a worker may reach its session end
            # (SLOW=worker_end) before the controller has read the report it sent, and a stop then is a stop
            # mid-run (under load this race was lost: CI=true quick tier, n2-workers-ending-sigterm)
            wait((pytester.path / "logfinished").exists)
            assert (pytester.path / "logfinished").exists(), "the controller never saw the last item end:\n" + "".join(lines)
        for i, sig in enumerate(signals):
            if i:  # two signals sent at once may arrive as one: the next goes once the first was said held
                wait(lambda: "held until the reports are written" in "".join(lines))
            proc.send_signal(sig)
        if then_release:
            (pytester.path / "sent").touch()
        proc.wait(timeout=WAIT)
        reader.join(timeout=WAIT)
    finally:
        proc.kill()
    return proc, "".join(lines)


def _ruler_lines(out: str) -> list[str]:
    return [line for line in out.splitlines() if line.startswith("ruler verdict:")]


def _everything_written(pytester, out: str) -> dict:
    """Table 3, the verdict line, the JSON, the JUnit XML and the Markdown, all saying one verdict."""
    assert "Traceback" not in out and "INTERNALERROR" not in out, out
    assert "RULER: effective context length" in out
    assert any(line.startswith("niah_single_1 ") and "100.0" in line for line in out.splitlines()), out
    data = json.loads((pytester.path / "r.json").read_text())
    verdict = data["verdict"]
    assert _ruler_lines(out)[-1:] == [verdict["line"]], out  # the terminal's last ruler line is the JSON's
    markdown = (pytester.path / "r.md").read_text()
    assert f"**{verdict['status'].upper()}** (exit status {verdict['exit_status']})" in markdown
    assert all(reason["text"] in markdown for reason in verdict["reasons"]), markdown
    suite = ET.parse(pytester.path / "j.xml").getroot().find("testsuite")
    props = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert props["ruler_verdict"] == verdict["status"] and props["ruler_verdict_line"] == verdict["line"]
    assert props["ruler_verdict_exit_status"] == str(verdict["exit_status"])
    assert "niah_single_1" in " ".join(case.get("name", "") for case in suite.iter("testcase"))
    return data


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
@pytest.mark.parametrize("where", [pytest.param(("summary", []), id="n0"), pytest.param(("summary", ["-n", "2"]), id="n2"),
                                   pytest.param(("worker_end", ["-n", "2"]), id="n2-workers-ending")])
def test_a_stop_at_100_percent_is_held_and_the_run_writes_everything(pytester, sig, where):
    slow, extra = where
    proc, out = _signalled(pytester, slow, sig, extra=extra)
    assert proc.returncode == pytest.ExitCode.INTERRUPTED, out
    assert out.count(HELD[sig]) == 1, out
    data = _everything_written(pytester, out)
    # every item had finished: the measurements are complete, the verdict is not claimed (plugin.run_end)
    assert data["complete"] is True and data["interrupted"] is True and data["items_finished"] == data["items_expected"] == 1
    assert data["verdict"]["status"] == "not decided" and data["verdict"]["exit_status"] == 2
    assert "stopped by " + ("Ctrl-C" if sig == signal.SIGINT else "SIGTERM") + " at the run's end" in data["verdict"]["line"]
    assert "came at the run's end: the reports are written; stopping (interrupted)" in out


def test_a_second_stop_while_the_first_is_held_stops_at_once(pytester):
    # the summary hook never ends by itself (until WAIT): only the second Ctrl-C can end the run
    proc, out = _signalled(pytester, "summary", signal.SIGINT, signal.SIGINT, then_release=False)
    assert proc.returncode == pytest.ExitCode.INTERRUPTED, out
    assert out.count(HELD[signal.SIGINT]) == 1, out
    assert "stopped at once, the reports may be lost" in out and "Traceback" not in out, out
    assert not (pytester.path / "sent").exists()


def test_a_stop_after_the_verdict_was_settled_changes_no_output(pytester):
    proc, out = _signalled(pytester, "reporter", signal.SIGTERM)
    data = _everything_written(pytester, out)
    assert out.count(HELD[signal.SIGTERM]) == 1, out
    assert data["verdict"]["status"] == "passed" and data["interrupted"] is False
    assert proc.returncode == 0, out  # the verdict's, as every output says
    assert "SIGTERM came after the verdict was settled: the reports are written as settled" in out


def test_a_ctrl_c_while_xdist_workers_collect_says_the_run_was_interrupted(pytester):
    proc, out = _signalled(pytester, "collect", signal.SIGINT, extra=["-n", "2"])
    assert proc.returncode == pytest.ExitCode.INTERRUPTED, out
    assert "interrupted before the items were collected: the table and report are partial (\"complete\": false)" in out
    data = json.loads((pytester.path / "r.json").read_text())
    assert data["interrupted"] is True and data["complete"] is False and data["items_expected"] is None
    assert data["gate"]["passed"] is None and f"gate NOT DECIDED: {data['gate']['reason']} (required 1K)" in out
    assert _ruler_lines(out)[-1:] == [data["verdict"]["line"]] and data["verdict"]["status"] == "not decided"
    assert "0 of 0" not in out
