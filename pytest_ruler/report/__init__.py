"""What a run writes: the JSON report, Markdown and plots, the syrupy snapshot.

Data flow::

    ItemResult list ──build.build_report──► JSON report ──markdown.markdown / plots.plot_scores
                                            └──snapshot (rounded summary for syrupy)
    REPORT.json ──load.load_report──► report dict ──render.render_report (``pytest-ruler report``)

Every number comes from ``pytest_ruler.results`` (the summary, Table 3, the
gate); nothing here aggregates on its own. ``build_report`` and
``write_report`` are re-exported here.
"""

from .build import build_report, write_report

__all__ = ["build_report", "write_report"]
