"""The run's end, in the core: what the items produced, then the report, the verdict and the exit status.

    the plugin's hooks ──RunRecord.expect / starting / finished / skipped / failed──► the record
        (every selected standard-suite item ends as exactly one result: its own, or an errored one
        made here when it failed without one: a setup error, a crashed xdist worker)
    RunRecord.finish(interrupted=, reporters=, summary_hook=, rootpath=, say=) ──► Outcome
        1. the report: Report.of_results over every result, with the run's fields (results.report)
        2. the verdict: results.gate (the required lengths, the baseline via results.baseline.load_baseline)
        3. the failures: under rel:F the items below their resolved marks (never in a shard run:
           its marks are resolved at merge), and the user's own gates (a summary hook: pytest_ruler_summary)
        4. the outputs: each wanted reporter, by name, in order (report.reporters); never a gate
    Outcome: report, verdict, failures, errors, written, exit_status(pytest's status), lines(),
        add_error (an output written after ours failed: plugin.run_end)

Nothing here imports pytest: node ids are parsed by the ``cell_of`` the plugin passes, and
the exit status is pytest's integer code (0 passed, 1 failed). A step that fails after the
items ran (the tokenizer's name, the baseline, a reporter) is one reported error, never a
lost report: ``errors`` lists it, the terminal says it, and the run fails.

Public names: ``Outcome``, ``RunRecord``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..report.lines import lines
from ..report.reporters import RunEnd
from ..results import ItemResult
from ..results.endpoints import endpoint_total, failover_notes
from ..results.report import Report
from ..secrets import scrub
from ..shard import suite_settings
from .eta import RunClock
from .session import RulerSession, one_line

__all__ = ["Outcome", "RunRecord"]

Cell = tuple[str, int, int, str]  # (task, length, seed, mode)
TESTS_FAILED = 1  # pytest's exit codes: 0 all passed, 1 some failed


@dataclass
class Outcome:
    """What a finished run made (see the module docstring)."""

    report: Report
    verdict: Any  # results.Verdict, or None when the gate itself could not run
    failures: list[str] = field(default_factory=list)  # the summary hooks' (no verdict line states them)
    errors: list[str] = field(default_factory=list)  # what failed after the items ran: reported, never raised
    written: list[Path] = field(default_factory=list)
    show_ci: bool = False

    @property
    def failed(self) -> bool:
        return bool(self.failures or self.errors or (self.verdict is not None and self.verdict.failures))

    def add_error(self, error: str) -> None:
        """One more end-of-run error, after ``finish`` (an output another plugin writes at the end: the JUnit XML)."""
        self.errors.append(error)

    def exit_status(self, status: int) -> int:
        """The run's exit status given pytest's: a failed gate, hook or output fails a run that passed."""
        return TESTS_FAILED if self.failed and status == 0 else status

    def lines(self) -> list[Any]:
        """The terminal's lines (``report.lines.lines``)."""
        return lines(self.report, self.verdict, ci=self.show_ci, failures=self.failures, errors=self.errors, written=self.written)


