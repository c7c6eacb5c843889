"""Shared parts of the self-contained HTML pages: escaping, a Matplotlib figure as inline SVG, the page shell.

    escape(value) ──► text safe in HTML text and in quoted attributes
    matplotlib(parameter, value) ──► (Figure, FigureCanvasAgg), drawing without pyplot's global state;
        without matplotlib: RulerUsageError(parameter, value, PLOT_FIX) (``pip install "pytest-ruler[plot]"``)
    new_figure(size) ──► a Figure on an Agg canvas
    svg(fig, prefix) ──► the figure as one ``<svg>`` element: text kept as text (small, searchable), no
        XML prolog, no metadata block, every id (and each reference to it) prefixed with ``prefix`` so
        that several charts in one page never share an id, and no external reference
    page(title, body, subtitle=) ──► a whole HTML5 document with inline CSS: no script, no stylesheet,
        font or image from the network, so it opens offline and from a file

Public names: ``CSS``, ``PLOT_FIX``, ``escape``, ``matplotlib``, ``new_figure``, ``page``, ``svg``.
"""

from __future__ import annotations

import io
import re
from typing import Any

from ..errors import RulerUsageError
from .markup import esc

__all__ = ["CSS", "PLOT_FIX", "escape", "matplotlib", "new_figure", "page", "svg"]

PLOT_FIX = 'pip install "pytest-ruler[plot]"'  # report.plots.PLOT_FIX's words (pages import nothing of report)

CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 1.5rem auto; max-width: 70rem;
       padding: 0 1rem; color: #1d2330; background: #fff; line-height: 1.4; }
h1 { font-size: 1.5rem; margin-bottom: .2rem; } h2 { font-size: 1.25rem; margin-top: 2.2rem; border-bottom: 1px solid #d7dce5; }
h3 { font-size: 1.05rem; margin-top: 1.4rem; }
.sub { color: #5b6477; margin-top: 0; }
table { border-collapse: collapse; margin: .6rem 0; font-size: .9rem; }
th, td { border: 1px solid #d7dce5; padding: .25rem .5rem; text-align: left; vertical-align: top; }
th { background: #f3f5f9; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.passed { color: #146c2e; font-weight: 600; } .failed { color: #b3261e; font-weight: 600; }
.not-decided { color: #8a5a00; font-weight: 600; }
.chart { margin: .8rem 0; max-width: 100%; overflow-x: auto; } .chart svg { max-width: 100%; height: auto; }
.note { color: #5b6477; font-size: .9rem; }
code { background: #f3f5f9; padding: 0 .2rem; border-radius: 3px; }
"""


def escape(value: Any) -> str:
    """``value`` as text safe inside HTML text and quoted attributes: the per-run page's escaping
    (``markup.esc``: secrets scrubbed, control characters shown, ``&``, ``<``, ``>`` and quotes escaped)."""
    return esc(value)


def matplotlib(parameter: str, value: Any) -> tuple[Any, Any]:
    """matplotlib's Figure and Agg canvas classes; a missing matplotlib is a usage error naming the ``plot`` extra."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        raise RulerUsageError(parameter, value, f"the charts need matplotlib: {PLOT_FIX}") from None
    return Figure, FigureCanvasAgg


def new_figure(size: tuple[float, float], parameter: str = "--html", value: Any = None) -> Any:
    """A Figure on its own Agg canvas (no pyplot: nothing global changes)."""
    Figure, FigureCanvasAgg = matplotlib(parameter, value)
    fig = Figure(figsize=size, dpi=100, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


_PROLOG = re.compile(r"^.*?(?=<svg\b)", re.S)
_METADATA = re.compile(r"<metadata>.*?</metadata>\s*", re.S)
_ID = re.compile(r'\bid="([^"]+)"')


def svg(fig: Any, prefix: str) -> str:
    """``fig`` as one inline ``<svg>`` element (see the module docstring); ``prefix`` makes its ids unique in the page."""
    from matplotlib import rc_context

    buf = io.StringIO()
    with rc_context({"svg.fonttype": "none", "svg.hashsalt": prefix}):
        fig.savefig(buf, format="svg", metadata={"Date": None})
    text = _METADATA.sub("", _PROLOG.sub("", buf.getvalue(), count=1))
    for name in sorted(set(_ID.findall(text)), key=len, reverse=True):
        new = f"{prefix}-{name}"
        text = text.replace(f'id="{name}"', f'id="{new}"').replace(f"#{name})", f"#{new})").replace(f'"#{name}"', f'"#{new}"')
    return text.strip()


def page(title: str, body: str, subtitle: str = "") -> str:
    """A whole HTML5 document: ``title`` (text, escaped here), ``body`` (HTML), the inline CSS; nothing from the network."""
    sub = f'<p class="sub">{escape(subtitle)}</p>\n' if subtitle else ""
    return (f'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">\n'
            f"<title>{escape(title)}</title>\n<style>{CSS}</style>\n</head>\n<body>\n"
            f"<h1>{escape(title)}</h1>\n{sub}{body}\n</body>\n</html>\n")
