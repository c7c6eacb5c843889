"""Several endpoints behind one engine: prefix affinity with bounded load, work stealing, failover.

Nothing here speaks HTTP: :class:`EndpointPool` decides which endpoint answers which job
and runs the jobs on per-endpoint threads; the caller's ``send(endpoint, job)`` does the
talking (the ``openai`` engine's: :mod:`.openai_pool`).

Data flow::

    EndpointPool(names, limits) ── at most ``limits[e]`` requests in flight at e, each on a thread of
        e's; threads start only when work waits that no idle thread can take (``_grow``), so a
        pool never holds more threads than requests it was given at once, however large the limits
    pool.run(jobs, send, on_done) ── each Job(index, key, tokens) is assigned an endpoint:
        key None (or affinity off)  → the least loaded endpoint
        key seen before             → the endpoint it went to (its prefix is in that cache),
                                      while that one's load is under the bound
        a new key                   → the first endpoint in the key's rendezvous order
                                      (``affinity_order``) whose load is under the bound
        bound: load/limit under (1 + SLACK) × (the pool's load + 1 + the call's jobs still to
        place) / (the pool's slots), or a free slot: a call's keys keep their endpoints, none
        takes much more than its share
    per endpoint: its slots take its own queue first; an idle slot steals from the back of the
        longest other queue (the jobs that would wait longest), so no endpoint idles while
        another has work waiting
    send raises EndpointDown ──► the endpoint is down for the rest of the run: the job and
        every job queued there move to the other endpoints (their keys too), counted in
        ``moved``; with no endpoint left the job is answered ``fail(job, reason)``
    on_done(job, result, endpoint) in the caller's thread, as each job finishes

Per endpoint, ``stats`` counts the requests answered, their seconds, the jobs moved off
it and why it went down. With xdist, each worker gets its own share of every endpoint's
slots (:func:`worker_limits`), so the whole run keeps the per-endpoint bound.

Public names: ``EndpointDown``, ``EndpointPool``, ``EndpointStats``, ``Job``, ``SLACK``,
``affinity_order``, ``worker_limits``.
"""

from __future__ import annotations

import hashlib
import queue
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable, Hashable, Sequence

__all__ = ["SLACK", "EndpointDown", "EndpointPool", "EndpointStats", "Job", "affinity_order", "worker_limits"]

SLACK = 0.25  # an endpoint may hold this much more than its share of the load before a key spills over


class EndpointDown(Exception):
    """The endpoint cannot answer at all (connection refused or dropped): move its work elsewhere."""


@dataclass
class Job:
    """One request to place: ``index`` (the caller's), ``key`` (its affinity group, e.g. an item's
    cell; None: none), ``payload`` (what ``send`` needs). ``moved_from``: endpoints that failed it."""

    index: int
    key: Hashable | None
    payload: Any = None
    moved_from: list[int] = field(default_factory=list)


@dataclass
class EndpointStats:
    requests: int = 0  # answered here
    seconds: float = 0.0  # summed over those requests
    moved: int = 0  # jobs that left this endpoint because it went down
    down: str | None = None  # why it went down, None while it is up


def affinity_order(key: Hashable, names: Sequence[str]) -> list[int]:
    """The endpoints in ``key``'s rendezvous order (highest random weight first): stable for a key,
    spread over keys, and removing an endpoint moves only the keys that preferred it."""
    def weight(e: int) -> bytes:
        return hashlib.sha256(f"{key!r}\x00{names[e]}".encode()).digest()

    return sorted(range(len(names)), key=weight, reverse=True)


