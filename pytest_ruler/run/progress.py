"""Progress of a long engine call: a live bar on a terminal, plain lines elsewhere.

    RulerSession.complete ──► Progress(label, total, say=..., position=...)
        engine.generate(on_result) ──► Progress.advance(tokens)   (per answer)
        engine.on_progress         ──► Progress.working(...)      (within a batch, where the
                                                                   engine can say: hf per step)
        ticking thread (daemon)     ──► bar refresh, or a plain line via ``say``
    Progress.close()                ──► bar cleared, thread stopped (also on errors)

On an interactive terminal (``terminal_stream()``: the process's stderr when it
is a TTY, outside xdist workers) a tqdm bar shows the run position, prompts
done/total, tokens/s, elapsed and ETA. It is drawn on its own line below
pytest's current line and erased when the call ends, the cursor going back to
where pytest left it, so pytest's output is untouched. The stream is a copy of
stderr's descriptor taken when the session starts: pytest's output capture
redirects descriptor 2 while an item runs, and the bar must still reach the
terminal then.

Without a terminal (CI logs, xdist workers) ``say`` gets a plain line
``ruler: <position> <label>: <done>/<total> prompts, <elapsed>s, <rate> tok/s``
whenever nothing was said for ``interval`` seconds (default 30): the ticking
thread keeps the log moving while a batch of prompts is still being answered.
An engine that reports its work inside a batch (an ``on_progress`` attribute,
set by the session to ``working``; the hf engine calls it at each decoding
step) adds what is in flight, e.g. ``0/2 prompts (2 in the engine: 12 of at most
128 new tokens), 525s, 31 tok/s``; its tokens count in the rate at once.

Generating an item's samples can take longer than answering them (many samples, a fast
engine or the cache); ``generation_lines`` keeps the log moving then, at the same rate::

    runner (iter_samples) ──RulerSession.generating(samples, label, total)──► generation_lines
        ──► ``ruler: <position> generating samples: <label> <done>/<total>, <elapsed>s`` through ``say``
            after a sample, whenever nothing was said for ``interval`` seconds (any line counts)

Public names: ``Progress``, ``generation_lines``, ``terminal_stream``.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import threading
import time
from typing import Any, Callable, Iterable, Iterator, TypeVar

__all__ = ["Progress", "generation_lines", "terminal_stream"]

T = TypeVar("T")

log = logging.getLogger("pytest_ruler")

_BAR = "{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} prompts [{elapsed}<{remaining}{postfix}]"
_UNSET: Any = object()
_terminal: Any = _UNSET


def terminal_stream() -> Any:
    """The terminal the bar draws on (a copy of stderr's descriptor), or None.

    Decided once per process, on the first call: call it before pytest
    captures output (the session does, when it is made in ``pytest_configure``).
    """
    global _terminal
    if _terminal is _UNSET:
        _terminal = None
        err = sys.__stderr__
        if err is not None and not os.environ.get("PYTEST_XDIST_WORKER"):
            try:
                if err.isatty():
                    _terminal = os.fdopen(os.dup(err.fileno()), "w", buffering=1, encoding="utf-8", errors="replace")
            except (OSError, ValueError):
                _terminal = None
    return _terminal


def _is_tty(stream: Any) -> bool:
    try:
        return bool(stream is not None and stream.isatty())
    except (OSError, ValueError):
        return False


class _BarLine:
    """The file tqdm writes to: the bar's own line below the cursor, given back on close.

    On the first write the cursor makes room for a line below (ESC D scrolls if
    at the bottom, ESC M comes back, both keeping the column), saves its place
    (ESC 7) and moves down; ``release`` erases the bar and restores the place (ESC 8).
    """

    def __init__(self, stream: Any):
        self.stream = stream
        self.encoding = getattr(stream, "encoding", None)  # tqdm draws smooth blocks when it is UTF-8
        self.open = False

    def write(self, text: str) -> None:
        if not self.open:
            if not text.strip():  # tqdm erasing a bar that is not shown
                return
            self.stream.write("\x1bD\x1bM\x1b7\n")
            self.open = True
        self.stream.write(text)

    def flush(self) -> None:
        self.stream.flush()

    def fileno(self) -> int:  # tqdm reads the terminal's width from it
        return self.stream.fileno()

    def isatty(self) -> bool:
        return True

    def release(self) -> None:
        if self.open:
            self.stream.write("\r\x1b[K\x1b8")
            self.stream.flush()
            self.open = False


class Progress:
    """One engine call's progress (see the module docstring); use as a context manager or call ``close``."""

    def __init__(self, label: str, total: int, *, say: Callable[[str], None] | None = None, interval: float = 30.0,
                 stream: Any = _UNSET, position: str = "", since: float | None = None):
        self.label = label
        self.total = total
        self.position = position
        self.done = 0
        self.tokens = 0
        self._flight: tuple[int, int, int, int] | None = None  # (prompts, prompt tokens, new tokens each, most new)
        self.interval = interval
        self.started = time.perf_counter()
        self._last = self.started if since is None else since  # when the user last saw a line
        self.say = say if say is not None else log.warning
        if stream is _UNSET:
            stream = terminal_stream()
        self.live = _is_tty(stream) and not os.environ.get("PYTEST_XDIST_WORKER")
        self._lock = threading.RLock()
        self._stop = threading.Event()
        self._line: _BarLine | None = None
        self.bar = None
        if self.live:
            from tqdm import tqdm

            self._line = _BarLine(stream)
            # miniters=1: tqdm's monitor thread never redraws behind our lock
            self.bar = tqdm(total=total, desc=self.title, file=self._line, leave=False, dynamic_ncols=True,
                            mininterval=0.2, miniters=1, position=0, bar_format=_BAR)
        self._thread = threading.Thread(target=self._tick, name="ruler-progress", daemon=True)
        self._thread.start()

    @property
    def title(self) -> str:
        return f"{self.position} {self.label}" if self.position else self.label

    @property
    def rate(self) -> float:
        flight = 0
        if self._flight is not None:
            prompts, prompt_tokens, new, _ = self._flight
            flight = (prompt_tokens if new else 0) + new * prompts  # the prompts count once read (first step)
        return (self.tokens + flight) / max(1e-9, time.perf_counter() - self.started)

    @property
    def in_flight(self) -> str:
        """What the engine is working on inside its current batch, or "" (nothing said)."""
        if self._flight is None:
            return ""
        prompts, _, new, most = self._flight
        doing = f"{new} of at most {most} new tokens" if new else "reading the prompts"
        return f"{prompts} in the engine: {doing}"

    def line(self) -> str:
        elapsed = time.perf_counter() - self.started
        flight = f" ({self.in_flight})" if self._flight is not None else ""
        return f"ruler: {self.title}: {self.done}/{self.total} prompts{flight}, {elapsed:.0f}s, {self.rate:,.0f} tok/s"

    def working(self, prompts: int, prompt_tokens: int, new_tokens: int = 0, max_new_tokens: int = 0) -> None:
        """An engine's report from inside a batch: ``prompts`` prompts of ``prompt_tokens`` tokens
        in all are being answered, ``new_tokens`` generated for each so far (of at most
        ``max_new_tokens``). Cleared by the next ``advance``."""
        with self._lock:
            self._flight = (prompts, prompt_tokens, new_tokens, max_new_tokens)
            if self.bar is not None:
                self.bar.set_postfix_str(f"{self.rate:,.0f} tok/s, {self.in_flight}", refresh=False)

    def advance(self, tokens: int = 0) -> None:
        with self._lock:
            self.done += 1
            self.tokens += tokens
            self._flight = None
            if self.bar is not None:
                self.bar.set_postfix_str(f"{self.rate:,.0f} tok/s", refresh=False)
                self.bar.update(1)

    def _tick(self) -> None:
        period = min(1.0, self.interval / 3)
        while not self._stop.wait(period):
            with self._lock:
                if self._stop.is_set():
                    return
                if self.bar is not None:
                    self.bar.refresh()  # elapsed and ETA move while a batch is answered
                elif time.perf_counter() - self._last >= self.interval - period:  # a tick early, never late
                    self._last = time.perf_counter()
                    try:
                        self.say(self.line())
                    except Exception:  # a progress line is never worth failing the call
                        log.debug("progress line failed", exc_info=True)

    @contextlib.contextmanager
    def hidden(self) -> Iterator[None]:
        """Erase the bar while something else writes a line; the next tick draws it again.

        Also keeps that line from interleaving with the ticking thread's own.
        """
        with self._lock:
            if self._line is not None:
                self._line.release()
            yield

    def close(self) -> None:
        """Stop the thread and erase the bar; safe to call twice."""
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join()
        with self._lock:
            if self.bar is not None:
                self.bar.close()
                self.bar = None
            if self._line is not None:
                self._line.release()

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def generation_lines(samples: Iterable[T], *, label: str, total: int, say: Callable[[str], Any], interval: float = 30.0,
                     last_said: Callable[[], float] | None = None, position: str = "",
                     clock: Callable[[], float] = time.perf_counter) -> Iterator[T]:
    """``samples`` as they are generated; after each, a line through ``say`` when nothing was said
    for ``interval`` seconds (``last_said()``: when anything last was, on ``clock``; this line too)."""
    started = mine = clock()
    title = f"{position} generating samples: {label}" if position else f"generating samples: {label}"
    for done, sample in enumerate(samples, 1):
        now = clock()
        if now - max(mine, last_said() if last_said is not None else mine) >= interval:
            mine = now
            try:
                say(f"ruler: {title} {done}/{total}, {now - started:.0f}s")
            except Exception:  # a progress line is never worth failing the item
                log.debug("progress line failed", exc_info=True)
        yield sample
