"""The verdict as pytest sees it: one more test report, ``ruler::verdict``, and JUnit properties.

With a gate, a baseline or a relative mark the suite's items are measurements (an item below
its mark is xfailed, ``plugin.items``), so pytest's own counts would not show a failed verdict.
At the run's end, on the controller, the plugin hands pytest one test report for the verdict:

    Verdict ──verdict_report(verdict, rootpath)──► TestReport "ruler::verdict" (when="call")
        passed    ──► counted as passed ("13 passed")
        failed    ──► counted as failed: pytest's last line is red, "FAILED ruler::verdict - <the verdict line>"
                      in the short summary, its text under FAILURES, a <failure> in JUnit, --lf records it
        not decided ──► outcome skipped, category "not decided" ("12 passed, 1 not decided", yellow)
    ──deliver(config, report): config.hook.pytest_runtest_logreport(report=...)──► the terminal's counts, junitxml, lastfailed, any other plugin
    Verdict ──junit_properties(verdict, report)──► the JUnit test suite's properties (``ruler_verdict``,
        ``ruler_verdict_exit_status``, ``ruler_verdict_line``, effective and required lengths)

``teststatus`` answers pytest_report_teststatus for it: its category, and no progress letter
(the progress line has ended when it arrives). The report is not an item: ``-k``, ``--deselect``
and the shard's selection never see it, and it is never collected, so ``--lf`` after a failed
verdict reruns the whole selection (pytest: "known failures not in selected tests"), which the
verdict needs anyway; the prediction cache makes that rerun cheap.

Public names: ``NODEID``, ``deliver``, ``junit_properties``, ``teststatus``, ``verdict_report``.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

from ..lengths import format_length
from ..results.verdict import FAILED, NOT_DECIDED, PASSED, Verdict

__all__ = ["NODEID", "deliver", "junit_properties", "teststatus", "verdict_report"]

NODEID = "ruler::verdict"
CATEGORY = {PASSED: "passed", FAILED: "failed", NOT_DECIDED: "not decided"}
WORD = {PASSED: "PASSED", FAILED: "FAILED", NOT_DECIDED: "NOT DECIDED"}


class VerdictText:
    """The failed verdict's text as pytest prints a failure (``toterminal``) and JUnit stores it (``str``)."""

    def __init__(self, verdict: Verdict):
        self.text = "\n".join(text for text, _ in verdict.lines())
        self.reprcrash = SimpleNamespace(message=verdict.line(), path=NODEID, lineno=0)

    def toterminal(self, tw: Any) -> None:
        for line in self.text.splitlines():
            tw.line(line)

    def __str__(self) -> str:
        return self.text


def verdict_report(verdict: Verdict, rootpath: Path) -> Any:
    """The verdict's test report (see the module docstring)."""
    from _pytest.reports import TestReport

    path = str(rootpath / "ruler")
    status = verdict.status
    if status == FAILED:
        outcome, longrepr = "failed", VerdictText(verdict)
    elif status == NOT_DECIDED:
        outcome, longrepr = "skipped", (path, 0, verdict.line())
    else:
        outcome, longrepr = "passed", None
    report = TestReport(NODEID, ("ruler", None, "ruler verdict"), {"ruler": 1}, outcome, longrepr, "call",
                        user_properties=[("ruler_verdict", status), ("ruler_verdict_line", verdict.line())])
    report.ruler_verdict = status
    return report


def teststatus(report: Any) -> tuple[str, str, str] | None:
    """pytest_report_teststatus for the verdict's report: its category; while it is handed to pytest
    (``deliver``) no letter and no word, so the finished progress line gets nothing; after, its word
    (the short test summary's ``FAILED ruler::verdict - ...``)."""
    status = getattr(report, "ruler_verdict", None)
    if status is None:
        return None
    if getattr(report, "ruler_delivering", False):
        return CATEGORY[status], "", ""
    return CATEGORY[status], "", WORD[status]


def deliver(config: Any, report: Any) -> None:
    """Hand the verdict's report to every plugin (the terminal's counts, junitxml, lastfailed)."""
    report.ruler_delivering = True
    try:
        config.hook.pytest_runtest_logreport(report=report)
    finally:
        report.ruler_delivering = False


def junit_properties(verdict: Verdict, report: Any) -> list[tuple[str, str]]:
    """The JUnit test suite's properties: the verdict and the lengths it rests on."""
    props = [("ruler_verdict", verdict.status), ("ruler_verdict_exit_status", str(verdict.exit_status)),
             ("ruler_verdict_line", verdict.line())]
    for key in ("gate", "mapreduce_gate"):
        g = verdict.fields.get(key) or {}
        if g.get("required_effective_length") is not None:
            prefix = "ruler_" if key == "gate" else "ruler_mapreduce_"
            props.append((f"{prefix}required_effective_length", format_length(g["required_effective_length"])))
            props.append((f"{prefix}effective_length", format_length(g.get("effective_length"))))
    baseline = verdict.fields.get("baseline") or {}
    if baseline.get("path"):
        props.append(("ruler_baseline", str(baseline["path"])))
    for i, reason in enumerate(verdict.shown(), 1):
        props.append((f"ruler_verdict_reason_{i}", reason.text))
    return props
