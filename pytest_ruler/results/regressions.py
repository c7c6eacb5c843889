"""What a baseline comparison says: the pass/fail lines, and a note when the effective length fell.

    Comparisons (results.baseline.compare) ──summarize_regressions──► (passed, lines)
    baseline summary, current summary ──effective_length_drop──► an informational line or None

One line per compared cell: both scores, the change, the sample counts, the test (for a
paired one: the shared questions, how many were lost and gained, and the mean change per
question with its 95 % interval, the effect size), the adjusted p-value against
``alpha`` and the verdict (significant drop, within noise, improved, ...); a cell that
could have been paired but was not says why. The terminal, the JSON report's ``baseline`` entry and
``pytest-ruler gate --baseline`` print these lines.

Public names: ``effective_length_drop``, ``summarize_regressions``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..errors import RulerUsageError
from ..lengths import format_length
from .baseline import Comparison, NotCompared

__all__ = ["effective_length_drop", "summarize_regressions"]

_TEST_LABELS = {
    "two-proportion-z": "one-sided two-proportion z-test",
    "fisher": "one-sided Fisher exact test",
    "mcnemar": "one-sided exact McNemar test",
    "sign-flip": "one-sided sign-flip permutation test",
    "sign": "one-sided sign test",
}
_PAIRED = ("mcnemar", "sign-flip", "sign")
_CORRECTION_LABELS = {"holm": "Holm", "bonferroni": "Bonferroni", "none": "uncorrected"}


def _fmt_p(p: float) -> str:
    if p >= 0.0001 or p == 0.0:
        return f"{p:.4f}"
    return f"{p:.1e}"


def _fmt_delta(d: float) -> str:
    r = round(d, 1)
    if r < 0:
        return f"\u2212{-r:.1f}"
    return f"+{r:.1f}" if r > 0 else "\u00b10.0"


def _cell(task: str, length: int, mode: str) -> str:
    where = f"{task} @ {format_length(length)}"
    return where if mode == "native" else f"{where} [{mode}]"


def _line(c: Comparison) -> str:
    label = _TEST_LABELS.get(c.test, c.test)
    if c.exact_fallback:
        label += " (small counts)"
    relation = "<" if c.p_value < c.alpha else "\u2265"
    if c.significant:
        verdict = "significant drop"
    elif c.delta < 0 and c.p_value < c.alpha:
        verdict = f"significant but under the minimum drop of {c.min_drop:.1f} points, ignored"
    elif c.delta < 0:
        verdict = "within noise"
    elif c.delta > 0:
        verdict = "improved"
    else:
        verdict = "unchanged"
    if c.paired:
        effect = f"mean change {_fmt_delta(c.effect or 0.0)} points per question"
        if c.effect_ci is not None:
            effect += f" (95% CI {_fmt_delta(c.effect_ci[0])} to {_fmt_delta(c.effect_ci[1])})"
        label = f"paired on {c.paired} shared questions ({c.lost} lost, {c.gained} gained; {effect}), {label}"
    elif c.note:
        label = f"{label} [{c.note}]"
    return (
        f"{_cell(c.task, c.length, c.mode)}: {c.baseline_score:.1f} \u2192 {c.current_score:.1f} "
        f"({_fmt_delta(c.delta)}, n={c.baseline_n}/{c.current_n}), {label} "
        f"p={_fmt_p(c.p_value)} {relation} {c.alpha:g} ({_CORRECTION_LABELS.get(c.correction, c.correction)}) "
        f"\u2014 {verdict}"
    )


def summarize_regressions(comparisons: Iterable[Comparison], *, verbose: bool = True) -> tuple[bool, list[str]]:
    """``(passed, lines)``: passed is false when any cell is a significant drop.

    Lines: a one-line header, then one line per compared cell (only the significant
    drops when ``verbose`` is false), then one per cell that could not be compared
    (read from ``comparisons.not_compared`` when it is a :class:`Comparisons`).
    """
    comps = list(comparisons)
    not_compared: tuple[NotCompared, ...] = getattr(comparisons, "not_compared", ())
    drops = [c for c in comps if c.significant]
    passed = not drops
    lines: list[str] = []
    if comps:
        c0 = comps[0]
        unpaired = [c for c in comps if not c.paired]
        requested = "two-proportion-z" if any(c.test == "two-proportion-z" or c.exact_fallback for c in unpaired) else "fisher"
        method = _TEST_LABELS[requested]
        if any(c.exact_fallback for c in unpaired):
            method += ", Fisher exact where counts are small"
        n_paired = len(comps) - len(unpaired)
        if n_paired and not unpaired:
            method = "paired on the shared questions: exact McNemar for 0/1 scores, sign-flip permutation test for partial credit"
        elif n_paired:
            method = (f"paired on the shared questions in {n_paired} cell{'s' if n_paired != 1 else ''} "
                      f"(exact McNemar / sign-flip permutation test), unpaired {method} in {len(unpaired)}")
        lines.append(
            f"baseline: {len(comps)} cell{'s' if len(comps) != 1 else ''} compared, "
            f"{len(drops)} significant drop{'s' if len(drops) != 1 else ''} "
            f"({method}, alpha={c0.alpha:g}, "
            + ("no multiple-comparison correction" if c0.correction == "none"
               else f"{_CORRECTION_LABELS.get(c0.correction, c0.correction)} correction over {len(comps)}")
            + (f", minimum drop {c0.min_drop:g} points" if c0.min_drop else "")
            + ")"
        )
    else:
        lines.append("baseline: no cell in common with the baseline; nothing compared")
    for c in comps:
        if verbose or c.significant:
            lines.append(_line(c))
    for nc in not_compared:
        lines.append(f"{_cell(nc.task, nc.length, nc.mode)}: not compared ({nc.reason})")
    return passed, lines


def _summary_dict(summary: Any) -> Mapping[str, Any] | None:
    if summary is None:
        return None
    to_dict = getattr(summary, "to_dict", None)
    if callable(to_dict):
        return to_dict()
    if isinstance(summary, Mapping):
        return summary
    raise RulerUsageError("summary", summary, "pass a report's 'summary' (or one mode of it, or a LengthSummary).")


def _fmt_eff(value: Any, per_length: Mapping[str, Any] | None) -> str:
    if value is None:
        lengths = [int(k) for k in (per_length or {})]
        return f"<{format_length(min(lengths))}" if lengths else "none"
    return format_length(int(value))


def effective_length_drop(baseline_summary: Any, current_summary: Any) -> str | None:
    """A line saying the effective length fell, or ``None`` when it did not.

    Accepts a report's whole ``summary`` (``{"native": ..., "mapreduce": ...}``), one
    mode of it (a ``LengthSummary.to_dict()`` shape) or a ``LengthSummary``. ``None``
    (no length above the threshold) counts as shorter than any length. Informational:
    the regression decision is made per cell by :func:`compare`.
    """
    base, cur = _summary_dict(baseline_summary), _summary_dict(current_summary)
    if base is None or cur is None:
        return None
    if "per_length" in base or "per_length" in cur:
        pairs = [("native", base, cur)]
    else:
        pairs = [(m, _summary_dict(base.get(m)), _summary_dict(cur.get(m))) for m in ("native", "mapreduce")]
    parts = []
    for mode, b, c in pairs:
        if not b or not c or "effective_length" not in b or "effective_length" not in c:
            continue
        be, ce = b["effective_length"], c["effective_length"]
        if be is None:
            continue
        if ce is None or int(ce) < int(be):
            text = f"effective length ({mode}) dropped: {_fmt_eff(be, b.get('per_length'))} \u2192 {_fmt_eff(ce, c.get('per_length'))}"
            bt, ct = b.get("threshold"), c.get("threshold")
            if bt is not None and ct is not None and float(bt) != float(ct):
                text += f" (thresholds differ: {float(bt):g} vs {float(ct):g})"
            elif ct is not None:
                text += f" (threshold {float(ct):g})"
            parts.append(text)
    return "; ".join(parts) + " [informational]" if parts else None
