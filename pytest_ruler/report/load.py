"""Read a saved JSON report (schema ``pytest-ruler/1``) back, for ``pytest-ruler report``.

    REPORT.json ──load_report(path)──► Report (results.saved.read_report: the one reader and
                                      check of saved reports, parameter ``REPORT.json``)
    report ──report_modes(report)──► the modes it holds ("native", "mapreduce")

Any problem with the file is one ``RulerUsageError("REPORT.json", ...)`` that says
what to pass instead.

Public names: ``MODE_TITLE``, ``SCHEMA``, ``load_report``, ``report_modes``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..results.item import SCHEMA
from ..results.report import Report, as_report
from ..results.saved import read_report

__all__ = ["MODE_TITLE", "SCHEMA", "load_report", "report_modes"]

#: how Markdown and plots name each mode
MODE_TITLE = {"native": "native", "mapreduce": "map-reduce"}


def load_report(path: str | Path) -> Report:
    """Read and check a JSON report; any problem is a ``RulerUsageError("REPORT.json", ...)``."""
    return read_report(path, "REPORT.json")


def report_modes(report: Any) -> list[str]:
    """The modes with items, native first (a ``Report`` or a report dict)."""
    return as_report(report).modes
