"""The release gate, in the core: a saved report in, the verdict (``results.verdict``) out.

    Report (or its dict) ──gate(report, required=, mapreduce_required=, baseline=, confidence=)──► Verdict
        status: passed | failed | not decided; reasons: each judged part (a gate, each significant
        drop against the baseline, errored items, an incomplete run, a shard; without a gate or a
        baseline, the items below their marks), naming its cells
        fields: the report's "gate", "mapreduce_gate" and "baseline" entries
        lines(): what the terminal and ``pytest-ruler gate`` print: one line per gate, the
        baseline's changed cells, then ``ruler verdict: ...`` (``gate_lines`` makes the first ones)

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

Public names: ``Verdict``, ``gate``, ``gate_lines``.
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from ..lengths import format_length
from ..shard import unmerged
from .aggregate import passes
from .arms import arm_verdict
from .baseline import compare
from .budgets import budget_cause
from .identity import engine_differences
from .intervals import effective_length_bounds, pooled_cells, relative_bounds
from .marks import describe
from .regressions import summarize_regressions
from .report import Report, as_report
from .verdict import FAILED, NOT_DECIDED, NOT_MEASURED, NOTE, PASSED, Reason, Verdict, cell_label, count, name_cells

__all__ = ["Verdict", "gate", "gate_lines"]

_GATES = (("native", "gate", "effective length"), ("mapreduce", "mapreduce_gate", "map-reduce effective length"))


def gate_lines(fields: Mapping[str, Any], baseline_lines: Sequence[str] = ()) -> list[tuple[str, str]]:
    """(text, colour) per detail line above the verdict line: the baseline's lines (its header once,
    then its cells, a significant drop in red), then one line per required gate holding its whole
    result: the lengths, and for a failure the threshold and what to do."""
    out = [(line if line.startswith("baseline") else f"baseline: {line}", "red" if line.endswith("significant drop") else "")
           for line in baseline_lines]
    for _, key, what in _GATES:
        g = fields.get(key) or {}
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
        else:  # errors, no items, an unfinished run: the reason is the result
            out.append((f"gate FAILED: {g['reason']} (required {required})", "red"))
    return out


def _bound(report: Report, mode: str, confidence: float) -> tuple[int | None, bool]:
    """(the mode's effective-length bound at ``confidence``, whether the report has the per-sample
    scores to establish one)."""
    m = report.mode(mode)
    cells = pooled_cells(m.items, mode)
    if not any(v for ls in cells.values() for v in ls.values()):
        return None, False
    total = (m.summary or {}).get("total_tasks")
    relative = report.field("relative_threshold")
    if relative:  # rel:F: against F x the base's upper bound (results.relative)
        return relative_bounds(cells, m.scores, relative, confidence,
                               total_tasks=None if total is None else list(total))[0], True
    return effective_length_bounds(cells, m.scores, float(report.threshold or 0.0), confidence,
                                   total_tasks=None if total is None else list(total))[0], True


def _mark(report: Report) -> str:
    """The report's mark as a gate line says it: the score, or ``rel:F of <base> at <L> = <mark>``."""
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
            cause = budget_cause(m.items)  # a think budget, not the model, failed the cells: say so, and what fixes it
            if cause:
                g["reason"] += f"; {cause}"
    return g


