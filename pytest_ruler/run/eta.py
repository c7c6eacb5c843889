"""The run's estimate and ETA lines: prompt tokens when the items are known, an ETA after the first item.

    items known ({node id: (task, length, seed, mode)}) ──RunClock.items_known(cells)──► one line:
        the run's prompt tokens, an upper bound (samples x length per native item), and its map-reduce twins
    an item finished ──RunClock.item_done(results, finished, cells)──► once, after the first that read
        prompts: the ETA (seconds per prompt token so far x the budget left, scaled by the share of
        their budget the finished items filled)

Seconds are wall-clock since the items were known, less this process's model load (an xdist
controller cannot see its workers' loads). Lines go through ``RulerSession.say`` (the
progress lines count them).

Public names: ``RunClock``.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

__all__ = ["RunClock"]

Cell = tuple[str, int, int, str]  # (task, length, seed, mode)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _duration(seconds: float) -> str:
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds // 60 % 60:02d}m"


class RunClock:
    """Says the estimate once and the ETA once (see the module docstring)."""

    def __init__(self, session: Any):
        self.session = session
        self.started: float | None = None  # when the items were known
        self.estimate_said = False
        self.eta_said = False

    def _budget(self, cell: Cell | None) -> int:
        """An item's prompt tokens at most: samples x length (every prompt is filled up to its length budget)."""
        return 0 if cell is None else self.session.config.samples * cell[1]

    def items_known(self, cells: Mapping[str, Cell]) -> None:
        if self.estimate_said or not cells:
            return
        self.estimate_said = True
        self.started = time.perf_counter()
        native = [c for c in cells.values() if c[3] == "native"]
        twins = len(cells) - len(native)
        tokens = sum(self._budget(c) for c in native)
        samples = self.session.config.samples
        line = (f"ruler: {_count(len(native), 'item')}, at most {tokens:,} prompt tokens "
                f"({_count(samples, 'sample')} x length per item: an upper bound, every prompt is filled up to its length)")
        if twins:
            line += f"; {_count(twins, 'map-reduce twin')} read about as many again in chunks, plus their instructions"
        self.session.say(line + "; an ETA follows the first item")

    def item_done(self, results: Sequence[Any], finished: Iterable[str], cells: Mapping[str, Cell]) -> None:
        tokens = sum(r.prompt_tokens for r in results if r.error is None)
        if self.eta_said or self.started is None or tokens == 0:
            return
        self.eta_said = True
        finished = set(finished)
        done_budget = sum(self._budget(cells.get(i)) for i in finished) or 1
        left = [i for i in cells if i not in finished]
        elapsed = max(0.0, time.perf_counter() - self.started - self.session.engine_load_seconds)
        per_token = elapsed / tokens
        remaining = per_token * sum(self._budget(cells[i]) for i in left) * min(1.0, tokens / done_budget)
        clock = time.strftime("%H:%M", time.localtime(time.time() + remaining))
        self.session.say(f"ruler: ETA {clock} (about {_duration(remaining)} more for {_count(len(left), 'item')}, "
                         f"at {per_token * 1000:.3g} ms per prompt token so far)")
