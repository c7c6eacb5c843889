"""The MRCR pack's named aggregates: the report's ``mrcr`` entry, computed from the items.

    [ItemResult] (native items of the family ``mrcr``) ──mrcr_block(items)──► {
        "needles": {"<n>": {"task", "per_length": {"<L>": {"score", "samples", "items"}},
                            "mean", "label", "auc_log_length", "lengths"}},
        "marks", "protocol", "grade", "bins"}                     (None: the run has no MRCR item)

Definitions (docs/mrcr.md gives them with their sources):

- per needle count per bin: the mean over the cell's items (its seeds) of the item score, the
  mean × 100 of MRCR's grade over the bin's records (``results.mrcr_grade``);
- ``mean``: the plain mean over the tested bins of those scores, named as vendors name it
  ("MRCR 8-needle, 4K–128K": the bins it covers; AISBench's headline is the 8-needle mean over
  all 8 of OpenAI's bins, 4K–1M);
- ``auc_log_length``: the area under the score-over-log2(length) curve (trapezoids between the
  tested bins), divided by the span of log2(length), so it is in points like the scores (a flat
  curve at s gives s); null with fewer than two bins.

An errored item (no trustworthy score) is left out of its cell; a cell with none is left out.

Public names: ``mrcr_block``, ``PROTOCOL_NOTE``.
"""

from __future__ import annotations

import math
from typing import Any, Iterable

from ..lengths import format_length

__all__ = ["PROTOCOL_NOTE", "mrcr_block"]

PROTOCOL_NOTE = ("The reference protocol (OpenAI's MRCR) samples at temperature 1; this run decodes greedily "
                 "(temperature 0): each record's score is one greedy answer, not a mean over sampled answers.")
GRADE = ("0 unless the response starts with the record's random string; else difflib's SequenceMatcher ratio between the "
         "response and the answer, both without that prefix; an item's score is the mean × 100 (the data set's README).")
BINS = ("A record belongs to length L when its chat, rendered with the run's chat template and counted with the model's "
        "tokenizer, has L/2 < tokens <= L; an item's samples are the first N records of its bin in the data set's order.")


def _needles(task: str) -> int | None:
    from ..tasks import get_task

    try:
        spec = get_task(task)
    except Exception:  # a custom task of another process, unknown here
        return None
    return spec.args.get("n_needles") if spec.family == "mrcr" else None


def _auc(points: list[tuple[int, float]]) -> float | None:
    if len(points) < 2:
        return None
    xs = [math.log2(L) for L, _ in points]
    area = sum((points[i][1] + points[i + 1][1]) / 2 * (xs[i + 1] - xs[i]) for i in range(len(points) - 1))
    return round(area / (xs[-1] - xs[0]), 4)


def mrcr_block(items: Iterable[Any]) -> dict[str, Any] | None:
    """The report's ``mrcr`` entry (see the module docstring); None without MRCR items."""
    from ..tasks.mrcr import MARKS_SOURCE, PACK_MARKS

    cells: dict[int, dict[str, Any]] = {}
    for r in items:
        if r.mode != "native":
            continue
        n = _needles(r.task)
        if n is None:
            continue
        entry = cells.setdefault(n, {"task": r.task, "cells": {}})
        if r.error is None:
            entry["cells"].setdefault(r.length, []).append(r)
    if not cells:
        return None
    needles: dict[str, Any] = {}
    for n in sorted(cells):
        per = {L: rs for L, rs in sorted(cells[n]["cells"].items())}
        per_length = {str(L): {"score": round(sum(r.score for r in rs) / len(rs), 4), "samples": sum(r.samples for r in rs),
                               "items": len(rs)} for L, rs in per.items()}
        points = [(L, per_length[str(L)]["score"]) for L in per]
        mean = round(sum(s for _, s in points) / len(points), 4) if points else None
        span = f"{format_length(points[0][0])}–{format_length(points[-1][0])}" if len(points) > 1 else \
            (format_length(points[0][0]) if points else "no bin")
        needles[str(n)] = {"task": cells[n]["task"], "per_length": per_length, "lengths": [L for L, _ in points], "mean": mean,
                           "label": f"MRCR {n}-needle, {span}", "auc_log_length": _auc(points)}
    return {"needles": needles, "marks": {"defaults": dict(PACK_MARKS), "source": MARKS_SOURCE},
            "protocol": PROTOCOL_NOTE, "grade": GRADE, "bins": BINS}
