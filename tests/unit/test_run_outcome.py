"""The run's end in the core (run.outcome): results in, errored results synthesised, then the report,
the verdict, the outputs and the exit status (a fake session stands in for the model: plumbing only)."""

from __future__ import annotations

import re
from types import SimpleNamespace

from pytest_ruler.run_config import RulerConfig
from pytest_ruler.report.reporters import Reporter, Reporters
from pytest_ruler.results import ItemResult
from pytest_ruler.run import runner
from pytest_ruler.run.outcome import RunRecord


class FakeSession:
    """What RunRecord reads of a RulerSession, without a tokenizer or an engine."""

    def __init__(self, **options):
        self.config = RulerConfig(model="fake", tasks=("vt",), lengths=(1024, 2048), samples=2, **options)
        self.backend = "scripted"
        self.tokenizer = SimpleNamespace(name="tok")
        self.frame = SimpleNamespace(name="base")
        self.warnings: list[str] = []
        self.position = ""
        self.engine_load_seconds = 0.0
        self.said: list[str] = []

    def say(self, line):
        self.said.append(line)

    def haystack_label(self, task):
        return "noise"

    def engine_record(self):
        return {"backend": "scripted", "class": "fake.Engine", "mode": "oracle", "options": {}, "versions": {}}

    def errored_result(self, task, length, seed, mode, error):
        return runner.errored_result(self.config, task, length, seed, mode, error)


def cell_of(nodeid):
    m = re.fullmatch(r"ruler::(\w+)\[(\d+)-seed(\d+)\]", nodeid)
    return None if m is None else (m[1], int(m[2]), int(m[3]), "native")


def result(task, length, score):
    return ItemResult(task=task, length=length, seed=0, mode="native", samples=2, score=score, threshold=85.6,
                      passed=score > 85.6, nulls=0, seconds=0.1, prompt_tokens=length)


IDS = ["ruler::vt[1024-seed0]", "ruler::vt[2048-seed0]"]


def test_an_item_that_failed_without_a_result_is_an_errored_result_and_fails_the_gate():
    run = RunRecord(FakeSession(required_effective_length=1024), cell_of)
    run.expect([*IDS, "test_mine.py::test_user"])  # a user test is not a suite item
    run.finished_item(IDS[0], [result("vt", 1024, 100.0)])
    run.failed_item(IDS[1], "worker 'gw0' crashed while running 'ruler::vt[2048-seed0]'")
    out = run.finish()
    items = out.report.mode("native").items
    assert [(r.length, r.error) for r in items] == [(1024, None), (2048, "worker 'gw0' crashed while running 'ruler::vt[2048-seed0]'")]
    assert out.report.complete and out.report.items_finished == out.report.items_expected == 2
    assert out.verdict.failures == ["1 item errored (vt @ 2K): no verdict rests on missing evidence"]
    assert out.verdict.fields["gate"]["reason"] == "1 item errored; effective length is not established"
    assert out.exit_status(0) == 1 and out.exit_status(2) == 1  # gated: the verdict is the exit code (an error: failed)


def test_an_unfinished_run_is_incomplete_and_the_estimate_is_said_once():
    session = FakeSession()
    run = RunRecord(session, cell_of)
    run.expect(IDS)
    run.expect(IDS)
    run.finished_item(IDS[0], [result("vt", 1024, 100.0)])
    out = run.finish(interrupted=True)
    assert not out.report.complete and out.report.interrupted and out.report.items_finished == 1
    assert len(session.said) == 3  # the estimate once (expect was called twice: tokens, then time), then the ETA after the first item
    assert session.said[0].startswith("ruler: 2 items, at most 6,144 prompt tokens (2 samples x length per item")
    assert session.said[1].startswith("ruler: no time estimate")
    assert session.said[2].startswith("ruler: ETA ") and "more for 1 item" in session.said[2]
    assert any("interrupted after 1 of 2 items" in line.text for line in out.lines())


def test_outputs_are_reporters_by_name_and_a_broken_one_is_one_error():
    ran = []
    reporters = Reporters([
        Reporter("first", lambda end: ran.append("first") or ["first.txt"]),
        Reporter("broken", lambda end: 1 / 0),
        Reporter("unwanted", lambda end: ran.append("unwanted"), wanted=lambda end: False),
        Reporter("last", lambda end: ran.append(("last", end.errors)) or None),
    ])
    run = RunRecord(FakeSession(required_effective_length=1024), cell_of)
    run.expect(IDS[:1])
    run.finished_item(IDS[0], [result("vt", 1024, 100.0)])
    out = run.finish(reporters=reporters)
    assert ran == ["first", ("last", ("reporter 'broken': ZeroDivisionError: division by zero",))]
    assert [str(p) for p in out.written] == ["first.txt"]
    assert out.verdict.fields["gate"]["passed"] is True and out.errors  # the gate passed ...
    assert out.verdict.status == "failed" and out.exit_status(0) == 1  # ... and a lost output fails the run
    assert [r.kind for r in out.verdict.reasons if r.status == "failed"] == ["output"]


def test_what_a_reporter_returns_is_never_a_gate():
    reporters = Reporters()
    reporters.add("mine", lambda end: ["x.txt"])
    run = RunRecord(FakeSession(), cell_of)
    run.expect(IDS[:1])
    run.finished_item(IDS[0], [result("vt", 1024, 0.0)])  # the item fails, no gate is asked: the run's pytest status decides
    out = run.finish(reporters=reporters)
    assert out.verdict.failures == ["1 item at or below its mark: vt @ 1K 0.0 <= 85.6"]  # the item's own mark, not the reporter
    assert out.exit_status(1) == 1 and [str(p) for p in out.written] == ["x.txt"]


def test_a_stop_held_at_the_runs_end_keeps_the_measurements_and_claims_no_verdict():
    for options, gated in (({"required_effective_length": 1024}, True), ({}, False)):
        run = RunRecord(FakeSession(**options), cell_of)
        run.expect(IDS[:1])
        run.finished_item(IDS[0], [result("vt", 1024, 100.0)])
        out = run.finish(settle=lambda: "SIGTERM")
        assert out.report.complete and out.report.interrupted and out.stopped == "SIGTERM"
        assert out.verdict.status == "not decided" and out.verdict.gated is gated
        assert "stopped by SIGTERM at the run's end, after every item finished" in out.verdict.line()
        assert out.exit_status(0) == 2  # the verdict's (gated) or pytest's "interrupted"


def test_a_run_stopped_before_its_items_were_known_says_so_never_0_of_0():
    run = RunRecord(FakeSession(required_effective_length=1024), cell_of)
    out = run.finish(interrupted=True)
    assert out.report.items_expected is None and not out.report.complete
    assert any(line.text.startswith("interrupted before the items were collected") for line in out.lines())
    assert not any("0 of 0" in line.text for line in out.lines())
