"""Charts for the pages: Matplotlib figures written as inline SVG.

    Figure ──svg_of(fig, prefix)──► "<svg ...>...</svg>" through ``assets.svg`` (the trend page's too): no
        prolog or metadata, every id and its references prefixed so several charts never share an id,
        ids salted with the prefix (the same report gives the same page)
    Report ──cells_heat_map(report, mode)──► a task x length heat map of Table 3's cells (a run
        without a depth sweep gets this one; ``report.plots.depth_figures`` draws depth x length)

Why Matplotlib's SVG, not a JavaScript chart library: Matplotlib is already the ``plot`` extra (the
PNG plots use it), so the page needs nothing new; the charts are drawn when the page is written, so
the page opens offline with no script to load; and the charts cost tens of kilobytes each, where
inlining Plotly's JavaScript would add about 4.6 MB to every page. What the page gives up is
hovering over a point: the numbers are in Table 3 beside the charts.

Public names: ``cells_heat_map``, ``svg_of``.
"""

from __future__ import annotations

import math
from typing import Any

from ..lengths import format_length
from ..report.load import MODE_TITLE
from ..report.plots import mpl_text, new_figure
from ..results.notation import ordered_tasks
from ..results.report import as_report
from .assets import svg

__all__ = ["cells_heat_map", "svg_of"]


def svg_of(fig: Any, prefix: str) -> str:
    """The figure as one ``<svg>`` element to put in a page: ``assets.svg``, the one inliner of both pages."""
    return svg(fig, prefix)


def cells_heat_map(report: Any, mode: str = "native") -> Any:
    """A figure: Table 3's cells of ``mode`` as a task x length heat map (RdYlGn, 0-100, the score
    written in each cell), or None without cells."""
    m = as_report(report).mode(mode)
    tasks = ordered_tasks(list(dict.fromkeys([*m.scores, *m.errored])))
    lengths = m.lengths
    if not tasks or not lengths:
        return None
    fig = new_figure((2.4 + 0.9 * len(lengths), 1.3 + 0.38 * len(tasks)))
    ax = fig.add_subplot(1, 1, 1)
    grid = [[m.scores.get(t, {}).get(L, float("nan")) for L in lengths] for t in tasks]
    im = ax.imshow(grid, aspect="auto", cmap="RdYlGn", vmin=0, vmax=100, interpolation="nearest")
    ax.set_xticks(range(len(lengths)))
    ax.set_xticklabels([format_length(L) for L in lengths])
    ax.set_yticks(range(len(tasks)))
    ax.set_yticklabels([mpl_text(t) for t in tasks])
    ax.set_xlabel("context length (tokens)")
    for i, row in enumerate(grid):
        for j, v in enumerate(row):
            label = "ERR" if _errored(m, tasks[i], lengths[j]) else ("" if math.isnan(v) else f"{v:.0f}")
            if label:
                ax.text(j, i, label, ha="center", va="center", fontsize=8, color="black")
    fig.colorbar(im, ax=ax, label="score (%)")
    ax.set_title(f"task × length ({MODE_TITLE.get(mode, mode)})", fontsize="medium")
    fig.tight_layout()
    return fig


def _errored(m: Any, task: str, length: int) -> bool:
    return length in m.errored.get(task, set())