def gate(report: Any, *, required: int | None = None, mapreduce_required: int | None = None,
         baseline: Any = None, baseline_path: str | None = None,
         alpha: float = 0.05, test: str = "two-proportion-z", confidence: float | None = None,
         suite: Iterable[tuple[str, int, int, str]] | None = None, margin: float | None = None) -> Verdict:
    """The verdict on a report (see the module docstring): a ``Report`` or a report dict
    (``results.report.as_report``); its summary is the one computed from its items.
    ``baseline`` is an earlier report (see :func:`pytest_ruler.results.baseline.load_baseline`);
    its cells are compared with this report's items that did not error (paired where they
    share questions). ``confidence`` (e.g. 0.95) gates on the effective length's lower
    confidence bound. With no gate and no baseline, every item's own mark decides (under
    ``rel:F``, the marks resolved on the report's items). A baseline measured on another engine
    (``results.identity.engine_differences``) is compared all the same, and the verdict says which
    fields differ (a note: it never decides). ``suite``: the (task, length, seed, mode) cells of the
    standard suite's items, when the report also holds results of the user's own tests (which
    assert their own marks): only those items' marks decide without a gate (default: every item)."""
    report = as_report(report)
    relative = describe(report.field("relative_threshold"))
    asked = required is not None or mapreduce_required is not None or baseline is not None
    gated = asked or bool(relative)
    reasons: list[Reason] = []
    errored = sorted((r for r in report.items if r.error is not None), key=_order)
    if errored:  # never undone by the rest of the run: an errored item is a failing item
        cells = _cells(errored)
        reasons.append(Reason("errors", FAILED, f"{count(len(errored), 'item')} errored ({name_cells(cells)}): "
                                                "no verdict rests on missing evidence", cells, final=True))
    partial = unmerged(report.fields)
    if partial is not None:  # a shard, a partial merge: no verdict on part of a run
        return _not_whole(report, partial, required, mapreduce_required, baseline, baseline_path, alpha, test, gated, reasons)
    fields: dict[str, Any] = {}
    incomplete = not report.complete
    for (mode, key, what), need in zip(_GATES, (required, mapreduce_required)):
        if need is None:
            continue
        g = _one_gate(report, mode, what, need, confidence)
        fields[key] = g
        if incomplete or errored:
            continue  # said once, below (incomplete) or above (errors)
        if g["passed"]:
            reasons.append(Reason(key, PASSED, _passed_text(g, what)))
        else:
            text = str(g["reason"])
            if g.get("effective_length") is None:  # "below the shortest tested length (required 1K)", as the gate line says it
                text = text.replace(f" < required {format_length(need)}", f" (required {format_length(need)})", 1)
            reasons.append(Reason(key, FAILED, text, _gate_cells(report, mode, need)))
    if incomplete:
        done, total = report.items_finished, report.items_expected
        after = f" after {done} of {total} items" if done is not None and total is not None else ""
        if report.interrupted:
            reasons.append(Reason("incomplete", NOT_DECIDED, f"interrupted{after}: the run measured only part of what was asked"))
        else:
            reasons.append(Reason("incomplete", FAILED, f"stopped{after}: the run measured only part of what was asked"))
    baseline_lines: list[str] = []
    if baseline is not None and report.items:
        baseline_lines = _baseline(report, baseline, baseline_path, alpha, test, fields, reasons, margin)
    arms = report.field("arms")
    arm_detail: list[tuple[str, str]] = []
    if arms:  # --ruler-arm: each arm against the reference arm decides (results.arms), not the items' marks
        arm_reasons, arm_detail = arm_verdict(arms)
        reasons += arm_reasons
        gated = True
    elif not asked:  # every item's own mark decides
        reasons += _items(report, relative, None if suite is None else set(suite))
    if not reasons:  # asked: the gates said it; not asked: nothing to judge, and nothing failed
        reasons.append(Reason("items", NOT_DECIDED if not asked else FAILED, "no RULER item produced a result: nothing was measured"))
    planned = [s for s in report.skipped if str(s.get("reason", "")).startswith(NOT_MEASURED)]
    if planned:  # --ruler-stop-when-decided (run.decided): say that the verdict rests on part of the table
        reasons.append(Reason("planned", NOTE, f"planned run (--ruler-stop-when-decided): {count(len(planned), 'item')} "
                                               "not measured (decided without them)"))
    return Verdict(tuple(reasons), gated=gated, fields=fields, detail=tuple(gate_lines(fields, baseline_lines) + arm_detail))


def _order(r: Any) -> tuple:
    return (r.mode, r.length, r.task, r.seed)


