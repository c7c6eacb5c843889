"""What a run writes: the JSON report, Markdown and plots, the syrupy snapshot.

Data flow::

    ItemResult list ──build.build_report──► JSON report ──markdown.markdown / plots.plot_scores
                                            (the Markdown opens with findings.findings: the verdict, the
                                            baseline, the failing cells; every file: build.write_atomically)
                                            └──snapshot (rounded summary for syrupy)
    REPORT.json ──load.load_report──► Report (results.saved) ──render.render_report (``pytest-ruler report``)
    Report, Verdict ──lines.lines──► the terminal's lines (the rescue line, the verdict lines)
    a run's end ──reporters (json, markdown, plots, github, yours)──► its outputs

Every number comes from the typed report (``pytest_ruler.results.report``: the
summary and Table 3, computed once) and the gate; nothing here aggregates on its
own. ``build_report`` and ``write_report`` are re-exported here.
"""

from .build import build_report, write_report

__all__ = ["build_report", "write_report"]
