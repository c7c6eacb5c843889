"""The run's end, in the core: what the items produced, then the report, the verdict and the exit status.

    the plugin's hooks ──RunRecord.expect / starting / finished / skipped / failed──► the record
        (every selected standard-suite item ends as exactly one result: its own, or an errored one
        made here when it failed without one: a setup error, a crashed xdist worker)
    RunRecord.finish(interrupted=, reporters=, summary_hook=, rootpath=, say=, dry_run=, settle=) ──► Outcome
        1. the report: Report.of_results over every result, with the run's fields (results.report)
        2. the verdict (results.gate ──► results.verdict.Verdict): the required lengths, the baseline
           (results.baseline.load_baseline), errors and completeness; without a gate or a baseline the
           items' own marks (under rel:F resolved at the end; in a shard run at merge). With --ruler-arm
           (run.arms) the report's items are the reference arm's, each other arm is compared with them
           (results.arms: the report's ``arms``, reasons of kind "arms"), and the arms decide instead of the marks
        3. the user's own gates (a summary hook: pytest_ruler_summary) and end-of-run errors: more
           failed reasons of the same verdict; then the verdict is settled: ``settle()`` names a stop
           request (Ctrl-C, SIGTERM) held since the last item finished (plugin.run_end), and a stopped
           run's verdict is NOT DECIDED (an "interrupted" reason; the report says ``"interrupted": true``
           and stays ``"complete"`` when every item finished); the verdict goes into the report (``verdict``)
        4. the outputs: each wanted reporter, by name, in order (report.reporters); never a gate
        (a dry run, --collect-only: the verdict is NOT DECIDED and nothing is written)
    Outcome: report, verdict, failures, errors, written, stopped, exit_status(pytest's status), lines(),
        add_error (an output written after ours failed: plugin.run_end)

Nothing here imports pytest: node ids are parsed by the ``cell_of`` the plugin passes, and
the exit status is pytest's integer code; with a gate, a baseline or a relative mark it is the
verdict's (``Outcome.exit_status``: 0 passed, 1 failed, 2 not decided); without them a run stopped at
its end is pytest's "interrupted" (2). The items a run expected are unknown until its collection
finished (an xdist run interrupted while its workers collect): ``items_expected`` is then null,
never "0 of 0". A step that fails after the
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

from ..history.store import default_label
from ..report.lines import lines
from ..report.reporters import RunEnd
from ..results import ItemResult
from ..results.endpoints import endpoint_total, failover_notes, prefix_cache_notes
from ..results.mrcr import mrcr_block
from ..results.report import Report
from ..results.verdict import EXIT_STATUS, FAILED, NOT_DECIDED, Reason, Verdict
from ..secrets import scrub
from ..shard import suite_settings
from .eta import RunClock
from .seams import RecordSession
from .session import one_line

__all__ = ["Outcome", "RunRecord"]

Cell = tuple[str, int, int, str]  # (task, length, seed, mode)
TESTS_FAILED, INTERRUPTED, INTERNAL_ERROR, USAGE_ERROR = 1, 2, 3, 4  # pytest's exit codes (0 all passed, 5 no tests)


@dataclass
class Outcome:
    """What a finished run made (see the module docstring)."""

    report: Report
    verdict: Verdict
    failures: list[str] = field(default_factory=list)  # the summary hooks' (reasons of the verdict too)
    errors: list[str] = field(default_factory=list)  # what failed after the items ran: reported, never raised
    written: list[Path] = field(default_factory=list)
    show_ci: bool = False
    dry_run: bool = False
    stopped: str | None = None  # the stop request held at the run's end, before the verdict was settled

    @property
    def failed(self) -> bool:
        return self.verdict.status == FAILED

    def add_error(self, error: str) -> None:
        """One more end-of-run error, after ``finish`` (an output another plugin writes at the end: the JUnit XML)."""
        self.errors.append(error)
        self.verdict = self.verdict.with_reasons(Reason("output", FAILED, error))

    def exit_status(self, status: int, other_failures: bool = False) -> int:
        """The run's exit status given pytest's ``status``. With a gate, a baseline or a relative mark
        (``verdict.gated``) it is the verdict's: 0 passed, 1 failed (or a test of the user's own
        failed), 2 not decided; a usage or internal error (pytest's 3, 4) stays. Without them,
        pytest's, failed (1) when the verdict fails for a reason no test shows (a summary hook,
        an output lost) and, for a dry run, pytest's own; interrupted when the run was stopped at its end."""
        if status in (INTERNAL_ERROR, USAGE_ERROR):
            return status
        if self.stopped and not self.verdict.gated:
            return INTERRUPTED
        if self.dry_run and not self.verdict.gated:
            return status
        if self.verdict.gated:
            if self.verdict.status == NOT_DECIDED and not other_failures:
                return EXIT_STATUS[NOT_DECIDED]
            return TESTS_FAILED if self.failed or other_failures else 0
        if self.failed and status == 0:
            return TESTS_FAILED
        return status

    def lines(self) -> list[Any]:
        """The terminal's lines (``report.lines.lines``); a dry run's say only that nothing was measured."""
        if self.dry_run:
            from ..report.lines import SECTION, Line, verdict_lines

            if not self.verdict.gated:  # pytest's exit code, no verdict claimed
                return [Line(SECTION, section=True), Line("ruler: --collect-only: nothing measured, no report written", "yellow")]
            return [Line(SECTION, section=True)] + verdict_lines(self.verdict)
        return lines(self.report, self.verdict, ci=self.show_ci, failures=self.failures, errors=self.errors, written=self.written)


