"""``pytest-ruler compare OLD.json NEW.json``: two saved reports as a Markdown delta table (a PR comment).

    old report, new report (Reports or their dicts) ──compare_markdown(old, new, alpha=, test=)──► Markdown
        first, when the two reports' ``engine`` identities differ, the fields that differ
        (results.identity.engine_differences: dtype, class, library versions, ...)
        effective length and Avg old → new per mode (each mode's Table 3, computed once)
        one row per (task, length, mode) cell in Table 3's order (native, then map-reduce; tasks
        in the table's row order, results.cells.ordered_tasks; lengths ascending): old score, new score, change, samples,
        p-value and significance (results.baseline.compare: scores pooled over seeds,
        one-sided test of a drop, Holm-corrected over the cells; the plugin's
        ``--ruler-baseline`` statistics), then the cells only one report has

It reports and does not gate (``pytest-ruler gate --baseline`` does). Errored items
have no score: they are left out of the comparison and their cells are named.

Public names: ``compare_markdown``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..lengths import format_length
from ..results.cells import ordered_tasks
from ..results.identity import engine_differences
from ..results.report import Report, as_report
from ..results.table import mode_table
from .load import MODE_TITLE

__all__ = ["compare_markdown"]

_REASONS = {"missing in baseline": "only in the new report", "missing in current run": "only in the old report",
            "no samples": "no samples"}


def _row(cells: Sequence[object]) -> str:
    return "| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |"


def _total(report: Report, mode: str) -> tuple[str, str]:
    """(effective length, Avg) as Table 3 prints them; ``-`` when the mode did not run."""
    m = report.mode(mode)
    if not m.summary:
        return "-", "-"
    table = mode_table(m)
    return m.effective, table.rows[-1][table.header.index("Avg")]


def _change(delta: float) -> str:
    r = round(delta, 1)
    return f"{r:+.1f}" if r else "0.0"


def _significance(c: Any) -> str:
    if c.significant:
        return "**significant drop**"
    if c.delta < 0:
        return "within noise"
    return "improved" if c.delta > 0 else "unchanged"


def _errored(report: Report) -> set[tuple[str, int, str]]:
    return {(r.task, r.length, r.mode) for r in report.items if r.error is not None}


def _table3_order(cells: Sequence[Any]) -> list[Any]:
    """``cells`` (each with task, length, mode) in Table 3's order: native first, tasks in the table's
    row order (``results.cells.ordered_tasks``), lengths ascending."""
    rank = {t: i for i, t in enumerate(ordered_tasks([c.task for c in cells]))}
    return sorted(cells, key=lambda c: (c.mode != "native", c.mode, rank[c.task], c.length))


def compare_markdown(old: Report | Mapping[str, Any], new: Report | Mapping[str, Any], *, alpha: float = 0.05,
                     test: str = "two-proportion-z", old_name: str = "old", new_name: str = "new") -> str:
    """The Markdown delta table of ``new`` against ``old`` (reports or their dicts; see the module docstring)."""
    from ..results.baseline import compare
    from ..results.regressions import summarize_regressions

    old, new = as_report(old), as_report(new)
    scored = [r.to_dict() for r in new.items if r.error is None]
    comparisons = compare({"items": [r.to_dict() for r in old.items if r.error is None]}, scored, alpha=alpha, test=test)
    header = summarize_regressions(comparisons, verbose=False)[1][0].removeprefix("baseline: ")
    lines = [f"## RULER: `{old_name}` → `{new_name}`", ""]
    differ = engine_differences(old.field("engine"), new.field("engine"))
    if differ:  # the scores may differ for this reason alone: said before any of them
        lines += [f"> **Engine identities differ** ({len(differ)} field{'s' if len(differ) != 1 else ''}): "
                  + "; ".join(f"`{d}`" for d in differ), ""]
    models = [r.model for r in (old, new)]
    lines.append(f"- **Model:** `{models[0]}`" + (f" → `{models[1]}`" if models[1] != models[0] else ""))
    for mode in ("native", "mapreduce"):
        (old_eff, old_avg), (new_eff, new_avg) = _total(old, mode), _total(new, mode)
        if (old_eff, new_eff) != ("-", "-"):
            lines.append(f"- **Effective length ({MODE_TITLE[mode]}):** {old_eff} → {new_eff} (Avg {old_avg} → {new_avg})")
    thresholds = [r.threshold for r in (old, new)]
    lines.append(f"- **Threshold:** {thresholds[0]:g}" if thresholds[0] == thresholds[1] and thresholds[0] is not None
                 else f"- **Threshold:** {thresholds[0]} → {thresholds[1]} (effective lengths are not comparable)")
    lines += [f"- **Cells:** {header}", ""]
    if comparisons:
        lines.append(_row(["Task", "Length", "Mode", "Old", "New", "Change", "Samples", "p", "Significance"]))
        lines.append("|:---|---:|:---|---:|---:|---:|---:|---:|:---|")
        for c in _table3_order(comparisons):
            lines.append(_row([c.task, format_length(c.length), MODE_TITLE.get(c.mode, c.mode), f"{c.baseline_score:.1f}",
                               f"{c.current_score:.1f}", _change(c.delta), f"{c.baseline_n} → {c.current_n}",
                               f"{c.p_value:.3g}", _significance(c)]))
        lines.append("")
    errored = {"old": _errored(old), "new": _errored(new)}
    apart = []
    for nc in _table3_order(comparisons.not_compared):
        key = (nc.task, nc.length, nc.mode)
        why = [f"errored in the {side} report" for side, keys in errored.items() if key in keys] or [_REASONS.get(nc.reason, nc.reason)]
        apart.append(f"{nc.task} @ {format_length(nc.length)} ({MODE_TITLE.get(nc.mode, nc.mode)}): {', '.join(why)}")
    if apart:
        lines += ["Not compared: " + "; ".join(apart) + ".", ""]
    lines.append("Scores are percentages pooled over seeds; p is the one-sided p-value of a drop, adjusted over the "
                 "compared cells; only a significant drop is flagged (this comparison does not gate).")
    return "\n".join(lines) + "\n"
