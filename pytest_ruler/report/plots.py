"""A report dict as PNG plots: score vs length per mode, and a depth x length heatmap per task.

    Report (or its dict) ──plot_scores(report, out_dir, prefix=...)──► [PNG paths]
        {prefix}.scores.png            tasks' cells (the mode's Table 3 cells) and the summary's Total
        {prefix}.scores.mapreduce.png  the same for map-reduce, the native Total in grey
        {prefix}.depth.{task}.png      depth sweeps (results.cells.depth_cells)

Every point is a number the typed report (:mod:`pytest_ruler.results.report`) computed
from the items: the lines are Table 3's cells, so a cell Table 3 shows as ERR has no point. With
per-sample scores in the report, each line has a band: the 95 % interval of its cells
(the summary's ``intervals``), pale for tasks, darker for the Total; a cell without an
interval breaks its band.

matplotlib is optional (``pip install "pytest-ruler[plot]"``); it is imported only
inside :func:`plot_scores`, drawing on the Agg canvas without touching pyplot's
global state. Each PNG is written atomically (a temporary file beside it, then
``os.replace``: ``report.build.write_atomically``). Without it, ``RulerUsageError("--ruler-plots", out_dir, PLOT_FIX)``.

The figures themselves (``score_figure``, ``depth_figures``) are public: the HTML page
(:mod:`pytest_ruler.pages.run_page`) draws the same ones as inline SVG. The score plot's title
names the model and the back end, and a test engine's run (scripted) says it is not a model
(:mod:`.engine_label`).

Public names: ``MAX_TASK_LINES``, ``PLOT_FIX``, ``depth_figures``, ``mpl_text``, ``new_figure``, ``plot_scores``, ``score_figure``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..errors import RulerUsageError
from ..lengths import format_length
from ..results.cells import depth_cells, ordered_tasks
from ..results.report import Report, as_report
from ..results.table import format_effective_length
from .build import write_atomically
from .engine_label import engine_label, run_title
from .load import MODE_TITLE
from .markdown import depth_label

__all__ = ["MAX_TASK_LINES", "PLOT_FIX", "depth_figures", "mpl_text", "new_figure", "plot_scores", "score_figure"]

PLOT_FIX = 'pip install "pytest-ruler[plot]"'
MAX_TASK_LINES = 40  # more tasks than this: the score plot shows the Total only


def mpl_text(text: str) -> str:
    """``text`` as matplotlib draws it literally: a ``$`` would start mathtext (a model name is outside text)."""
    return str(text).replace("$", r"\$")


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("._") or "task"


def _import_matplotlib(out_dir: Any) -> tuple[Any, Any]:
    try:
        import matplotlib  # noqa: F401
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        raise RulerUsageError("--ruler-plots", str(out_dir), PLOT_FIX) from None
    return Figure, FigureCanvasAgg


def new_figure(size: tuple[float, float]) -> Any:
    """A matplotlib ``Figure`` of ``size`` inches on an Agg canvas (no pyplot global state);
    ``RulerUsageError`` naming the ``plot`` extra without matplotlib."""
    return _new_figure(*_import_matplotlib("matplotlib not installed"), size)


def _new_figure(Figure: Any, FigureCanvasAgg: Any, size: tuple[float, float]) -> Any:
    fig = Figure(figsize=size, dpi=100)
    FigureCanvasAgg(fig)  # Agg canvas, no pyplot global state
    return fig


def _save(fig: Any, path: Path) -> None:
    """The figure as a PNG at ``path``, atomically (report.build.write_atomically): an earlier plot stays whole
    until the new one is."""
    write_atomically(path, lambda fh: fig.savefig(fh, format="png"), binary=True)


def _length_axis(ax: Any, lengths: Sequence[int]) -> None:
    ax.set_xscale("log", base=2)
    ax.set_xticks(list(lengths))
    ax.set_xticklabels([format_length(L) for L in lengths])
    ax.minorticks_off()
    ax.set_xlabel("context length (tokens)")


def _band(ax: Any, xs: Sequence[int], intervals: Mapping[str, Any] | None, colour: Any, alpha: float) -> None:
    """The 95 % interval of a line's points as a shaded band (gaps where a point has none)."""
    if not intervals:
        return
    lo, hi = [], []
    for L in xs:
        iv = intervals.get(str(L))
        lo.append(iv["ci95"][0] if iv else float("nan"))
        hi.append(iv["ci95"][1] if iv else float("nan"))
    if any(not math.isnan(v) for v in lo):
        ax.fill_between(list(xs), lo, hi, color=colour, alpha=alpha, linewidth=0)


