"""Saved reports are input: the one reader and the one check of a JSON report from a file.

    REPORT.json ──read_report(path, parameter)──► Report (results.report)
        1. the file: exists, is a file, UTF-8, JSON (nested too deeply is refused, not a RecursionError)
        then check_report(data, parameter), also for a report dict already in memory (the
        syrupy extension's input, report.snapshot):
        2. report_problem(data): the schema and every field's type (report_problem, item_problem)
        3. Report.from_dict(data): the items typed; each mode's summary computed from them
        4. results.rescore.items_disagreement(report.items): each item's score re-derived from its
           sample scores, each sample score from its prediction and answers by the task's own metric;
           an item whose fields disagree is refused, naming the item, the field and both values
           (results.rescore says what is checked when a report lacks a field or its task is not
           registered in this process)
        5. summary_disagreement(data, report): a stored summary that the items do not give is refused

``pytest-ruler gate``, ``merge``, ``report`` and ``compare`` and the plugin's ``--ruler-baseline``
read reports only through :func:`read_report`; what they print or gate on is the summary
computed from the items, so a report whose summary says 2K over items that all score 0
is refused, not passed, and so is an item that says 100 over sample scores of 0, or whose
predictions do not score what its sample scores say. Any problem is one :class:`~pytest_ruler.errors.RulerUsageError`
naming ``parameter`` (``REPORT.json``, ``--ruler-baseline``, ``OLD.json``, ...), the path and
the fix.

What is compared (step 5), per mode with a stored summary (``null`` claims nothing): that the
mode has items, its effective
length, per-task effective lengths, errored items and lengths, and the threshold it used,
exactly; its per-length scores, Avg and wAvg within ``TOLERANCE`` points (stored rounded
to 4 decimals), when the stored summary names its Total's tasks (``total_tasks``): before
that field existed the Total averaged every task at each length, so an older report's
averages are not comparable and only its effective lengths are checked. Error bars and
confidence bounds are not compared (the gate recomputes a bound it gates on).

Public names: ``TOLERANCE``, ``check_report``, ``item_problem``, ``read_report``, ``report_problem``,
``summary_disagreement``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from numbers import Real
from pathlib import Path
from typing import Any, Callable

from ..errors import RulerUsageError
from .item import SCHEMA
from .report import MODES, Report
from .rescore import items_disagreement

__all__ = ["TOLERANCE", "check_report", "item_problem", "read_report", "report_problem", "summary_disagreement"]

TOLERANCE = 1e-3  # points: the stored means are rounded to 4 decimals
_FIX = "pass a report written by pytest --ruler-report, unedited"


def read_report(path: str | Path, parameter: str = "REPORT.json") -> Report:
    """Read, check and type a saved JSON report (see the module docstring)."""
    shown = str(path)

    def refuse(fix: str) -> RulerUsageError:
        return RulerUsageError(parameter, shown, fix)

    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise refuse("no such file; write one with `pytest --ruler-model=... --ruler-report=PATH`") from None
    except IsADirectoryError:
        raise refuse("this is a folder; pass the JSON file written by --ruler-report") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise refuse(f"cannot read it as UTF-8 text ({exc})") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise refuse(f"not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno}); pass the file written by --ruler-report") from None
    except RecursionError:
        raise refuse("its JSON is nested too deeply to be a report; pass the file written by --ruler-report") from None
    return check_report(data, parameter, shown)


def check_report(data: Any, parameter: str = "report", shown: str | None = None) -> Report:
    """Check and type a report dict (parsed JSON, or one in memory): steps 2-5 of the module
    docstring; a problem is one ``RulerUsageError`` naming ``parameter`` and ``shown`` (the path;
    by default the kind of value)."""

    def refuse(fix: str) -> RulerUsageError:
        return RulerUsageError(parameter, type(data).__name__ if shown is None else shown, fix)

    problem = report_problem(data)
    if problem:
        raise refuse(problem)
    report = Report.from_dict(data)
    rederived = items_disagreement(report.items)
    if rederived:
        raise refuse(f"{rederived}; each item's score is re-derived from its sample scores and each sample score from its "
                     "prediction and answers, so a report whose scores or predictions were edited cannot be read: rerun, "
                     "or pass the report as --ruler-report wrote it")
    disagreement = summary_disagreement(data, report)
    if disagreement:
        raise refuse(f"its summary disagrees with its items: {disagreement}; the summary is computed from the items, "
                     "so a report whose numbers were edited or whose shards were merged by hand cannot be read: "
                     "rerun, or merge shards with the tool that wrote them")
    return report


# --------------------------------------------------------------------------- types


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _number(value: Any, low: float = -math.inf, high: float = math.inf) -> bool:
    kind = type(value)  # JSON gives int and float: checked first, the rest (numpy scalars in memory) by Real
    if kind is bool or not (kind is float or kind is int or isinstance(value, Real)):
        return False
    return math.isfinite(value) and low <= value <= high


def _int(value: Any, low: int = 0) -> bool:
    return type(value) is int and value >= low or (isinstance(value, int) and not isinstance(value, bool) and value >= low)


def _list_of(check: Callable[[Any], bool]) -> Callable[[Any], bool]:
    return lambda value: isinstance(value, list) and all(check(v) for v in value)


def _optional(check: Callable[[Any], bool]) -> Callable[[Any], bool]:
    return lambda value: value is None or check(value)


def _is_str(value: Any) -> bool:
    return isinstance(value, str)


def _is_object(value: Any) -> bool:
    return type(value) is dict or isinstance(value, Mapping)


def _score(value: Any) -> bool:
    return _number(value, 0.0, 100.0)


# (key, required, check, what it must be): the item fields a reader relies on
_ITEM_FIELDS: tuple[tuple[str, bool, Callable[[Any], bool], str], ...] = (
    ("task", True, lambda v: isinstance(v, str) and bool(v), "a task name"),
    ("length", True, lambda v: _int(v, 1), "a positive integer (tokens)"),
    ("samples", True, _int, "a count (an integer >= 0)"),
    ("score", True, _score, "a number in [0, 100]"),
    ("seed", False, _int, "an integer >= 0"),
    ("mode", False, lambda v: v in MODES, "\"native\" or \"mapreduce\""),
    ("threshold", False, _score, "a number in [0, 100]"),
    ("passed", False, lambda v: isinstance(v, bool), "true or false"),
    ("error", False, _optional(_is_str), "null or a string"),
    ("stopped", False, _optional(_is_str), "null or a string"),
    ("seconds", False, lambda v: _number(v, 0.0), "a number of seconds >= 0"),
    ("nulls", False, _int, "a count"),
    ("over_length", False, _int, "a count"),
    ("errors", False, _int, "a count"),
    ("cached", False, _int, "a count"),
    ("engine_calls", False, _int, "a count"),
    ("prompt_tokens", False, _int, "a count"),
    ("samples_used", False, _int, "a count"),
    ("sample_scores", False, _list_of(lambda v: _number(v, 0.0, 1.0)), "a list of numbers in [0, 1]"),
    ("sample_hashes", False, _list_of(_is_str), "a list of strings"),
    ("predictions", False, _list_of(_is_object), "a list of objects"),
    ("failures", False, _list_of(_is_object), "a list of objects"),
    ("reasons", False, _list_of(_is_str), "a list of strings"),
    ("calls", False, _list_of(_is_object), "a list of objects"),
    ("mapreduce", False, _is_object, "an object"),
    ("prefix_cache", False, _is_object, "an object"),
    ("endpoints", False, _is_object, "an object"),
    ("cost", False, _is_object, "an object"),
    ("depth_scores", False, lambda v: isinstance(v, (Mapping, list)), "an object {depth: score} or a list"),
    ("stderr", False, _optional(lambda v: _number(v, 0.0)), "null or a number >= 0"),
    ("ci95", False, _optional(lambda v: isinstance(v, list) and len(v) == 2 and all(_number(x) for x in v)), "null or [low, high]"),
)


_ITEM_CHECKS = {key: (check, what) for key, _, check, what in _ITEM_FIELDS}
_ITEM_REQUIRED = [(key, what) for key, required, _, what in _ITEM_FIELDS if required]


def item_problem(item: Any) -> str | None:
    """What is wrong with one report item (a mapping), or None."""
    if not isinstance(item, Mapping):
        return f"is not an object (found {_show(item)})"
    for key, value in item.items():  # the fields it has (a reader's cost is per field written), then those it lacks
        known = _ITEM_CHECKS.get(key)
        if known is not None and not known[0](value):
            return f"has no valid {key!r}: expected {known[1]}, found {_show(value)}"
    for key, what in _ITEM_REQUIRED:
        if key not in item:
            return f"has no valid {key!r}: expected {what}, found nothing"
    if item.get("sample_scores") and item.get("error") is None and len(item["sample_scores"]) > item["samples"]:
        return f"has more 'sample_scores' ({len(item['sample_scores'])}) than 'samples' ({item['samples']})"
    return None


# the items and the summary first (what the report is about), then the run's fields
_TOP_FIELDS: tuple[tuple[str, bool, Callable[[Any], bool], str], ...] = (
    ("items", True, lambda v: isinstance(v, list), "a list"),
    ("summary", False, _is_object, "an object {\"native\": ..., \"mapreduce\": ...}"),
    ("threshold", True, _score, "a number in [0, 100]"),
    ("task_thresholds", False, lambda v: isinstance(v, Mapping) and all(isinstance(k, str) and _score(x) for k, x in v.items()),
     "an object {task: mark in [0, 100]}"),
    ("complete", False, lambda v: isinstance(v, bool), "true or false"),
    ("interrupted", False, lambda v: isinstance(v, bool), "true or false"),
    ("items_expected", False, _optional(_int), "null or a count"),
    ("items_finished", False, _optional(_int), "null or a count"),
    ("model", False, _is_str, "a string"),
    ("backend", False, _is_str, "a string"),
    ("tokenizer", False, _is_str, "a string"),
    ("haystack_corpus", False, _optional(_is_str), "null or a string"),
    ("warnings", False, _list_of(_is_str), "a list of strings"),
    ("skipped", False, _list_of(_is_object), "a list of objects"),
    ("gate", False, _optional(_is_object), "null or an object"),
)


def report_problem(data: Any) -> str | None:
    """What makes ``data`` (parsed JSON) not a readable report, in words a fix can follow, or None."""
    if not isinstance(data, dict):
        return f"expected a JSON object with \"schema\": {SCHEMA!r}, found a JSON {type(data).__name__}: the report must be an object"
    schema = data.get("schema")
    if schema != SCHEMA:
        found = "no \"schema\" field" if schema is None else f"schema {_show(schema)}"
        return f"expected schema {SCHEMA!r}, found {found}; {_FIX}"
    for key, required, check, what in _TOP_FIELDS:
        if key not in data:
            if required:
                return f"not a complete {SCHEMA} report: it has no {key} ({what}); {_FIX}"
            continue
        if not check(data[key]):
            return f"not a complete {SCHEMA} report: \"{key}\" must be {what}, found {_show(data[key])}; {_FIX}"
        if key == "items":
            for i, item in enumerate(data["items"]):
                problem = item_problem(item)
                if problem:
                    return f"not a complete {SCHEMA} report: items[{i}] {problem}; {_FIX}"
        if key == "summary":
            for mode, s in data["summary"].items():
                problem = _summary_problem(mode, s)
                if problem:
                    return f"not a complete {SCHEMA} report: {problem}; {_FIX}"
    return None


def _summary_problem(mode: str, s: Any) -> str | None:
    if mode not in MODES:
        return f"summary has an unknown mode {_show(mode)} (expected {' or '.join(MODES)})"
    if s is None:
        return None
    if not isinstance(s, Mapping) or not isinstance(s.get("per_length"), Mapping):
        return f"summary[{mode!r}] has no \"per_length\" object"
    for L, v in s["per_length"].items():
        if not (str(L).isdigit() and int(L) > 0) or not _score(v):
            return f"summary[{mode!r}].per_length has {_show(L)}: {_show(v)} (expected a length in tokens: a score in [0, 100])"
    for key in ("avg", "wavg_inc", "wavg_dec"):  # None: not established (an errored length)
        if not (key in s and s[key] is None) and not _score(s.get(key)):
            return f"summary[{mode!r}] has no numeric {key!r} (found {_show(s.get(key))})"
    if not _optional(lambda v: _int(v, 1))(s.get("effective_length")):
        return f"summary[{mode!r}].effective_length must be null or a positive length, found {_show(s.get('effective_length'))}"
    return None


# --------------------------------------------------------------------------- agreement


def _same(a: Any, b: Any) -> bool:
    if _number(a) and _number(b):
        return abs(float(a) - float(b)) <= TOLERANCE
    return a == b


def summary_disagreement(data: Mapping[str, Any], report: Report) -> str | None:
    """Where ``data``'s stored summary differs from the one ``report`` computed from the items, or None."""
    if "summary" not in data:
        return None  # nothing stored: the computed summary is the report's
    total = data.get("items_expected"), data.get("items_finished")
    if data.get("complete") is True and None not in total and total[1] < total[0]:
        return f"\"complete\" is true but only {total[1]} of {total[0]} items finished"
    for mode in MODES:
        stored = data["summary"].get(mode)
        computed = report.mode(mode).summary
        where = f"summary.{mode}"
        if stored is None:  # claims nothing (a hand-written baseline, say): the computed one is read
            continue
        if computed is None:
            return f"{where} has results but the report has no {mode} items"
        keys = ["effective_length", "per_task_effective_length", "errors", "errored_lengths", "threshold", "total_tasks"]
        if "total_tasks" in stored:
            keys += ["avg", "wavg_inc", "wavg_dec"]
        for key in keys:
            if key in stored and not _same(stored[key], computed.get(key)):
                return f"{where}.{key} is {_show(stored[key])}, its items give {_show(computed.get(key))}"
        if "total_tasks" in stored:
            mine, theirs = computed["per_length"], stored["per_length"]
            if set(mine) != {str(L) for L in theirs} or any(not _same(theirs[L], mine[str(L)]) for L in theirs):
                return f"{where}.per_length is {_show(dict(theirs))}, its items give {_show(mine)}"
    return None
