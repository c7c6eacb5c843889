"""A pytester run without a terminal: a long engine call prints plain progress lines.

The conftest shortens the session's interval and the scripted engine answers
slowly, so lines must come from the ticking thread while the call runs; they
reach pytest's terminal output (not a log record), on lines of their own.
"""

from __future__ import annotations

import re

from .helpers import SCRIPTED, run

CONFTEST = """
import pytest

@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session):
    from pytest_ruler.plugin.items import SESSION_KEY
    session.config.stash[SESSION_KEY].progress_interval = 0.1
"""


def test_a_slow_call_prints_progress_lines_without_a_terminal(pytester):
    pytester.makeconftest(CONFTEST)
    result = run(pytester, *SCRIPTED, "--ruler-tasks=niah_single_1", "--ruler-lengths=1k", "--ruler-samples=4",
                 "--ruler-engine-option=delay=0.15", "--ruler-no-cache")
    result.assert_outcomes(passed=1)
    lines = [l for l in result.stdout.lines if "prompts," in l]
    assert len(lines) >= 2, result.stdout.str()
    assert all(re.fullmatch(r"ruler: (item \S+ )?niah_single_1\[1024-seed0\]: [0-4]/4 prompts, \d+s, [\d,]+ tok/s", l) for l in lines)
