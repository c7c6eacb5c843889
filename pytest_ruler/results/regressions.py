"""What a baseline comparison says: the pass/fail lines, and a note when the effective length fell.

    Comparisons (results.baseline.compare) ──summarize_regressions──► (passed, lines)
    baseline summary, current summary ──effective_length_drop──► an informational line or None

The lines are for a terminal: they name the cells that changed and sum up the rest.

- a header: how many cells were compared, how many are significant drops (and gains), the
  test, ``alpha`` and the multiple-comparison correction;
- one short line per cell worth reading, in this order: the significant drops (largest
  first; each line ends "significant drop"), the significant gains, then the cells that
  changed by at least ``NOISE_POINTS`` points or were a significant drop under the minimum
  drop (largest change first, at most ``CHANGED_SHOWN``). A line: both scores, the change,
  the sample counts, for a paired cell the questions lost and gained, the adjusted p-value
  of a change in that direction, the verdict;
- one line for the rest, e.g. ``baseline: 74 other cells unchanged (change under 5 points,
  none significant)``: a cell is unchanged when no test finds its change significant either
  way and it moved less than ``NOISE_POINTS`` (one question in 20);
- one line per reason some cells were not compared, and per reason a cell was not paired.

A gain is significant when the test of a drop, run the other way round, rejects at
``alpha`` after the same correction (for a paired cell, the exact sign test on its
questions gained against lost); a gain never fails anything. The JSON report's
``baseline.comparisons`` keep every cell with every number (the mean change per question
and its interval, the raw p-value, the test); the terminal and ``pytest-ruler gate
--baseline`` print these lines.

Public names: ``CHANGED_SHOWN``, ``NOISE_POINTS``, ``effective_length_drop``, ``summarize_regressions``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..errors import RulerUsageError
from ..lengths import format_length
from .baseline import Comparison, NotCompared
from .stats import adjust, fisher_exact_less, mcnemar_exact_less, two_proportion_z_less

__all__ = ["CHANGED_SHOWN", "NOISE_POINTS", "effective_length_drop", "summarize_regressions"]

NOISE_POINTS = 5.0  # a change under this many points that no test finds significant is "unchanged"
CHANGED_SHOWN = 10  # cells listed that changed by NOISE_POINTS or more without being significant; the rest are counted
_NAMES_SHOWN = 10  # cells named in a "not compared" line

_TEST_LABELS = {
    "two-proportion-z": "one-sided two-proportion z-test",
    "fisher": "one-sided Fisher exact test",
    "mcnemar": "one-sided exact McNemar test",
    "sign-flip": "one-sided sign-flip permutation test",
    "sign": "one-sided sign test",
}
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


def _plural(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _gain_p_values(comps: list[Comparison]) -> list[float]:
    """Per cell, the adjusted p-value of "the current score is higher": the cell's test of a drop with the
    two runs swapped (paired: the exact sign test on the questions gained against lost), corrected as its drops are."""
    raw = []
    for c in comps:
        try:
            if c.paired:
                p = mcnemar_exact_less(c.gained, c.lost)
            elif c.test == "fisher":
                p = fisher_exact_less(c.current_successes, c.current_n, c.baseline_successes, c.baseline_n)
            else:
                p = two_proportion_z_less(c.current_successes, c.current_n, c.baseline_successes, c.baseline_n)[0]
        except RulerUsageError:  # counts that no test takes (a hand-made comparison): no gain is established
            p = 1.0
        raw.append(p)
    return adjust(raw, comps[0].correction) if comps else []


def _line(c: Comparison, p: float, verdict: str) -> str:
    paired = f"; paired: {c.lost} lost, {c.gained} gained" if c.paired else ""
    return (f"{_cell(c.task, c.length, c.mode)}: {c.baseline_score:.1f} \u2192 {c.current_score:.1f} "
            f"({_fmt_delta(c.delta)}, n={c.baseline_n}/{c.current_n}{paired}), p={_fmt_p(p)} \u2014 {verdict}")


def _header(comps: list[Comparison], drops: int, gains: int) -> str:
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
        method = (f"paired on the shared questions in {_plural(n_paired, 'cell')} "
                  f"(exact McNemar / sign-flip permutation test), unpaired {method} in {len(unpaired)}")
    correction = ("no multiple-comparison correction" if c0.correction == "none"
                  else f"{_CORRECTION_LABELS.get(c0.correction, c0.correction)} correction over {len(comps)}")
    return (f"baseline: {_plural(len(comps), 'cell')} compared, {_plural(drops, 'significant drop')}"
            + (f", {_plural(gains, 'significant gain')}" if gains else "")
            + f" ({method}, alpha={c0.alpha:g}, {correction}"
            + (f", minimum drop {c0.min_drop:g} points" if c0.min_drop else "") + ")")


def _grouped(pairs: Iterable[tuple[str, str]], template: str) -> list[str]:
    """One line per reason: ``template`` filled with the count of cells and the reason, then the cells (the first ones)."""
    by_reason: dict[str, list[str]] = {}
    for reason, cell in pairs:
        by_reason.setdefault(reason, []).append(cell)
    out = []
    for reason, cells in by_reason.items():
        more = f" and {len(cells) - _NAMES_SHOWN} more" if len(cells) > _NAMES_SHOWN else ""
        out.append(template.format(cells=_plural(len(cells), "cell"), reason=reason) + f": {', '.join(cells[:_NAMES_SHOWN])}{more}")
    return out


def summarize_regressions(comparisons: Iterable[Comparison], *, verbose: bool = True) -> tuple[bool, list[str]]:
    """``(passed, lines)``: passed is false when any cell is a significant drop.

    Lines (see the module docstring): the header, the cells worth reading, one line for the
    unchanged rest, then the cells not compared (read from ``comparisons.not_compared`` when it
    is a :class:`Comparisons`) and those not paired, grouped by reason. With ``verbose`` false:
    the header and the significant drops only.
    """
    comps = list(comparisons)
    not_compared: tuple[NotCompared, ...] = getattr(comparisons, "not_compared", ())
    drops = sorted((c for c in comps if c.significant), key=lambda c: c.delta)
    gain_p = dict(zip(map(id, comps), _gain_p_values(comps)))
    gains = sorted((c for c in comps if not c.significant and c.delta > 0 and gain_p[id(c)] < c.alpha), key=lambda c: -c.delta)
    listed = {id(c) for c in drops + gains}
    changed = sorted((c for c in comps if id(c) not in listed and (abs(c.delta) >= NOISE_POINTS or (c.delta < 0 and c.p_value < c.alpha))),
                     key=lambda c: -abs(c.delta))
    if not comps:
        lines = ["baseline: no cell in common with the baseline; nothing compared"]
    else:
        lines = [_header(comps, len(drops), len(gains))]
    lines += [_line(c, c.p_value, "significant drop") for c in drops]
    if not verbose:
        return not drops, lines
    lines += [_line(c, gain_p[id(c)], "significant gain") for c in gains]
    for c in changed[:CHANGED_SHOWN]:
        if c.delta < 0 and c.p_value < c.alpha:
            lines.append(_line(c, c.p_value, f"significant but under the minimum drop of {c.min_drop:g} points, ignored"))
        else:
            lines.append(_line(c, c.p_value if c.delta < 0 else gain_p[id(c)], "not significant"))
    rest = len(comps) - len(drops) - len(gains) - len(changed)
    unlisted = len(changed) - CHANGED_SHOWN
    if unlisted > 0:
        lines.append(f"baseline: {_plural(rest + unlisted, 'other cell')}: {rest} unchanged (change under {NOISE_POINTS:g} points, "
                     f"none significant), {unlisted} more changed by {NOISE_POINTS:g} points or more, not significant")
    elif rest:
        lines.append(f"baseline: {_plural(rest, 'other cell')} unchanged (change under {NOISE_POINTS:g} points, none significant)")
    lines += _grouped(((nc.reason, _cell(nc.task, nc.length, nc.mode)) for nc in not_compared), "{cells} not compared ({reason})")
    lines += _grouped(((c.note.removeprefix("unpaired: "), _cell(c.task, c.length, c.mode)) for c in comps if c.note and not c.paired),
                      "{cells} compared unpaired because {reason}")
    return not drops, lines


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
