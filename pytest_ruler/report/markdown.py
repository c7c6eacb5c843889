"""A report dict as Markdown: the header, the verdict first, Table 3 per mode, the comparison, the depth sweeps.

    Report (or its dict) ──markdown(report, images=..., ci=False, verdict_lines=())──► Markdown text
        header (an incomplete run's mark, model, back end, haystack, threshold, items, gate)
        the verdict, the baseline's changed or significant cells, the failing cells with two example
            predictions each (report.findings; only when the report has a ``verdict`` or verdict lines
            are given: an older report renders as it did)
        Table 3 per mode: the mode's table (results.table.mode_table), with † (over the context) and ‡ (errors) marks
        native vs map-reduce, map-reduce compliance, depth sweeps (results.cells.depth_cells)

A pure function of the typed report (:mod:`pytest_ruler.results.report`): every number
shown is one it computed once from the items, in the terminal's notation.
Layout follows the RULER paper's Table 3 for one model: tasks as rows, then a Total
row; columns 4K..128K, Avg, wAvg (inc), wAvg (dec), effective length, printed as
:func:`~pytest_ruler.results.table.format_effective_length` does (the paper's
">128K" is "≥128K" here, over whatever lengths were tested).

With per-sample scores in the report, Table 3 has an "Effective (95% lower bound)"
column; ``ci=True`` (``--ruler-ci``) writes scores as ``score+a/-b`` (the 95 % interval
``[score - b, score + a]``) and lists the Total's 95 % intervals under the table (:mod:`pytest_ruler.results.intervals`).

Depths in [0, 1] are read as fractions, larger ones as percentages. Reports without
depth sweeps render without a depth section.

Public names: ``markdown``, ``depth_label`` (the plots label depths the same way).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..lengths import format_length
from ..outside_text import escaped
from .markdown_arms import arms_markdown
from ..results.arms import arm_reports
from ..results.cells import depth_cells
from ..results.item import ItemResult
from ..results.report import Report, as_report
from ..results.table import mode_table, skipped_notes, table_notes
from .findings import findings
from .load import MODE_TITLE

__all__ = ["depth_label", "markdown"]

_OVER = "†"
_ERR = "‡"


def _cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _row(cells: Sequence[object]) -> str:
    return "| " + " | ".join(_cell(c) for c in cells) + " |"


def _score(x: float | None) -> str:
    return "-" if x is None else f"{x:.1f}"


def _total(report: Report, mode: str) -> dict[str, str] | None:
    """The Total row of a mode's Table 3 (Avg and wAvg as the table prints them, the effective
    length as the mode formats it), or None when the mode has no summary."""
    m = report.mode(mode)
    if not m.summary:
        return None
    table = mode_table(m)
    n = len(table.lengths)
    return dict(zip(("avg", "wavg_inc", "wavg_dec"), table.rows[-1][1 + n:4 + n])) | {"effective": m.effective}


def depth_label(d: float, depths: Sequence[float]) -> str:
    """A depth as a percentage (``25%``); ``depths`` all in [0, 1] are fractions."""
    pct = d * 100 if max(depths) <= 1.0 else d
    return f"{pct:g}%"


def _haystack_lines(corpus: str) -> tuple[str, str | None]:
    """The header line for the haystack corpus, and a warning when it is not the paper's essays."""
    parts = [p.strip() for p in str(corpus or "").split(";") if p.strip()]
    if not parts:
        return "- **Haystack corpus:** not recorded in this report", None
    line = f"- **Haystack corpus:** {'; '.join(parts)}"
    other_essays = []
    for p in parts:
        low = p.lower()
        flat = re.sub(r"[^a-z]", "", low)
        if "pydoc_data" in low or "not the paper" in low:
            other_essays.append(p)
        elif low.startswith("essays:") and "paulgraham" not in flat:
            other_essays.append(p)
    if not other_essays:
        return line, None
    return line, (
        f"> **Warning: not the paper's haystack.** The essay haystack here is {'; '.join(other_essays)}, "
        "not the Paul Graham essays the RULER paper uses, so scores on the essay-haystack tasks are not "
        "comparable with the paper's numbers. Fetch the paper's essays with `pytest-ruler download essays` "
        "and pass them with `--ruler-essays`."
    )


