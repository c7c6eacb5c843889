"""The Markdown's first sections, what a reader of a release check wants before Table 3: the verdict,
the baseline comparison, and the failing cells with example predictions.

    Report ──findings(report, verdict_lines=())──► Markdown lines (report.markdown puts them before Table 3)
        ## Verdict          the report's ``verdict`` (status in words, exit status, its reasons as a list,
                             each with the cells it names); without one, the terminal's verdict lines, when given
        ## Baseline         the report's ``baseline``: only the changed (by 0.1 point or more) or significant cells,
                             the rest summed up in one line; or why nothing was compared
        ## Failing cells    cells with an item that errored or scored at or below its mark: task @ length (mode),
                             the cell's score against the mark, two example predictions beside their answers
    text ──md_text(text, limit=)──► one line of outside text (a model's output, a path) safe in Markdown

A report without a ``verdict`` field (written before it existed) and no verdict lines gets none of
these sections: it renders as it did. Numbers are the report's: cell scores are its modes' Table 3
cells (``results.report``), the judging rule is ``results.aggregate.passes``; nothing is recomputed.

Model text is escaped by ``md_text``: secrets scrubbed, whitespace made one line, controls written as
escapes (``outside_text.shown``), then HTML (``<`` before a tag, ``&`` before an entity) and Markdown
(emphasis, code, links, tables, strikethrough, math, a block marker at the start) made literal.

Public names: ``findings``, ``md_text``, ``FAILING_CELLS_SHOWN``, ``EXAMPLES_PER_CELL``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from ..lengths import format_length
from ..outside_text import shown
from ..results.aggregate import passes
from ..results.item import ItemResult
from ..results.report import Report
from .load import MODE_TITLE

__all__ = ["EXAMPLES_PER_CELL", "FAILING_CELLS_SHOWN", "findings", "md_text"]

FAILING_CELLS_SHOWN = 20  # the rest are counted
EXAMPLES_PER_CELL = 2
PREDICTION_CHARS = 160
ANSWERS_SHOWN = 5  # of a sample's reference answers (cwe has ten)
_STATUS = {"passed": "PASSED", "failed": "FAILED", "not decided": "NOT DECIDED"}

_INLINE = re.compile(r"([\\`*_\[\]|~$])")  # emphasis, code, links, table cells, strikethrough, math
_TAG = re.compile(r"<(?=[A-Za-z/!?])")  # raw HTML and autolinks start so; "< 8K" is plain text
_ENTITY = re.compile(r"&(?=#?[A-Za-z0-9]+;)")
_BLOCK = re.compile(r"^(?:([-+#>=])|(\d+)([.)]))")  # a list, heading, quote or setext marker at a line's start


def md_text(value: object, limit: int | None = None) -> str:
    """``value`` as one line of literal Markdown text (see the module docstring)."""
    text = shown(value, limit)
    text = _TAG.sub("&lt;", _ENTITY.sub("&amp;", text))
    text = _INLINE.sub(r"\\\1", text)
    return _BLOCK.sub(lambda m: f"\\{m.group(1)}" if m.group(1) else f"{m.group(2)}\\{m.group(3)}", text)


def _where(task: str, length: int, mode: str) -> str:
    return f"{task} @ {format_length(int(length))}" + ("" if mode == "native" else f" ({MODE_TITLE.get(mode, mode)})")


def findings(report: Report, verdict_lines: Sequence[tuple[str, str]] = ()) -> list[str]:
    """The verdict, baseline and failing-cells sections (see the module docstring); [] for a report
    without a verdict when no verdict lines are given."""
    verdict = report.field("verdict")
    if not isinstance(verdict, Mapping) and not verdict_lines:
        return []
    out = _verdict(verdict) if isinstance(verdict, Mapping) else _verdict_from_lines(verdict_lines)
    return out + _baseline(report.field("baseline")) + _failing_cells(report)


# --------------------------------------------------------------------------- the verdict


def _verdict(verdict: Mapping[str, Any]) -> list[str]:
    status = str(verdict.get("status") or "not decided")
    word = _STATUS.get(status, md_text(status.upper()))
    head = f"**{word}**"
    if verdict.get("exit_status") is not None:
        head += f" (exit status {verdict['exit_status']})"
    if verdict.get("gated") is False:
        head += ": no gate or baseline was configured"
    out = ["## Verdict", "", head, ""]
    reasons = [r for r in verdict.get("reasons") or [] if isinstance(r, Mapping)]
    if reasons:
        out += [f"- {_reason(r)}" for r in reasons]
    else:  # no reasons recorded: the line's own ("ruler verdict: PASSED — a; b")
        line = str(verdict.get("line") or "")
        out += [f"- {md_text(part)}" for part in line.partition(" — ")[2].split("; ") if part.strip()]
    return out + [""] if out[-1] else out


def _reason(reason: Mapping[str, Any]) -> str:
    text = str(reason.get("text") or reason.get("kind") or "")
    cells = [c for c in reason.get("cells") or [] if isinstance(c, Mapping) and "task" in c and "length" in c]
    named = [w for w in (_where(str(c["task"]), int(c["length"]), str(c.get("mode") or "native")) for c in cells) if w not in text]
    if named:
        more = f" and {len(named) - 8} more" if len(named) > 8 else ""
        text += f" (cells: {', '.join(named[:8])}{more})"
    return md_text(text)


def _verdict_from_lines(lines: Sequence[tuple[str, str]]) -> list[str]:
    """A report without a ``verdict`` field: the terminal's verdict lines (``Verdict.lines()``), the
    status read from their colours (red: failed, yellow: not decided)."""
    colours = {colour for _, colour in lines}
    word = "FAILED" if "red" in colours else "NOT DECIDED" if "yellow" in colours else "PASSED"
    out = ["## Verdict", "", f"**{word}**", ""]
    out += [f"- {'**' + md_text(text) + '**' if colour in ('red', 'yellow') else md_text(text)}" for text, colour in lines]
    return out + [""]


# --------------------------------------------------------------------------- the baseline


def _change(delta: float) -> str:
    r = round(float(delta), 1)
    return f"\u2212{-r:.1f}" if r < 0 else f"+{r:.1f}" if r > 0 else "\u00b10.0"


def _judgement(c: Mapping[str, Any]) -> str:
    delta, p, alpha = float(c.get("delta") or 0.0), float(c.get("p_value", 1.0)), float(c.get("alpha", 0.05))
    if c.get("significant"):
        return "**significant drop**"
    if delta < 0 and p < alpha:
        return "significant, under the minimum drop"
    return "within noise" if delta < 0 else "improved" if delta > 0 else "unchanged"


def _baseline(baseline: Any) -> list[str]:
    if not isinstance(baseline, Mapping):
        return []
    where = md_text(baseline.get("path") or "the baseline")
    test = f" ({md_text(baseline['test'])}, alpha {baseline.get('alpha')})" if baseline.get("test") else ""
    comparisons = [c for c in baseline.get("comparisons") or [] if isinstance(c, Mapping)]
    passed = baseline.get("passed")
    state = ("no significant drop" if passed else "**a significant drop**" if passed is False
             else f"not decided: {md_text(baseline.get('reason') or 'no comparison')}")
    out = ["## Baseline", "", f"Against {where}{test}: {state}.", ""]
    shown_cells = [c for c in comparisons if c.get("significant") or round(float(c.get("delta") or 0.0), 1) != 0]
    if shown_cells:
        out += ["| Cell | Baseline | Now | Change | p | Result |", "|:---|---:|---:|---:|---:|:---|"]
        for c in shown_cells:
            cell = md_text(_where(str(c.get("task")), int(c.get("length") or 0), str(c.get("mode") or "native")))
            out.append(f"| {cell} | {float(c.get('baseline_score', 0.0)):.1f} | {float(c.get('current_score', 0.0)):.1f} | "
                       f"{_change(c.get('delta') or 0.0)} | {float(c.get('p_value', 1.0)):.4f} | {_judgement(c)} |")
        out.append("")
    rest = len(comparisons) - len(shown_cells)
    if rest:
        what = "other cell" if shown_cells else "cell"
        out += [f"{rest} {what}{'s' if rest != 1 else ''} compared: unchanged (a change under 0.05 points, no significant drop).", ""]
    return out


# --------------------------------------------------------------------------- the failing cells


def _failed(item: ItemResult) -> bool:
    return item.error is not None or not passes(item.score, item.threshold)


def _examples(items: Sequence[ItemResult]) -> list[str]:
    """Up to ``EXAMPLES_PER_CELL`` wrong predictions of the cell's failing items, beside their answers."""
    records = []
    for it in items:
        wrong = [p for p in it.predictions if isinstance(p, Mapping) and float(p.get("score", 0.0)) < 1.0]
        records += [(float(p.get("score", 0.0)), it.seed, p.get("index"), p.get("prediction", ""), p.get("answers") or [])
                    for p in wrong]
        if not it.predictions:  # a report from before per-sample records: the item's few failing ones
            records += [(0.0, it.seed, f.get("index"), f.get("pred", ""), f.get("outputs") or []) for f in it.failures]
    records.sort(key=lambda r: (r[0], r[1], str(r[2])))
    out = []
    for _, seed, index, prediction, answers in records[:EXAMPLES_PER_CELL]:
        said = f"\u201c{md_text(prediction, PREDICTION_CHARS)}\u201d" if str(prediction).strip() else "nothing"
        expected = ", ".join(f"\u201c{md_text(a, PREDICTION_CHARS)}\u201d" for a in list(answers)[:ANSWERS_SHOWN]) or "-"
        if len(answers) > ANSWERS_SHOWN:
            expected += f" and {len(answers) - ANSWERS_SHOWN} more"
        sample = f"sample {index}" + (f", seed {seed}" if len({it.seed for it in items}) > 1 else "")
        out.append(f"  - {sample}: predicted {said}; answers {expected}")
    return out


