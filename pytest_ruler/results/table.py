"""The paper's Table 3 as cells, with one notation for the terminal, Markdown and the CLI.

    Report ──.mode(mode)──mode_table(mode results, ci=False)──► Table(header, rows, lengths)   (strings only;
        build_table computes it, once per mode and ci)
    report (a Report or its dict) ──table3(report, mode, ci=False)──► the same Table
        terminal: fixed-width columns          Markdown: pipes and marks per cell

A task pack's group score (``ruler2``: the plain mean of its tasks per length) is a row
after the tasks, labelled with how many of the pack's tasks it averages. Under a relative
mark (``rel:F``, :mod:`pytest_ruler.results.relative`) the header's first cell states it
and its resolved value.

Cells: a score to one decimal; ``-`` not tested; ``ERR`` an item of the cell errored
(no score); ``n/a`` an average that is not established (a length errored). Effective
length: the longest tested length scoring above the threshold; ``<4K`` below it at
every tested length (4K the shortest), ``≥128K`` above it up to the longest tested
length (the paper's ">128K"). ``Eff.LB``: the effective length's 95 % lower confidence
bound (:mod:`pytest_ruler.results.intervals`), a column before Effective when the report
has per-sample scores. ``ci=True`` (``--ruler-ci``) writes each score with its 95 %
interval as ``score+a/-b`` (the interval is ``[score - b, score + a]`` in points, one token,
asymmetric near 0 and 100: ``100.0+0.0/-16.8``; the JSON's ``intervals`` hold the ends); a
half that rounds to 0.0 but is not 0 is written to two significant digits, so a finite
sample never shows a zero-width bar. A score without per-sample scores stays bare.
``NOTATION`` is that whole notation in one paragraph (the README says it too); under the
tables the terminal prints ``legend(tables)``, once: only the symbols its tables show
(``legend: ERR an item errored (no score); ≥2K above the threshold up to the longest tested length``),
nothing when the tables hold plain scores and lengths only.

``table_notes(report, mode)`` are the lines every renderer prints under a mode's table:
a Total over fewer tasks than the table shows (the tasks tested at every length, see
``results.summary.total_task_set``), the per-task pass marks in force, each cell's
outcomes where a thinking model or a truncation is involved (``results.budgets``), and the
items that were skipped (with the option that supplies what they lacked). A cell whose
failures a token budget caused (``results.budgets.limited_cells``) ends in ``§``.

Presentation sits above the model: this module imports the typed report (:mod:`.report`), which
never imports it; the row order and the effective length's notation are :mod:`.notation`'s
(re-exported here: ``TASK_ORDER``, ``format_effective_length``).

Public names: ``NOTATION``, ``TASK_ORDER``, ``Table``, ``build_table``, ``format_effective_length``,
``format_text``, ``legend``, ``mode_table``, ``skipped_notes``, ``table3``, ``table_notes``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

from ..lengths import format_length
from .budgets import MARK, limited_cells, outcome_notes
from .marks import describe
from .notation import TASK_ORDER, format_effective_length, ordered_tasks
from .report import ModeResults, as_report

__all__ = ["NOTATION", "TASK_ORDER", "Table", "build_table", "format_effective_length", "format_text", "legend", "mode_table",
           "skipped_notes", "table3", "table_notes"]

NOTATION = ("- not tested; ERR an item errored (no score); n/a not established (an errored length); "
            "effective <L: below the threshold at every tested length, ≥L: above it up to the longest tested length; "
            "Eff.LB: its 95% lower confidence bound (above the threshold at every length up to it); "
            "--ruler-ci: score+a/-b, its 95% interval [score-b, score+a]; "
            "§: a token budget, not the model, caused most failures of the cell (outcomes below the table)")

def _half(v: float) -> str:
    v = max(0.0, v)
    text = f"{v:.1f}"
    return f"{v:.2g}" if text == "0.0" and v > 0 else text


def _score(x: Any, ci: Mapping[str, Any] | None = None) -> str:
    """A score to one decimal; with ``ci`` its 95 % interval as ``+a/-b`` (see the module docstring)."""
    if not isinstance(x, (int, float)) or isinstance(x, bool):
        return "n/a"
    if not ci:
        return f"{x:.1f}"
    low, high = ci["ci95"]
    return f"{x:.1f}+{_half(high - x)}/-{_half(x - low)}"


@dataclass(frozen=True)
class Table:
    header: list[str]
    rows: list[list[str]]  # tasks in the paper's order, then Total
    lengths: list[int]
    tasks: list[str]


def mode_table(m: ModeResults, ci: bool = False) -> Table:
    """Table 3 of one mode (``Report.mode(mode)``), computed once (:func:`build_table`) and kept on
    the mode; ``ci``: scores with their 95 % intervals."""
    return m.cached(("table", bool(ci)), lambda: build_table(m, ci))


def table3(report: Any, mode: str = "native", ci: bool = False) -> Table:
    """Table 3 of one mode of a report (a ``Report`` or a report dict, see ``results.report.as_report``):
    the mode's table, computed once (:func:`mode_table`)."""
    return mode_table(as_report(report).mode(mode), ci)