def _cells(items: Iterable[Any]) -> tuple[tuple[str, int, str], ...]:
    """The (task, length, mode) cells of these items, once each, in Table 3's order (length, task)."""
    return tuple(dict.fromkeys((r.task, r.length, r.mode) for r in sorted(items, key=_order)))


def _passed_text(g: Mapping[str, Any], what: str) -> str:
    required = format_length(g["required_effective_length"])
    if g.get("confidence") is not None:
        return (f"{100 * g['confidence']:g}% lower confidence bound of the {what} {format_length(g.get('effective_length_bound'))} "
                f">= required {required}")
    return f"{what} {format_length(g.get('effective_length'))} >= required {required}"


def _gate_cells(report: Report, mode: str, required: int) -> tuple[tuple[str, int, str], ...]:
    """The cells a failed gate rests on: at each tested length up to the required one whose Total
    does not pass, the tasks whose cell does not pass its mark."""
    m = report.mode(mode)
    per_length = (m.summary or {}).get("per_length") or {}
    cells = []
    for length in m.lengths:
        if length > required:
            break
        total = per_length.get(str(length), per_length.get(length))
        if total is not None and passes(float(total), float(report.threshold or 0.0)):
            continue
        for task, scores in m.scores.items():
            score = scores.get(length)
            mark = m.task_thresholds.get(task, report.threshold or 0.0)
            if score is not None and not passes(score, mark):
                cells.append((task, length, mode))
    return tuple(cells)


def _baseline(report: Report, baseline: Any, baseline_path: str | None, alpha: float, test: str,
              fields: dict[str, Any], reasons: list[Reason], margin: float | None = None) -> list[str]:
    """Compare with the baseline: its entry into ``fields``, a reason per significant drop (or one
    that none dropped; with a ``margin``, non-inferiority: ``_noninferiority``); returns its detail lines."""
    items = [r for r in report.items if r.error is None]  # an errored item has no score to compare
    comparisons = compare(baseline, items, alpha=alpha, test=test, margin=margin)
    passed, lines = summarize_regressions(comparisons)
    fields["baseline"] = {"path": baseline_path, "test": test, "alpha": alpha, "passed": passed,
                          "comparisons": [_comparison(x) for x in comparisons]}
    name = Path(baseline_path).name if baseline_path else "the baseline"
    if margin is not None:
        fields["baseline"].update(margin=margin, passed=_noninferiority(comparisons, margin, name, reasons))
        _identity(baseline, report, name, fields, reasons)
        return lines
    drops = [c for c in comparisons if c.significant]
    for c in sorted(drops, key=lambda c: (c.mode, c.length, c.task)):
        reasons.append(Reason("baseline", FAILED, f"{cell_label(c.task, c.length, c.mode)} dropped {-c.delta:.1f} points "
                                                  f"against {name} (p = {_p(c.p_value)})", ((c.task, c.length, c.mode),)))
    if not passed and not drops:
        reasons.append(Reason("baseline", FAILED, f"a significant drop against {name}"))
    if passed:
        reasons.append(Reason("baseline", PASSED, f"no significant drop against {name} ({count(len(comparisons), 'cell')} compared)"))
    _identity(baseline, report, name, fields, reasons)
    return lines


def _comparison(c: Any) -> dict[str, Any]:
    """A comparison as the report stores it; without a margin, as before (no non-inferiority fields)."""
    d = asdict(c)
    if c.margin is None:
        for key in ("margin", "noninferiority", "p_shown", "p_refuted"):
            d.pop(key, None)
    return d


