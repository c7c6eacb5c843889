"""The run's end, kept: a Ctrl-C or SIGTERM at the end, or another plugin's full disk, costs no report and no verdict.

pytest ends a session in ``pytest_sessionfinish``: xdist's controller tears its workers down, the run
plugin's implementation (:class:`~pytest_ruler.plugin.terminal.RulerPlugin`: the report, the verdict,
our outputs), then junitxml's (``--junitxml``), and, in the terminal reporter's wrapper around them
all, the terminal summary (Table 3, the gate lines, the verdict line). Two objects wrap that, on the controller:

    HeldCtrlC (its run.interrupts.HeldInterrupts)
        the run's end begins ──hold()──► a SIGINT or SIGTERM is held (said once), not raised:
            pytest_runtest_logfinish of the last item (pytest's "[100%]": as many items finished as
            were collected; under xdist the workers still shut down after it), pytest_runtestloop's
            end, pytest_sessionfinish (the outermost wrapper) and a first interrupt
            (pytest_keyboard_interrupt: the stop came mid-run, the report is partial)
        the verdict is settled (RunRecord.finish ──settle()──► the stop held so far)
        pytest_sessionfinish, after the outputs and the terminal summary ──release()──► a stop held
            meanwhile ends the run now (pytest.exit with the session's exit status; see below)
        one stop request more than it holds ──► KeyboardInterrupt at once; inside the session's end it
            becomes pytest.exit(AT_ONCE, "interrupted"), so the engine is still closed (pytest_unconfigure)
    OutputErrors
        pytest_sessionfinish (the innermost wrapper, inside the terminal reporter's) ──► an OSError from a
            plugin's session end (junitxml writing to a full disk) goes to ``lost(session, what, error)``: one end-of-run
            error of the run (``RULER ERROR: writing the JUnit XML PATH: OSError: ...``, the run fails), and
            the terminal summary still prints; any other error, or one the run cannot take, is raised

What a stop at the run's end means (every item had finished: the measurements are complete). Held
before the verdict is settled, it is a stop the user asked for: the verdict is NOT DECIDED on every
surface (the JSON's ``verdict``, the Markdown, JUnit, the terminal's ``ruler verdict:`` line) and the
exit status is 2, pytest's "interrupted", which with a gate is also the verdict's "not decided". It is
not PASSED or FAILED because a run told to stop (CI cancelled it, ``timeout`` ran out, a user pressed
Ctrl-C) must not exit as if it had been left to finish, and because whether the signal came a second
before or after the last item would otherwise decide a release. Nothing measured is lost: the report
says ``"complete": true`` and ``"interrupted": true``, and ``pytest-ruler gate`` decides it from the
JSON. (An errored item still fails the verdict: a failure no more measuring can undo; the exit status
is then the verdict's, 1.) Held after the verdict was settled, while the outputs are written, it
changes nothing they say: they are written as settled, the run ends with their exit status, and the
terminal says the stop came after the verdict. A stop after a first interrupt ends the run as interrupted.

Public names: ``AT_ONCE``, ``HeldCtrlC``, ``OutputErrors``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from ..run.interrupts import HeldInterrupts

__all__ = ["AT_ONCE", "HeldCtrlC", "OutputErrors"]

AT_ONCE = "a second stop request came while the reports were written: stopped at once, the reports may be lost"


class HeldCtrlC:
    """From the run's end (or a first interrupt) to its last output, SIGINT and SIGTERM are held
    (see the module docstring)."""

    def __init__(self, held: HeldInterrupts | None = None):
        self.held = held or HeldInterrupts()
        self.session: pytest.Session | None = None
        self.interrupted = False  # a stop reached pytest before the end (a KeyboardInterrupt)
        self._finished: set[str] = set()

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        self.session = session

    def pytest_runtest_logfinish(self, nodeid: str, location: Any) -> None:
        """pytest's "[100%]": the last collected item finished (as pytest's progress counts them)."""
        if self.session is None or self.held.holding:
            return
        self._finished.add(nodeid)
        if 0 < self.session.testscollected <= len(self._finished):
            self.held.hold()

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> Any:
        try:
            return (yield)
        finally:
            self.held.hold()  # the items are done (or stopped): the run's end begins

    @pytest.hookimpl(tryfirst=True)
    def pytest_keyboard_interrupt(self, excinfo: Any) -> None:
        self.interrupted = True
        self.held.hold()

    def settle(self) -> str | None:
        """For RunRecord.finish: the verdict is settled now; the stop held before it (named), or None."""
        return self.held.settle()

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: Any) -> Any:
        self.held.hold()
        try:
            result = yield
        except KeyboardInterrupt:
            at_once = self.held.stopped_at_once
            self.held.release()
            if at_once:  # asked twice: stop, but through pytest, so the session still closes the engine
                pytest.exit(AT_ONCE, returncode=pytest.ExitCode.INTERRUPTED)
            raise
        except BaseException:
            self.held.release()
            raise
        if self.held.release():
            pytest.exit(self._why(), returncode=self._status(session))
        return result

    def _why(self) -> str:
        what = self.held.first
        if self.interrupted:
            return f"a second {what} came while the reports were written: they are complete; stopping"
        if self.held.late:
            return f"{what} came after the verdict was settled: the reports are written as settled; stopping"
        return f"{what} came at the run's end: the reports are written; stopping (interrupted)"

    def _status(self, session: pytest.Session) -> int:
        """The run's exit status: the session's once the run's end weighed the stop (settle), else interrupted."""
        if self.held.settled is None:
            return pytest.ExitCode.INTERRUPTED
        return session.exitstatus

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
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: Any) -> Any:
        try:
            return (yield)
        except OSError as exc:
            if not self.lost(session, _writer(exc, self.config), exc):
                raise
            return None
