"""What the terminal shows after a run, as lines: one renderer for the terminal, the step summary and the rescue line.

    Report, Verdict ──lines(report, verdict, ci=, failures=, errors=, written=)──► [Line(text, colour, bold, section)]
        the section, Table 3 per mode (its mode's table; with --ruler-arm, the reference arm's, then one per other
        arm: results.arms.arm_reports), one legend of the symbols those tables show
        (results.table.legend; none when they show none), their notes, the errored
        items, an incomplete run (also one stopped before any item finished: no table, the partial
        mark and the verdict, as the JSON has them), both effective lengths and the rescue line (with map-reduce),
        the model and the haystack's names (haystack_names: the details stay in the report's
        ``haystack_corpus``) and threshold, the endpoints (several, or one that failed: results.endpoints),
        the gate and baseline lines, failures, end-of-run errors, files written, and last the verdict line
    Report ──rescue_line(report)──► "map-reduce passes where native fails (<grounding>): cells" | None
    Verdict ──verdict_lines(verdict)──► its lines (one per gate, the baseline's, then ``ruler verdict: ...``)

A pure function of the typed report (:mod:`pytest_ruler.results.report`) and the verdict
(:class:`pytest_ruler.results.Verdict`): effective lengths are the modes' own values,
formatted as Table 3 prints them, never read back out of a rendered cell. The plugin writes
these lines to pytest's terminal (``section`` lines as a section header); the GitHub step
summary reuses ``rescue_line`` and ``verdict_lines``. Text that came from outside the run
(error reasons) is scrubbed of secrets.

Public names: ``Line``, ``haystack_names``, ``lines``, ``rescue_line``, ``verdict_lines``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from ..lengths import format_length
from ..results.arms import arm_reports
from ..results.endpoints import endpoint_lines, endpoint_total, failover_notes
from ..results.report import Report, as_report
from ..results.table import format_text, legend, mode_table, skipped_notes, table_notes
from ..secrets import scrub

__all__ = ["Line", "SECTION", "haystack_names", "lines", "rescue_line", "verdict_lines"]

SECTION = "RULER: effective context length"
ERRORED_SHOWN = 20  # errored items listed by name; the rest are counted


class Line(NamedTuple):
    text: str
    colour: str = ""  # "", "red", "yellow", "green"
    bold: bool = False
    section: bool = False  # a section header (pytest's ``tr.section``)

    @property
    def markup(self) -> dict[str, bool]:
        """Keyword arguments of pytest's ``write_line``."""
        return {**({self.colour: True} if self.colour else {}), **({"bold": True} if self.bold else {})}


def verdict_lines(verdict: Any) -> list[Line]:
    """The verdict's lines (``Verdict.lines()``: one per gate, the baseline's, then ``ruler verdict: ...``),
    a coloured one bold."""
    return [Line(text, colour, bool(colour)) for text, colour in (verdict.lines() if verdict is not None else [])]


def _grounding(report: Report) -> str:
    from ..mapreduce import grounding_summary

    return grounding_summary(r.mapreduce for r in report.mode("mapreduce").items)


def rescue_line(report: Report | Mapping[str, Any]) -> str | None:
    """The "map-reduce passes where native fails (<grounding label>): cells" line, or None."""
    report = as_report(report)
    rescued = [x for x in report.mapreduce_vs_native if x.get("rescued")]
    if not rescued:
        return None
    cells = dict.fromkeys(f"{x['task']}@{format_length(int(x['length']))}" for x in rescued)
    return f"map-reduce passes where native fails ({_grounding(report)}): " + ", ".join(cells)


def haystack_names(corpus: str) -> str:
    """The haystack corpus as the terminal names it: each label of ``corpus`` (the report's
    ``haystack_corpus``, labels joined by "; ") up to its details (a parenthesis, a ``:``), with
    "(not the paper's essays)" where the label says it is not; "not recorded" when empty."""
    labels, depth, start = [], 0, 0
    for i, ch in enumerate(corpus or ""):  # "; " separates labels only outside a label's parentheses
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if depth == 0 and corpus.startswith("; ", i):
            labels.append(corpus[start:i])
            start = i + 2
    labels.append((corpus or "")[start:])
    names = []
    for label in (lb.strip() for lb in labels):
        if not label:
            continue
        name = label.split(" (", 1)[0].split(":", 1)[0].strip() or label
        names.append(f"{name} (not the paper's essays)" if "not the paper" in label else name)
    return ", ".join(dict.fromkeys(names)) or "not recorded"


def _failed(failures: Iterable[str]) -> list[Line]:
    return [Line(f"RULER FAILED: {f}", "red", True) for f in failures]


def _errors(errors: Iterable[str]) -> list[Line]:
    return [Line(f"RULER ERROR: {e}", "red", True) for e in errors]


