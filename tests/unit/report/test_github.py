"""GitHub Actions output over a report dict: escaping, annotations (capped), the step summary;
and the report's stored summary rounded without moving the gate."""

from __future__ import annotations

from pytest_ruler.report.build import build_report
from pytest_ruler.report.github import (annotations, escape_data, escape_property, github_output, rescue_line,
                                        step_summary, workflow_command)
from pytest_ruler.results import ItemResult, gate


def item(task, length, score, seed=0, error=None, mode="native", mapreduce=None):
    return ItemResult(task=task, length=length, seed=seed, mode=mode, samples=10, score=score, threshold=85.6,
                      passed=error is None and score >= 85.6, nulls=0, seconds=0.0, error=error, mapreduce=mapreduce or {})


def report_of(results, **extra):
    return build_report(model="m", backend="scripted", tokenizer="t", haystack_corpus="essays: test", threshold=85.6,
                        results=results, extra=extra or None)


def test_escaping_follows_githubs_rules():
    assert escape_data("50% done\r\nnext: a, b") == "50%25 done%0D%0Anext: a, b"
    assert escape_property("RULER a: b, c%\n") == "RULER a%3A b%2C c%25%0A"
    assert workflow_command("error", "x\ny 10%", title="t: 1,2") == "::error title=t%3A 1%2C2::x%0Ay 10%25"
    assert workflow_command("warning", "plain") == "::warning::plain"


def test_failing_cells_and_a_failed_gate_are_errors():
    results = [item("niah_single_1", 1024, 100), item("niah_single_1", 2048, 40), item("vt", 1024, 100),
               item("vt", 2048, 0, error="RuntimeError: boom\nsecond line")]
    report = report_of(results)
    lines = annotations(report, [("gate FAILED: effective length 1K (required 2K)", "red"), ("gate PASSED: x", "green")])
    assert lines == [
        "::error title=RULER gate::gate FAILED: effective length 1K (required 2K)",
        "::error title=RULER niah_single_1 @ 2K::score 40.0 <= threshold 85.6",
        "::error title=RULER vt @ 2K::errored, seed 0: RuntimeError: boom%0Asecond line",
    ]
    assert annotations(report_of([item("vt", 1024, 100)])) == []


def test_annotations_are_capped_and_say_how_many_more():
    results = [item(f"task{i:02d}", 1024, 0) for i in range(15)]
    lines = annotations(report_of(results), limit=10)
    assert len(lines) == 10 and all(ln.startswith("::error ") for ln in lines)
    assert lines[-1] == "::error title=RULER::6 more failures (see the step summary or the JSON report)"


def test_an_incomplete_run_and_an_undecided_gate_are_warnings():
    report = report_of([item("vt", 1024, 100)], interrupted=True, items_finished=1, items_expected=3)
    report["complete"] = False
    lines = annotations(report, [("gate NOT DECIDED: interrupted (required 1K)", "yellow")], errors=["writing the plots: boom"])
    assert lines == [
        "::warning title=RULER gate::gate NOT DECIDED: interrupted (required 1K)",
        "::warning title=RULER incomplete run::interrupted after 1 of 3 items: the table and report are partial (\"complete\": false)",
        "::warning title=RULER error::writing the plots: boom",
    ]


def test_the_step_summary_has_table_3_the_verdict_and_the_rescue_line():
    mr = {"grounding": "literal"}
    results = [item("vt", 1024, 0), item("vt", 1024, 100, mode="mapreduce", mapreduce=mr)]
    report = report_of(results)
    assert rescue_line(report).startswith("map-reduce passes where native fails (grounding: literal")
    assert rescue_line(report).endswith("): vt@1K")
    text = step_summary(report, [("gate FAILED: effective length <1K (required 1K)", "red")])
    assert "## Effective context length" in text and "| **Total** |" in text
    assert "## Verdict" in text and "- **gate FAILED: effective length <1K (required 1K)**" in text
    assert f"**{rescue_line(report)}**" in text
    assert rescue_line(report_of([item("vt", 1024, 100)])) is None


def test_github_output_appends_the_summary_and_prints_annotations_only_in_ci(tmp_path):
    report = report_of([item("vt", 1024, 0)])
    path = tmp_path / "summary.md"
    path.write_text("earlier step\n")
    said = []
    github_output(report, [], said.append, environ={"GITHUB_STEP_SUMMARY": str(path)})
    assert path.read_text().startswith("earlier step\n# RULER report: m") and said == []
    github_output(report, [], said.append, environ={"GITHUB_ACTIONS": "true"})
    assert said == ["", "::error title=RULER vt @ 1K::score 0.0 <= threshold 85.6"]
    github_output(report, [], said.append, environ={})
    github_output(report_of([item("vt", 1024, 100)]), [], said.append, environ={"GITHUB_ACTIONS": "true"})
    assert len(said) == 2  # nothing outside GitHub Actions, nothing when nothing failed


def test_the_stored_summary_is_rounded_and_the_gate_does_not_move():
    results = [item("a", 1024, 100), item("b", 1024, 31.0), item("c", 1024, 0.0), item("a", 2048, 66.67), item("b", 2048, 33.33),
               item("c", 2048, 50.0)]
    native = report_of(results)["summary"]["native"]
    assert native["per_length"] == {"1024": 43.6667, "2048": 50.0} and native["avg"] == 46.8333
    # just above the threshold unrounded, equal to it rounded: the effective length is the unrounded one
    close = [item("a", 1024, 85.60000008), item("b", 1024, 85.6)]
    report = report_of(close)
    assert report["summary"]["native"]["per_length"] == {"1024": 85.6}
    assert report["summary"]["native"]["effective_length"] == 1024
    assert gate(report, required=1024).passed is True
