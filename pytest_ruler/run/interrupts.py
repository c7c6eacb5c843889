"""Ctrl-C while the run's outputs are written: held until they are, never a lost report.

    the first Ctrl-C (a KeyboardInterrupt) ──HeldInterrupts.hold()──► SIGINT now only counted
        (a second Ctrl-C while the reports and the JUnit XML are written is held, and said once)
        a third one while held ──► KeyboardInterrupt at once (the way out of a write that hangs)
    the outputs are written ──HeldInterrupts.release()──► the handler that was there before is back;
        returns how many Ctrl-C were held (the caller stops the run with what it says)

Only the main thread can handle signals: ``hold`` elsewhere holds nothing. ``say`` is called
from the signal handler, so it writes to the process's stderr descriptor directly
(``os.write``), never through a buffered stream that the interrupted code may be writing to.

Public names: ``HeldInterrupts``.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["HeldInterrupts"]

HELD_NOTICE = "ruler: Ctrl-C held until the reports are written (Ctrl-C again to stop at once, losing them)"


def _stderr(line: str) -> None:
    try:
        os.write(2, ("\n" + line + "\n").encode("utf-8", "replace"))  # pytest's progress line may be open
    except OSError:
        pass


class HeldInterrupts:
    """SIGINT held while outputs are written (see the module docstring)."""

    def __init__(self, say: Callable[[str], Any] = _stderr, *, most: int = 1):
        self.say = say
        self.most = most  # SIGINT held at most; the next one stops at once
        self.held = 0
        self._previous: Any = None
        self._holding = False

    @property
    def holding(self) -> bool:
        return self._holding

    def hold(self) -> bool:
        """From now on a SIGINT is counted, not raised (until ``release``); False where it cannot be (not the main thread)."""
        if self._holding:
            return True
        if threading.current_thread() is not threading.main_thread():
            return False
        self._previous = signal.signal(signal.SIGINT, self._on_signal)
        self._holding = True
        return True

    def _on_signal(self, signum: int, frame: Any) -> None:
        if self.held >= self.most:  # asked once more: stop now
            self.release()
            raise KeyboardInterrupt
        self.held += 1
        if self.held == 1:
            self.say(HELD_NOTICE)

    def release(self) -> int:
        """The handler from before ``hold`` is back; returns how many SIGINT were held."""
        if self._holding:
            signal.signal(signal.SIGINT, self._previous if self._previous is not None else signal.default_int_handler)
            self._holding = False
        return self.held
