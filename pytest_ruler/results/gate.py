"""The release gate, in the core: a saved report in, a verdict with its reasons out.

    Report (or its dict) ──gate(report, required=, mapreduce_required=, baseline=, confidence=)──► Verdict
        passed: True | False | None (not decided: the run was interrupted)
        failures: one line per reason the run fails
        fields: the report's "gate", "mapreduce_gate" and "baseline" entries
        lines(): what the terminal and ``pytest-ruler gate`` print

The plugin and ``pytest-ruler gate REPORT.json`` call this same function, so a team
can gate on a report produced elsewhere (a GPU box, a nightly run) and get the
plugin's verdict. A shard's report (``--ruler-shard``) or a partial merge is part of a run:
every gate asked of it is NOT DECIDED, naming ``pytest-ruler merge`` (``shard.unmerged``).
It reads the summary the typed report computed from the items
(:mod:`pytest_ruler.results.report`), never one stored in a file. A gate never passes on missing evidence: errored items, an
unfinished run or no items at all fail it (an interrupted run gets no verdict). A failed gate
whose failing cells a token budget caused (a thinking model cut off inside its thinking,
``results.budgets``) says so in its reason, with the option that fixes it (``--ruler-think-budget``).

``confidence`` (``--ruler-gate-confidence=0.95``) gates on the effective length's lower
confidence bound at that level instead of its point estimate: the longest length up to
which every tested length scores above the threshold with that confidence
(:func:`pytest_ruler.results.intervals.effective_length_bounds`, recomputed from the
report's per-sample scores). The gate's entry then carries ``confidence`` and
``effective_length_bound``, and its reason says that the bound was compared. A report
without per-sample scores (an older version) fails such a gate: no bound is established.

Public names: ``Verdict``, ``gate``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Mapping

from ..lengths import format_length
from ..shard import unmerged
from .report import Report, as_report

__all__ = ["Verdict", "gate"]

_GATES = (("native", "gate", "effective length"), ("mapreduce", "mapreduce_gate", "map-reduce effective length"))


@dataclass
class Verdict:
    passed: bool | None
    failures: list[str] = field(default_factory=list)
    fields: dict[str, Any] = field(default_factory=dict)
    baseline_lines: list[str] = field(default_factory=list)

    def lines(self) -> list[tuple[str, str]]:
        """(text, colour) per line: the baseline's lines (its header once, then one line per
        cell, a significant drop in red), then one line per required gate holding its whole
        verdict: the lengths, and for a failure the threshold and what to do."""
        out = [(line if line.startswith("baseline:") else f"baseline: {line}", "red" if line.endswith("significant drop") else "")
               for line in self.baseline_lines]
        for _, key, what in _GATES:
            g = self.fields.get(key) or {}
            if g.get("required_effective_length") is None:
                continue
            required = format_length(g["required_effective_length"])
            got = format_length(g.get("effective_length"))
            at = f" at threshold {g['threshold']}" if g.get("threshold") else ""
            if g["passed"] is None:
                out.append((f"gate NOT DECIDED: {g['reason']} (required {required})", "yellow"))
            elif g["passed"] and g.get("confidence") is not None:  # gated on the bound: say so
                bound = format_length(g.get("effective_length_bound"))
                out.append((f"gate PASSED: {100 * g['confidence']:g}% lower confidence bound of the {what} {bound} "
                            f"(point estimate {got}; required {required}){at}", "green"))
            elif g["passed"]:
                out.append((f"gate PASSED: {what} {got} (required {required}){at}", "green"))
            elif f" < required {required}" in str(g["reason"]):  # a shortfall: "<what> <got> (required R) at threshold T ..."
                out.append((f"gate FAILED: {str(g['reason']).replace(f' < required {required}', f' (required {required})', 1)}", "red"))
            else:  # errors, no items, an unfinished run: the reason is the verdict
                out.append((f"gate FAILED: {g['reason']} (required {required})", "red"))
        return out


def _bound(report: Report, mode: str, confidence: float) -> tuple[int | None, bool]:
    """(the mode's effective-length bound at ``confidence``, whether the report has the per-sample
    scores to establish one)."""
    from .intervals import effective_length_bounds, pooled_cells

    m = report.mode(mode)
    cells = pooled_cells(m.items, mode)
    if not any(v for ls in cells.values() for v in ls.values()):
        return None, False
    total = (m.summary or {}).get("total_tasks")
    relative = report.field("relative_threshold")
    if relative:  # rel:F: against F x the base's upper bound (results.relative)
        from .relative import relative_bounds

        return relative_bounds(cells, m.scores, relative, confidence,
                               total_tasks=None if total is None else list(total))[0], True
    return effective_length_bounds(cells, m.scores, float(report.threshold or 0.0), confidence,
                                   total_tasks=None if total is None else list(total))[0], True


def _mark(report: Report) -> str:
    """The report's mark as a gate line says it: the score, or ``rel:F of <base> at <L> = <mark>``."""
    from .relative import describe

    return describe(report.field("relative_threshold")) or f"{report.threshold}"


