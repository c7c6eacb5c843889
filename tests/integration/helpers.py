"""Shared helpers of the pytester integration tests."""

from __future__ import annotations

import json

import pytest

SCRIPTED = ["--ruler-model=smollm2-135m", "--ruler-backend=scripted"]
XDIST = [pytest.param([], id="n0"), pytest.param(["-n", "2"], id="n2")]


def run(pytester, *args):
    # in-process (fast); xdist workers are still real subprocesses
    return pytester.runpytest("-p", "no:hypothesispytest", *args)


def report(pytester, name="r.json"):
    return json.loads((pytester.path / name).read_text())


def prediction_db():
    """The prediction cache file of this test's runs (tests/conftest.py points the default at a folder of the test's own)."""
    import os
    from pathlib import Path

    from pytest_ruler.folders import PREDICTIONS_ENV

    return Path(os.environ[PREDICTIONS_ENV]) / "predictions.sqlite"


def wait_for_cached(db, count: int, timeout: float = 120) -> int:
    """Poll the prediction cache ``db`` until it holds ``count`` completions (or ``timeout`` passes); how many it holds."""
    import sqlite3
    import time

    done, deadline = 0, time.time() + timeout
    while time.time() < deadline and done < count:
        time.sleep(0.3)
        if db.exists():
            try:
                done = sqlite3.connect(db).execute("SELECT COUNT(*) FROM completions").fetchone()[0]
            except sqlite3.Error:
                pass
    return done
