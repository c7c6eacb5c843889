"""A relative pass mark, ``rel:F``: NoLiMa's effective length.

``--ruler-threshold=rel:0.85`` (``pytest-ruler gate --threshold rel:0.85``) judges each
length against the model's own score at the shortest tested length: a length passes when
its score is above ``F × base``, where base is the Total's score at the shortest tested
length (NoLiMa: "the maximum length at which the score stays above 85 % of the base
score"). Each task is judged against ``F ×`` its own score at the shortest tested length.
The pass rule stays the one rule (``aggregate.passes``: strictly above), so a model that
scores 0 at the base length passes nowhere (0 is not above 0).

    items + RelativeMark ──resolve(items, mark)──► Resolved
        threshold: F × the Total's base (the report's ``threshold``, so every table, Markdown
        and gate line reads an absolute number as before), task_thresholds: F × each task's
        base, items: re-judged (``threshold``, ``passed``), info: the report's
        ``relative_threshold`` entry {fraction, base_length, base_score, task_bases}
    a saved Report + a mark ──rejudge(report, mark)──► the same items judged again (the gate
        command's ``--threshold``; an absolute mark works too)
    cells + info ──relative_bounds(cells, task_scores, info, confidence)──► (Total's bound, {task: bound})

The bound (``Eff.LB`` under ``rel:F``) is the fixed-sequence procedure over the lengths from
the base one up, each hypothesis "score(L) <= F × base": the base length is in it when its score
is above 0 (the only way it can fail its own mark), and each later length when the drop test
``intervals.drop_rejects`` rejects "score(L) <= F × base" at the full ``α`` with both lengths'
samples in it, so the base's own sampling error is in the test: for one task the exact
unconditional test (0/1 scores) or a betting test (partial credit); for the Total over several
tasks the base's upper bound at ``α/2`` and the stratified test against ``F ×`` it at ``α/2``.
The first non-rejection stops; the fixed sequence spends no more than ``α`` over the lengths. (Before issue 38 the base length itself was tested
against ``F ×`` its own upper bound at ``α/2``: a test it cannot pass with few samples, so the
bound was None in every run at n = 20; ``bench/stats_calibration.py``'s ``relative`` rows.)

Where a task's base is missing (its shortest tested cell errored), its mark is 100 and
nothing of it passes (never the Total's: other tasks' scores are no base for it); where the
Total has no base (an errored shortest length, no task at every length) the mark
is 100 and nothing passes: no verdict rests on missing evidence.

Items during a run: an item's verdict needs its task's base, which another item (another
xdist worker, perhaps) produces, so under ``rel:F`` an item passes at run time when it has a
score above 0 (what every relative mark requires), and the run's end re-judges every item
against its resolved mark (``Report.of_results``); the verdict (results.gate) then decides: the
gate when one is asked, else the items below their marks. A shard's run
(``--ruler-shard``) holds only a share of the items, so it re-judges nothing at its end: its
report's entry says ``"resolved_at": "merge"`` (``describe`` says so in every header and gate
line), and ``pytest-ruler merge`` resolves the marks on the merged items (results.merge).

Where the code lives: ``resolve`` and ``describe`` in :mod:`.marks` (below the typed report,
which resolves a run's mark when it is built), ``relative_bounds`` in :mod:`.intervals` (below
the summary, which computes the bounds); ``rejudge`` here, above the report it rebuilds. This
module re-exports them all: it is the one import of ``rel:F``.

Public names: ``RelativeMark`` (from ``parsers``), ``Resolved``, ``resolve``, ``rejudge``,
``relative_bounds``, ``describe``, ``NO_BASE``.
"""

from __future__ import annotations

from typing import Any

from ..parsers import RelativeMark
from .intervals import NO_BASE, relative_bounds
from .item import judged
from .marks import Resolved, describe, resolve
from .report import Report, as_report

__all__ = ["NO_BASE", "RelativeMark", "Resolved", "describe", "rejudge", "relative_bounds", "resolve"]


def rejudge(report: Any, mark: float | RelativeMark) -> Report:
    """``report`` (a Report or its dict) judged again under ``mark``: a new Report whose marks,
    item verdicts and summaries follow it (the gate command's ``--threshold``)."""
    report = as_report(report)
    fields = {k: v for k, v in report.fields.items() if k not in ("relative_threshold", "summary")}
    if isinstance(mark, RelativeMark):
        res = resolve(report.items, mark)
        items, threshold, task_marks = res.items, res.threshold, res.task_thresholds
        fields["relative_threshold"] = res.info
    else:
        threshold, task_marks = float(mark), {}
        items = tuple(judged(r, threshold) for r in report.items)
    order = tuple(k for k in report.order if k != "relative_threshold")
    order += ("relative_threshold",) if "relative_threshold" in fields else ()
    return Report(items=items, threshold=threshold, task_thresholds=task_marks, model=report.model, backend=report.backend,
                  tokenizer=report.tokenizer, haystack_corpus=report.haystack_corpus, complete=report.complete,
                  interrupted=report.interrupted, items_expected=report.items_expected, items_finished=report.items_finished,
                  warnings=report.warnings, skipped=report.skipped, fields=fields, order=order)