def build_table(m: ModeResults, ci: bool = False) -> Table:
    """Table 3 of one mode (``results.report.ModeResults``): a row per task (scores per length,
    its effective length), then Total (per-length means, Avg, wAvg inc/dec, effective length).
    With per-sample scores in the report an ``Eff.LB`` column (the bound) comes before
    Effective; ``ci`` writes each score with its 95 % interval."""
    summary = m.summary or {}
    scores, errored = m.scores, m.errored  # the one mean over seeds (results.cell_scores)
    per_task_eff = dict(summary.get("per_task_effective_length") or {})
    lengths = sorted(set(m.lengths) | {int(L) for L in summary.get("per_length", {})})
    names = list(dict.fromkeys([*scores, *errored, *per_task_eff]))
    tasks = ordered_tasks(names)  # the paper's 13, then each pack's own order, then the others
    iv = summary.get("intervals") or {}  # None: no per-sample scores in the report, no bound column
    bound = [] if not iv else ["Eff.LB"]
    bounds = dict(summary.get("per_task_effective_length_bound") or {})
    corner = describe(getattr(m, "relative", None)) or ""  # a relative mark heads the task column
    header = [corner, *(format_length(L) for L in lengths), "Avg", "wAvg.inc", "wAvg.dec", *bound, "Effective"]
    limited = limited_cells(m.items)  # failing cells whose samples ran out of tokens inside their thinking
    rows = []
    for task in tasks:
        cells = [task]
        tested = sorted(set(scores.get(task, {})) | errored.get(task, set()))
        task_iv = (iv.get("cells") or {}).get(task) or {}
        for L in lengths:
            if L in errored.get(task, set()):
                cells.append("ERR")
            elif L in scores.get(task, {}):
                mark = MARK if (task, L) in limited else ""
                cells.append(_score(scores[task][L], task_iv.get(str(L)) if ci else None) + mark)
            else:
                cells.append("-")
        eff = format_effective_length(per_task_eff.get(task), tested) if task in per_task_eff else "-"
        lb = [format_effective_length(bounds.get(task), tested) if task in bounds else "-"] if bound else []
        rows.append(cells + ["", "", "", *lb, eff])
    rows += _pack_rows(tasks, scores, errored, lengths, len(bound))
    if summary:
        pl = {int(k): v for k, v in summary.get("per_length", {}).items()}
        bad = set(summary.get("errored_lengths") or ())
        piv = {int(k): v for k, v in (iv.get("per_length") or {}).items()} if ci else {}
        total = ["Total", *("ERR" if L in bad else _score(pl[L], piv.get(L)) if L in pl else "-" for L in lengths)]
        total += [_score(summary.get(k), iv.get(k) if ci else None) for k in ("avg", "wavg_inc", "wavg_dec")]
        total += [format_effective_length(summary.get("effective_length_bound"), lengths)] if bound else []
        total.append(format_effective_length(summary.get("effective_length"), lengths))
        rows.append(total)
    return Table(header=header, rows=rows, lengths=lengths, tasks=tasks)


def _pack_rows(tasks: Sequence[str], scores: Mapping[str, Mapping[int, float]], errored: Mapping[str, set[int]],
               lengths: Sequence[int], bound_columns: int) -> list[list[str]]:
    """A pack's group score (``ruler2``: the plain mean of its tasks per length, as the reference's
    ``compute_score``), one row per pack in the table, after the tasks; ``ERR`` where a pack task
    errored, ``-`` where a pack task was not scored. Its label counts the pack's tasks present."""
    from ..tasks.registry import PACK_SIZES, PACKS

    rows = []
    for pack, members in PACKS.items():
        mine = [t for t in tasks if t in members]
        if not mine:
            continue
        cells = [f"{pack} ({len(mine)}/{PACK_SIZES.get(pack, len(members))} tasks)"]
        for L in lengths:
            if any(L in errored.get(t, set()) for t in mine):
                cells.append("ERR")
            elif all(L in scores.get(t, {}) for t in mine):
                cells.append(_score(sum(scores[t][L] for t in mine) / len(mine)))
            else:
                cells.append("-")
        rows.append(cells + ["", "", "", *([""] * bound_columns), "-"])
    return rows


