"""Samples shared between an item and its map-reduce twin (engine calls shared between
items are ``run.queue``'s).

``SharedSamples``: a map-reduce twin answers the samples its native twin
generated; the native item leaves them here and the twin takes them. It holds
the last few items only, so a run whose twins are deselected keeps nothing.

Plain data with methods; it knows nothing of pytest or engines.

Public names: ``SharedSamples``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["SharedSamples"]


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
