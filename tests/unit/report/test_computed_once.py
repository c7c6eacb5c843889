"""A report's cells and Table 3 are computed once, and every renderer reads them.

The typed report (``results.report.Report``) derives each mode's cells
(``results.summary.cell_scores``) once, its summary from those cells, and each Table 3
(``results.table.build_table``) once per interval setting. The gate, the terminal lines,
the Markdown, the GitHub step summary and annotations, the plots and the snapshot subset
of one report read those: counters on the two builders show one computation each.
"""

from __future__ import annotations

import collections
import json

import pytest

from pytest_ruler.report.github import github_output, step_summary
from pytest_ruler.report.lines import lines
from pytest_ruler.report.markdown import markdown
from pytest_ruler.results import gate, report as report_mod, summary as summary_mod, table as table_mod
from pytest_ruler.results.item import ItemResult
from pytest_ruler.results.report import Report
from pytest_ruler.results.saved import read_report

MODES = ("native", "mapreduce")


def _items():
    return [ItemResult(task=task, length=length, seed=seed, mode=mode, samples=4, score=score, threshold=85.6,
                       passed=score > 85.6, nulls=0, seconds=1.0, sample_scores=per)  # per: a saved report's items agree
            for mode in MODES for task, score, per in (("niah_single_1", 90.0, (1.0, 1.0, 0.6, 1.0)), ("vt", 50.0, (1.0, 0.0, 0.5, 0.5)))
            for length in (1024, 2048) for seed in (0, 1)]


@pytest.fixture
def counted(monkeypatch):
    """Counts of cell_scores (by mode) and build_table (by mode and ci) calls."""
    calls: collections.Counter = collections.Counter()
    cells, table = summary_mod.cell_scores, table_mod.build_table

    def counting_cells(results, mode="native"):
        calls["cells", mode] += 1
        return cells(results, mode)

    def counting_table(m, ci=False):
        calls["table", m.mode, bool(ci)] += 1
        return table(m, ci)

    for module in (summary_mod, report_mod):  # report imports the name; summary calls it inside summarize_results
        monkeypatch.setattr(module, "cell_scores", counting_cells)
    monkeypatch.setattr(table_mod, "build_table", counting_table)
    return calls


def _render_everything(report: Report, tmp_path) -> None:
    verdict = gate(report, required=1024)
    lines(report, verdict)
    lines(report, verdict, ci=True)
    markdown(report)
    markdown(report, ci=True)
    step_summary(report, verdict.lines())
    github_output(report, verdict.lines(), lambda text: None,
                  environ={"GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md"), "GITHUB_ACTIONS": "true"})
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        pass
    else:
        from pytest_ruler.report.plots import plot_scores

        plot_scores(report, tmp_path / "plots")
    pytest.importorskip("syrupy")
    from pytest_ruler.report.snapshot import ruler_snapshot_data

    ruler_snapshot_data(report)


def test_one_computation_of_cells_and_tables_per_report(counted, tmp_path):
    report = Report.of_results(_items(), threshold=85.6, model="m", backend="scripted", tokenizer="t", haystack_corpus="essays")
    _render_everything(report, tmp_path)
    assert {k: v for k, v in counted.items() if k[0] == "cells"} == {("cells", m): 1 for m in MODES}
    assert {k: v for k, v in counted.items() if k[0] == "table"} == {("table", m, ci): 1 for m in MODES for ci in (False, True)}


def test_a_saved_report_is_computed_once_too(counted, tmp_path):
    """The one reader's report (its summary check included) is what every renderer reads."""
    path = tmp_path / "ruler.json"
    made = Report.of_results(_items(), threshold=85.6, model="m", backend="scripted", tokenizer="t", haystack_corpus="essays")
    path.write_text(json.dumps(made.to_dict()))
    counted.clear()
    report = read_report(path)
    _render_everything(report, tmp_path)
    assert {k: v for k, v in counted.items() if k[0] == "cells"} == {("cells", m): 1 for m in MODES}
