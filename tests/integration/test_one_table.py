"""One Table 3: the terminal, the run's Markdown (``--ruler-markdown``) and
``pytest-ruler report REPORT.json`` show the same cells, in the same notation
(runs of the plugin use the scripted test engine, not a model)."""

from __future__ import annotations

import re

import pytest

from pytest_ruler.cli import main
from .helpers import SCRIPTED, run
from .test_verdict import FLAKY, FLAKY_CONFTEST

# cells: 100.0 and 0.0 per task, 66.7 in Total; effective ≥2K (niah, vt) and <1K (cwe, Total)
SCORES = [*SCRIPTED, "--ruler-tasks=niah_single_1,vt,cwe", "--ruler-lengths=1k,2k", "--ruler-samples=1", "--ruler-seeds=0,1"]
# every vt item errors: ERR cells, n/a averages
ERRORED = [*FLAKY, "--ruler-lengths=1k,2k"]


def _terminal_rows(out: str) -> list[list[str]]:
    """Table 3 as the terminal printed it: the header's columns, then one list per row."""
    lines = out.splitlines()
    start = next(i for i, ln in enumerate(lines) if "RULER: effective context length" in ln) + 1
    end = next(i for i in range(start, len(lines)) if lines[i].startswith("legend: "))  # the one legend, under the table
    return [ln.split() for ln in lines[start:end]]


def _markdown_rows(text: str) -> list[list[str]]:
    """Table 3 of a Markdown report in the same shape: no pipes, bold, empty cells or †/‡ marks."""
    lines = text.splitlines()
    start = lines.index("## Effective context length") + 2
    rows = []
    for ln in lines[start:]:
        if not ln.startswith("|"):
            break
        if ln.startswith("|:---|"):
            continue
        cells = [re.sub(r"\s*[†‡]+$", "", c.strip()).replace("**Total**", "Total") for c in ln.strip("|").split("|")]
        rows.append([c for c in cells if c])
    return rows


@pytest.mark.parametrize("args, conftest, notation", [
    pytest.param(SCORES, None, {"100.0", "0.0", "66.7", "≥2K", "<1K"}, id="scores"),
    pytest.param(ERRORED, FLAKY_CONFTEST, {"100.0", "ERR", "n/a", "≥2K"}, id="errored"),
])
def test_terminal_markdown_and_cli_report_show_one_table(pytester, monkeypatch, capsys, args, conftest, notation):
    if conftest:
        pytester.makeconftest(conftest)
        monkeypatch.setenv("FLAKY_ACTION", "raise")
    result = run(pytester, *args, "--ruler-report=r.json", "--ruler-markdown=r.md")
    terminal = _terminal_rows(result.stdout.str())
    run_md = (pytester.path / "r.md").read_text(encoding="utf-8")
    capsys.readouterr()
    assert main(["report", str(pytester.path / "r.json"), "--out", str(pytester.path / "cli"), "--no-plots"]) == 0
    assert capsys.readouterr().out.split() == [str(pytester.path / "cli" / "r.md")]
    cli_md = (pytester.path / "cli" / "r.md").read_text(encoding="utf-8")

    header, *rows = terminal
    md_header, *md_rows = _markdown_rows(run_md)
    assert rows and rows[-1][0] == "Total"
    assert md_rows == rows
    assert _markdown_rows(cli_md) == _markdown_rows(run_md)
    lengths = [c for c in header if re.fullmatch(r"\d+K", c)]
    assert lengths == ["1K", "2K"] and md_header[1:1 + len(lengths)] == lengths
    assert notation <= {c for row in rows for c in row}
    [key] = [ln for ln in result.stdout.lines if ln.startswith("legend: ")]  # once, and only what the table shows
    assert ("ERR" in key) == ("ERR" in notation) and ("n/a" in key) == ("n/a" in notation) and "≥2K" in key
    assert cli_md == run_md  # the whole report, not only Table 3