class RunRecord:
    """The record of one run (see the module docstring); ``controller`` is false on an xdist worker,
    which only hands its results on."""

    def __init__(self, session: RecordSession, cell_of: Callable[[str], Cell | None], *, controller: bool = True,
                 arm_of: Callable[[str], str | None] | None = None):
        self.session = session
        self.cell_of = cell_of
        self.arm_of = arm_of  # --ruler-arm: a node id's arm (run.arms)
        self._arms: Any = None  # results.arms.ArmsOutcome, made with the report
        self.controller = controller
        self.results: list[ItemResult] = []
        self.expected: dict[str, Cell] = {}  # node id -> cell of every selected standard-suite item
        self.finished: set[str] = set()
        self.skipped: list[dict[str, Any]] = []  # suite items that were skipped, with their reasons
        self.suite_cells: set[Cell] = set()  # the cells of the suite's results (a user test's results assert their own marks)
        self.interrupted = False
        self.collected = False  # the items that will run are known (expect was called)
        self.clock = RunClock(session)

    # ------------------------------------------------------------------ during the run
    def expect(self, nodeids: Iterable[str]) -> None:
        """The items that will run (a controller's workers say so under xdist); says the estimate."""
        self.expected = {n: c for n in nodeids if (c := self.cell_of(n)) is not None}
        self.collected = True
        if self.controller:
            self.clock.items_known(self.expected)

    def starting(self, nodeid: str) -> None:
        """Where the run is, for the progress bar (an xdist worker sees only its share: no position)."""
        if self.controller and nodeid in self.expected:
            self.session.position = f"item {len(self.finished) + 1}/{len(self.expected)}"

    def finished_item(self, nodeid: str, results: Iterable[ItemResult]) -> None:
        """An item's results (a user test's too); a suite item is then done."""
        results = list(results)
        self.results.extend(results)
        if self.cell_of(nodeid) is not None:
            self.suite_cells.update((r.task, r.length, r.seed, r.mode) for r in results)
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
        result = self.session.errored_result(task, length, seed, mode, (reason or "the item failed without a result")[:300])
        arm = self.arm_of(nodeid) if self.arm_of is not None else None
        self.results.append(replace(result, arm=arm) if arm is not None else result)
        self.suite_cells.add((task, length, seed, mode))
        self.finished.add(nodeid)

    # ------------------------------------------------------------------ at the end
    def finish(self, *, interrupted: bool = False, reporters: Iterable[Any] = (),
               summary_hook: Callable[[dict[str, Any]], Iterable[Any]] | None = None,
               rootpath: Path | None = None, say: Callable[[str], Any] = print,
               environ: Mapping[str, str] | None = None, dry_run: bool = False,
               settle: Callable[[], str | None] | None = None) -> Outcome:
        """The report, the verdict, the user's gates and the outputs (see the module docstring).
        ``dry_run`` (``--collect-only``): nothing was measured, so the verdict is not decided and
        no output is written (an earlier report stays as it is). ``settle``: called once, when the
        verdict is settled; the stop request held since the run's end (``"Ctrl-C"``, ``"SIGTERM"``) or None."""
        self.interrupted = self.interrupted or interrupted
        errors: list[str] = []

        def attempt(what: str, step: Callable[[], Any]) -> Any:
            try:
                return step()
            except Exception as exc:
                errors.append(f"{what}: {one_line(exc)}")
                return None

        c = self.session.config
        report = self._report(attempt, rootpath)
        verdict = attempt("gate", lambda: self._verdict(report)) or Verdict(gated=c.gated)  # a failed gate: an error below
        if dry_run:
            verdict = Verdict((Reason("dry_run", NOT_DECIDED, "--collect-only measured nothing (no report written)"),),
                              gated=verdict.gated)
            return Outcome(report, verdict, [], errors, [], show_ci=c.show_ci, dry_run=True, stopped=self._settle(settle))
        failures: list[str] = []
        if self.results and summary_hook is not None:
            found = attempt("pytest_ruler_summary hook", lambda: summary_hook(report.with_fields(**verdict.fields).to_dict())) or []
            for hook_lines in found:
                failures += list(hook_lines or [])
        verdict = verdict.with_reasons(*(Reason("summary_hook", FAILED, f) for f in failures),
                                       *(Reason("output", FAILED, e) for e in errors))
        stopped = self._settle(settle)
        if stopped:  # a stop asked at the run's end: the measurements stand, no verdict is claimed (plugin.run_end)
            report = report.with_fields(interrupted=True)
            verdict = verdict.with_reasons(Reason("interrupted", NOT_DECIDED, _stopped_text(stopped, report)))
        said = len(errors)
        report = report.with_fields(**verdict.fields, verdict=verdict.to_dict())
        written: list[Path] = []
        end = RunEnd(report, verdict, c, say=say, environ=os.environ if environ is None else environ)
        for reporter in reporters:
            now = replace(end, errors=tuple(errors))
            if attempt(f"reporter {reporter.name!r}", lambda: reporter.wanted(now)):
                written += [Path(p) for p in (attempt(reporter.label(now), lambda: reporter.write(now)) or [])]
        verdict = verdict.with_reasons(*(Reason("output", FAILED, e) for e in errors[said:]))  # an output lost fails the run
        return Outcome(report, verdict, failures, errors, written, show_ci=c.show_ci, stopped=stopped)

    def _settle(self, settle: Callable[[], str | None] | None) -> str | None:
        """The stop request held at the run's end; None for a run already interrupted (it says so itself)."""
        stopped = settle() if settle is not None else None
        return None if self.interrupted else stopped

    def _report(self, attempt: Callable[[str, Callable[[], Any]], Any], rootpath: Path | None) -> Report:
        rs, c = self.session, self.session.config
        complete = len(set(self.expected) - self.finished) == 0 and not self.interrupted
        fields: dict[str, Any] = {
            "chat_template": attempt("chat template", lambda: rs.frame.name), "samples_per_item": c.samples,
            "seeds": list(c.seeds), "preset": c.preset,
            "provenance": attempt("provenance", lambda: _provenance(rootpath)),
            "engine": attempt("engine identity", rs.engine_record),  # the identity that keys the cache (run.session)
            "items_expected": len(self.expected) if self.collected else None, "items_finished": len(self.finished),
        }
        fields.update(attempt("record or replay", lambda: _samples_fields(rs)) or {})  # where the samples came from (run.replay)
        if c.history is not None or c.label is not None:  # --ruler-label, or the default one a history entry needs
            fields["label"] = c.label or attempt("label", default_label)
        if c.shard is not None:  # a shard's report: merged by `pytest-ruler merge`, never gated alone
            fields["shard"] = c.shard.entry(suite_settings(c))
        # an endpoint that failed mid-run (results.endpoints): from the items, so an xdist worker's failover counts too
        warnings = list(rs.warnings) + failover_notes(endpoint_total(self.results)) + prefix_cache_notes(self.results)
        if warnings:
            fields["warnings"] = warnings
        mrcr = attempt("mrcr aggregates", lambda: mrcr_block(self.results))  # the MRCR pack's named aggregates
        if mrcr:
            fields["mrcr"] = mrcr
        fields["interrupted"] = self.interrupted
        fields["skipped"] = sorted(self.skipped, key=lambda s: (s["mode"], s["length"], s["task"], s["seed"]))
        results = self.results
        if getattr(rs, "arms", None):  # --ruler-arm: the report's items and Table 3 are the reference arm's; the others go to ``arms``
            results = [r for r in self.results if r.arm in (None, rs.arm)]
            self._arms = attempt("arms", lambda: self._compare_arms())
            if self._arms is not None:
                fields["arms"] = self._arms.section
        report = Report.of_results(results, threshold=c.threshold, task_thresholds=dict(c.task_thresholds),
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
        verdict = gate(report, required=c.required_effective_length, mapreduce_required=c.required_mapreduce_effective_length,
                       baseline=baseline, baseline_path=str(c.baseline) if c.baseline else None, alpha=c.baseline_alpha,
                       test=c.baseline_test, confidence=c.gate_confidence, suite=self.suite_cells, margin=c.noninferiority_margin)
        if getattr(self.session, "arms", None) and self._arms is None:  # gate judged the report's arms (results.arms.arm_verdict)
            reasons = tuple(r for r in verdict.reasons if r.kind != "items")  # the arms decide, not the items' marks
            return replace(verdict, gated=True, reasons=reasons + (Reason("arms", FAILED, "the arms could not be compared"),))
        return verdict

    def _compare_arms(self) -> Any:
        from ..results.arms import compare_arms

        rs, c = self.session, self.session.config
        by_arm: dict[str, list[ItemResult]] = {name: [] for name in rs.arms}
        for r in self.results:
            if r.arm in by_arm:
                by_arm[r.arm].append(r)
        reference = [r for r in self.results if r.arm in (None, rs.arm)]
        sessions = {rs.arm: rs, **rs.arms}
        settings = {a.name: a.overrides() for a in c.arms or ()}
        engines = {name: _engine_or_none(s) for name, s in sessions.items()}
        return compare_arms(reference, by_arm, reference_name=str(rs.arm), margin=c.noninferiority_margin,
                            alpha=c.baseline_alpha, settings=settings, engines=engines)


def _stopped_text(stopped: str, report: Report) -> str:
    """The verdict's reason for a run stopped at its end."""
    if report.complete:
        return (f"stopped by {stopped} at the run's end, after every item finished: a stopped run claims no verdict "
                "(the report is complete: pytest-ruler gate on the JSON report decides it)")
    return f"stopped by {stopped} at the run's end: a stopped run claims no verdict"


def _samples_fields(session: Any) -> dict[str, Any]:
    from .replay import report_fields

    return report_fields(session)


def _engine_or_none(session: RecordSession) -> Any:
    try:
        return session.engine_record()
    except Exception:  # an engine that cannot describe itself without loading: the items said why
        return None


def _provenance(rootpath: Path | None) -> dict[str, Any]:
    from ..report.provenance import provenance

    return provenance(rootpath)