def _noninferiority(comparisons: Any, margin: float, name: str, reasons: list[Reason]) -> bool | None:
    """--ruler-noninferiority-margin with a baseline: failed where refuted, not decided where not shown,
    passed when every cell is shown (results.baseline.compare's statuses); True, False or None."""
    def cells(status: str) -> tuple[tuple[str, int, str], ...]:
        return tuple((c.task, c.length, c.mode) for c in comparisons if c.noninferiority == status)

    refuted, open_ = cells("refuted"), cells("not shown")
    if refuted:
        reasons.append(Reason("baseline", FAILED, f"worse than {name} by more than {margin:g} points at {name_cells(refuted)} "
                                                  f"(non-inferiority refuted, Holm over {count(len(comparisons), 'cell')})", refuted))
    if open_:
        reasons.append(Reason("baseline", NOT_DECIDED, f"non-inferiority to {name} (margin {margin:g} points) not shown at "
                                                       f"{name_cells(open_)}: more samples would decide", open_))
    if not comparisons:
        reasons.append(Reason("baseline", NOT_DECIDED, f"no cell in common with {name}: non-inferiority not shown"))
        return None
    if not refuted and not open_:
        reasons.append(Reason("baseline", PASSED, f"non-inferior to {name} (margin {margin:g} points) in "
                                                  f"{count(len(comparisons), 'cell')}"))
        return True
    return False if refuted else None


def _identity(baseline: Any, report: Report, name: str, fields: dict[str, Any], reasons: list[Reason]) -> None:
    old = baseline.field("engine") if isinstance(baseline, Report) else (baseline or {}).get("engine")
    differs = engine_differences(old, report.field("engine"))
    if differs:
        more = f" and {len(differs) - 4} more" if len(differs) > 4 else ""
        reasons.append(Reason("identity", NOTE, f"{name} was measured on another engine ({'; '.join(differs[:4])}{more})"))
        fields["baseline"]["engine_differences"] = differs


def _p(p: float) -> str:
    return f"{p:.3f}" if p >= 0.001 else f"{p:.1e}"


def _items(report: Report, relative: str | None, suite: set[tuple[str, int, int, str]] | None = None) -> list[Reason]:
    """Without a gate or a baseline: every (suite) item's own mark (under rel:F, resolved on these items)."""
    items = [r for r in report.items if suite is None or (r.task, r.length, r.seed, r.mode) in suite]
    below = sorted((r for r in items if r.error is None and not r.passed), key=_order)
    if not items:
        return []
    if not below:
        scored = sum(r.error is None for r in items)
        return [Reason("items", PASSED, f"every item above its mark ({count(scored, 'item')})")] if scored else []
    shown = ", ".join(f"{cell_label(r.task, r.length, r.mode)} {r.score:.1f} <= {r.threshold:.1f}" for r in below[:4])
    more = f" and {len(below) - 4} more" if len(below) > 4 else ""
    if relative:
        text = f"{count(len(below), 'item')} below the relative mark {relative}: {shown}{more}"
    else:
        text = f"{count(len(below), 'item')} at or below {'its' if len(below) == 1 else 'their'} mark: {shown}{more}"
    return [Reason("relative" if relative else "items", FAILED, text, _cells(below), final=True)]


def _not_whole(report: Report, reason: str, required: int | None, mapreduce_required: int | None, baseline: Any,
               baseline_path: str | None, alpha: float, test: str, gated: bool, reasons: list[Reason]) -> Verdict:
    """NOT DECIDED on each asked gate of a report that is part of a run (``shard.unmerged``); an
    errored item (in ``reasons``) fails it all the same, and without a gate or a baseline an item
    below a fixed mark does too (the whole run's items keep their marks)."""
    fields: dict[str, Any] = {}
    for (mode, key, _), need in zip(_GATES, (required, mapreduce_required)):
        if need is not None:
            fields[key] = {"required_effective_length": need, "passed": None,
                           "effective_length": report.mode(mode).effective_length, "reason": reason}
    lines = []
    if baseline is not None:
        fields["baseline"] = {"path": baseline_path, "test": test, "alpha": alpha, "passed": None, "reason": reason}
        lines = [f"NOT DECIDED: {reason}"]
    if not gated:  # fixed marks (rel:F is gated): an item below its mark fails the whole run too
        reasons = reasons + [r for r in _items(report, None) if r.status == FAILED]
    reasons = reasons + [Reason("shard", NOT_DECIDED, reason)]
    return Verdict(tuple(reasons), gated=gated, fields=fields, detail=tuple(gate_lines(fields, lines)))
