"""Nothing destroys a report (issue 34, item 4): pytester runs of the plugin with the scripted test
engine (not a model), with and without ``-n 2``.

- ``--collect-only`` writes no report, no Markdown, no plots and appends nothing to the step summary;
- a run that finished no item (every item deselected, interrupted before the first) keeps a complete
  report where it is, writes its own beside it (``keep.incomplete.json``) and says so on the terminal;
- a run that finished items replaces the report as before.
"""

from __future__ import annotations

import json

import pytest

from .helpers import SCRIPTED, XDIST, run
from .test_run_end import FAKE, FAKE_CONFTEST

ARGS = [*SCRIPTED, "--ruler-tasks=niah_single_1", "--ruler-lengths=1k,2k", "--ruler-samples=1", "--ruler-report=keep.json",
        "--ruler-markdown=keep.md"]


def _complete_run(pytester) -> dict[str, bytes]:
    """A first run that leaves a complete report, its Markdown and its plots; their bytes."""
    result = run(pytester, *ARGS, "--ruler-plots=plots")
    assert result.ret == 0, result.stdout.str()
    files = {p.relative_to(pytester.path).as_posix(): p.read_bytes()
             for p in [pytester.path / "keep.json", pytester.path / "keep.md", *sorted((pytester.path / "plots").glob("*.png"))]}
    assert len(json.loads(files["keep.json"])["items"]) == 2 and any(k.endswith(".png") for k in files)
    return files


def _unchanged(pytester, files: dict[str, bytes]) -> None:
    for name, data in files.items():
        assert (pytester.path / name).read_bytes() == data, f"{name} was replaced"


@pytest.mark.parametrize("xdist", XDIST)
def test_collect_only_writes_no_report_markdown_plots_or_step_summary(pytester, monkeypatch, xdist):
    files = _complete_run(pytester)
    summary = pytester.path / "step.md"
    summary.write_text("an earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    result = run(pytester, *ARGS, "--ruler-plots=plots2", "--collect-only", *xdist)
    out = result.stdout.str()
    assert "niah_single_1[1024-seed0]" in out  # it listed the items
    _unchanged(pytester, files)
    assert summary.read_text() == "an earlier step\n"
    assert not (pytester.path / "plots2").exists() and not (pytester.path / "keep.incomplete.json").exists()
    assert "wrote:" not in out


@pytest.mark.parametrize("xdist", XDIST)
def test_collect_only_on_a_fresh_folder_creates_no_file(pytester, xdist):
    result = run(pytester, *ARGS, "--collect-only", *xdist)
    assert "niah_single_1[2048-seed0]" in result.stdout.str()
    assert not (pytester.path / "keep.json").exists() and not (pytester.path / "keep.md").exists()


@pytest.mark.parametrize("xdist", XDIST)
def test_a_run_with_every_item_deselected_keeps_the_complete_report_and_writes_its_own_beside_it(pytester, xdist):
    files = _complete_run(pytester)
    result = run(pytester, *ARGS, "-k", "no_such_item", *xdist)
    _unchanged(pytester, files)
    beside = json.loads((pytester.path / "keep.incomplete.json").read_text())
    assert beside["items"] == [] and beside["schema"] == "pytest-ruler/1"
    assert (pytester.path / "keep.incomplete.md").is_file()
    lines = result.stdout.lines
    assert ("ruler: kept keep.json (a complete report of 2 items): this run finished no item, "
            "so its report is keep.incomplete.json") in lines, result.stdout.str()
    assert any(line.startswith("ruler: kept keep.md") and line.endswith("keep.incomplete.md") for line in lines)


def test_a_run_interrupted_before_the_first_item_keeps_the_complete_report(pytester, monkeypatch):
    files = _complete_run(pytester)
    pytester.makeconftest(FAKE_CONFTEST)
    monkeypatch.setenv("FAKE_ACTION", "interrupt")
    result = pytester.runpytest("-p", "no:hypothesispytest", *FAKE, "--ruler-report=keep.json", no_reraise_ctrlc=True)
    assert result.ret == pytest.ExitCode.INTERRUPTED
    _unchanged(pytester, files)
    beside = json.loads((pytester.path / "keep.incomplete.json").read_text())
    assert beside["complete"] is False and beside["items"] == [] and beside["interrupted"] is True
    assert any(line.startswith("ruler: kept keep.json (a complete report of 2 items)") for line in result.stdout.lines)


@pytest.mark.parametrize("xdist", XDIST)
def test_a_run_that_finished_items_replaces_the_report(pytester, xdist):
    _complete_run(pytester)
    result = run(pytester, *[a for a in ARGS if a != "--ruler-lengths=1k,2k"], "--ruler-lengths=1k", *xdist)
    assert result.ret == 0, result.stdout.str()
    assert len(json.loads((pytester.path / "keep.json").read_text())["items"]) == 1
    assert not (pytester.path / "keep.incomplete.json").exists()
    assert not any(line.startswith("ruler: kept") for line in result.stdout.lines)
