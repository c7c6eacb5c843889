"""Progress of a long engine call: done/total and tokens per second.

On an interactive terminal the line is redrawn in place on stderr and erased
when the call ends, so pytest's own output is untouched. Elsewhere (CI logs,
xdist workers) a log record goes to the ``pytest_ruler`` logger at most every
``interval`` seconds — visible with ``--log-cli-level=INFO``.

Public names: ``Progress``.
"""

from __future__ import annotations

import logging
import os
import sys
import time

__all__ = ["Progress"]

log = logging.getLogger("pytest_ruler")


class Progress:
    def __init__(self, label: str, total: int, *, interval: float = 30.0, stream=None):
        self.label = label
        self.total = total
        self.done = 0
        self.tokens = 0
        self.started = time.perf_counter()
        self._last = self.started
        self.interval = interval
        self.stream = stream if stream is not None else sys.__stderr__
        worker = os.environ.get("PYTEST_XDIST_WORKER")
        self.live = bool(self.stream and getattr(self.stream, "isatty", lambda: False)() and not worker)
        self._drawn = False

    def line(self) -> str:
        elapsed = max(1e-9, time.perf_counter() - self.started)
        return f"{self.label}: {self.done}/{self.total} samples, {self.tokens / elapsed:,.0f} tok/s, {elapsed:.0f}s"

    def advance(self, tokens: int = 0) -> None:
        self.done += 1
        self.tokens += tokens
        now = time.perf_counter()
        if self.live:
            self.stream.write("\r\x1b[K" + self.line())
            self.stream.flush()
            self._drawn = True
        elif now - self._last >= self.interval:
            log.info(self.line())
            self._last = now

    def close(self) -> None:
        if self._drawn:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self._drawn = False