def score_figure(report: Report | Mapping[str, Any], mode: str = "native") -> Any:
    """The score-vs-length figure of one mode (a matplotlib ``Figure`` on an Agg canvas), or None
    when the mode has no lengths. Its title names the model and the back end (a test engine's run
    says it is not a model: ``report.engine_label``). Needs matplotlib (``RulerUsageError`` without)."""
    Figure, FigureCanvasAgg = _import_matplotlib("matplotlib not installed")
    from matplotlib import colormaps
    report = as_report(report)
    threshold = report.threshold
    native = report.mode("native").summary
    s = report.mode(mode).summary
    means = report.mode(mode).scores
    pl = {int(k): float(v) for k, v in ((s or {}).get("per_length") or {}).items()}
    lengths = sorted(set(pl) | {L for sc in means.values() for L in sc})
    if not lengths:
        return None
    fig = _new_figure(Figure, FigureCanvasAgg, (9.0, 5.0))
    ax = fig.add_subplot(1, 1, 1)
    tasks = ordered_tasks(list(means))
    palette = colormaps["tab10" if len(tasks) <= 10 else "tab20"]
    iv = (s or {}).get("intervals") or {}
    if len(tasks) > MAX_TASK_LINES:  # a line per task would be unreadable (and slow to draw)
        ax.plot([], [], " ", label=f"{len(tasks)} tasks: their lines are left out (more than {MAX_TASK_LINES}); see the table")
    for i, task in enumerate(tasks if len(tasks) <= MAX_TASK_LINES else []):
        xs = sorted(means[task])
        ax.plot(xs, [means[task][L] for L in xs], marker="o", markersize=3, linewidth=1.0, alpha=0.8,
                color=palette(i % palette.N), label=mpl_text(task))
        _band(ax, xs, (iv.get("cells") or {}).get(task), palette(i % palette.N), 0.10)
    if pl:
        xs = sorted(pl)
        eff = format_effective_length(s.get("effective_length"), xs)
        if iv:
            eff += f", 95% bound {format_effective_length(s.get('effective_length_bound'), xs)}"
        ax.plot(xs, [pl[L] for L in xs], color="black", linewidth=2.6, marker="s", label=f"Total (effective {eff})")
        _band(ax, xs, iv.get("per_length"), "black", 0.18)
    if mode != "native" and native:
        npl = {int(k): float(v) for k, v in native["per_length"].items()}
        xs = sorted(npl)
        ax.plot(xs, [npl[L] for L in xs], color="grey", linewidth=1.8, linestyle=":", label="Total, native")
    if threshold is not None:
        ax.axhline(float(threshold), color="red", linestyle="--", linewidth=1.2, label=f"threshold {float(threshold):g}")
    _length_axis(ax, lengths)
    ax.set_ylim(-2, 102)
    ax.set_ylabel("score (%)")
    ax.grid(True, alpha=0.3)
    scripted = engine_label(report).scripted
    ax.set_title(mpl_text(run_title(report, f"score vs length ({MODE_TITLE[mode]})")), fontsize="medium",
                 color="darkred" if scripted else "black", fontweight="bold" if scripted else "normal")
    ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize="small", frameon=False)
    fig.tight_layout()
    return fig


def depth_figures(report: Report | Mapping[str, Any], mode: str = "native") -> list[tuple[str, Any]]:
    """(task, figure) per task of ``mode`` with a depth sweep: its depth x length heat map."""
    Figure, FigureCanvasAgg = _import_matplotlib("matplotlib not installed")
    report = as_report(report)
    out = []
    for task, (depths, dlengths, cells) in depth_cells(report, mode).items():
        fig = _new_figure(Figure, FigureCanvasAgg, (1.6 + 1.0 * len(dlengths), 1.4 + 0.45 * len(depths)))
        ax = fig.add_subplot(1, 1, 1)
        grid = [[cells.get((d, L), float("nan")) for L in dlengths] for d in depths]
        im = ax.imshow(grid, aspect="auto", cmap="RdYlGn", vmin=0, vmax=100, interpolation="nearest")
        ax.set_xticks(range(len(dlengths)))
        ax.set_xticklabels([format_length(L) for L in dlengths])
        ax.set_yticks(range(len(depths)))
        ax.set_yticklabels([depth_label(d, depths) for d in depths])
        ax.set_xlabel("context length (tokens)")
        ax.set_ylabel("needle depth")
        for i, row in enumerate(grid):
            for j, v in enumerate(row):
                if not math.isnan(v):
                    ax.text(j, i, f"{v:.0f}", ha="center", va="center", fontsize=7, color="black")
        fig.colorbar(im, ax=ax, label="score (%)")
        ax.set_title(mpl_text(f"{task} ({MODE_TITLE[mode]}): depth × length"), fontsize="medium")
        fig.tight_layout()
        out.append((task, fig))
    return out


def plot_scores(report: Report | Mapping[str, Any], out_dir: str | Path, *, prefix: str = "ruler") -> list[Path]:
    """Write the PNG plots of a report into ``out_dir``; return their paths.

    - ``{prefix}.scores.png``: score vs length, one line per task (up to ``MAX_TASK_LINES``
      tasks; beyond that the legend says they are left out), the Total line
      (``summary``'s per-length scores) in bold, the threshold dashed; x is log2 with
      K labels; the title names the model and the back end (:func:`score_figure`).
      ``{prefix}.scores.mapreduce.png`` likewise for map-reduce items, with
      the native Total as a grey reference.
    - ``{prefix}.depth.{task}.png`` (``.mapreduce`` before ``.png`` for that mode): a
      depth x length heatmap per task that carries depth sweeps.

    Needs matplotlib: ``RulerUsageError("--ruler-plots", out_dir, ...)`` without it.
    """
    _import_matplotlib(out_dir)
    report = as_report(report)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for mode in report.modes:
        fig = score_figure(report, mode)
        if fig is None:
            continue
        path = out / (f"{prefix}.scores.png" if mode == "native" else f"{prefix}.scores.{mode}.png")
        _save(fig, path)
        written.append(path)
        for task, fig in depth_figures(report, mode):
            suffix = "" if mode == "native" else f".{mode}"
            path = out / f"{prefix}.depth.{_safe(task)}{suffix}.png"
            _save(fig, path)
            written.append(path)
    return written
