"""On GitHub Actions the plugin writes the verdict, then Table 3, to $GITHUB_STEP_SUMMARY and
prints ::error lines for failing cells and a failed gate (the scripted test engine, not a model)."""

from __future__ import annotations

from .helpers import SCRIPTED, run

# under the scripted oracle niah_single_1 scores 100 and cwe 0: cwe @ 1K fails, so does the gate
ARGS = [*SCRIPTED, "--ruler-tasks=niah_single_1,cwe", "--ruler-lengths=1k", "--ruler-samples=1",
        "--ruler-require-effective-length=1k"]


def test_step_summary_and_annotations_on_github_actions(pytester, monkeypatch, tmp_path):
    summary = tmp_path / "step-summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    result = run(pytester, *ARGS)
    assert result.ret == 1
    text = summary.read_text(encoding="utf-8")
    assert "## Effective context length" in text
    assert any(ln.startswith("| cwe | 0.0") for ln in text.splitlines())
    assert any(ln.startswith("| **Total** | 50.0") for ln in text.splitlines())
    assert "## Verdict\n\n**FAILED**" in text and "effective length below the shortest tested length" in text
    sections = [ln for ln in text.splitlines() if ln.startswith("## ")]
    assert sections[:3] == ["## Verdict", "## Failing cells", "## Effective context length"]  # the verdict first (issue 34), once
    assert sections.count("## Verdict") == 1 and "- **cwe @ 1K**: score 0.0 \u2264 mark 85.6" in text
    out = result.stdout.lines
    assert "::error title=RULER cwe @ 1K::score 0.0 <= threshold 85.6" in out
    gate_errors = [ln for ln in out if ln.startswith("::error title=RULER gate::gate FAILED")]
    assert len(gate_errors) == 1
    assert not any(ln.startswith("::error title=RULER niah_single_1") for ln in out)


def test_nothing_github_specific_outside_github_actions(pytester, monkeypatch):
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    result = run(pytester, *ARGS)
    assert result.ret == 1
    assert not any(ln.startswith("::") for ln in result.stdout.lines)
