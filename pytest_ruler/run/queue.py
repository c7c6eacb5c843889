"""The engine's queue, kept full across items: each engine call carries the running item's
next batch and the next batches of the items this process runs after it.

Data flow::

    plugin, as each item starts ──EngineQueue.ahead(cells)──► the native items this process
        runs next, in order (without xdist: the rest of the collection; an xdist worker: the
        items it has been handed, see plugin.plan)
    runner.run_native ──EngineQueue.run(work)──► rounds, until ``work`` is done:
        a round takes one batch from each open ``Work`` of the window, in order: the running
        item first, then the upcoming ones, up to ``items`` open items (--ruler-batch-items)
        and, past the running item's batch, ``TOKENS_IN_FLIGHT`` prompt tokens
        ──prefix_order──► the round's requests sorted by token ids (shared prefixes adjacent,
                          for the engine's prefix cache), the answers put back in order
        ──complete(requests, label)──► one engine call (the session's: cache hits, each
                          answer cached as it arrives)
        ──Work.receive(answers, from_cache)──► each item's own answers, as they belong
    a later item ──EngineQueue.take(cell)──► its Work, with the answers fetched for it already

A ``Work`` is one native item's samples in flight (``runner.NativeWork``): ``next_requests()``
gives its next batch (None when it has nothing more to send: all samples sent, or decided by
``--ruler-sequential``), ``receive`` takes that batch's answers, ``done`` says it needs no more
rounds. An item decided early sends nothing more; answers already fetched for it stay in the
cache, unscored. If a round fails (the engine raised), the other items of that round are
forgotten (they start over when they run, from the cache where it has their answers) and
the running item's batch is sent again alone, as one item at a time would have sent it: an
item errors only on an engine call of its own prompts. An interrupt is not retried.

Nothing here knows pytest, tasks or engines: the works come from ``make_work(cell)`` (None: the
item is not one to fetch ahead, e.g. over the context or missing its data), the engine call is
``complete``.

Public names: ``Cell``, ``EngineQueue``, ``TOKENS_IN_FLIGHT``, ``prefix_order``.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Protocol, Sequence

__all__ = ["Cell", "EngineQueue", "TOKENS_IN_FLIGHT", "Work", "prefix_order"]

Cell = tuple  # (task, length, seed)

# prompt tokens one engine call carries past the running item's batch: bounds the memory of
# prompts held for upcoming items (about 32 prompts at 128K, 1,000 at 4K)
TOKENS_IN_FLIGHT = 1 << 22


class Work(Protocol):
    cell: Cell
    done: bool

    def next_requests(self) -> list | None: ...

    def receive(self, completions: Sequence[Any], from_cache: Sequence[bool]) -> None: ...


def prefix_order(requests: Sequence[Any]) -> list[int]:
    """The order to send ``requests`` in: by prompt token ids, so prompts sharing a prefix are
    adjacent (RULER's haystacks open alike across a task's samples); stable for equal prompts."""
    return sorted(range(len(requests)), key=lambda i: tuple(requests[i].prompt_ids))  # already a tuple: no copy


class EngineQueue:
    """The window of items whose batches share engine calls (see the module docstring)."""

    def __init__(self, items: int, make_work: Callable[[Cell], Work | None],
                 complete: Callable[[Sequence[Any], str], tuple[list, list]], tokens: int = TOKENS_IN_FLIGHT):
        self.items = max(1, int(items))
        self.make_work = make_work
        self.complete = complete
        self.tokens = tokens
        self.upcoming: list[Cell] = []
        self.works: dict[Cell, Work] = {}  # started ahead of their item, by cell
        self.rounds = 0  # engine calls made (one per round)

    def ahead(self, cells: Iterable[Cell]) -> None:
        """The native items this process runs after the current one, in order."""
        self.upcoming = list(cells)

    def take(self, cell: Cell) -> Work | None:
        """The work started ahead for ``cell``, if any (it leaves the queue)."""
        return self.works.pop(cell, None)

    def run(self, work: Work, label: str, *, ahead: bool = True) -> Work:
        """Rounds until ``work`` is done; with ``ahead``, upcoming items share them."""
        while not work.done:
            self._round(work, label, ahead)
        return work

    def _window(self, current: Work) -> list[Work]:
        window: list[Work] = []
        for cell in self.upcoming:
            if len(window) >= self.items - 1:
                break
            if cell == current.cell:
                continue
            work = self.works.get(cell)
            if work is None:
                try:
                    work = self.make_work(cell)
                except Exception:  # the item fails on its own, when it runs
                    work = None
                if work is None:
                    continue
                self.works[cell] = work
            if not work.done:
                window.append(work)
        return window

    def _round(self, current: Work, label: str, ahead: bool) -> None:
        own = current.next_requests()
        if own is None:  # nothing left to send: done
            return
        requests = list(own)
        shares: list[tuple[Work, int, int]] = [(current, 0, len(requests))]
        budget = self.tokens - sum(len(r.prompt_ids) for r in requests)
        for work in self._window(current) if ahead and self.items > 1 else []:
            if budget <= 0:
                break
            try:
                batch = work.next_requests()
            except Exception:  # generating its samples failed: it fails on its own, when it runs
                self.works.pop(work.cell, None)
                continue
            if not batch:
                continue
            shares.append((work, len(requests), len(requests) + len(batch)))
            requests += batch
            budget -= sum(len(r.prompt_ids) for r in batch)
        more = len(shares) - 1
        try:
            answers, cached = self._send(requests, f"{label} + {more} more item{'s' * (more != 1)}" if more else label)
        except Exception as first:
            for work, _, _ in shares[1:]:  # they start over when they run
                self.works.pop(work.cell, None)
            if not more:
                raise
            # another item's prompt may be what failed: the running item's batch alone, as one item
            # at a time would have sent it (its answers that arrived are in the cache now); if that
            # fails too, the item fails with the first error (an engine that failed to load says why)
            try:
                answers, cached = self._send(own, label)
            except Exception:
                raise first from None
            shares = shares[:1]
        except BaseException:  # an interrupt: nothing more is sent
            for work, _, _ in shares[1:]:
                self.works.pop(work.cell, None)
            raise
        for work, start, end in shares:
            work.receive(answers[start:end], cached[start:end])

    def _send(self, requests: Sequence[Any], label: str) -> tuple[list, list]:
        """One engine call, its prompts in ``prefix_order``; the answers in ``requests``' order."""
        order = prefix_order(requests)
        got, hits = self.complete([requests[i] for i in order], label)
        self.rounds += 1
        answers: list[Any] = [None] * len(requests)
        cached: list[bool] = [False] * len(requests)
        for pos, i in enumerate(order):
            answers[i], cached[i] = got[pos], hits[pos]
        return answers, cached
