"""Table 3's cells of a report (a Report or its dict), and its depth sweeps for Markdown and plots.

    report (a Report or its dict) ──report_cells(report, mode)──► {task: {length: mean over seeds}}, errored cells
                                  ──depth_cells(report, mode)──► {task: (depths, lengths, {(depth, length): mean over seeds})}
    report dict ──mode_items(report, mode)──► that mode's item dicts

``report_cells`` reads the cells the typed report (:mod:`pytest_ruler.results.report`)
computed once with :func:`pytest_ruler.results.cell_scores`, the one mean over seeds, so
a report rendered later shows the numbers the run showed. ``depth_cells`` averages
the optional per-item depth sweeps the same way (see :func:`~.report.depth_map` for the
shapes it reads). A renderer's module: it sits above the typed report and imports it.

Public names: ``depth_cells``, ``depth_map``, ``mode_items``, ``ordered_tasks``, ``report_cells``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from .notation import ordered_tasks  # its home; re-exported here
from .report import as_report, depth_map  # noqa: F401 - depth_map re-exported: its home is report

__all__ = ["depth_cells", "depth_map", "mode_items", "ordered_tasks", "report_cells"]


def mode_items(report: Mapping[str, Any], mode: str) -> list[Mapping[str, Any]]:
    """The report's items of one mode (``"native"`` when an item names none)."""
    return [it for it in report.get("items") or [] if it.get("mode", "native") == mode]


def report_cells(report: Any, mode: str = "native") -> tuple[dict[str, dict[int, float]], dict[str, set[int]]]:
    """Table 3's cells of a report's items of ``mode`` (a ``Report`` or a report dict): the
    :func:`~pytest_ruler.results.cell_scores` its typed report computed once.

    Items that are not objects are skipped; an item without a task, length or (unless
    it errored) score is a ``RulerUsageError``.
    """
    m = as_report(report).mode(mode)
    return dict(m.scores), dict(m.errored)


def depth_cells(report: Any, mode: str) -> dict[str, tuple[list[float], list[int], dict[tuple[float, int], float]]]:
    """Per task with depth data: (depths, lengths, {(depth, length): mean over seeds})."""
    acc: dict[str, dict[tuple[float, int], list[float]]] = {}
    for it in as_report(report).mode(mode).items:
        dm = depth_map({"depth_scores": it.depth_scores})
        if not dm:
            continue
        for d, s in dm.items():
            acc.setdefault(it.task, {}).setdefault((d, it.length), []).append(s)
    out = {}
    for task in ordered_tasks(list(acc)):
        cells = {k: math.fsum(v) / len(v) for k, v in acc[task].items()}
        depths = sorted({d for d, _ in cells})
        lengths = sorted({L for _, L in cells})
        out[task] = (depths, lengths, cells)
    return out
