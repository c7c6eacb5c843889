"""The run's verdict: one object, computed once, that every surface renders.

    Report + what was asked ──results.gate.gate(report, required=, mapreduce_required=, baseline=, ...)──► Verdict
    Verdict.with_reasons(Reason, ...)   what only the run knows (a pytest_ruler_summary hook's failure, an output lost)
    Verdict
        .status        "passed" | "failed" | "not decided"
        .reasons       each part that was judged: its kind, status, text and the cells it names
        .gated         a gate, a baseline or a relative mark was asked: the exit code is the verdict,
                       and items are measurements that serve it (plugin.items)
        .exit_status   0 passed, 1 failed, 2 not decided (4, a usage error, never reaches a verdict)
        .line()        "ruler verdict: FAILED — effective length 4K < required 8K; ..." (the terminal's last
                       ruler line, the Markdown's first section, the step summary, JUnit, ``pytest-ruler gate``)
        .lines()       the detail lines above it (one per gate, the baseline's changed cells), then line()
        .to_dict()     the JSON report's top-level ``verdict``

How the status follows from the reasons: a failed reason that the rest of the run cannot undo
(an errored item, an item below its mark when items decide) fails the run even when the run is
incomplete; otherwise an incomplete run (interrupted, stopped, one shard, a dry run) is not
decided; otherwise any failed reason fails it; otherwise it passed. An errored item is always
a failed reason: no verdict rests on missing evidence.

Who decides what: with a gate (``--ruler-require-effective-length``, the map-reduce one) or a
baseline, those decide (plus errors and completeness) and an item's own mark does not; without
them, every item's mark does (under ``rel:F`` the marks resolved at the run's end). With arms
(``--ruler-arm``; a report with ``arms``) each arm's comparison with the reference arm decides
(results.arms.arm_verdict), with any gate or baseline, and the items' marks do not. Under
``--ruler-noninferiority-margin`` (arms or baseline) a cell where the arm is shown worse than the
reference by more than the margin fails the run (final), a cell where non-inferiority is not shown
leaves it not decided (exit 2: more samples would decide; a lack of evidence is not passed), and
the run passes only when non-inferiority is shown in every cell.

Public names: ``Reason``, ``Verdict``, ``PASSED``, ``FAILED``, ``NOT_DECIDED``, ``NOTE``, ``NOT_MEASURED``, ``EXIT_STATUS``,
``cell_label``, ``count``, ``name_cells``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from ..lengths import format_length

__all__ = ["EXIT_STATUS", "FAILED", "NOTE", "NOT_DECIDED", "NOT_MEASURED", "PASSED", "Reason", "Verdict", "cell_label", "count", "name_cells"]

PASSED, FAILED, NOT_DECIDED = "passed", "failed", "not decided"
NOTE = "note"  # a reason that is said whatever the status and never decides it (a baseline from another engine)
EXIT_STATUS = {PASSED: 0, FAILED: 1, NOT_DECIDED: 2}
NOT_MEASURED = "not measured (decided without it)"  # a skipped item's reason under --ruler-stop-when-decided (run.decided)
_WORD = {PASSED: "PASSED", FAILED: "FAILED", NOT_DECIDED: "NOT DECIDED"}
_COLOUR = {PASSED: "green", FAILED: "red", NOT_DECIDED: "yellow"}
LINE_PREFIX = "ruler verdict: "


def cell_label(task: str, length: int, mode: str = "native") -> str:
    """``task @ 4K`` (``[mapreduce]`` after a map-reduce twin's): how a reason names a cell."""
    where = f"{task} @ {format_length(int(length))}"
    return where if mode == "native" else f"{where} [{mode}]"


@dataclass(frozen=True)
class Reason:
    """One judged part of the verdict. ``kind``: gate, mapreduce_gate, baseline, identity, errors,
    items, relative, incomplete, interrupted (a stop at the run's end), shard, dry_run, summary_hook, output, arms,
    planned (a note: --ruler-stop-when-decided left items not measured). ``final``: a failure the rest
    of the run cannot undo (an errored item; an item below its mark when items decide)."""

    kind: str
    status: str
    text: str
    cells: tuple[tuple[str, int, str], ...] = ()  # (task, length, mode)
    final: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "status": self.status, "text": self.text,
                "cells": [{"task": t, "length": L, "mode": m} for t, L, m in self.cells]}


@dataclass(frozen=True)
class Verdict:
    """The run's verdict (see the module docstring). ``fields`` are the report's ``gate``,
    ``mapreduce_gate`` and ``baseline`` entries; ``detail`` the lines shown above the verdict line
    ((text, colour) each: one per gate, the baseline's)."""

    reasons: tuple[Reason, ...] = ()
    gated: bool = False
    fields: Mapping[str, Any] = field(default_factory=dict)
    detail: tuple[tuple[str, str], ...] = ()

    # ------------------------------------------------------------------ the status
    @property
    def status(self) -> str:
        failed = [r for r in self.reasons if r.status == FAILED]
        if any(r.final for r in failed):
            return FAILED
        if any(r.status == NOT_DECIDED for r in self.reasons):
            return NOT_DECIDED
        return FAILED if failed else PASSED

    @property
    def passed(self) -> bool | None:
        """True, False, or None (not decided)."""
        return {PASSED: True, FAILED: False}.get(self.status)

    @property
    def exit_status(self) -> int:
        return EXIT_STATUS[self.status]

    @property
    def failures(self) -> list[str]:
        """The texts of the failed reasons."""
        return [r.text for r in self.reasons if r.status == FAILED]

    def shown(self) -> list[Reason]:
        """The reasons the verdict line states: those of its status (the failed ones of a failed
        verdict, the undecided ones of an undecided one, every one of a passed one)."""
        status = self.status
        return [r for r in self.reasons if r.status == status] + [r for r in self.reasons if r.status == NOTE]

    def with_reasons(self, *reasons: Reason) -> "Verdict":
        return dataclasses.replace(self, reasons=self.reasons + tuple(reasons))

    # ------------------------------------------------------------------ rendering
    def line(self) -> str:
        """``ruler verdict: STATUS — reason; reason`` (every surface prints this one line)."""
        shown = [r.text for r in self.shown()]
        return f"{LINE_PREFIX}{_WORD[self.status]}" + (f" \u2014 {'; '.join(shown)}" if shown else "")

    @property
    def colour(self) -> str:
        return _COLOUR[self.status]

    def lines(self) -> list[tuple[str, str]]:
        """(text, colour) per line: the detail lines, then the verdict line."""
        return list(self.detail) + [(self.line(), self.colour)]

    def to_dict(self) -> dict[str, Any]:
        """The JSON report's ``verdict``."""
        return {"status": self.status, "passed": self.passed, "exit_status": self.exit_status, "gated": self.gated,
                "line": self.line(), "reasons": [r.to_dict() for r in self.reasons]}


def count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def name_cells(cells: Sequence[tuple[str, int, str]], shown: int = 4) -> str:
    """``a @ 1K, b @ 2K and 3 more``."""
    labels = [cell_label(*c) for c in cells]
    more = f" and {len(labels) - shown} more" if len(labels) > shown else ""
    return ", ".join(labels[:shown]) + more
