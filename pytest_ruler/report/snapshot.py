"""A syrupy snapshot extension for RULER results: ``pytest --snapshot-update`` accepts a
new baseline the way syrupy users already know.

Usage in a user's test::

    from pytest_ruler.report.snapshot import RulerSummaryExtension
    from pytest_ruler.results.saved import read_report

    def test_ruler_scores(snapshot):   # a report saved by --ruler-report=ruler.json
        report = read_report("ruler.json")
        assert report == snapshot(extension_class=RulerSummaryExtension)

Data flow::

    Report (results.saved.read_report's, or a run's) ──ruler_snapshot_data──► the subset:
        model, haystack, threshold; per mode Report.mode(m).scores / .errored (Table 3's
        cells, computed once) and .summary (computed from the items, never read)
    report dict (json.loads of ruler.json) ──results.saved.check_report──► Report ──► the same
    a report's "summary", one mode's summary, or a snapshot subset ──► the subset, as given

The snapshot is one JSON file per assertion (``__snapshots__/<test file>/<test>.json``)
holding a stable subset of the report, every float rounded to 1 decimal (as the
paper prints them): model, haystack corpus, threshold, per-(task, length) scores
(averaged over seeds, as Table 3 does), and per mode the per-length scores, Avg,
wAvg (inc), wAvg (dec), effective length and per-task effective lengths. Volatile
fields (``seconds``, ``cached``, ``engine_calls``, ``failures``, ``reasons``, backend,
tokenizer, ...) are left out, so a rerun from the cache or on other hardware matches.

Public names: :func:`ruler_snapshot_data` (pure; no syrupy needed) and
:class:`RulerSummaryExtension`.

This module imports syrupy; nothing else in ``pytest_ruler`` imports this module, so
syrupy stays optional (``pip install pytest-ruler[test]`` or ``pip install syrupy``).
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Mapping
from numbers import Real
from typing import Any

from syrupy.extensions.json import JSONSnapshotExtension

from ..errors import RulerUsageError
from ..results.report import ModeResults, Report
from ..results.saved import check_report

__all__ = ["RulerSummaryExtension", "ruler_snapshot_data"]

SNAPSHOT_SCHEMA = "pytest-ruler-snapshot/1"
_MODES = ("native", "mapreduce")
_SUMMARY_SCALARS = ("avg", "wavg_inc", "wavg_dec")


def _r1(value: Any) -> Any:
    """Round a number to 1 decimal (``-0.0`` becomes ``0.0``); other values pass through."""
    if isinstance(value, Real) and not isinstance(value, bool):  # ints too: 100 and 100.0 snapshot alike
        v = float(value)
        if math.isnan(v) or math.isinf(v):
            return None
        return round(v, 1) + 0.0
    return value


def _length_key(key: Any) -> tuple[int, str]:
    try:
        return (int(key), str(key))
    except (TypeError, ValueError):
        return (2**62, str(key))


def _by_length(mapping: Mapping[Any, Any]) -> OrderedDict:
    return OrderedDict((str(k), _r1(mapping[k])) for k in sorted(mapping, key=_length_key))


def _eff(value: Any) -> int | None:
    return None if value is None else int(value)


def _summary_subset(summary: Mapping[str, Any]) -> OrderedDict:
    out: OrderedDict = OrderedDict()
    if "per_length" in summary:
        out["per_length"] = _by_length(summary["per_length"])
    for key in _SUMMARY_SCALARS:
        if key in summary:
            out[key] = _r1(summary[key])
    if "effective_length" in summary:
        out["effective_length"] = _eff(summary["effective_length"])
    if "per_task_effective_length" in summary:
        pte = summary["per_task_effective_length"] or {}
        out["per_task_effective_length"] = OrderedDict((str(t), _eff(pte[t])) for t in sorted(pte, key=str))
    return out


def _task_scores(m: ModeResults) -> OrderedDict:
    """``{task: {length: score}}`` for one mode: Table 3's cells (``ModeResults.scores``),
    ``"ERR"`` where an item errored."""
    return OrderedDict(
        (task, OrderedDict((str(length), "ERR" if length in m.errored.get(task, ()) else _r1(m.scores[task][length]))
                           for length in sorted(set(m.scores.get(task, {})) | m.errored.get(task, set()))))
        for task in sorted(set(m.scores) | set(m.errored))
    )


def _report_subset(report: Report) -> OrderedDict:
    """The subset of a typed report: its cells and summaries as computed once from its items."""
    out: OrderedDict = OrderedDict()
    out["schema"] = SNAPSHOT_SCHEMA
    out["model"] = report.model
    out["haystack_corpus"] = report.haystack_corpus
    if report.threshold is not None:
        out["threshold"] = _r1(report.threshold)
    for mode in _MODES:
        m = report.mode(mode)
        if not m.items:
            continue
        sub: OrderedDict = OrderedDict()
        sub["tasks"] = _task_scores(m)
        if m.summary is not None:
            sub.update(_summary_subset(m.summary))
        out[mode] = sub
    return out


def _is_summary_shape(data: Mapping[str, Any]) -> bool:
    return bool(data) and set(data) <= set(_MODES)


def ruler_snapshot_data(report: Any) -> OrderedDict:
    """The stable, rounded subset of a report that a snapshot stores.

    Accepts a ``Report`` (``results.saved.read_report``, a run's), a report dict
    (``--ruler-report``'s JSON, checked and typed by ``results.saved.check_report``: a
    damaged one is a ``RulerUsageError``), a report's ``summary`` (``{"native": ...,
    "mapreduce": ...}``), one mode's summary (a ``LengthSummary.to_dict()`` shape) or a
    ``LengthSummary``, and the output of this function itself (idempotent). Modes without
    results are left out. The result is a JSON-ready ordered dict: lengths in numeric
    order, tasks by name.
    """
    if isinstance(report, Report):
        return _report_subset(report)
    to_dict = getattr(report, "to_dict", None)
    if callable(to_dict) and not isinstance(report, Mapping):
        report = to_dict()
    if not isinstance(report, Mapping):
        raise RulerUsageError(
            "report", type(report).__name__, "pass a pytest-ruler report dict (or its 'summary')."
        )

    out: OrderedDict = OrderedDict()
    out["schema"] = SNAPSHOT_SCHEMA

    if report.get("schema") == SNAPSHOT_SCHEMA:  # already a snapshot subset: re-normalise
        for key in ("model", "haystack_corpus"):
            if key in report:
                out[key] = report[key]
        if "threshold" in report:
            out["threshold"] = _r1(report["threshold"])
        for mode in _MODES:
            part = report.get(mode)
            if isinstance(part, Mapping):
                sub: OrderedDict = OrderedDict()
                if "tasks" in part:
                    sub["tasks"] = OrderedDict(
                        (str(t), _by_length(part["tasks"][t])) for t in sorted(part["tasks"], key=str)
                    )
                sub.update(_summary_subset(part))
                out[mode] = sub
        return out

    if "per_length" in report:  # one mode's summary
        out["native"] = _summary_subset(report)
        return out
    if _is_summary_shape(report):  # a report's "summary"
        for mode in _MODES:
            if isinstance(report.get(mode), Mapping):
                out[mode] = _summary_subset(report[mode])
        return out

    if "items" not in report and "summary" not in report:
        raise RulerUsageError(
            "report", sorted(report)[:8],
            "pass a pytest-ruler report dict (with 'items' and 'summary') or its 'summary'.",
        )
    return _report_subset(check_report(dict(report), "report"))


class RulerSummaryExtension(JSONSnapshotExtension):
    """Stores :func:`ruler_snapshot_data` of the asserted report as a ``.json`` snapshot.

    ``exclude``/``include``/``matcher`` (``snapshot(exclude=props(...))``) still apply,
    to the subset. Key order is kept (lengths numeric, not string-sorted).
    """

    def serialize(self, data: Any, *, exclude: Any = None, include: Any = None, matcher: Any = None) -> Any:
        return super().serialize(ruler_snapshot_data(data), exclude=exclude, include=include, matcher=matcher)
