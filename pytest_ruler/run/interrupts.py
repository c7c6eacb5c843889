"""Stop requests (Ctrl-C, SIGTERM) at the run's end: held until the outputs are written, never a lost report.

    SIGTERM (a CI job cancelled, ``timeout``) ──stop_on_sigterm()──► a KeyboardInterrupt, as Ctrl-C is
        (the first one; the handler then gives way to the default)
    the run's end begins (the last item finished, the test loop ended, the session's end, a first
    interrupt) ──HeldInterrupts.hold()──► SIGINT and SIGTERM are now counted, not raised:
        the first one held is said once ("ruler: Ctrl-C held until the reports are written (...)")
        one more than ``most`` ──► released, and KeyboardInterrupt at once (``stopped_at_once``: the way
            out of a write that hangs; the outputs may then be lost, as the notice says)
    the verdict is settled (run.outcome.RunRecord.finish) ──settle()──► the stop held before that moment
        (the run was asked to stop at its end: its verdict is not claimed), or None; one held after it
        changes no output (``late``)
    the outputs are written ──release()──► the handlers from before are back; returns how many were held
        (the caller stops the run, plugin.run_end.HeldCtrlC)

A SIGTERM is taken only where its handler is :func:`stop_on_sigterm`'s or the default (another
program's own handler is left alone). Only the main thread can handle signals: ``hold`` elsewhere
holds nothing. ``say`` is called from the signal handler, so it writes to the process's stderr
descriptor directly (``os.write``), never through a buffered stream the interrupted code may be
writing to.

Public names: ``HELD_NOTICE``, ``HeldInterrupts``, ``label``, ``notice``, ``stop_on_sigterm``.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["HELD_NOTICE", "HeldInterrupts", "label", "notice", "stop_on_sigterm"]


def label(signum: int) -> str:
    """How the terminal names a stop request: ``Ctrl-C`` (SIGINT), ``SIGTERM``."""
    return "Ctrl-C" if signum == signal.SIGINT else signal.Signals(signum).name


def notice(signum: int) -> str:
    """The line said once when the first stop request is held."""
    again = "Ctrl-C again" if signum == signal.SIGINT else "send it again"
    return f"ruler: {label(signum)} held until the reports are written ({again} to stop at once, losing them)"


HELD_NOTICE = notice(signal.SIGINT)


def _stderr(line: str) -> None:
    try:
        os.write(2, ("\n" + line + "\n").encode("utf-8", "replace"))  # pytest's progress line may be open
    except OSError:
        pass


def _sigterm_interrupt(signum: int, frame: Any) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # this handler works once; a hold takes SIGTERM from here
    raise KeyboardInterrupt("SIGTERM")


def stop_on_sigterm() -> Callable[[], None] | None:
    """SIGTERM raises KeyboardInterrupt, as Ctrl-C does, so the run stops the same way (its partial
    report written, its engine closed); only on the main thread and where nobody else handles SIGTERM.
    Returns what puts the default back (None: nothing was installed)."""
    if threading.current_thread() is not threading.main_thread() or signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        return None
    signal.signal(signal.SIGTERM, _sigterm_interrupt)
    return lambda: signal.signal(signal.SIGTERM, signal.SIG_DFL)


class HeldInterrupts:
    """SIGINT and SIGTERM held while outputs are written (see the module docstring)."""

    def __init__(self, say: Callable[[str], Any] = _stderr, *, most: int = 1):
        self.say = say
        self.most = most  # stop requests held at most; the next one stops at once
        self.signals: list[int] = []  # the ones held, in order
        self.settled: int | None = None  # how many were held when the verdict was settled
        self.stopped_at_once = False
        self._previous: dict[int, Any] = {}

    @property
    def holding(self) -> bool:
        return bool(self._previous)

    @property
    def held(self) -> int:
        return len(self.signals)

    @property
    def late(self) -> bool:
        """Every stop held came after the verdict was settled (so none changed an output)."""
        return bool(self.signals) and self.settled == 0

    @property
    def first(self) -> str | None:
        """The first stop request held, named (``label``), or None."""
        return label(self.signals[0]) if self.signals else None

    def hold(self) -> bool:
        """From now on SIGINT (and our SIGTERM) are counted, not raised, until ``release``; False where
        nothing can be held (not the main thread). Holding twice holds once."""
        if self._previous:
            return True
        if threading.current_thread() is not threading.main_thread():
            return False
        self._previous[signal.SIGINT] = signal.signal(signal.SIGINT, self._on_signal)
        if signal.getsignal(signal.SIGTERM) in (_sigterm_interrupt, signal.SIG_DFL):
            self._previous[signal.SIGTERM] = signal.signal(signal.SIGTERM, self._on_signal)
        return True

    def _on_signal(self, signum: int, frame: Any) -> None:
        if len(self.signals) >= self.most:  # asked once more: stop now
            self.stopped_at_once = True
            self.release()
            raise KeyboardInterrupt(label(signum))
        self.signals.append(signum)
        if len(self.signals) == 1:
            self.say(notice(signum))

    def settle(self) -> str | None:
        """The verdict is settled now: the stop request held before this moment (named), or None.
        Only the first call counts."""
        if self.settled is None:
            self.settled = len(self.signals)
        return label(self.signals[0]) if self.settled else None

    def release(self) -> int:
        """The handlers from before ``hold`` are back; returns how many stop requests were held."""
        for signum, previous in self._previous.items():
            if previous is None:  # not set from Python: Python's own Ctrl-C handler, the default otherwise
                previous = signal.default_int_handler if signum == signal.SIGINT else signal.SIG_DFL
            signal.signal(signum, previous)
        self._previous = {}
        return len(self.signals)
