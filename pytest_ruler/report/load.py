"""Read a saved JSON report (schema ``pytest-ruler/1``) back: ``pytest-ruler report``, and the
public ``pytest_ruler.load_report``.

    REPORT.json ──load_report(path)──► Report (results.saved.read_report: the one reader and
                                      check of saved reports, parameter ``REPORT.json``)
    report ──report_modes(report)──► the modes it holds ("native", "mapreduce")

``Report`` and ``ItemResult`` (what ``load_report`` returns and holds) are re-exported here, so the
package's public names point at this module only.

Any problem with the file is one ``RulerUsageError("REPORT.json", ...)`` that says
what to pass instead.

Public names: ``ItemResult``, ``MODE_TITLE``, ``Report``, ``SCHEMA``, ``load_report``, ``report_modes``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..results.item import SCHEMA, ItemResult
from ..results.report import Report, as_report
from ..results.saved import read_report

__all__ = ["ItemResult", "MODE_TITLE", "Report", "SCHEMA", "load_report", "report_modes"]

#: how Markdown and plots name each mode
MODE_TITLE = {"native": "native", "mapreduce": "map-reduce"}


def load_report(path: str | Path) -> Report:
    """Read, check and type a JSON report written by ``--ruler-report`` (or ``pytest-ruler merge``).

    The checks are ``pytest-ruler gate``'s: the schema and every field's type, each item's score
    against its samples, and the stored summary against the one its items give. Any problem is one
    :class:`~pytest_ruler.errors.RulerUsageError` naming the file and the fix. The summaries are
    computed from the items (``report.mode("native").summary``), never read from the file."""
    return read_report(path, "REPORT.json")


def report_modes(report: Any) -> list[str]:
    """The modes with items, native first (a ``Report`` or a report dict)."""
    return as_report(report).modes
