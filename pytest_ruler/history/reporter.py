"""The run's ``history`` output: ``--ruler-history=DIR`` adds a complete run's report to the folder.

    RunEnd (report.reporters) ──history_reporter().write(end)──► store.add_run(DIR, report, label)
        a run that is not complete (store.not_addable): one terminal line says why, nothing is written

It runs after the built-in reporters (json, markdown, plots, github; plugin.terminal adds it), so the
JSON report is written first; an error while adding (a full disk, a folder that cannot be made) is
one end-of-run error, as a reporter's is (the run fails: an output asked for was lost).

Public names: ``history_reporter``.
"""

from __future__ import annotations

from pathlib import Path

from ..report.reporters import Reporter, RunEnd
from .store import add_run, not_addable

__all__ = ["history_reporter"]


def _write(end: RunEnd) -> list[Path]:
    why = not_addable(end.report)
    if why:  # a partial run is never kept: said, not an error
        end.say(f"ruler: this run is not added to the history {end.config.history}: {why}")
        return []
    return [add_run(end.config.history, end.report, end.report.field("label"))]


def history_reporter() -> Reporter:
    """The ``history`` reporter: wanted when ``--ruler-history`` (ini ``ruler_history``) names a folder."""
    return Reporter("history", _write, lambda end: getattr(end.config, "history", None) is not None,
                    lambda end: f"adding the run to the history {end.config.history}")