def _gate_line(report: Report) -> str | None:
    gate = report.field("gate") or {}
    required = gate.get("required_effective_length")
    passed = gate.get("passed")
    if required is None and passed is None:
        return None
    total = _total(report, "native")
    eff_s = total["effective"] if total else "-"
    req_s = "-" if required is None else format_length(int(required))
    if passed is True:
        return f"- **Gate:** PASSED: effective length {eff_s} ≥ required {req_s}"
    if passed is False:
        return f"- **Gate:** FAILED: effective length {eff_s} < required {req_s}"
    return f"- **Gate:** not decided (required {req_s}; effective length {eff_s})"


def _grounding_lines(report: Report) -> tuple[list[str], list[str]]:
    """What code did to the model's records (a label, shown above the map-reduce Table 3),
    and how often the model wrote the protocol, per map-reduce item (a table, shown below it)."""
    from ..mapreduce import grounding_label

    its = report.mode("mapreduce").items
    if not its:
        return [], []
    def key(mr: Mapping[str, Any]) -> dict[str, Any]:  # the label without per-item counts (those are in the table below)
        return {"grounding": mr.get("grounding") or ("unrecorded" if mr else "not run"), "strategy": mr.get("strategy"),
                "config": {"layout": (mr.get("config") or {}).get("layout")}}

    labels = sorted({grounding_label(key(it.mapreduce or {})) for it in its})
    head = [f"**Map-reduce {label}.**" for label in labels] + [""]
    lines = ["Protocol compliance of the map records (the structured information protocol's four fields):", ""]
    lines.append(_row(["Task", "Length", "Strategy", "Grounding", "Map records", "All four fields", "With a confidence", "Parse failures", "Collapse calls"]))
    lines.append("|:---|---:|:---|:---|---:|---:|---:|---:|---:|")
    for it in sorted(its, key=lambda x: (x.task, x.length, x.seed)):
        mr = it.mapreduce or {}
        comp = (mr.get("compliance") or {}).get("map") or {}
        collapse = (mr.get("calls_per_stage") or {}).get("collapse", 0)
        cells = [comp.get(k, "-") for k in ("records", "four_fields", "confidence", "parse_failures")]
        lines.append(_row([it.task, format_length(it.length), mr.get("strategy") or "-", mr.get("grounding") or "-", *map(str, cells), str(collapse)]))
    lines.append("")
    return head, lines


def _partial_line(report: Report) -> str:
    """An incomplete run's mark, under the title: interrupted (Ctrl-C, SIGTERM) or stopped early."""
    state = "Interrupted" if report.interrupted else "Incomplete"
    done = f" after {report.items_finished} of {report.items_expected} items" if report.items_expected is not None else ""
    return f"> **{state}**{done}: the tables are partial (\"complete\": false)"


def _items_line(report: Report) -> str | None:
    items = report.items
    if not items:
        return None
    parts = []
    for mode in report.modes:
        its = report.mode(mode).items
        tasks = {it.task for it in its}
        lengths = {it.length for it in its}
        seeds = {it.seed for it in its}
        parts.append(f"{len(its)} {MODE_TITLE[mode]} ({len(tasks)} tasks × {len(lengths)} lengths × {len(seeds)} seeds)")
    samples = sorted({it.samples for it in items})
    text = "- **Items:** " + ", ".join(parts)
    if samples:
        text += f"; {samples[0]} samples per item" if len(samples) == 1 else f"; {samples[0]}–{samples[-1]} samples per item"
    return text


def _flag(items: Sequence[ItemResult]) -> str:
    marks = ""
    if any(it.over_length > 0 for it in items):
        marks += _OVER
    if any(it.errors > 0 for it in items):
        marks += _ERR
    return marks


