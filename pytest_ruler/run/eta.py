"""The run's estimate and ETA lines: prompt tokens when the items are known, an ETA after the first item.

    items known ({node id: (task, length, seed, mode)}) ──RunClock.items_known(cells)──► one line:
        the run's prompt tokens, an upper bound (samples x length per native item), and its map-reduce twins
    an item finished ──RunClock.item_done(results, finished, cells)──► the Work done so far (the finished
        items' and what this process's engine queue answered ahead) ──eta_seconds(elapsed, done, budget_left)──►
        once, after the first item the engine answered:
            ``ruler: ETA 14:05 (about 3m47s more for 77 items, at 0.4 ms per prompt token so far)``
        before that, once, while every prediction so far came from the cache (no ETA: nothing was timed):
            ``ruler: all from the cache so far (12 predictions), so no ETA yet``

What the ETA counts, and why (the first version was 30x off on a fast engine, and promised
minutes to a run the cache answered whole):

- The work done, not the items finished. The engine's queue (:mod:`pytest_ruler.run.queue`)
  sends the running item's batches together with those of up to ``--ruler-batch-items`` items
  after it, so when the first item ends the items after it are answered in part, or (a small
  run) in full. The answers this process's queue holds for later items (``session.queue.works``)
  count as done, and only the rest of their budget as left.
- The engine's time per prompt token: wall-clock seconds since the items were known, less this
  process's model load, over the prompt tokens the engine read. Answers from the prediction
  cache cost no engine time: their tokens are left out, and the items left are taken to be
  answered by the engine (a run resumed after an interrupt has its first items cached).
- The tokens left: the budget left (samples x length per item) times the share of its budget a
  prompt done filled.

Under xdist the controller runs no item: each worker reports its collection (``items_known``
once per process), and the controller sees neither the workers' model loads nor their queues.
There the time is the first finished item's own ``seconds`` (a worker's start-up is not work on
items) and every worker is taken to have done as much work as the finished items; the items a
worker answered ahead of their turn are still unseen, so the ETA errs high by up to the number
of items a worker answers at once (xdist hands a worker a few at a time; ``--ruler-batch-items``
bounds it). Lines go through ``RulerSession.say`` (the progress lines count them).

Before the first item, a second line turns the tokens into time when this engine's speed on this
processor with this number of processes was measured by an earlier run (:mod:`.throughput`,
kept beside the predictions), and says so when it was not.

Public names: ``RunClock``, ``Work``, ``eta_seconds``.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from . import throughput
from .seams import ClockSession

__all__ = ["RunClock", "Work", "eta_seconds"]

Cell = tuple[str, int, int, str]  # (task, length, seed, mode)


@dataclass(frozen=True)
class Work:
    """Prompts done: the tokens the engine read, the tokens whose answers came from the cache, how
    many answers came from the cache, and their budget (answers x length)."""

    engine_tokens: int = 0
    cached_tokens: int = 0
    cached_answers: int = 0
    budget: int = 0

    def __add__(self, other: "Work") -> "Work":
        return Work(self.engine_tokens + other.engine_tokens, self.cached_tokens + other.cached_tokens,
                    self.cached_answers + other.cached_answers, self.budget + other.budget)

    @classmethod
    def of(cls, tokens: int, answers: int, cached: int, length: int) -> "Work":
        """``answers`` prompts of ``tokens`` tokens in all, ``cached`` of them answered from the cache."""
        answers, cached = max(0, int(answers)), max(0, int(cached))
        from_cache = round(tokens * min(cached, answers) / answers) if answers else 0
        return cls(max(0, int(tokens) - from_cache), from_cache, cached, answers * int(length))


def eta_seconds(elapsed: float, done: Work, budget_left: int) -> float | None:
    """Seconds left: the engine's seconds per prompt token so far (``elapsed`` over ``done.engine_tokens``)
    times the tokens left (``budget_left``, scaled by the share of their budget the prompts done filled);
    None when the engine read nothing yet (every answer so far from the cache: no rate to go by)."""
    if done.engine_tokens <= 0:
        return None
    fill = min(1.0, (done.engine_tokens + done.cached_tokens) / done.budget) if done.budget > 0 else 1.0
    return max(0.0, elapsed) / done.engine_tokens * max(0, budget_left) * fill


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
    """Says the estimate once and the ETA once (see the module docstring). ``clock``: seconds, monotonic."""

    def __init__(self, session: ClockSession, clock: Callable[[], float] = time.perf_counter):
        self.session = session
        self.clock = clock
        self.started: float | None = None  # when the items were known
        self.processes = 0  # that run items: each reports them (items_known), an xdist worker each
        self.estimate_said = False
        self.cache_said = False
        self.eta_said = False
        self.speed_key: str | None = None  # this run's speed key (run.throughput), fixed when the items are known
        self.speed_folder: Any = None

    def _speed(self) -> tuple[Any, str | None]:
        """Where this run's speed is remembered and its key (run.throughput); (None, None) without the cache."""
        session = self.session
        if getattr(session.config, "no_cache", False) or getattr(session, "cache_dir", None) is None:
            return None, None
        from ..engines.processor import this_processor

        try:
            cpus = len(os.sched_getaffinity(0))
        except (AttributeError, OSError):
            cpus = os.cpu_count() or 1
        try:
            identity = session.known_identity()
        except Exception:  # an engine that cannot describe itself: no estimate, never an error
            return None, None
        processes = max(1, int(getattr(session, "workers", 0) or 1))
        return session.cache_dir, throughput.speed_key(identity, this_processor().model, cpus, processes)

    def _time_line(self, tokens: int) -> str:
        """The start-up line that turns the tokens into time, or says why it cannot."""
        if self.speed_folder is None:
            return "ruler: no time estimate: without the prediction cache no engine speed is kept between runs"
        if self.speed_key is None:
            return "ruler: no time estimate: this engine says what it is only once loaded, so no earlier speed applies"
        known = throughput.recall(self.speed_folder, self.speed_key)
        if known is None:
            return ("ruler: no time estimate yet: this engine's speed on this processor with this number of processes "
                    "was not measured here before (this run measures it)")
        rate = known["seconds_per_token"]
        return (f"ruler: time estimate: at most about {_duration(tokens * rate)} for those tokens at {rate * 1000:.3g} ms "
                f"per prompt token (this engine on this processor and process count, measured {known.get('measured', '?')} "
                f"over {known.get('tokens', 0):,} tokens; cached answers cost nothing)")

    def _budget(self, cell: Cell | None) -> int:
        """An item's prompt tokens at most: samples x length (every prompt is filled up to its length budget)."""
        return 0 if cell is None else self.session.config.samples * cell[1]

    def items_known(self, cells: Mapping[str, Cell]) -> None:
        if not cells:
            return
        self.processes += 1
        if self.estimate_said:
            return
        self.estimate_said = True
        self.started = self.clock()
        native = [c for c in cells.values() if c[3] == "native"]
        twins = len(cells) - len(native)
        tokens = sum(self._budget(c) for c in native)
        samples = self.session.config.samples
        line = (f"ruler: {_count(len(native), 'item')}, at most {tokens:,} prompt tokens "
                f"({_count(samples, 'sample')} x length per item: an upper bound, every prompt is filled up to its length)")
        if twins:
            line += f"; {_count(twins, 'map-reduce twin')} read about as many again in chunks, plus their instructions"
        self.session.say(line + "; an ETA follows the first item")
        self.speed_folder, self.speed_key = self._speed()
        self.session.say(self._time_line(tokens))

    def _ahead(self) -> dict[tuple[str, int, int], Work]:
        """What this process's engine queue answered for items that have not run yet, by (task, length, seed)."""
        queue = getattr(self.session, "queue", None)
        out = {}
        for cell, work in dict(getattr(queue, "works", None) or {}).items():
            answers = len(getattr(work, "completions", ()) or ())
            if answers:
                out[tuple(cell)] = Work.of(getattr(work, "prompt_tokens", 0), answers, getattr(work, "cached", 0), cell[1])
        return out

    def item_done(self, results: Sequence[Any], finished: Iterable[str], cells: Mapping[str, Cell]) -> None:
        if self.eta_said or self.started is None:
            return
        finished = set(finished)
        ahead = self._ahead()
        seen = sum([*(Work.of(r.prompt_tokens, r.samples, r.cached, r.length) for r in results), *ahead.values()], Work())
        left = [i for i in cells if i not in finished]
        budget_left = 0
        for i in left:
            task, length, seed, mode = cells[i]
            answered = ahead.get((task, length, seed)) if mode == "native" else None
            budget_left += max(0, self._budget(cells[i]) - (answered.budget if answered else 0))
        elapsed = self.clock() - self.started - self.session.engine_load_seconds
        done = seen
        if self.processes > 1 and results:  # xdist workers: see the module docstring
            elapsed = min(elapsed, max(r.seconds for r in results))
            budget_left = max(0, budget_left - (self.processes - 1) * seen.budget)
            done = sum([seen] * self.processes, Work())
        remaining = eta_seconds(elapsed, done, budget_left)
        if remaining is None:
            if seen.cached_answers and not self.cache_said:
                self.cache_said = True
                self.session.say(f"ruler: all from the cache so far ({_count(seen.cached_answers, 'prediction')}), so no ETA yet")
            return
        self.eta_said = True
        per_token = max(0.0, elapsed) / done.engine_tokens
        throughput.remember(self.speed_folder, self.speed_key, per_token, done.engine_tokens)
        clock = time.strftime("%H:%M", time.localtime(time.time() + remaining))
        self.session.say(f"ruler: ETA {clock} (about {_duration(remaining)} more for {_count(len(left), 'item')}, "
                         f"at {per_token * 1000:.3g} ms per prompt token so far)")
