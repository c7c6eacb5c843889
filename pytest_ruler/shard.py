"""Deterministic shards: which of N machines runs a collected item, and what a shard's report is.

    --ruler-shard=i/N ──parse_shard(where, raw)──► Shard(index=i, count=N)   (1 <= i <= N)
    a node id ──shard_of(nodeid, N)──► the shard (1..N) that runs it: sha256 of the node id's
        UTF-8 bytes, its first 8 bytes as an integer, modulo N, plus 1. It depends on the node
        id alone: not on collection order, on ``-n`` (each xdist worker selects the same items),
        on the Python process (``hash()`` is salted per process, so it is never used here) or on
        the machine. Every item is in exactly one shard.
    Shard.selects(nodeid): whether this shard runs it (plugin.shards deselects the others)
    Shard.entry(suite_settings(config)): the report's top-level ``shard`` entry: {"index", "count", "suite"}
        (the run's settings that choose and run its items, ``SUITE_SETTINGS``, so ``pytest-ruler
        merge`` can refuse shards of different runs)
    unmerged(fields): why a report with these top-level entries is not a whole run, or None:
        a shard report (``shard``) or a partial merge (``shards`` with ``missing`` shards).
        The gate (results.gate) says NOT DECIDED on such a report, naming ``pytest-ruler merge``.

Importing this module is cheap (the option spec parses ``--ruler-shard`` with it).

Public names: ``SUITE_SETTINGS``, ``Shard``, ``parse_shard``, ``shard_of``, ``suite_settings``, ``unmerged``.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .errors import RulerUsageError

__all__ = ["SUITE_SETTINGS", "Shard", "parse_shard", "shard_of", "suite_settings", "unmerged"]

_FORM = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")


@dataclass(frozen=True)
class Shard:
    """Shard ``index`` of ``count`` (both 1-based, as a CI matrix counts)."""

    index: int
    count: int

    def selects(self, nodeid: str) -> bool:
        return shard_of(nodeid, self.count) == self.index

    def entry(self, suite: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The report's ``shard`` entry."""
        return {"index": self.index, "count": self.count, "suite": dict(suite or {})}

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def parse_shard(where: str, raw: Any) -> Shard:
    """``i/N`` with 1 <= i <= N, e.g. ``--ruler-shard=2/4``; anything else is one usage error."""
    m = _FORM.match(str(raw))
    if m is None:
        raise RulerUsageError(where, raw, "write the shard as i/N, e.g. 1/4 ... 4/4 for four machines (i counts from 1)")
    index, count = int(m[1]), int(m[2])
    if count < 1 or not 1 <= index <= count:
        raise RulerUsageError(where, raw, f"the shard index must be between 1 and the count: 1/{max(count, 1)} ... "
                                          f"{max(count, 1)}/{max(count, 1)}")
    return Shard(index, count)


def shard_of(nodeid: str, count: int) -> int:
    """The shard (1..count) that runs the item ``nodeid`` (see the module docstring)."""
    digest = hashlib.sha256(nodeid.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % count + 1


#: the run's settings a shard's report records (``suite``): shards merge only when all of them agree
SUITE_SETTINGS = ("tasks", "lengths", "seeds", "samples", "depths", "sequential", "mapreduce", "no_suite",
                  # a thinking model's (run.reasoning): how its calls run and where its answer starts
                  "think_budget", "chat_template_kwargs", "think_start", "think_end")


def suite_settings(config: Any) -> dict[str, Any]:
    """The settings of a run (a ``RulerConfig``) that choose its items and how they run, as JSON values."""
    out: dict[str, Any] = {}
    for name in SUITE_SETTINGS:
        value = getattr(config, name, None)
        out[name] = list(value) if isinstance(value, (tuple, list)) else dict(value) if isinstance(value, Mapping) else value
    return out


def unmerged(fields: Mapping[str, Any]) -> str | None:
    """Why a report with these top-level entries is not a whole run (a shard, a partial merge), or None."""
    shard = fields.get("shard")
    if isinstance(shard, Mapping) and shard.get("count", 1) != 1:
        return (f"this is the report of shard {shard.get('index')}/{shard.get('count')} only; merge every shard's report "
                f"with `pytest-ruler merge SHARD.json ... --out merged.json` and gate the merged report")
    shards = fields.get("shards")
    if isinstance(shards, Mapping) and shards.get("missing"):
        missing = ", ".join(f"{i}/{shards.get('count')}" for i in shards["missing"])
        return (f"this is a partial merge (missing shard{'s' if len(shards['missing']) != 1 else ''} {missing}); "
                f"merge every shard's report with `pytest-ruler merge` and gate that")
    return None