def _table(report: Report, mode: str, ci: bool = False) -> list[str]:
    """Table 3 of one mode (the terminal's cells: the mode's table), with flags per cell."""
    table = mode_table(report.mode(mode), ci)
    by_cell: dict[tuple[str, int], list[ItemResult]] = {}
    for it in report.mode(mode).items:
        by_cell.setdefault((it.task, it.length), []).append(it)
    bound = ["Effective (95% lower bound)"] if "Eff.LB" in table.header else []
    head = ["Task", *table.header[1:1 + len(table.lengths)], "Avg", "wAvg (inc)", "wAvg (dec)", *bound, "Effective"]
    out = [_row(head), "|:---|" + "---:|" * (len(head) - 1)]
    for row in table.rows:
        if row[0] == "Total":
            out.append(_row(["**Total**", *row[1:]]))
            continue
        cells = [row[0]]
        for L, text in zip(table.lengths, row[1:1 + len(table.lengths)]):
            marks = _flag(by_cell.get((row[0], L), []))
            cells.append(f"{text} {marks}" if marks else text)
        out.append(_row(cells + row[1 + len(table.lengths):]))
    return out


def _flag_notes(report: Report, mode: str) -> list[str]:
    over, err = [], []
    for it in report.mode(mode).items:
        where = f"{it.task} at {format_length(it.length)} (seed {it.seed}"
        n = it.samples
        if it.over_length > 0:
            over.append(f"{where}: {it.over_length} of {n})")
        if it.errors > 0:
            err.append(f"{where}: {it.errors} of {n})")
    lines = []
    if over:
        lines.append(f"{_OVER} samples longer than the model's context window (scored as wrong): " + "; ".join(over))
    if err:
        lines.append(f"{_ERR} samples whose generation failed (scored as wrong): " + "; ".join(err))
    return lines


def _interval_lines(report: Report, mode: str) -> list[str]:
    """``--ruler-ci``: what ``+a/-b`` means, and the Total's 95 % intervals."""
    iv = (report.mode(mode).summary or {}).get("intervals")
    if not iv:
        return ["No per-sample scores in this report: no standard errors or intervals.", ""]
    parts = [f"{format_length(int(L))} [{v['ci95'][0]:.1f}, {v['ci95'][1]:.1f}]"
             for L, v in (iv.get("per_length") or {}).items() if v]
    parts += [f"{name} [{iv[k]['ci95'][0]:.1f}, {iv[k]['ci95'][1]:.1f}]"
              for k, name in (("avg", "Avg"), ("wavg_inc", "wAvg (inc)"), ("wavg_dec", "wAvg (dec)")) if iv.get(k)]
    lines = ["score+a/-b is the score with its 95% interval [score-b, score+a] in points, valid for scores in [0, 1] "
             "at any sample size (per cell: Clopper-Pearson for 0/1 scores, a betting interval for partial credit, "
             "over the pooled per-sample scores of its seeds; Total and averages: a stratified betting interval over "
             "their independent cells). "]
    if parts:
        lines[0] += "95% intervals of the Total: " + "; ".join(parts) + "."
    return lines + [""]


def _depth_section(report: Report, mode: str) -> list[str]:
    tables = depth_cells(report, mode)
    if not tables:
        return []
    title = "Depth sweep" if mode == "native" else f"Depth sweep ({MODE_TITLE[mode]})"
    out = [f"## {title}", "", "Score by needle depth (rows, 0% = start of the context) and length (columns), averaged over seeds.", ""]
    for task, (depths, lengths, cells) in tables.items():
        out.append(f"### {task}")
        out.append("")
        out.append(_row(["Depth", *(format_length(L) for L in lengths)]))
        out.append("|:---|" + "---:|" * len(lengths))
        for d in depths:
            out.append(_row([depth_label(d, depths), *(_score(cells.get((d, L))) for L in lengths)]))
        out.append("")
    return out


