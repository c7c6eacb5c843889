"""The hook that adds outputs to a run; implement it in a conftest.py or plugin.

Registered by ``plugin.pytest_addhooks`` next to ``plugin.hookspecs``.
"""

from __future__ import annotations

from typing import Any


def pytest_ruler_add_reporters(config: Any, reporters: Any) -> None:
    """Add outputs to the run: ``reporters.add(name, write)``.

    Called once on the controller when the run ends, after the verdict, with the run's
    :class:`~pytest_ruler.report.reporters.Reporters` (json, markdown, plots, github are
    there already; they run first). ``write(end)`` gets a
    :class:`~pytest_ruler.report.reporters.RunEnd` (``end.report`` the typed report,
    ``end.verdict``, ``end.config``, ``end.lines()`` the terminal's lines) and returns the
    files it wrote, or None. An output is not a gate: to fail the run, implement
    ``pytest_ruler_summary``. ``reporters.add(name, write, replace=True)`` replaces a
    reporter of that name. Conftests in subfolders are called too, when pytest loaded them
    (under xdist the controller loads only the conftests of the rootdir and the arguments).
    """
