"""Read a saved JSON report (schema ``pytest-ruler/1``) back, for ``pytest-ruler report``.

    REPORT.json ──load_report(path)──► report dict (checked: schema, items, summary)
    report dict ──report_modes(report)──► the modes it holds ("native", "mapreduce")

Any problem with the file is one ``RulerUsageError("REPORT.json", ...)`` that says
what to pass instead. Reports that ``--ruler-markdown`` renders during a run are the
dict ``build_report`` made and skip this check.

Public names: ``MODE_TITLE``, ``SCHEMA``, ``load_report``, ``report_modes``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import RulerUsageError
from ..results.cells import mode_items
from .build import SCHEMA

__all__ = ["MODE_TITLE", "SCHEMA", "load_report", "report_modes"]

#: how Markdown and plots name each mode
MODE_TITLE = {"native": "native", "mapreduce": "map-reduce"}


def load_report(path: str | Path) -> dict[str, Any]:
    """Read and check a JSON report; any problem is a ``RulerUsageError("REPORT.json", ...)``."""
    p = Path(path)
    shown = str(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise RulerUsageError("REPORT.json", shown, "no such file; write one with `pytest --ruler-model=... --ruler-report=PATH`") from None
    except IsADirectoryError:
        raise RulerUsageError("REPORT.json", shown, "this is a folder; pass the JSON file written by --ruler-report") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise RulerUsageError("REPORT.json", shown, f"cannot read it as UTF-8 text ({exc})") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise RulerUsageError("REPORT.json", shown, f"not valid JSON ({exc.msg} at line {exc.lineno}); pass the file written by --ruler-report") from None
    if not isinstance(data, dict):
        raise RulerUsageError("REPORT.json", shown, f"expected a JSON object with \"schema\": {SCHEMA!r}, found a JSON {type(data).__name__}")
    schema = data.get("schema")
    if schema != SCHEMA:
        found = "no \"schema\" field" if schema is None else f"schema {schema!r}"
        raise RulerUsageError("REPORT.json", shown, f"expected schema {SCHEMA!r}, found {found}; pass a report written by pytest --ruler-report")
    problem = _shape_problem(data)
    if problem:
        raise RulerUsageError("REPORT.json", shown, f"not a complete {SCHEMA} report: {problem}")
    return data


def _shape_problem(data: Mapping[str, Any]) -> str | None:
    items = data.get("items")
    if not isinstance(items, list):
        return "\"items\" must be a list"
    for i, item in enumerate(items):
        if not isinstance(item, Mapping):
            return f"items[{i}] is not an object"
        for key, kind in (("task", str), ("length", int), ("score", (int, float))):
            if not isinstance(item.get(key), kind) or isinstance(item.get(key), bool):
                return f"items[{i}] has no valid {key!r}"
    summary = data.get("summary")
    if not isinstance(summary, Mapping):
        return "\"summary\" must be an object"
    for mode, s in summary.items():
        if s is None:
            continue
        if not isinstance(s, Mapping) or not isinstance(s.get("per_length"), Mapping):
            return f"summary[{mode!r}] has no \"per_length\" object"
        for key in ("avg", "wavg_inc", "wavg_dec"):  # None: not established (an errored length)
            if not isinstance(s.get(key), (int, float)) and not (key in s and s[key] is None):
                return f"summary[{mode!r}] has no numeric {key!r}"
    return None


def report_modes(report: Mapping[str, Any]) -> list[str]:
    """The modes with a summary or items, native first."""
    summary = report.get("summary") or {}
    return [m for m in ("native", "mapreduce") if summary.get(m) or mode_items(report, m)]
