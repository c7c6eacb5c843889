"""What a measurement cost: prompt and completion tokens and engine seconds, per item and for the run.

    an item's answers ──item_cost(prompt_tokens, completions)──► ItemResult.cost
        {"prompt_tokens", "completion_tokens", "engine_seconds"}
    the report's items ──cost_total(items)──► the report's top-level ``cost`` (the same sums, and ``items``:
        how many items it adds up)

The cost is the measurement's, not this process's: an answer read from the prediction cache counts
its tokens and the engine seconds it took when it was made (``cached`` on the item says how many
answers came from the cache), so two runs of the same items show the same cost whatever the cache
held, and a run that measures fewer items (``--ruler-stop-when-decided``) shows what it saved.
``engine_seconds`` adds each answer's engine time (a batch's time shared over its requests; a
server's latency per request, which overlap when requests run concurrently): it is engine work,
not wall time (the items' ``seconds`` are wall time). Items without a cost (an errored item, a
report from an older version) add nothing and are not counted.

Public names: ``cost_total``, ``item_cost``.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

__all__ = ["cost_total", "item_cost"]


def item_cost(prompt_tokens: int, completions: Iterable[Any]) -> dict[str, Any]:
    """One item's cost: its prompt tokens, and its answers' completion tokens and engine seconds
    (``completions``: objects or mappings with ``completion_tokens`` and ``seconds``)."""
    def get(c: Any, key: str) -> float:
        value = c.get(key) if isinstance(c, Mapping) else getattr(c, key, 0)
        return value or 0

    completions = list(completions)
    return {"prompt_tokens": int(prompt_tokens), "completion_tokens": int(sum(get(c, "completion_tokens") for c in completions)),
            "engine_seconds": round(float(sum(get(c, "seconds") for c in completions)), 3)}


def cost_total(items: Iterable[Any]) -> dict[str, Any] | None:
    """The run's cost: the sums over the items that carry one (None when none does)."""
    costs = [c for c in (getattr(r, "cost", None) for r in items) if c]
    if not costs:
        return None
    return {"prompt_tokens": sum(int(c.get("prompt_tokens", 0)) for c in costs),
            "completion_tokens": sum(int(c.get("completion_tokens", 0)) for c in costs),
            "engine_seconds": round(sum(float(c.get("engine_seconds", 0.0)) for c in costs), 3), "items": len(costs)}