def _failing_cells(report: Report) -> list[str]:
    cells: list[tuple[str, int, str, list[ItemResult]]] = []
    for mode in report.modes:
        by_cell: dict[tuple[str, int], list[ItemResult]] = {}
        for it in report.mode(mode).items:
            by_cell.setdefault((it.task, it.length), []).append(it)
        cells += [(t, L, mode, its) for (t, L), its in sorted(by_cell.items(), key=lambda kv: (kv[0][1], kv[0][0]))
                  if any(_failed(it) for it in its)]
    if not cells:
        return []
    out = ["## Failing cells", ""]
    for task, length, mode, items in cells[:FAILING_CELLS_SHOWN]:
        m = report.mode(mode)
        failed = [it for it in items if _failed(it)]
        where = f"**{md_text(_where(task, length, mode))}**"
        errored = [it for it in failed if it.error is not None]
        if errored:
            more = f" (+{len(errored) - 1} more)" if len(errored) > 1 else ""
            out.append(f"- {where}: errored, seed {errored[0].seed}: {md_text(errored[0].error, 300)}{more}")
        else:
            score = m.scores.get(task, {}).get(length)
            shown_score = "-" if score is None else f"{score:.1f}"
            count = f"; {len(failed)} of {len(items)} items failed" if len(items) > 1 else ""
            relation = ">" if score is not None and passes(score, failed[0].threshold) else "\u2264"  # a seed failed, the mean did not
            out.append(f"- {where}: score {shown_score} {relation} mark {failed[0].threshold:g}{count}")
        out += _examples(failed)
    if len(cells) > FAILING_CELLS_SHOWN:
        out.append(f"- \u2026 and {len(cells) - FAILING_CELLS_SHOWN} more failing cells (see the JSON report's items)")
    return out + [""]
