"""CI-native output for GitHub Actions: the step summary and workflow-command annotations.

    Report (or its dict), verdict lines ──step_summary(report, verdict_lines)──► Markdown
        (the report's Markdown, report.markdown: its verdict section first, from the report's
        ``verdict`` or else the verdict lines, then Table 3; the terminal's map-reduce rescue
        line, report.lines.rescue_line)
    Report (or its dict), verdict lines ──annotations(report, verdict_lines, errors=)──► ["::error title=...::...", ...]
        errors: each red verdict line (a failed gate, a significant drop), each failing
        (task, length, mode) cell (mean score over seeds not above the task's mark, or errored);
        warnings: each undecided gate, an incomplete run, the run's warnings, end-of-run errors;
        at most ``limit`` of each kind, the last saying how many more there are
    github_output(report, verdict_lines, say, environ=)  # what the plugin calls once per run:
        appends step_summary to $GITHUB_STEP_SUMMARY when it is set (a file path);
        hands each annotation to ``say`` (a terminal line, after an empty one) when $GITHUB_ACTIONS is "true"

Pure functions of the typed report (``results.report.Report``, after the verdict's fields
were merged in) and ``Verdict.lines()``; nothing here aggregates: cell scores are the
report's modes', Table 3 is ``report.markdown``'s. Messages are escaped as
GitHub's runner reads workflow commands: ``%``, CR and LF in messages; also ``:`` and ``,``
in properties (``escape_data``, ``escape_property``).

Public names: ``annotations``, ``escape_data``, ``escape_property``, ``github_output``,
``rescue_line``, ``step_summary``, ``workflow_command``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from ..results.aggregate import passes
from ..lengths import format_length
from ..results.report import Report, as_report
from ..secrets import scrub
from .lines import rescue_line
from .load import MODE_TITLE

__all__ = ["annotations", "escape_data", "escape_property", "github_output", "rescue_line", "step_summary",
           "workflow_command"]

#: GitHub shows at most 10 error and 10 warning annotations per step
LIMIT = 10


def escape_data(text: object) -> str:
    """A workflow command's message: ``%``, CR and LF escaped (``%`` first)."""
    return str(text).replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: object) -> str:
    """A workflow command's property value (``title=...``): as a message, plus ``:`` and ``,``."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def workflow_command(kind: str, message: object, **properties: object) -> str:
    """``::kind key=value,...::message``, escaped (e.g. ``kind="error", title="RULER gate"``)."""
    props = ",".join(f"{k}={escape_property(v)}" for k, v in properties.items() if v is not None)
    return f"::{kind}{' ' + props if props else ''}::{escape_data(message)}"


def step_summary(report: Report | Mapping[str, Any], verdict_lines: Sequence[tuple[str, str]] = ()) -> str:
    """Markdown for ``$GITHUB_STEP_SUMMARY``: the report's Markdown (``report.markdown``, as
    ``--ruler-markdown`` writes it: the verdict section first, from the report's ``verdict`` or else
    from ``verdict_lines``, then Table 3 per mode), and the terminal's rescue line (``report.lines``)."""
    from .markdown import markdown

    report = as_report(report)
    lines = [markdown(report, verdict_lines=verdict_lines).rstrip("\n"), ""]
    rescue = rescue_line(report)
    if rescue:
        lines += [f"**{rescue}**", ""]
    return "\n".join(lines)


def _where(task: str, length: int, mode: str) -> str:
    suffix = "" if mode == "native" else f" ({MODE_TITLE.get(mode, mode)})"
    return f"{task} @ {format_length(length)}{suffix}"


