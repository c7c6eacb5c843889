"""Work shared between items, held in two named objects instead of the session's fields.

``CrossItemBatches`` (``--ruler-batch-items=N``): the items this process will
run, in order. When an item starts, ``start(cell)`` names the next items of the
same length; their samples are generated now (``keep_inputs``) and their
prompts go to the engine in the same call as this item's. Answers fetched for
a later item wait in ``keep_answer`` until that item asks for them
(``take_answer``): they are engine calls of this run, not cache hits.

``SharedSamples``: a map-reduce twin answers the samples its native twin
generated; the native item leaves them here and the twin takes them. It holds
the last few items only, so a run whose twins are deselected keeps nothing.

Both are plain data with methods; neither knows about pytest or engines.

Public names: ``Cell``, ``CrossItemBatches``, ``SharedSamples``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

__all__ = ["Cell", "CrossItemBatches", "SharedSamples"]

Cell = tuple  # (task, length, seed)


@dataclass
class CrossItemBatches:
    """The plan of native items one process runs, and what was fetched ahead for them."""

    plan: list[Cell]
    size: int  # items per engine call (1: no cross-item batching)
    started: set = field(default_factory=set)
    inputs: dict = field(default_factory=dict)  # cell -> ItemInputs generated in an earlier item
    answers: dict = field(default_factory=dict)  # prediction key -> Completion fetched for a later item

    def start(self, cell: Cell, runnable: Callable[[str], bool]) -> list[Cell]:
        """Mark ``cell`` started; the next planned items of its length to send along with it."""
        self.started.add(cell)
        if self.size <= 1 or cell not in self.plan:
            return []
        group: list[Cell] = []
        for nxt in self.plan[self.plan.index(cell) + 1:]:
            if len(group) >= self.size - 1 or nxt[1] != cell[1]:
                break
            if nxt not in self.started and runnable(nxt[0]):
                group.append(nxt)
        return group

    def keep_inputs(self, cell: Cell, inputs: Any) -> None:
        self.inputs[cell] = inputs

    def take_inputs(self, cell: Cell) -> Any:
        return self.inputs.pop(cell, None)

    def keep_answer(self, key: str, completion: Any) -> None:
        self.answers[key] = completion

    def take_answer(self, key: str) -> Any:
        return self.answers.pop(key, None)


@dataclass
class SharedSamples:
    """Generated samples handed from a native item to its map-reduce twin (the last few only)."""

    capacity: int = 2
    held: dict = field(default_factory=dict)

    def keep(self, key: Any, inputs: Any) -> None:
        self.held.pop(key, None)
        self.held[key] = inputs
        while len(self.held) > self.capacity:
            self.held.pop(next(iter(self.held)))

    def take(self, key: Any) -> Any:
        return self.held.pop(key, None)