def format_text(table: Table) -> list[str]:
    """Fixed-width lines for the terminal (first column left-aligned, the rest right-aligned)."""
    width = [max(len(r[c]) for r in [table.header, *table.rows]) for c in range(len(table.header))]
    width = [w + 2 if c else w for c, w in enumerate(width)]
    return ["".join(cell.ljust(width[c]) if c == 0 else cell.rjust(max(width[c], 8)) for c, cell in enumerate(row)).rstrip()
            for row in [table.header, *table.rows]]


def legend(tables: Iterable[Table]) -> str | None:
    """One short line for the symbols that ``tables`` show (see the module docstring), in the order
    a reader meets them; None when they show none. A length symbol is quoted as the tables print it."""
    tables = list(tables)
    cells = [c for t in tables for row in t.rows for c in row[1:]]
    scores = [c for t in tables for row in t.rows for c in row[1:1 + len(t.lengths)]]  # "-" elsewhere: no such column
    headers = {h for t in tables for h in t.header}
    below = next((c for c in cells if c.startswith("<")), None)
    above = next((c for c in cells if c.startswith("≥")), None)
    parts = [
        ("-" in scores, "- not tested"),
        ("ERR" in cells, "ERR an item errored (no score)"),
        ("n/a" in cells, "n/a not established (a length errored)"),
        (any("/-" in c for c in cells), "s+a/-b 95% interval [s-b, s+a]"),
        (any(c.endswith(MARK) for c in cells), f"{MARK} a token budget caused most failures (outcomes below)"),
        (below is not None, f"{below} below the threshold at every tested length"),
        (above is not None, f"{above} above the threshold up to the longest tested length"),
        ("Eff.LB" in headers, "Eff.LB 95% lower bound of Effective"),
    ]
    shown = [text for present, text in parts if present]
    return "legend: " + "; ".join(shown) if shown else None


def table_notes(report: Any, mode: str = "native") -> list[str]:
    """What a reader must know to read the mode's table right (see the module docstring)."""
    report = as_report(report)
    summary = report.mode(mode).summary or {}
    out = []
    partial = summary.get("partial_tasks") or {}
    total = summary.get("total_tasks")
    if partial and total is not None:
        left = ", ".join(f"{t} ({', '.join(format_length(int(L)) for L in ls)})" for t, ls in partial.items())
        if total:
            out.append(f"Total, averages and effective length are over the {len(total)} of {len(total) + len(partial)} "
                       f"tasks tested at every length; not in them: {left}")
        else:
            out.append(f"no task was tested at every length, so there is no Total and no effective length; tested: {left}")
    marks = {t: v for t, v in (summary.get("task_thresholds") or {}).items() if v != summary.get("threshold")}
    relative = report.field("relative_threshold")
    if marks and isinstance(relative, Mapping) and relative.get("fraction") is not None:  # rel:F: resolved, not the ini's
        F = relative["fraction"]
        out.append(f"per-task marks under rel:{F:g} ({F:g} x each task's own base score; 100: no base, nothing passes): "
                   + ", ".join(f"{t} {v:.1f}" for t, v in sorted(marks.items()))
                   + f"; the other tasks and the Total {summary.get('threshold'):.1f}; a score passes when it is above its mark")
    elif marks:
        out.append("per-task pass marks (ini ruler_task_thresholds): " + ", ".join(f"{t} {v:g}" for t, v in sorted(marks.items()))
                   + f"; the other tasks and the Total {summary.get('threshold'):g}; a score passes when it is above its mark")
    out += outcome_notes(report.mode(mode).items)
    if mode == "native":
        out += skipped_notes(report)
    return out


def skipped_notes(report: Any) -> list[str]:
    """One line for the suite's items that were skipped, grouped by reason: they are not in the table."""
    skipped = as_report(report).skipped
    if not skipped:
        return []
    by_reason: dict[str, list[str]] = {}
    for s in skipped:
        by_reason.setdefault(str(s.get("reason") or "skipped"), []).append(str(s.get("task") or s.get("item")))
    parts = [f"{', '.join(dict.fromkeys(tasks))}: {reason}" for reason, tasks in by_reason.items()]
    n = len(skipped)
    return [f"skipped {n} item{'s' if n != 1 else ''}, not in the table or the gate: " + "; ".join(parts)]