def markdown(report: Report | Mapping[str, Any], *, images: Sequence[str | Path] = (), ci: bool = False,
             verdict_lines: Sequence[tuple[str, str]] = ()) -> str:
    """The report (a ``Report`` or its dict) as Markdown: header, the verdict, the baseline and the
    failing cells (report.findings), Table 3 per mode, comparisons, depth sweeps.

    ``images`` (paths relative to where the Markdown will live) are linked at the end;
    ``ci`` (``--ruler-ci``) shows standard errors and the Total's 95 % intervals;
    ``verdict_lines`` (``Verdict.lines()``) make the verdict section of a report without a ``verdict`` field.
    """
    report = as_report(report)
    threshold = report.threshold
    model = escaped(report.model)  # a name from outside: no terminal controls in a file that gets cat'ed
    lines = [f"# RULER report: {model}", ""]
    lines += [_partial_line(report), ""] if not report.complete else []
    lines.append(f"- **Model:** `{model}`")
    lines.append(f"- **Backend:** {report.backend}")
    lines.append(f"- **Tokenizer:** `{report.tokenizer}`")
    if report.field("chat_template"):
        lines.append(f"- **Chat template:** {report.field('chat_template')}")
    hay_line, hay_warning = _haystack_lines(report.haystack_corpus)
    lines.append(hay_line)
    from ..results.relative import describe

    relative = describe(report.field("relative_threshold"))
    if relative:  # rel:F: each task against F times its own score at the shortest tested length
        lines.append(f"- **Threshold:** {relative} (relative: a length passes when its score is above that share of the "
                     "shortest tested length's own score; each task against its own)")
    elif threshold is not None:
        lines.append(f"- **Threshold:** {threshold:g} (an item passes, and a length counts toward the effective length, when its score is above it)")
    items_line = _items_line(report)
    if items_line:
        lines.append(items_line)
    gate = _gate_line(report)
    if gate:
        lines.append(gate)
    lines.append("")
    if hay_warning:
        lines += [hay_warning, ""]
    lines += findings(report, verdict_lines)  # the verdict, the baseline, the failing cells: before Table 3
    lines += arms_markdown(report.field("arms"))  # --ruler-arm: each arm against the reference arm

    modes = report.modes
    if not modes:
        lines += ["No items in this report.", ""]
        if report.skipped:
            lines += [*skipped_notes(report), ""]
    seeds = {it.seed for it in report.items}
    for mode in modes:
        heading = "Effective context length" if mode == "native" else "Map-reduce (chunked inference)"
        lines += [f"## {heading}", ""]
        grounding_head, grounding_table = _grounding_lines(report) if mode == "mapreduce" else ([], [])
        lines += grounding_head
        lines += _table(report, mode, ci)
        lines.append("")
        if ci:
            lines += _interval_lines(report, mode)
        notes = _flag_notes(report, mode) + table_notes(report, mode)
        if notes:
            lines += notes + [""]
        lines += grounding_table
    for name, arm_report in arm_reports(report.field("arms"), report):  # --ruler-arm: each other arm's Table 3
        for mode in arm_report.modes:
            lines += [f"## Arm {name}: {'effective context length' if mode == 'native' else 'map-reduce'}", "", *_table(arm_report, mode, ci), ""]
    if modes:
        thr = f" {threshold:g}" if threshold is not None else ""
        lines.append(
            f"Scores are percentages (RULER metric over each item's samples), averaged over {len(seeds)} seed(s); "
            "Total is the mean over tasks at each length, as in the paper's Table 3. "
            f"Effective length: the longest tested length scoring above the threshold{thr}; "
            "\"≥L\" means it passes at the longest tested length L (the paper's \">128K\"), "
            "\"<L\" that it is below the threshold at every tested length, the shortest being L."
            + (" Effective (95% lower bound): the longest length L at which, and at every shorter tested length, "
               "the score exceeds the threshold with 95% confidence (one-sided tests in ascending order, "
               "stopping at the first that does not reject)."
               if any((report.mode(m).summary or {}).get("intervals") for m in modes) else "")
        )
        lines.append("")

    native, mr = _total(report, "native"), _total(report, "mapreduce")
    if native and mr:  # the two Total rows of Table 3, side by side
        lines += ["## Native vs map-reduce", "", f"**native effective {native['effective']} vs map-reduce effective {mr['effective']}**", ""]
        lines.append(_row(["Mode", "Effective", "Avg", "wAvg (inc)", "wAvg (dec)"]))
        lines.append("|:---|---:|---:|---:|---:|")
        for name, total in (("native", native), ("map-reduce", mr)):
            lines.append(_row([name, total["effective"], total["avg"], total["wavg_inc"], total["wavg_dec"]]))
        lines.append("")

    for mode in modes:
        lines += _depth_section(report, mode)

    if images:
        lines += ["## Plots", ""]
        for img in images:
            p = Path(img)
            lines += [f"![{p.stem}]({p.as_posix()})", ""]
    return "\n".join(lines).rstrip("\n") + "\n"