def _failing_cells(report: Report) -> list[tuple[tuple[str, int, str], str, str]]:
    """((task, length, mode), title, message) per failing cell, native first, in length then task order."""
    threshold = report.threshold
    out = []
    for mode in ("native", "mapreduce"):
        m = report.mode(mode)
        scores, errored = m.scores, m.errored
        reasons: dict[tuple[str, int], list[str]] = {}
        for r in sorted((r for r in m.items if r.error is not None), key=lambda r: (r.length, r.task, r.seed)):
            reasons.setdefault((r.task, r.length), []).append(f"seed {r.seed}: {r.error}")
        cells = {(t, L) for t, ls in errored.items() for L in ls}
        marks = {t: float(v) for t, v in report.task_thresholds.items()}  # the ini's per-task marks

        def mark(task: str) -> float:
            return marks.get(task, float(threshold))

        if threshold is not None:  # the one pass rule (results.aggregate.passes), each task by its own mark
            cells |= {(t, L) for t, ls in scores.items() for L, s in ls.items() if not passes(s, mark(t))}
        for task, length in sorted(cells, key=lambda c: (c[1], c[0])):
            title = f"RULER {_where(task, length, mode)}"
            if length in errored.get(task, ()):
                why = reasons.get((task, length)) or ["no score"]
                more = f" (+{len(why) - 1} more)" if len(why) > 1 else ""
                out.append(((task, length, mode), title, f"errored, {why[0]}{more}"))
            else:
                out.append(((task, length, mode), title, f"score {scores[task][length]:.1f} <= threshold {mark(task):g}"))
    return out


def _title(text: str) -> str:
    if text.startswith("ruler verdict:"):
        return "RULER verdict"
    return "RULER baseline" if text.startswith("baseline") else "RULER gate"


def _capped(kind: str, entries: Sequence[tuple[str, str]], limit: int, what: str) -> list[str]:
    """At most ``limit`` commands; when there are more, the last says how many were left out."""
    shown = entries if len(entries) <= limit else entries[: max(limit - 1, 0)]
    lines = [workflow_command(kind, message, title=title) for title, message in shown]
    if len(shown) < len(entries):
        lines.append(workflow_command(kind, f"{len(entries) - len(shown)} more {what} (see the step summary or the JSON report)",
                                      title="RULER"))
    return lines


def annotations(report: Report | Mapping[str, Any], verdict_lines: Sequence[tuple[str, str]] = (), *,
                errors: Iterable[str] = (), limit: int = LIMIT) -> list[str]:
    """The workflow commands for a run: ``::error`` per red verdict line and failing cell,
    ``::warning`` per undecided gate, incomplete run, run warning and end-of-run error."""
    report = as_report(report)
    failed = [(_title(text), text) for text, colour in verdict_lines if colour == "red"]
    warned = [(_title(text), text) for text, colour in verdict_lines if colour == "yellow"]
    failed.sort(key=lambda e: e[0] != "RULER verdict")  # the verdict first: it is the one a reader needs
    if not report.complete:
        state = "interrupted" if report.interrupted else "stopped"
        done, total = report.items_finished, report.items_expected
        count = f" after {done} of {total} items" if done is not None and total is not None else ""
        warned.append(("RULER incomplete run", f"{state}{count}: the table and report are partial (\"complete\": false)"))
    warned += [("RULER warning", w) for w in report.warnings]
    warned += [("RULER error", e) for e in errors]
    found = _failing_cells(report)
    verdict = report.field("verdict") or {}
    if verdict.get("gated"):  # items are measurements: a cell below its mark is an error only where the verdict's failure names it
        named = {(c.get("task"), c.get("length"), c.get("mode", "native")) for r in verdict.get("reasons") or []
                 if r.get("status") == "failed" for c in r.get("cells") or []}
        cells = [(title, message) for key, title, message in found if key in named or message.startswith("errored")]
        warned += [(title, f"{message} (measured; the verdict decides)") for key, title, message in found
                   if key not in named and not message.startswith("errored")]
    else:
        cells = [(title, message) for _, title, message in found]
    return (_capped("error", failed + cells, limit, "failures")
            + _capped("warning", warned, limit, "warnings"))


def github_output(report: Report | Mapping[str, Any], verdict_lines: Sequence[tuple[str, str]], say: Callable[[str], Any], *,
                  errors: Iterable[str] = (), environ: Mapping[str, str] | None = None) -> None:
    """The plugin's one call at the end of a run (see the module docstring); does nothing outside CI."""
    env = os.environ if environ is None else environ
    report = as_report(report)
    path = env.get("GITHUB_STEP_SUMMARY")
    if path:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(scrub(step_summary(report, verdict_lines)))
    lines = annotations(report, verdict_lines, errors=errors) if env.get("GITHUB_ACTIONS") == "true" else []
    if lines:
        say("")  # pytest's progress line is still open: a command must start its own line
    for line in lines:
        say(line)
