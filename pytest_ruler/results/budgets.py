"""What happened to each sample's tokens: thinking, truncations, and cells a budget failed.

A thinking model spends tokens on thinking before it answers. Under a task's small answer
budget it can be cut off before it answers: a 0 that measures the budget, not the model's
long context. So no truncation is averaged in silently: every answered sample has one
outcome (:data:`pytest_ruler.engines.thinking.OUTCOMES`), counted per item, per cell and
shown under Table 3, and a failing cell whose failures are mostly thinking cut by the budget
is marked :data:`MARK` in the table, with the option that fixes it in the notes and the gate.

Data flow::

    an item's completions + sample scores ──item_thinking(...)──► ItemResult.thinking
        {"outcomes": {outcome: n}, "thinking_tokens", "answer_tokens", "think_budget",
         "budget_failures": failing samples cut inside their thinking, "budget_limited": bool}
        ({} when there is nothing to say: no thinking, no truncation, no think budget)
    a mode's ItemResults ──cell_outcomes(items)──► {task: {length: the same, summed over seeds}}
        ──limited_cells(items)──► {(task, length)} failing cells a budget failed (marked MARK)
        ──outcome_notes(items)──► the lines under the table
        ──budget_cause(items)──► the clause the gate's reason and an item's message add

The rule for ``budget_limited``: at least half of the item's failing samples (score below 1,
errored and over-length samples included: they have no outcome) ran out of tokens inside
their thinking (``thinking_truncated``). An item whose ``error`` is set is never a budget's
failure (``limited_cells``, ``budget_cause`` and the cell's mark leave it out). An answer cut short
(``answer_truncated``) is counted and shown, not flagged: the model had begun to answer
within RULER's own answer budget.

Public names: ``MARK``, ``budget_cause``, ``cell_outcomes``, ``item_thinking``, ``limited_cells``, ``outcome_notes``,
``summary_outcomes`` (the JSON summary's ``outcomes``).
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping, Sequence

from ..engines.thinking import OUTCOMES
from ..lengths import format_length
from .notation import ordered_tasks

__all__ = ["MARK", "budget_cause", "cell_outcomes", "item_thinking", "limited_cells", "outcome_notes", "summary_outcomes"]

MARK = "§"
_LABELS = {"answered": "answered", "thinking_truncated": "thinking truncated", "answer_truncated": "answer truncated",
           "empty_answer": "empty answer", "end_missing": "end marker missing"}


def item_thinking(completions: Sequence[Any], scores: Sequence[float], think_budget: int | None) -> dict[str, Any]:
    """An item's thinking and truncation counts (see the module docstring); {} when there is nothing to say."""
    outcomes = {o: 0 for o in OUTCOMES}
    thinking = answer = failing = cut = 0
    for c, s in zip(completions, scores):
        o = getattr(c, "outcome", None)
        if s < 1.0:  # every failing sample, an errored or over-length one (no outcome) too
            failing += 1
            cut += o == "thinking_truncated"
        if o is None:
            continue
        outcomes[o] += 1
        thinking += int(getattr(c, "thinking_tokens", 0) or 0)
        answer += max(0, int(c.completion_tokens) - int(getattr(c, "thinking_tokens", 0) or 0))
    if think_budget is None and not thinking and outcomes["answered"] + outcomes["empty_answer"] == sum(outcomes.values()):
        return {}
    return {"outcomes": outcomes, "thinking_tokens": thinking, "answer_tokens": answer, "think_budget": think_budget,
            "budget_failures": cut, "budget_limited": bool(cut) and 2 * cut >= failing}


def _items(items: Iterable[Any]) -> list[Any]:
    return [r for r in items if getattr(r, "thinking", None)]


def cell_outcomes(items: Iterable[Any]) -> dict[str, dict[int, dict[str, Any]]]:
    """Per task and length, the items' counts summed over seeds (only cells with any)."""
    out: dict[str, dict[int, dict[str, Any]]] = {}
    for r in _items(items):
        t = r.thinking
        cell = out.setdefault(r.task, {}).setdefault(int(r.length), {"outcomes": {o: 0 for o in OUTCOMES}, "thinking_tokens": 0,
                                                                     "answer_tokens": 0, "budget_failures": 0, "failed_items": 0,
                                                                     "budget_limited": False, "think_budget": t.get("think_budget")})
        for o in OUTCOMES:
            cell["outcomes"][o] += int((t.get("outcomes") or {}).get(o, 0))
        for k in ("thinking_tokens", "answer_tokens", "budget_failures"):
            cell[k] += int(t.get(k) or 0)
        if not r.passed:
            cell["failed_items"] += 1
            if getattr(r, "error", None) is None:  # an errored item failed on its error, never on a budget
                cell["budget_limited"] = cell["budget_limited"] or bool(t.get("budget_limited"))
    return out


def limited_cells(items: Iterable[Any]) -> set[tuple[str, int]]:
    """The cells (task, length) with a failing item whose failures a budget caused: marked MARK."""
    return {(task, L) for task, ls in cell_outcomes(items).items() for L, c in ls.items() if c["budget_limited"]}


def _budget_option(items: Sequence[Any]) -> str:
    budgets = {r.thinking.get("think_budget") for r in items}
    now = max((b for b in budgets if b is not None), default=None)
    if now is None:
        return "pass --ruler-think-budget=N (thinking tokens on top of the task's answer budget; it is not set)"
    return f"raise --ruler-think-budget (now {now})"


def budget_cause(items: Iterable[Any]) -> str | None:
    """The clause that names a budget as the cause of failures (None: no cell was budget-limited)."""
    items = _items(items)
    cells = sorted(limited_cells(items), key=lambda c: (c[1], c[0]))
    if not cells:
        return None
    cut = sum(r.thinking.get("budget_failures", 0) for r in items
              if (r.task, int(r.length)) in set(cells) and getattr(r, "error", None) is None)
    where = ", ".join(f"{t}@{format_length(L)}" for t, L in cells)
    return (f"a token budget, not the model, caused these failures: {cut} failing sample{'s' if cut != 1 else ''} ran out of "
            f"tokens inside their thinking ({MARK}: {where}); {_budget_option(items)}")


def outcome_notes(items: Iterable[Any]) -> list[str]:
    """Lines under Table 3: each cell's outcomes, and what MARK means when a cell has it."""
    items = _items(items)
    cells = cell_outcomes(items)
    if not cells:
        return []
    head = "outcomes per cell (" + " / ".join(_LABELS[o] for o in OUTCOMES) + "; thinking tokens over its samples):"
    out = [head]
    for task in ordered_tasks(list(cells)):
        for L in sorted(cells[task]):
            c = cells[task][L]
            counts = "/".join(str(c["outcomes"][o]) for o in OUTCOMES)
            mark = f" {MARK}" if c["budget_limited"] else ""
            out.append(f"  {task}@{format_length(L)}: {counts}; thinking {c['thinking_tokens']} tokens{mark}")
    cause = budget_cause(items)
    if cause:
        out.append(f"{MARK} {cause}")
    return out


def summary_outcomes(items: Iterable[Any]) -> dict[str, dict[str, Mapping[str, Any]]]:
    """The JSON summary's ``outcomes``: per task, per length (as a string key), the cell's counts."""
    return {t: {str(L): c for L, c in sorted(ls.items())} for t, ls in cell_outcomes(items).items()}
