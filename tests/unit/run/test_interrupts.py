"""run.interrupts.HeldInterrupts: a Ctrl-C while the outputs are written is held, not raised."""

from __future__ import annotations

import os
import signal

import pytest

from pytest_ruler.run.interrupts import HELD_NOTICE, HeldInterrupts


def _ctrl_c() -> None:
    os.kill(os.getpid(), signal.SIGINT)  # delivered to the main thread before kill returns to Python code


@pytest.fixture(autouse=True)
def _python_ctrl_c():
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, before)


def test_a_ctrl_c_while_held_is_counted_said_once_and_the_old_handler_comes_back():
    said: list[str] = []
    held = HeldInterrupts(said.append)
    assert held.hold()
    _ctrl_c()  # would raise KeyboardInterrupt here without the hold
    assert held.release() == 1
    assert said == [HELD_NOTICE]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    with pytest.raises(KeyboardInterrupt):
        _ctrl_c()


def test_one_more_ctrl_c_than_it_holds_stops_at_once():
    held = HeldInterrupts(lambda line: None, most=1)
    held.hold()
    _ctrl_c()
    with pytest.raises(KeyboardInterrupt):
        _ctrl_c()
    assert not held.holding and signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_nothing_is_held_off_the_main_thread():
    import threading

    answers: list[bool] = []
    t = threading.Thread(target=lambda: answers.append(HeldInterrupts().hold()))
    t.start()
    t.join()
    assert answers == [False] and signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_our_sigterm_is_held_too_and_named_and_comes_back():
    from pytest_ruler.run.interrupts import notice, stop_on_sigterm

    before = signal.getsignal(signal.SIGTERM)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    restore = stop_on_sigterm()
    try:
        ours = signal.getsignal(signal.SIGTERM)
        said: list[str] = []
        held = HeldInterrupts(said.append)
        held.hold()
        os.kill(os.getpid(), signal.SIGTERM)  # would raise KeyboardInterrupt (or end the process) without the hold
        assert said == [notice(signal.SIGTERM)] and said[0].startswith("ruler: SIGTERM held until the reports are written")
        assert held.settle() == "SIGTERM" and not held.late
        assert held.release() == 1 and signal.getsignal(signal.SIGTERM) is ours
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGTERM)  # stop_on_sigterm's own behaviour is back
    finally:
        restore()
        signal.signal(signal.SIGTERM, before)


def test_a_stop_held_after_the_verdict_was_settled_is_late_and_another_programs_sigterm_is_left_alone():
    def theirs(signum, frame):
        pass

    before = signal.signal(signal.SIGTERM, theirs)
    try:
        held = HeldInterrupts(lambda line: None)
        held.hold()
        assert signal.getsignal(signal.SIGTERM) is theirs  # not ours to hold
        assert held.settle() is None
        _ctrl_c()
        assert held.late and held.first == "Ctrl-C" and held.settle() is None  # only the first settle counts
        held.release()
    finally:
        signal.signal(signal.SIGTERM, before)


def test_the_stop_that_goes_past_the_hold_is_marked_as_stopped_at_once():
    held = HeldInterrupts(lambda line: None, most=1)
    held.hold()
    _ctrl_c()
    assert not held.stopped_at_once
    with pytest.raises(KeyboardInterrupt):
        _ctrl_c()
    assert held.stopped_at_once and held.held == 1