def worker_limits(limit: int, endpoints: int, worker: int = 0, workers: int = 1) -> list[int]:
    """Worker ``worker`` of ``workers``' slots at each endpoint, so the workers together keep
    ``limit`` in flight per endpoint: ``limit // workers`` each, and endpoint ``e``'s remaining
    ``r = limit % workers`` slots to workers ``e*r, e*r + 1, ...`` (mod ``workers``), so the
    remainders of successive endpoints go to successive workers. With one slot per endpoint,
    worker k's slot is at endpoint k mod E. When the endpoints have fewer slots in all than
    there are workers, a worker left without one gets one at endpoint ``worker % endpoints``
    (one request over the bound beats a worker that cannot send)."""
    workers = max(1, workers)
    worker %= workers
    rest = limit % workers
    out = [limit // workers + (1 if (worker - e * rest) % workers < rest else 0) for e in range(endpoints)]
    if not any(out):
        out[worker % endpoints] = 1
    return out


class EndpointPool:
    """Jobs over endpoints (see the module docstring). ``close()`` ends the threads."""

    def __init__(self, names: Sequence[str], limits: Sequence[int], *, affinity: bool = True, slack: float = SLACK) -> None:
        if len(names) != len(limits) or not names:
            raise ValueError("one limit per endpoint, at least one endpoint")
        self.names = list(names)
        self.limits = [max(0, int(n)) for n in limits]
        self.affinity, self.slack = affinity, slack
        self.stats = [EndpointStats() for _ in names]
        self._queues: list[deque[tuple[Job, Any]]] = [deque() for _ in names]
        self._inflight = [0] * len(names)
        self._home: dict[Hashable, int] = {}  # the endpoint a key went to
        self._cv = threading.Condition()
        self._closed = False
        self._threads: list[threading.Thread] = []
        self._serving = [0] * len(names)  # threads of each endpoint, alive
        self._idle = [0] * len(names)  # threads of each endpoint without a job (each takes any queued job)

    # ------------------------------------------------------------------ placing

    def _up(self) -> list[int]:
        up = [e for e in range(len(self.names)) if self.stats[e].down is None and self.limits[e] > 0]
        return up or [e for e in range(len(self.names)) if self.stats[e].down is None]

    def _load(self, e: int) -> float:
        return (len(self._queues[e]) + self._inflight[e]) / max(1, self.limits[e])

    def _place(self, job: Job, coming: int = 0) -> int | None:
        """The endpoint for ``job`` (lock held; ``coming``: jobs of the same call placed after it, counted
        in the bound, so a call's keys keep their endpoints); None when every endpoint is down."""
        up = [e for e in self._up() if e not in job.moved_from] or self._up()
        if not up:
            return None
        least = min(up, key=lambda e: (self._load(e), e))
        if job.key is None or not self.affinity:
            return least
        slots = sum(max(1, self.limits[e]) for e in up)
        bound = (1 + self.slack) * (sum(len(self._queues[e]) + self._inflight[e] for e in up) + 1 + coming) / slots
        bound = max(bound, 1.0)  # a free slot is never too much load
        home = self._home.get(job.key)
        if home in up and self._load(home) < bound:
            return home
        for e in affinity_order(job.key, self.names):
            if e in up and self._load(e) < bound:
                if home not in up:
                    self._home[job.key] = e
                return e
        return least

    def _enqueue(self, job: Job, inbox: Any, coming: int = 0) -> bool:
        e = self._place(job, coming)
        if e is None:
            return False
        if job.key is not None and job.key not in self._home:
            self._home[job.key] = e
        self._queues[e].append((job, inbox))
        self._grow()
        return True

    def home(self, key: Hashable) -> int | None:
        """The endpoint ``key`` went to, if any."""
        with self._cv:
            return self._home.get(key)

    # ------------------------------------------------------------------ running

    def _grow(self) -> None:
        """Start threads for the jobs waiting that the idle threads cannot take (lock held): first at
        the endpoints they wait at, then, up to its limit, at any endpoint up (whose threads steal).
        So there are never more threads than jobs given at once, nor more at ``e`` than ``limits[e]``."""
        up = self._up()
        spare = sum(len(q) for q in self._queues) - sum(self._idle[e] for e in up)  # a down endpoint's threads end
        if spare <= 0 or self._closed:
            return
        for own in (True, False):
            for e in sorted(up, key=lambda e: -len(self._queues[e])):
                room = max(1, self.limits[e]) - self._serving[e]
                add = min(room, spare, len(self._queues[e])) if own else min(room, spare)
                for _ in range(max(0, add)):
                    self._spawn(e)
                spare -= max(0, add)
                if spare <= 0:
                    return

    def _spawn(self, e: int) -> None:
        self._serving[e] += 1
        self._idle[e] += 1  # free until it takes a job (it waits for the lock now)
        t = threading.Thread(target=self._serve, args=(e,), name=f"ruler-endpoint-{e}-{len(self._threads)}", daemon=True)
        self._threads.append(t)
        t.start()

    def _take(self, e: int) -> tuple[Job, Any] | None:
        """The next job for a free slot of ``e`` (lock held): its own queue, else the back of the longest other."""
        if self._queues[e]:
            return self._queues[e].popleft()
        others = [o for o in range(len(self.names)) if o != e and self._queues[o]]
        if not others:
            return None
        victim = max(others, key=lambda o: (len(self._queues[o]), -o))
        return self._queues[victim].pop()

    def _serve(self, e: int) -> None:
        try:
            self._serve_jobs(e)
        finally:  # it ends free (closed, or its endpoint down)
            with self._cv:
                self._serving[e] -= 1
                self._idle[e] -= 1

    def _serve_jobs(self, e: int) -> None:
        while True:
            with self._cv:
                taken = None
                while taken is None:
                    if self._closed or self.stats[e].down is not None:
                        return
                    taken = self._take(e)
                    if taken is None:
                        self._cv.wait()
                self._idle[e] -= 1
                self._inflight[e] += 1
            job, inbox = taken
            started = time.perf_counter()
            try:
                result = inbox.send(e, job)
            except EndpointDown as exc:
                with self._cv:
                    self._inflight[e] -= 1
                    self._idle[e] += 1
                    self._went_down(e, str(exc) or type(exc).__name__, job, inbox)
                    self._cv.notify_all()
                continue
            except BaseException as exc:  # a bug in send: the job still gets an answer
                result = inbox.fail(job, f"{type(exc).__name__}: {exc}")
            with self._cv:
                self._inflight[e] -= 1
                self._idle[e] += 1
                self.stats[e].requests += 1
                self.stats[e].seconds += time.perf_counter() - started
                self._cv.notify_all()
            inbox.put((job, result, e))

    def _went_down(self, e: int, reason: str, job: Job, inbox: Any) -> None:
        """Endpoint ``e`` failed ``job``: it is down; its queued jobs and ``job`` move (lock held)."""
        if self.stats[e].down is None:
            self.stats[e].down = reason
        moving = [(job, inbox)] + list(self._queues[e])
        self._queues[e].clear()
        self._home = {k: h for k, h in self._home.items() if h != e}
        for moved, box in moving:
            moved.moved_from.append(e)
            self.stats[e].moved += 1
            if not self._enqueue(moved, box):
                box.put((moved, box.fail(moved, f"every endpoint is down (the last: {self.names[e]}: {reason})"), None))

    def run(self, jobs: Sequence[Job], send: Callable[[int, Job], Any], fail: Callable[[Job, str], Any],
            on_done: Callable[[Job, Any, int | None], None], *, tick: float = 30.0,
            on_tick: Callable[[int], None] | None = None) -> None:
        """Run ``jobs``: ``send(endpoint, job)`` on the pool's threads (raise :class:`EndpointDown`
        to move the job), ``on_done(job, result, endpoint)`` here as each finishes, ``on_tick(left)``
        every ``tick`` seconds without one. ``fail(job, why)`` answers a job no endpoint can take."""
        inbox = _Inbox(send, fail)
        with self._cv:
            for n, job in enumerate(jobs):
                if not self._enqueue(job, inbox, len(jobs) - n - 1):
                    inbox.put((job, fail(job, "every endpoint is down"), None))
            self._cv.notify_all()
        left = len(jobs)
        try:
            while left:
                try:
                    job, result, e = inbox.get(timeout=tick)
                except queue.Empty:
                    if on_tick is not None:
                        on_tick(left)
                    continue
                left -= 1
                on_done(job, result, e)
        finally:
            if left:  # stopped early (an interrupt): what has not started is not sent
                with self._cv:
                    for q in self._queues:
                        kept = [(j, box) for j, box in q if box is not inbox]
                        q.clear()
                        q.extend(kept)

    def close(self) -> None:
        with self._cv:
            self._closed = True
            for q in self._queues:
                q.clear()
            self._cv.notify_all()
        deadline = time.monotonic() + 2.0  # a thread in a request ends with it (daemon threads: never waited on long)
        for t in self._threads:
            t.join(timeout=max(0.0, deadline - time.monotonic()))


class _Inbox(queue.Queue):
    """One ``run`` call's answers, with its ``send`` and ``fail``."""

    def __init__(self, send: Callable[[int, Job], Any], fail: Callable[[Job, str], Any]) -> None:
        super().__init__()
        self.send, self.fail = send, fail
