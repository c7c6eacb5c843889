"""The Markdown and the step summary put the verdict first (issue 34, item 8): the verdict section, the
baseline's changed or significant cells, the failing cells with two example predictions each (model text
escaped), then Table 3; a report without a ``verdict`` renders as before. The verdict dicts here have the
shape of the report's top-level ``verdict`` field (status, passed, exit_status, gated, line, reasons)."""

from __future__ import annotations

import json

from pytest_ruler.report.build import build_report, write_report
from pytest_ruler.report.github import step_summary
from pytest_ruler.report.markdown import markdown
from pytest_ruler.report.render import render_report
from pytest_ruler.results import ItemResult

HOSTILE = "<script>alert(1)</script> **bold** | cell `code` [link](http://x) &amp; ~~gone~~ $x$"


def _preds(n: int, right: int, hostile: bool = False) -> tuple[dict, ...]:
    out = []
    for i in range(n):
        good = i < right
        said = "1234567" if good else (HOSTILE if hostile and i == right else f"wrong {i}")
        out.append({"index": i, "prediction": said, "answers": ["1234567"], "score": 1.0 if good else 0.0, "prompt_hash": f"h{i}"})
    return tuple(out)


def _item(task, length, score, seed=0, error=None, predictions=(), mode="native"):
    return ItemResult(task=task, length=length, seed=seed, mode=mode, samples=len(predictions) or 5, score=score, threshold=85.6,
                      passed=error is None and score > 85.6, nulls=0, seconds=0.0, error=error, predictions=predictions)


RESULTS = [
    _item("niah_single_1", 4096, 100.0, predictions=_preds(5, 5)),
    _item("niah_single_1", 8192, 100.0, predictions=_preds(5, 5)),
    _item("niah_multikey_2", 4096, 100.0, predictions=_preds(5, 5)),
    _item("niah_multikey_2", 8192, 40.0, predictions=_preds(5, 2, hostile=True)),
    _item("vt", 8192, 0.0, error="RuntimeError: the <engine> died"),
]

FAILED = {"status": "failed", "passed": False, "exit_status": 1, "gated": True,
          "line": "ruler verdict: FAILED — effective length 4K < required 8K; niah_multikey_2 @ 8K dropped 60.0 points against v1.json (p = 0.002)",
          "reasons": [{"kind": "gate", "text": "effective length 4K < required 8K at threshold 85.6",
                       "cells": [{"task": "niah_multikey_2", "length": 8192, "mode": "native"}]},
                      {"kind": "baseline", "text": "niah_multikey_2 @ 8K dropped 60.0 points against v1.json (p = 0.002)",
                       "cells": [{"task": "niah_multikey_2", "length": 8192, "mode": "native"}]}]}
PASSED = {"status": "passed", "passed": True, "exit_status": 0, "gated": True,
          "line": "ruler verdict: PASSED — effective length 8K ≥ required 8K", "reasons": []}


def _comparison(task, length, base, now, p, significant):
    return {"task": task, "length": length, "mode": "native", "baseline_score": base, "current_score": now, "baseline_n": 5,
            "current_n": 5, "delta": now - base, "p_value": p, "significant": significant, "test": "two-proportion-z", "alpha": 0.05}


BASELINE = {"path": "v1.json", "test": "two-proportion-z", "alpha": 0.05, "passed": False, "comparisons": [
    _comparison("niah_single_1", 4096, 100.0, 100.0, 1.0, False),
    _comparison("niah_single_1", 8192, 100.0, 100.0, 1.0, False),
    _comparison("niah_multikey_2", 4096, 100.0, 100.0, 1.0, False),
    _comparison("niah_multikey_2", 8192, 100.0, 40.0, 0.002, True),
]}


def _report(results=RESULTS, **extra):
    return build_report(model="m", backend="scripted", tokenizer="t", haystack_corpus="noise", threshold=85.6, results=results,
                        extra=extra or None)


def _sections(md: str) -> list[str]:
    return [line for line in md.splitlines() if line.startswith("## ")]


def _section(md: str, heading: str) -> list[str]:
    lines = md.splitlines()
    start = lines.index(heading) + 1
    end = next((i for i in range(start, len(lines)) if lines[i].startswith("## ")), len(lines))
    return lines[start:end]


def test_a_failed_verdict_comes_first_then_the_baseline_and_the_failing_cells_then_table_3():
    md = markdown(_report(verdict=FAILED, baseline=BASELINE))
    assert _sections(md)[:4] == ["## Verdict", "## Baseline", "## Failing cells", "## Effective context length"]
    verdict = _section(md, "## Verdict")
    assert "**FAILED** (exit status 1)" in verdict
    assert "- effective length 4K < required 8K at threshold 85.6 (cells: niah\\_multikey\\_2 @ 8K)" in verdict
    assert "- niah\\_multikey\\_2 @ 8K dropped 60.0 points against v1.json (p = 0.002)" in verdict  # names its cell already


