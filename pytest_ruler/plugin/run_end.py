"""The run's end, kept: a second Ctrl-C or another plugin's full disk costs no report and no verdict.

pytest ends a session in ``pytest_sessionfinish``: the run plugin's implementation
(:class:`~pytest_ruler.plugin.terminal.RulerPlugin`: the report, the verdict, our outputs),
then junitxml's (``--junitxml``), and, in the terminal reporter's wrapper around them all,
the terminal summary (Table 3, the gate lines). Two objects wrap that, on the controller:

    HeldCtrlC
        pytest_keyboard_interrupt (tryfirst: the first Ctrl-C) ──► run.interrupts.HeldInterrupts.hold()
        pytest_sessionfinish (the outermost wrapper) ──► after the outputs and the terminal summary: release;
            a Ctrl-C held meanwhile stops the run now (pytest.exit, exit status "interrupted")
    OutputErrors
        pytest_sessionfinish (the innermost wrapper, inside the terminal reporter's) ──► an OSError from a
            plugin's session end (junitxml writing to a full disk) goes to ``lost(session, what, error)``: one end-of-run
            error of the run (``RULER ERROR: writing the JUnit XML PATH: OSError: ...``, the run fails), and
            the terminal summary still prints; any other error, or one the run cannot take, is raised

Public names: ``HeldCtrlC``, ``OutputErrors``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from ..run.interrupts import HeldInterrupts

__all__ = ["HeldCtrlC", "OutputErrors"]

STOPPED = "a second Ctrl-C came while the reports were written: they are complete; stopping"


class HeldCtrlC:
    """From the first Ctrl-C to the end of the session's outputs, a Ctrl-C is held (see the module docstring)."""

    def __init__(self, held: HeldInterrupts | None = None):
        self.held = held or HeldInterrupts()

    @pytest.hookimpl(tryfirst=True)
    def pytest_keyboard_interrupt(self, excinfo: Any) -> None:
        self.held.hold()

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_sessionfinish(self, session: Any, exitstatus: Any) -> Any:
        try:
            result = yield
        except BaseException:
            self.held.release()
            raise
        if self.held.release():
            pytest.exit(STOPPED, returncode=pytest.ExitCode.INTERRUPTED)
        return result

    def pytest_unconfigure(self, config: Any) -> None:
        self.held.release()  # a session that never reached its end (the hold is released there otherwise)


def _writer(exc: BaseException, config: Any) -> str:
    """What was being written when ``exc`` was raised: the JUnit XML (junitxml's frame), or a plugin's session end."""
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_globals.get("__name__") == "_pytest.junitxml":
            return f"writing the JUnit XML {getattr(config.option, 'xmlpath', None) or ''}".rstrip()
        tb = tb.tb_next
    return "a plugin's pytest_sessionfinish"


class OutputErrors:
    """An OSError of a plugin's session end becomes one end-of-run error (see the module docstring).

    ``lost(session, what, exc)`` records it and says whether the run took it (False: raised as before)."""

    def __init__(self, config: Any, lost: Callable[[Any, str, BaseException], bool]):
        self.config = config
        self.lost = lost

    @pytest.hookimpl(wrapper=True, trylast=True)
    def pytest_sessionfinish(self, session: Any, exitstatus: Any) -> Any:
        try:
            return (yield)
        except OSError as exc:
            if not self.lost(session, _writer(exc, self.config), exc):
                raise
            return None
