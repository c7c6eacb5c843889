"""Table 3's cells of a report (a Report or its dict), and its depth sweeps for Markdown and plots.

    report (a Report or its dict) ──report_cells(report, mode)──► {task: {length: mean over seeds}}, errored cells
                                  ──depth_cells(report, mode)──► {task: (depths, lengths, {(depth, length): mean over seeds})}
    report dict ──mode_items(report, mode)──► that mode's item dicts

``report_cells`` reads the cells the typed report (:mod:`pytest_ruler.results.report`)
computed once with :func:`pytest_ruler.results.cell_scores`, the one mean over seeds, so
a report rendered later shows the numbers the run showed. ``depth_cells`` averages
the optional per-item depth sweeps the same way (see :func:`depth_map` for the
shapes it reads).

Public names: ``depth_cells``, ``depth_map``, ``mode_items``, ``ordered_tasks``, ``report_cells``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from .table import TASK_ORDER

__all__ = ["depth_cells", "depth_map", "mode_items", "ordered_tasks", "report_cells"]


def ordered_tasks(names: Sequence[str]) -> list[str]:
    """Table 3's row order: the paper's 13 tasks, then each pack's tasks in the pack's own order
    (``tasks.registry.PACKS``), then the others in the order given."""
    from ..tasks.registry import PACKS

    seen = list(dict.fromkeys(names))
    order = [*TASK_ORDER, *(t for members in PACKS.values() for t in members)]
    known = set(order)
    return [t for t in order if t in seen] + [t for t in seen if t not in known]


def mode_items(report: Mapping[str, Any], mode: str) -> list[Mapping[str, Any]]:
    """The report's items of one mode (``"native"`` when an item names none)."""
    return [it for it in report.get("items") or [] if it.get("mode", "native") == mode]


def report_cells(report: Any, mode: str = "native") -> tuple[dict[str, dict[int, float]], dict[str, set[int]]]:
    """Table 3's cells of a report's items of ``mode`` (a ``Report`` or a report dict): the
    :func:`~pytest_ruler.results.cell_scores` its typed report computed once.

    Items that are not objects are skipped; an item without a task, length or (unless
    it errored) score is a ``RulerUsageError``.
    """
    from .report import as_report

    m = as_report(report).mode(mode)
    return dict(m.scores), dict(m.errored)


def depth_map(item: Mapping[str, Any]) -> dict[float, float] | None:
    """An item's depth sweep as ``{depth: score}``, or ``None`` when it has none.

    Read from ``item["depth_scores"]`` as a mapping ``{depth: score}``, a list parallel
    to ``item["depths"]`` or a list of ``{"depth": d, "score": s}``; or from
    ``item["depths"]`` itself as a mapping or such a list.
    """
    ds, depths = item.get("depth_scores"), item.get("depths")
    pairs: list[tuple[Any, Any]] = []
    if isinstance(ds, Mapping):
        pairs = list(ds.items())
    elif isinstance(ds, list) and isinstance(depths, list) and len(ds) == len(depths):
        pairs = list(zip(depths, ds))
    elif isinstance(ds, list) and all(isinstance(d, Mapping) for d in ds):
        pairs = [(d.get("depth"), d.get("score")) for d in ds]
    elif isinstance(depths, Mapping):
        pairs = list(depths.items())
    elif isinstance(depths, list) and all(isinstance(d, Mapping) for d in depths):
        pairs = [(d.get("depth"), d.get("score")) for d in depths]
    out: dict[float, float] = {}
    for d, s in pairs:
        try:
            out[float(d)] = float(s)
        except (TypeError, ValueError):
            continue
    return out or None


def depth_cells(report: Any, mode: str) -> dict[str, tuple[list[float], list[int], dict[tuple[float, int], float]]]:
    """Per task with depth data: (depths, lengths, {(depth, length): mean over seeds})."""
    from .report import as_report

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
