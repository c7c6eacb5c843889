"""The progress line: redrawn in place on a terminal, periodic log records elsewhere."""

from __future__ import annotations

import io
import logging

from pytest_ruler.run.progress import Progress


class Tty(io.StringIO):
    def isatty(self):
        return True


def test_terminal_progress_is_redrawn_and_erased(monkeypatch):
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    out = Tty()
    p = Progress("vt[4096-seed0]", total=3, stream=out)
    p.advance(100)
    p.advance(100)
    assert "\r\x1b[K" in out.getvalue() and "vt[4096-seed0]: 2/3 samples" in out.getvalue() and "tok/s" in out.getvalue()
    p.close()
    assert out.getvalue().endswith("\r\x1b[K")


def test_non_terminal_progress_logs_at_intervals(caplog, monkeypatch):
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    caplog.set_level(logging.INFO, logger="pytest_ruler")
    p = Progress("niah[1024-seed0]", total=5, stream=io.StringIO(), interval=0.0)
    for _ in range(5):
        p.advance(10)
    p.close()
    lines = [r.getMessage() for r in caplog.records]
    assert lines[-1].startswith("niah[1024-seed0]: 5/5 samples")


def test_xdist_workers_never_draw(monkeypatch):
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw0")
    out = Tty()
    p = Progress("x", total=1, stream=out, interval=1e9)
    p.advance(1)
    p.close()
    assert out.getvalue() == ""
