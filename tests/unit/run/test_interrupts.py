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
