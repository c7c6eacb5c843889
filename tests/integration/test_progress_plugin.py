"""A pytester run without a terminal: a long engine call prints plain progress lines.

The conftest shortens the session's interval and the scripted engine answers
slowly, so lines must come from the ticking thread while the call runs; they
reach pytest's terminal output (not a log record), on lines of their own.
"""

from __future__ import annotations

import re

import pytest

from .helpers import SCRIPTED, XDIST, run

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


@pytest.mark.parametrize("xdist", XDIST)
def test_the_run_says_its_prompt_tokens_at_start_and_an_eta_after_the_first_item(pytester, xdist):
    result = run(pytester, *SCRIPTED, "--ruler-tasks=niah_single_1,vt", "--ruler-lengths=1k,2k", "--ruler-samples=2",
                 "--ruler-engine-option=delay=0.05", "--ruler-no-cache", *xdist)
    result.assert_outcomes(passed=4)
    lines = result.stdout.lines
    # 2 samples x (1024 + 1024 + 2048 + 2048)
    estimate = [ln for ln in lines if ln.startswith("ruler: 4 items, at most")]
    assert estimate == ["ruler: 4 items, at most 12,288 prompt tokens (2 samples x length per item: an upper bound, "
                        "every prompt is filled up to its length); an ETA follows the first item"], result.stdout.str()
    eta = [ln for ln in lines if ln.startswith("ruler: ETA ")]
    assert len(eta) == 1, result.stdout.str()
    assert re.fullmatch(r"ruler: ETA \d\d:\d\d \(about \d+s more for 3 items, at [\d.e+-]+ ms per prompt token so far\)", eta[0])
    assert lines.index(estimate[0]) < lines.index(eta[0])


def test_map_reduce_twins_are_named_in_the_estimate(pytester):
    result = run(pytester, *SCRIPTED, "--ruler-tasks=niah_single_1", "--ruler-lengths=1k", "--ruler-samples=1", "--ruler-mapreduce",
                 "--ruler-mapreduce-chunk=512", "--ruler-no-cache")
    result.assert_outcomes(passed=2)
    assert ("ruler: 1 item, at most 1,024 prompt tokens (1 sample x length per item: an upper bound, every prompt is filled up "
            "to its length); 1 map-reduce twin read about as many again in chunks, plus their instructions; an ETA follows the first item") in result.stdout.lines


def test_generating_the_samples_says_how_far_it_is_when_the_engine_is_not_the_slow_part(pytester):
    # issue 23: 100,000 samples answered from the cache printed nothing for minutes. Here every
    # answer comes from the cache (no engine call, so no engine progress) and the interval is 0:
    # a line after every sample generated
    args = [*SCRIPTED, "--ruler-tasks=niah_single_1", "--ruler-lengths=1k", "--ruler-samples=3", "--ruler-cache-dir=cache"]
    run(pytester, *args).assert_outcomes(passed=1)
    pytester.makeconftest(CONFTEST.replace("progress_interval = 0.1", "progress_interval = 0.0"))
    result = run(pytester, *args)
    result.assert_outcomes(passed=1)
    lines = [l for l in result.stdout.lines if "generating samples" in l]
    assert [re.sub(r", \d+s$", "", l) for l in lines] == [
        f"ruler: item 1/1 generating samples: niah_single_1[1024-seed0] {i}/3" for i in (1, 2, 3)], result.stdout.str()
    assert not [l for l in result.stdout.lines if "prompts," in l]