def lines(report: Report, verdict: Any = None, *, ci: bool = False, failures: Sequence[str] = (),
          errors: Sequence[str] = (), written: Sequence[str | Path] = ()) -> list[Line]:
    """The terminal's lines for a run (see the module docstring). ``failures`` are the ones no
    verdict line states (a ``pytest_ruler_summary`` hook's), ``errors`` what failed after the
    items ran, ``written`` the files the run wrote."""
    stated = list(verdict.failures) if verdict is not None else []
    if not report.items:
        out = [Line(SECTION, section=True)]
        if report.skipped:
            out.append(Line("no RULER item ran, so nothing was measured; " + skipped_notes(report)[0], "yellow", True))
        elif not report.complete and report.items_expected != 0:  # None: stopped before the items were known
            # stopped before any item finished: what the JSON says (partial, the gate undecided), not silence
            out += [Line("no RULER item finished, so nothing was measured", "yellow", True), _incomplete(report)]
        return out + _end(verdict, stated, failures, errors, written)
    out = [Line(SECTION, section=True)]
    modes = report.modes
    grounding = _grounding(report) if "mapreduce" in modes else ""
    notes = []
    arms = report.field("arms")
    if arms:  # --ruler-arm: Table 3 per arm, the reference's first (results.arms)
        out.append(Line(f"arm {arms.get('reference')} (the reference):", bold=True))
    for mode in modes:
        if mode == "mapreduce" or len(modes) > 1:  # a table of twins alone still says it is map-reduce
            out.append(Line("native:" if mode == "native" else f"map-reduce (LLM x MapReduce, chunked; {grounding}):", bold=True))
        out += [Line(text) for text in format_text(mode_table(report.mode(mode), ci))]
        notes += [(f"map-reduce: {n}" if mode == "mapreduce" else n) for n in table_notes(report, mode)]
    for name, arm_report in arm_reports(arms, report) if arms else ():
        for mode in arm_report.modes:
            out.append(Line(f"arm {name}{'' if mode == 'native' else f' ({mode})'}:", bold=True))
            out += [Line(text) for text in format_text(mode_table(arm_report.mode(mode), ci))]
    if "native" not in modes:
        notes += skipped_notes(report)
    key = legend(mode_table(report.mode(mode), ci) for mode in modes)  # once, under the last table
    out += [Line(key)] if key else []
    out += [Line(note, "yellow") for note in notes]
    bad = sorted((r for r in report.items if r.error is not None), key=lambda r: (r.mode, r.length, r.task, r.seed))
    if bad:
        out.append(Line(f"ERR: {len(bad)} item{'s' if len(bad) != 1 else ''} errored (scored as failing; no effective length past an errored length):", "red"))
        for r in bad[:ERRORED_SHOWN]:
            suffix = "-mapreduce" if r.mode == "mapreduce" else ""
            out.append(Line(f"  {r.task}[{r.length}-seed{r.seed}{suffix}]: {scrub(r.error or '')}"))
        if len(bad) > ERRORED_SHOWN:
            out.append(Line(f"  ... and {len(bad) - ERRORED_SHOWN} more (see the JSON report's summary.<mode>.errored)"))
    if not report.complete:
        out.append(_incomplete(report))
    if len(modes) > 1:
        eff = {m: report.mode(m).effective for m in modes}
        out.append(Line(f"effective length: native {eff['native']} | map-reduce {eff['mapreduce']}", bold=True))
        rescue = rescue_line(report)
        if rescue:
            out.append(Line(rescue))
    out.append(Line(f"model {report.model} ({report.backend}); haystack: {haystack_names(report.haystack_corpus)}"))
    cached, asked = sum(r.cached for r in report.items), sum(r.samples for r in report.items)
    from ..results.relative import describe

    mark = describe(report.field("relative_threshold")) or report.threshold
    out.append(Line(f"threshold {mark}; {cached} of {asked} predictions from the cache"))
    total = endpoint_total(report.items)
    out += [Line(text) for text in endpoint_lines(total)] + [Line(text, "yellow") for text in failover_notes(total)]
    return out + _end(verdict, stated, failures, errors, written)


def _incomplete(report: Report) -> Line:
    state = "interrupted" if report.interrupted else "stopped"
    when = ("before the items were collected" if report.items_expected is None
            else f"after {report.items_finished} of {report.items_expected} items")
    return Line(f"{state} {when}: the table and report are partial (\"complete\": false)", "yellow", True)


def _end(verdict: Any, stated: Sequence[str], failures: Sequence[str], errors: Sequence[str], written: Sequence[str | Path]) -> list[Line]:
    """The gate and baseline lines, a summary hook's failures, the end-of-run errors, the files
    written, and last the verdict line (``ruler verdict: ...``)."""
    shown = verdict_lines(verdict)
    out, last = shown[:-1], shown[-1:]
    out += _failed(failures)  # a pytest_ruler_summary hook's own failure (the verdict line names it too)
    out += _errors(errors)
    if written:  # what the run wrote, so a user (or CI) knows where to look
        out.append(Line("wrote: " + ", ".join(str(p) for p in written)))
    return out + last