def test_the_baseline_shows_only_the_changed_or_significant_cells_and_sums_up_the_rest():
    baseline = _section(markdown(_report(verdict=FAILED, baseline=BASELINE)), "## Baseline")
    rows = [line for line in baseline if line.startswith("| ") and not line.startswith("| Cell")]
    assert rows == ["| niah\\_multikey\\_2 @ 8K | 100.0 | 40.0 | \u221260.0 | 0.0020 | **significant drop** |"]
    assert "3 other cells compared: unchanged (a change under 0.05 points, no significant drop)." in baseline
    assert "Against v1.json (two-proportion-z, alpha 0.05): **a significant drop**." in baseline


def test_failing_cells_show_score_vs_mark_and_at_most_two_predictions_each_escaped():
    cells = _section(markdown(_report(verdict=FAILED)), "## Failing cells")
    heads = [line for line in cells if line.startswith("- ")]
    assert heads == ["- **niah\\_multikey\\_2 @ 8K**: score 40.0 \u2264 mark 85.6",
                     "- **vt @ 8K**: errored, seed 0: RuntimeError: the &lt;engine> died"]
    examples = [line for line in cells if line.startswith("  - ")]
    assert len(examples) == 2  # three wrong predictions: two shown
    assert examples[0].startswith("  - sample 2: predicted \u201c&lt;script>alert(1)&lt;/script> \\*\\*bold\\*\\* \\| cell \\`code\\` "
                                  "\\[link\\](http://x) &amp;amp; \\~\\~gone\\~\\~ \\$x\\$\u201d")
    assert examples[0].endswith("; answers \u201c1234567\u201d")
    assert examples[1] == "  - sample 3: predicted \u201cwrong 3\u201d; answers \u201c1234567\u201d"
    md = "\n".join(cells)
    assert "<script>" not in md and "<engine>" not in md and "**bold**" not in md


def test_an_empty_prediction_and_many_answers_are_said_shortly():
    empty = ({"index": 0, "prediction": " ", "answers": [f"word{i}" for i in range(10)], "score": 0.0},)
    cells = _section(markdown(_report([_item("cwe", 4096, 0.0, predictions=empty)], verdict=FAILED)), "## Failing cells")
    assert ("  - sample 0: predicted nothing; answers \u201cword0\u201d, \u201cword1\u201d, \u201cword2\u201d, \u201cword3\u201d, "
            "\u201cword4\u201d and 5 more") in cells


def test_a_passed_verdict_has_no_failing_cells_section():
    passing = [r for r in RESULTS if r.task == "niah_single_1"]
    md = markdown(_report(passing, verdict=PASSED))
    assert _sections(md)[:2] == ["## Verdict", "## Effective context length"]
    assert _section(md, "## Verdict") == ["", "**PASSED** (exit status 0)", "", "- effective length 8K \u2265 required 8K", ""]


def test_a_verdict_without_a_gate_says_so():
    md = markdown(_report(verdict=dict(PASSED, gated=False, line="ruler verdict: PASSED")))
    assert "**PASSED** (exit status 0): no gate or baseline was configured" in md


def test_an_older_report_without_a_verdict_renders_as_before():
    md = markdown(_report(baseline=BASELINE))
    assert "## Verdict" not in md and "## Failing cells" not in md and "## Baseline" not in md
    assert _sections(md)[0] == "## Effective context length"


def test_many_failing_cells_are_counted_after_the_first_twenty():
    results = [_item(f"task{i:02d}", 4096, 0.0, predictions=_preds(3, 0)) for i in range(25)]
    cells = _section(markdown(_report(results, verdict=FAILED)), "## Failing cells")
    assert len([line for line in cells if line.startswith("- **")]) == 20
    assert "- \u2026 and 5 more failing cells (see the JSON report's items)" in cells
    assert len([line for line in cells if line.startswith("  - ")]) == 40


def test_the_step_summarys_first_section_is_the_verdict():
    text = step_summary(_report(verdict=FAILED, baseline=BASELINE), [("gate FAILED: effective length 4K (required 8K)", "red")])
    assert _sections(text)[0] == "## Verdict" and text.count("## Verdict") == 1
    assert "**FAILED** (exit status 1)" in text  # the report's verdict, not the lines
    # a report without a verdict field: the verdict lines, at the top
    old = step_summary(_report(), [("gate FAILED: effective length 4K (required 8K)", "red"), ("baseline: x @ 8K: within noise", "")])
    assert _sections(old)[0] == "## Verdict" and text.index("## Verdict") < text.index("## Effective context length")
    assert _section(old, "## Verdict")[:5] == ["", "**FAILED**", "", "- **gate FAILED: effective length 4K (required 8K)**",
                                              "- baseline: x @ 8K: within noise"]


def test_pytest_ruler_report_renders_the_same_markdown(tmp_path):
    path = write_report(tmp_path / "r.json", _report(verdict=FAILED, baseline=BASELINE))
    text, _ = render_report(path, plots=False)
    assert text == markdown(json.loads(path.read_text())) and text.startswith("# RULER report: m")
    assert _sections(text)[0] == "## Verdict"
