"""``--ruler-stop-when-decided``: measure only what the gate's verdict needs, and stop once it is decided.

    RulerConfig ──make_plan(config)──► (GatePlan | None, the header's line): the plan, or why the run
        measures everything (no gate, a baseline, a relative mark, map-reduce, a shard, a length the
        run does not reach)
    GatePlan.order(lengths) ──► the lengths in the order that can decide the gate soonest (make_items
        sorts the items by it); GatePlan.reads(length): whether the gate looks at that length at all
    needed(plan, expected, done, results, cell) ──► True, or why the item is not needed: the reason
        "not measured (decided without it): ..." (a pure function of what has been measured so far)
    Decider: the same, kept by the process that runs the items (plugin.items asks it before each item)

The two gates, and why the planned verdict is the full run's verdict on the same measurements:

- point gate (``--ruler-require-effective-length=L``): the effective length is the longest tested length
  whose Total (the mean over tasks) is above the mark (results.aggregate.effective_length), so the gate
  passes iff some length at or above L passes. Lengths below L never change it; the lengths at and above
  L are measured from L up, a whole length at a time, and the first one whose Total passes decides
  PASSED (the longer ones are not needed). When every one of them is below the mark, nothing is left.
- bound gate (``--ruler-gate-confidence``): the lower confidence bound is a fixed-sequence test in
  ascending length order (results.intervals.fixed_sequence_bound): it stops at the first length whose
  Total is not shown above the mark, and a length's test uses only that length's samples. So the lengths
  are measured from the shortest up to the first tested length at or above L; the first length not shown
  above the mark decides (the bound is below it, so below L: FAILED); when all of them are shown above,
  the bound reaches L (PASSED) and the longer lengths are not needed.

Either way the Total and the bound are computed by the functions the report uses (results.summary,
results.intervals) on the same items, and a length is judged only once all its items finished. An
errored item fails the verdict whatever else is measured (results.gate): the rest is not needed. What
a planned run does not have: the items it did not measure cannot error, and its effective length is
the longest length it measured (the full table would show whether longer lengths pass too).

Under xdist each worker sees only its own results, so only the static part of the plan applies there
(the lengths the gate never reads are not run); every item of a length the gate reads runs.

Public names: ``GatePlan``, ``Decider``, ``NOT_MEASURED``, ``decided``, ``make_plan``, ``needed``, ``plan_lines``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

from ..lengths import format_length
from ..results.aggregate import mean_over_tasks, passes
from ..results.intervals import effective_length_bounds, pooled_cells
from ..results.item import ItemResult
from ..results.summary import cell_scores
from ..results.verdict import NOT_MEASURED

__all__ = ["Decider", "GatePlan", "NOT_MEASURED", "decided", "make_plan", "needed", "plan_lines"]

POINT, BOUND = "point", "bound"
Cell = tuple[str, int, int]  # (task, length, seed) of a native item


@dataclass(frozen=True)
class GatePlan:
    """What the gate reads, in the order that decides it soonest (see the module docstring)."""

    rule: str  # POINT | BOUND
    required: int  # L, the required effective length
    lengths: tuple[int, ...]  # the lengths the gate reads, in the order they are measured
    threshold: float  # the Total's mark, in points
    confidence: float | None = None  # BOUND: the level

    @property
    def target(self) -> int:
        """The shortest tested length at or above the required one."""
        return min(L for L in self.lengths if L >= self.required)

    def reads(self, length: int) -> bool:
        return length in self.lengths

    def order(self, length: int) -> tuple[int, int]:
        """Sort key: the lengths the gate reads in plan order, then the others (never run)."""
        return (0, self.lengths.index(length)) if length in self.lengths else (1, length)

    def unread(self, length: int) -> str:
        """Why an item at a length the gate never reads is not needed."""
        if self.rule == POINT:
            why = f"the point gate at {format_length(self.required)} reads only the lengths at and above it"
        else:
            why = (f"the {100 * self.confidence:g}% bound gate at {format_length(self.required)} reads only the lengths "
                   f"up to {format_length(self.target)}")
        return f"{NOT_MEASURED}: {format_length(length)} is not needed ({why})"

    def describe(self) -> str:
        shown = ", ".join(format_length(L) for L in self.lengths)
        if self.rule == POINT:
            return (f"point gate at {format_length(self.required)}: measures {shown}, in that order, a length at a time, "
                    "and stops at the first whose Total passes")
        return (f"{100 * self.confidence:g}% bound gate at {format_length(self.required)}: measures {shown}, in that order, "
                "and stops at the first length not shown above the mark")


def make_plan(config: Any, tested: Sequence[int] | None = None) -> tuple[GatePlan | None, str | None]:
    """(the plan, the header's line) for ``config`` (a RulerConfig); (None, line) when the option is on
    but the run measures everything, the line saying why; (None, None) when the option is off."""
    if not getattr(config, "stop_when_decided", False):
        return None, None
    lengths = sorted(set(tested if tested is not None else config.lengths))
    full = "ruler: --ruler-stop-when-decided: every item runs ("
    required = config.required_effective_length
    if config.baseline is not None:
        return None, full + "planning a baseline comparison is not supported yet: the full set is measured)"
    if config.mapreduce or config.required_mapreduce_effective_length is not None:
        return None, full + "planning map-reduce items is not supported yet)"
    if not isinstance(config.threshold, (int, float)):
        return None, full + f"--ruler-threshold={config.threshold} is resolved at the run's end, from the whole table)"
    if config.shard is not None:
        return None, full + "a shard's verdict is decided at merge)"
    if required is None:
        return None, full + "no --ruler-require-effective-length: without a gate there is nothing to decide early)"
    if not lengths or required > max(lengths):
        return None, full + f"no tested length reaches the required {format_length(required)})"
    if config.gate_confidence is None:
        plan = GatePlan(POINT, required, tuple(L for L in lengths if L >= required), float(config.threshold))
    else:
        target = min(L for L in lengths if L >= required)
        plan = GatePlan(BOUND, required, tuple(L for L in lengths if L <= target), float(config.threshold),
                        float(config.gate_confidence))
    return plan, f"ruler: --ruler-stop-when-decided: {plan.describe()}"


def plan_lines(config: Any, *, xdist: bool = False) -> list[str]:
    """The run header's line on ``--ruler-stop-when-decided`` (none when it is off)."""
    plan, line = make_plan(config)
    if line is None:
        return []
    if plan is not None and xdist:
        line += ("; under xdist each worker sees only its own results, so only the lengths the gate never reads "
                 "are left out: every item of the others runs")
    return [line]


def _complete(length: int, expected: Iterable[Cell], done: set[Cell]) -> bool:
    return all(c in done for c in expected if c[1] == length)


def decided(plan: GatePlan, expected: Sequence[Cell], done: set[Cell], results: Sequence[ItemResult]) -> str | None:
    """Why the verdict is decided by what was measured (``results``, of the ``done`` cells of the
    ``expected`` ones), or None while it is open."""
    native = [r for r in results if r.mode == "native"]
    errored = next((r for r in native if r.error is not None), None)
    if errored is not None:
        return f"{errored.task} @ {format_length(errored.length)} errored: the verdict fails whatever else is measured"
    scores, _ = cell_scores(native, "native")
    if plan.rule == POINT:
        for length in plan.lengths:
            if not _complete(length, expected, done):
                return None
            total = mean_over_tasks({t: {length: s[length]} for t, s in scores.items() if length in s}).get(length)
            if total is not None and passes(total, plan.threshold):
                return f"the gate passed at {format_length(length)}: Total {total:.1f} > {plan.threshold:g}"
        return f"every length from {format_length(plan.required)} up is below the mark"
    prefix = []
    for length in plan.lengths:
        if not _complete(length, expected, done):
            break
        prefix.append(length)
    if not prefix:
        return None
    cells = {t: {L: v for L, v in ls.items() if L in prefix} for t, ls in pooled_cells(native, "native").items()}
    cells = {t: ls for t, ls in cells.items() if ls}
    tasks = sorted(t for t, ls in cells.items() if set(ls) == set(prefix))
    bound, _ = effective_length_bounds(cells, scores, plan.threshold, plan.confidence, total_tasks=tasks)
    level = f"{100 * plan.confidence:g}% lower confidence bound"
    if bound is None or bound < prefix[-1]:
        stop = format_length(min(L for L in prefix if bound is None or L > bound))
        return f"{stop} is not shown above the mark, so the {level} is below {format_length(plan.required)}"
    if len(prefix) == len(plan.lengths):
        return f"the {level} reached {format_length(bound)}"
    return None


def needed(plan: GatePlan, expected: Sequence[Cell], done: set[Cell], results: Sequence[ItemResult],
           cell: Cell, *, dynamic: bool = True) -> bool | str:
    """True when the item ``cell`` is needed; else the reason it is not (``NOT_MEASURED: ...``).
    ``dynamic`` False (an xdist worker): only the lengths the gate never reads are left out."""
    if not plan.reads(cell[1]):
        return plan.unread(cell[1])
    if not dynamic:
        return True
    why = decided(plan, expected, done, results)
    return True if why is None else f"{NOT_MEASURED}: {format_length(cell[1])} is not needed ({why})"


@dataclass
class Decider:
    """``needed`` over this process's items as they run (plugin.items)."""

    plan: GatePlan
    dynamic: bool = True  # False under xdist: each worker sees only its own results
    expected: list[Cell] | None = None  # the selected native items' cells (set at the first item)
    done: set[Cell] = field(default_factory=set)
    results: list[ItemResult] = field(default_factory=list)
    _memo: tuple[tuple[int, int], str | None] | None = field(default=None, repr=False)

    def expect(self, cells: Iterable[Cell]) -> None:
        if self.expected is None:
            self.expected = list(cells)

    def needed(self, cell: Cell) -> bool | str:
        if not self.plan.reads(cell[1]) or not self.dynamic or self.expected is None:  # before the first item: static only
            return needed(self.plan, self.expected or [], self.done, self.results, cell, dynamic=False)
        state = (len(self.done), len(self.results))
        if self._memo is None or self._memo[0] != state:  # decided once per item that ended (a bound costs a betting test)
            self._memo = (state, decided(self.plan, self.expected, self.done, self.results))
        why = self._memo[1]
        return True if why is None else f"{NOT_MEASURED}: {format_length(cell[1])} is not needed ({why})"

    def finished(self, cell: Cell, result: ItemResult | None = None) -> None:
        """An item ended: with its result, or none (skipped: it has no cell in the table)."""
        self.done.add(cell)
        if result is not None:
            self.results.append(result)

    def window(self, current: Cell, cells: Iterable[Cell]) -> list[Cell]:
        """Of the items after ``current``, those the engine's queue may fetch ahead for: needed now and
        at the same length (a later length may not be needed once this one is judged)."""
        if not self.dynamic:
            return [c for c in cells if self.plan.reads(c[1])]
        return [c for c in cells if c[1] == current[1] and self.needed(c) is True]