class RunRecord:
    """The record of one run (see the module docstring); ``controller`` is false on an xdist worker,
    which only hands its results on."""

    def __init__(self, session: RulerSession, cell_of: Callable[[str], Cell | None], *, controller: bool = True):
        self.session = session
        self.cell_of = cell_of
        self.controller = controller
        self.results: list[ItemResult] = []
        self.expected: dict[str, Cell] = {}  # node id -> cell of every selected standard-suite item
        self.finished: set[str] = set()
        self.skipped: list[dict[str, Any]] = []  # suite items that were skipped, with their reasons
        self.interrupted = False
        self.clock = RunClock(session)

    # ------------------------------------------------------------------ during the run
    def expect(self, nodeids: Iterable[str]) -> None:
        """The items that will run (a controller's workers say so under xdist); says the estimate."""
        self.expected = {n: c for n in nodeids if (c := self.cell_of(n)) is not None}
        if self.controller:
            self.clock.items_known(self.expected)

    def starting(self, nodeid: str) -> None:
        """Where the run is, for the progress bar (an xdist worker sees only its share: no position)."""
        if self.controller and nodeid in self.expected:
            self.session.position = f"item {len(self.finished) + 1}/{len(self.expected)}"

    def finished_item(self, nodeid: str, results: Iterable[ItemResult]) -> None:
        """An item's results (a user test's too); a suite item is then done."""
        self.results.extend(results)
        if self.cell_of(nodeid) is not None:
            self.finished.add(nodeid)
            if self.controller and len(self.finished) < len(self.expected):
                self.clock.item_done(self.results, self.finished, self.expected)

    def skipped_item(self, nodeid: str, reason: str) -> None:
        """A suite item that was skipped (e.g. a QA task without its data file): ran to its end, with no cell."""
        cell = self.cell_of(nodeid)
        if cell is None or nodeid in self.finished:
            return
        self.finished.add(nodeid)
        task, length, seed, mode = cell
        self.skipped.append({"item": nodeid, "task": task, "length": length, "seed": seed, "mode": mode,
                             "reason": scrub(reason.removeprefix("Skipped: "))})

    def failed_item(self, nodeid: str, reason: str) -> None:
        """A suite item that failed without a result (a setup error, its worker crashed): an errored result."""
        cell = self.cell_of(nodeid)
        if cell is None or nodeid in self.finished:
            return
        task, length, seed, mode = cell
        self.results.append(self.session.errored_result(task, length, seed, mode, (reason or "the item failed without a result")[:300]))
        self.finished.add(nodeid)

    # ------------------------------------------------------------------ at the end
    def finish(self, *, interrupted: bool = False, reporters: Iterable[Any] = (),
               summary_hook: Callable[[dict[str, Any]], Iterable[Any]] | None = None,
               rootpath: Path | None = None, say: Callable[[str], Any] = print,
               environ: Mapping[str, str] | None = None) -> Outcome:
        """The report, the verdict, the user's gates and the outputs (see the module docstring)."""
        self.interrupted = self.interrupted or interrupted
        errors: list[str] = []

        def attempt(what: str, step: Callable[[], Any]) -> Any:
            try:
                return step()
            except Exception as exc:
                errors.append(f"{what}: {one_line(exc)}")
                return None

        report = self._report(attempt, rootpath)
        verdict = attempt("gate", lambda: self._verdict(report))
        if verdict is not None:
            report = report.with_fields(**verdict.fields)
        c = self.session.config
        # a shard's items are a share of the run's: rel:F is resolved on the merged items (`pytest-ruler merge`)
        failures: list[str] = _below_relative_mark(report) if c.shard is None else []
        if self.results and summary_hook is not None:
            found = attempt("pytest_ruler_summary hook", lambda: summary_hook(report.to_dict())) or []
            for lines in found:
                failures += list(lines or [])
        written: list[Path] = []
        end = RunEnd(report, verdict, c, say=say, environ=os.environ if environ is None else environ)
        for reporter in reporters:
            now = replace(end, errors=tuple(errors))
            if attempt(f"reporter {reporter.name!r}", lambda: reporter.wanted(now)):
                written += [Path(p) for p in (attempt(reporter.label(now), lambda: reporter.write(now)) or [])]
        return Outcome(report, verdict, failures, errors, written, show_ci=c.show_ci)

    def _report(self, attempt: Callable[[str, Callable[[], Any]], Any], rootpath: Path | None) -> Report:
        rs, c = self.session, self.session.config
        complete = len(set(self.expected) - self.finished) == 0 and not self.interrupted
        fields: dict[str, Any] = {
            "chat_template": attempt("chat template", lambda: rs.frame.name), "samples_per_item": c.samples,
            "seeds": list(c.seeds), "preset": c.preset,
            "provenance": attempt("provenance", lambda: _provenance(rootpath)),
            "engine": attempt("engine identity", rs.engine_record),  # the identity that keys the cache (run.session)
            "items_expected": len(self.expected), "items_finished": len(self.finished),
        }
        if c.shard is not None:  # a shard's report: merged by `pytest-ruler merge`, never gated alone
            fields["shard"] = c.shard.entry(suite_settings(c))
        # an endpoint that failed mid-run (results.endpoints): from the items, so an xdist worker's failover counts too
        warnings = list(rs.warnings) + failover_notes(endpoint_total(self.results))
        if warnings:
            fields["warnings"] = warnings
        fields["interrupted"] = self.interrupted
        fields["skipped"] = sorted(self.skipped, key=lambda s: (s["mode"], s["length"], s["task"], s["seed"]))
        report = Report.of_results(self.results, threshold=c.threshold, task_thresholds=dict(c.task_thresholds),
                                   model=c.model, backend=rs.backend,
                                   tokenizer=attempt("tokenizer", lambda: rs.tokenizer.name) or str(c.tokenizer or c.model),
                                   haystack_corpus=self._haystack_corpus(), complete=complete, **fields)
        info = report.field("relative_threshold")
        if c.shard is not None and info:  # rel:F in a shard: its marks are resolved at merge (results.relative.describe)
            report = report.with_fields(relative_threshold={**info, "resolved_at": "merge"})
        return report

    def _haystack_corpus(self) -> str:
        labels = []
        for task in dict.fromkeys(r.task for r in self.results):
            try:
                label = self.session.haystack_label(task)
            except Exception:
                continue
            if label not in labels:
                labels.append(label)
        return "; ".join(labels)

    def _verdict(self, report: Report) -> Any:
        from ..results import gate

        c = self.session.config
        baseline = None
        if c.baseline is not None:
            from ..results.baseline import load_baseline

            baseline = load_baseline(c.baseline)
        return gate(report, required=c.required_effective_length, mapreduce_required=c.required_mapreduce_effective_length,
                    baseline=baseline, baseline_path=str(c.baseline) if c.baseline else None, alpha=c.baseline_alpha,
                    test=c.baseline_test, confidence=c.gate_confidence)


def _below_relative_mark(report: Report) -> list[str]:
    """Under rel:F, items passed at run time on a score above 0 (results.relative); the report
    re-judged them against their resolved marks, and those below fail the run here."""
    from ..results.relative import below_mark, describe

    mark = describe(report.field("relative_threshold"))
    below = below_mark(report.items) if mark else []
    if not below:
        return []
    shown = ", ".join(f"{r.task}[{r.length}-seed{r.seed}] {r.score:.1f} <= {r.threshold:.1f}" for r in below[:6])
    more = f" and {len(below) - 6} more" if len(below) > 6 else ""
    return [f"{len(below)} item{'s' if len(below) != 1 else ''} below the relative mark {mark}: {shown}{more}"]


def _provenance(rootpath: Path | None) -> dict[str, Any]:
    from ..report.provenance import provenance

    return provenance(rootpath)

