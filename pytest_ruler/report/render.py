"""``pytest-ruler report REPORT.json [--out DIR] [--no-plots]``: a saved report as Markdown and PNGs.

    REPORT.json ──load.load_report──► Report ──markdown.markdown──► <stem>.md
                                                  └──plots.plot_scores──► <stem>.*.png (linked from the .md)
    (each file written atomically: build.write_atomically)

Public names: ``render_report``.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import RulerUsageError
from .build import write_atomically
from .load import load_report
from .markdown import markdown
from .plots import PLOT_FIX, plot_scores

__all__ = ["render_report"]


def render_report(path: str | Path, out_dir: str | Path | None = None, *, plots: bool = True, ci: bool = False) -> tuple[str, list[Path]]:
    """``pytest-ruler report``: read ``path``, write ``<stem>.md`` (and PNGs) next to it or in ``out_dir``.

    Returns the Markdown text and the files written, the Markdown file first. The
    Markdown is written before the plots, so it exists even when matplotlib is
    missing (which raises a ``RulerUsageError`` whose fix names ``--no-plots``).
    """
    report = load_report(path)
    src = Path(path)
    dest = Path(out_dir) if out_dir is not None else src.parent
    try:
        dest.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise RulerUsageError("--out", str(dest), f"cannot create the folder ({exc})") from None
    prefix = src.stem
    md_path = dest / f"{prefix}.md"
    text = markdown(report, ci=ci)
    write_atomically(md_path, lambda fh: fh.write(text))
    written = [md_path]
    if plots:
        try:
            pngs = plot_scores(report, dest, prefix=prefix)
        except RulerUsageError as exc:
            if exc.fix != PLOT_FIX:
                raise
            raise RulerUsageError("plots", "matplotlib not installed", f"{PLOT_FIX}, or pass --no-plots (the Markdown was written to {md_path})") from None
        if pngs:
            text = markdown(report, images=[p.name for p in pngs], ci=ci)
            write_atomically(md_path, lambda fh: fh.write(text))
        written += pngs
    return text, written