def _confidence_gate(report: Report, g: dict[str, Any], mode: str, what: str, required: int,
                     confidence: float, hint: str) -> None:
    bound, established = _bound(report, mode, confidence)
    g["confidence"], g["effective_length_bound"] = confidence, bound
    level = f"{100 * confidence:g}% lower confidence bound of the {what}"
    if not established:
        g["reason"] = f"the report has no per-sample scores (an older version?); the {level} is not established"
    elif bound is not None and bound >= required:
        g["passed"] = True
    else:
        shown = format_length(bound) if bound is not None else "below the shortest tested length"
        point = format_length(g["effective_length"]) if g["effective_length"] is not None else "none"
        g["reason"] = (f"{level}: {shown} < required {format_length(required)} (point estimate {point}) "
                       f"at threshold {_mark(report)}{hint}")


def _one_gate(report: Report, mode: str, what: str, required: int, confidence: float | None = None) -> dict[str, Any]:
    m = report.mode(mode)
    summary = m.summary or {}
    effective = summary.get("effective_length")
    g: dict[str, Any] = {"required_effective_length": required, "passed": False, "effective_length": effective, "reason": None}
    from .relative import describe

    if describe(report.field("relative_threshold")):
        g["threshold"] = describe(report.field("relative_threshold"))  # a relative mark: every gate line says it
    if not report.complete:
        done, total = report.items_finished, report.items_expected
        count = f" after {done} of {total} items" if done is not None and total is not None else ""
        g["passed"] = None if report.interrupted else False
        g["reason"] = f"{'interrupted' if report.interrupted else 'stopped'}{count}; {what} is not established"
        return g
    errors = summary.get("errors", 0)
    if summary and summary.get("total_tasks") == []:
        left = ", ".join(f"{t} ({', '.join(format_length(L) for L in ls)})" for t, ls in (summary.get("partial_tasks") or {}).items())
        g["reason"] = f"no task was tested at every length, so the Total is not established ({left}); {what} is not established"
    elif not summary:
        g["reason"] = f"no {'map-reduce ' if mode == 'mapreduce' else ''}RULER item produced a result; {what} is not established"
    elif errors:
        g["reason"] = f"{errors} item{'s' if errors != 1 else ''} errored; {what} is not established"
    else:
        tested = m.lengths or [0]
        hint = "" if required <= max(tested) else f" (the run tested only up to {format_length(max(tested))}: add longer --ruler-lengths)"
        if confidence is not None:
            _confidence_gate(report, g, mode, what, required, confidence, hint)
        elif effective is not None and effective >= required:
            g["passed"] = True
        else:
            shown = format_length(effective) if effective is not None else "below the shortest tested length"
            g["reason"] = f"{what} {shown} < required {format_length(required)} at threshold {_mark(report)}{hint}"
        if not g["passed"]:
            from .budgets import budget_cause

            cause = budget_cause(m.items)  # a think budget, not the model, failed the cells: say so, and what fixes it
            if cause:
                g["reason"] += f"; {cause}"
    return g


def gate(report: Any, *, required: int | None = None, mapreduce_required: int | None = None,
         baseline: Any = None, baseline_path: str | None = None,
         alpha: float = 0.05, test: str = "two-proportion-z", confidence: float | None = None) -> Verdict:
    """The verdict on a report (see the module docstring): a ``Report`` or a report dict
    (``results.report.as_report``); its summary is the one computed from its items.
    ``baseline`` is an earlier report (see :func:`pytest_ruler.results.baseline.load_baseline`);
    its cells are compared with this report's items that did not error (paired where they
    share questions). ``confidence`` (e.g. 0.95) gates on the effective length's lower
    confidence bound."""
    report = as_report(report)
    partial = unmerged(report.fields)
    if partial is not None:  # a shard, a partial merge: no verdict on part of a run
        return _not_whole(report, partial, required, mapreduce_required, baseline, baseline_path, alpha, test)
    verdict = Verdict(passed=True)
    for (mode, key, what), need in zip(_GATES, (required, mapreduce_required)):
        if need is None:
            continue
        g = _one_gate(report, mode, what, need, confidence)
        verdict.fields[key] = g
        if g["passed"] is None:
            verdict.passed = None
        elif not g["passed"]:
            verdict.failures.append(g["reason"])
    items = [r for r in report.items if r.error is None]  # an errored item has no score to compare
    if baseline is not None and report.items:
        from .baseline import compare
        from .regressions import summarize_regressions

        comparisons = compare(baseline, items, alpha=alpha, test=test)
        passed, lines = summarize_regressions(comparisons)
        verdict.fields["baseline"] = {"path": baseline_path, "test": test, "alpha": alpha, "passed": passed,
                                      "comparisons": [asdict(x) for x in comparisons]}
        verdict.baseline_lines = lines
        if not passed:
            verdict.failures += [ln for ln in lines if "significant drop" in ln] or ["baseline: significant drop"]
    if verdict.failures and verdict.passed is not None:
        verdict.passed = False
    return verdict


def _not_whole(report: Report, reason: str, required: int | None, mapreduce_required: int | None, baseline: Any,
               baseline_path: str | None, alpha: float, test: str) -> Verdict:
    """NOT DECIDED on each asked gate of a report that is part of a run (``shard.unmerged``)."""
    verdict = Verdict(passed=None)
    for (mode, key, _), need in zip(_GATES, (required, mapreduce_required)):
        if need is not None:
            verdict.fields[key] = {"required_effective_length": need, "passed": None,
                                   "effective_length": report.mode(mode).effective_length, "reason": reason}
    if baseline is not None:
        verdict.fields["baseline"] = {"path": baseline_path, "test": test, "alpha": alpha, "passed": None, "reason": reason}
        verdict.baseline_lines = [f"NOT DECIDED: {reason}"]
    return verdict
