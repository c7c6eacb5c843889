"""What this process runs after the current item: the plan the engine's queue fetches ahead for.

    pytest_runtest_protocol(item, nextitem) ──upcoming(...)──► the native standard-suite cells
        this process will run after ``item``, in order ──► RulerSession.queue.ahead(cells)

Without xdist the process runs its collection in order: the plan is the items after this
one (``Plan``, built once at collection). An xdist worker collects everything but runs
only what the controller hands it, a chunk at a time (``--dist load``): its plan is
``nextitem`` followed by the indices still waiting in the worker's queue. pytest-xdist has
no public call for that queue, so ``worker_pending`` reads it through the worker
plugin's ``torun`` queue (its ``lock()`` gives the waiting indices) and falls back to
``nextitem`` alone when that is not there (another xdist version). Items stolen back by
the controller (``--dist worksteal``) after their answers were fetched cost nothing
more: the answers are in the shared cache.

Public names: ``Plan``, ``worker_pending``.
"""

from __future__ import annotations

from typing import Any, Iterable, Sequence

__all__ = ["Plan", "worker_pending"]


def _cell(item: Any) -> tuple | None:
    from .items import RulerItem

    if isinstance(item, RulerItem) and item.mode == "native":
        return item.task, item.length, item.seed
    return None


def _cells(items: Iterable[Any]) -> list[tuple]:
    return [c for c in map(_cell, items) if c is not None]


def worker_pending(config: Any) -> list[int] | None:
    """The item indices an xdist worker has been handed and not started (None: unknown)."""
    for plugin in config.pluginmanager.get_plugins():
        # xdist runs its worker module through execnet (as __channelexec__): known by its class name
        if type(plugin).__name__ == "WorkerInteractor" and hasattr(plugin, "torun"):
            try:
                with plugin.torun.lock() as waiting:
                    return [i for i in waiting if isinstance(i, int)]
            except Exception:
                return None
    return None


class Plan:
    """The order this process runs its items in (see the module docstring)."""

    def __init__(self, items: Sequence[Any], *, worker: bool):
        self.items = list(items)
        self.worker = worker
        self._position = {id(item): n for n, item in enumerate(self.items)}
        self._cells = [_cell(i) for i in self.items]

    def upcoming(self, config: Any, item: Any, nextitem: Any) -> list[tuple]:
        """The native cells this process runs after ``item`` (with ``--ruler-stop-when-decided``, only
        those the verdict still needs, at the running item's length: run.decided.Decider.window)."""
        from .items import DECIDER_KEY

        cells = self._upcoming(config, item, nextitem)
        decider = config.stash.get(DECIDER_KEY, None)
        current = _cell(item)
        if decider is None or current is None:
            return cells
        return decider.window(current, cells)

    def _upcoming(self, config: Any, item: Any, nextitem: Any) -> list[tuple]:
        if self.worker:
            pending = worker_pending(config)
            following = [nextitem] if nextitem is not None else []
            if pending is not None:
                following += [self.items[i] for i in pending if 0 <= i < len(self.items)]
            return _cells(following)
        n = self._position.get(id(item))
        if n is None:
            return _cells([nextitem]) if nextitem is not None else []
        return [c for c in self._cells[n + 1:] if c is not None]
