"""A pytester run without a terminal: a long engine call prints plain progress lines.

The conftest shortens the session's interval and the scripted engine answers
slowly, so lines must come from the ticking thread while the call runs; they
reach pytest's terminal output (not a log record), on lines of their own, and
pytest's progress letters go on after their file name. The ETA after the first
item is timed against the truth on a steady scripted engine (``delay`` seconds
per prompt), and a run the cache answers gets no ETA.
"""

from __future__ import annotations

import json
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


# records when each line was said and when the last item reported, in the controller (times.json)
TIMES_CONFTEST = """
import json, time
import pytest
from pytest_ruler.run.session import RulerSession

ORIGINAL = RulerSession.say


class Times:
    def __init__(self):
        self.said, self.last = [], 0.0

    def pytest_runtest_logreport(self, report):
        if report.when == "call":
            self.last = time.perf_counter()

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session):
        if not hasattr(session.config, "workerinput"):
            with open("times.json", "w") as f:
                json.dump([[self.last - at, line] for at, line in self.said], f)


def pytest_configure(config):
    times = Times()

    def say(self, line):
        times.said.append((time.perf_counter(), line))
        ORIGINAL(self, line)

    RulerSession.say = say
    config.pluginmanager.register(times, "ruler-times")


def pytest_unconfigure(config):
    RulerSession.say = ORIGINAL
"""
LETTERS = re.compile(r"[.FEsxX]+( +\[ *\d+%\])?")  # pytest's progress letters with no file name before them


def _said_apart(lines: list[str], xdist: bool) -> None:
    """Every ruler line starts a line of its own; without xdist the letters always follow their file name."""
    glued = [ln for ln in lines if "ruler: " in ln and not ln.startswith("ruler: ")]
    assert not glued, glued
    if not xdist:
        alone = [ln for ln in lines if LETTERS.fullmatch(ln)]
        assert not alone, "\n".join(lines)


@pytest.mark.parametrize("batch", [pytest.param([], id="queue-16"), pytest.param(["--ruler-batch-items=2"], id="queue-2")])
def test_the_eta_after_the_first_item_is_within_twice_the_truth_on_a_steady_engine(pytester, batch):
    # issue 34: 30x off on a fast engine. The queue answers the items after the first one with it (all 8
    # by default: little is left when it ends; 2 at a time with --ruler-batch-items=2)
    pytester.makeconftest(TIMES_CONFTEST)
    result = run(pytester, *SCRIPTED, "--ruler-tasks=niah_single_1,niah_single_2,niah_single_3,vt", "--ruler-seeds=0,1",
                 "--ruler-lengths=1k", "--ruler-samples=2", "--ruler-engine-option=delay=0.3", "--ruler-no-cache", *batch)
    result.assert_outcomes(passed=8)
    [(truth, line)] = [(t, ln) for t, ln in json.loads((pytester.path / "times.json").read_text()) if ln.startswith("ruler: ETA ")]
    said = int(re.search(r"about (\d+)s more for 7 items", line)[1])
    assert truth / 2 - 1 <= said <= 2 * truth + 1, (said, truth)  # the line says whole seconds
    _said_apart(result.stdout.lines, xdist=False)


@pytest.mark.parametrize("xdist", XDIST)
def test_a_run_the_cache_answers_says_so_instead_of_an_eta_and_the_lines_stand_apart(pytester, xdist):
    # issue 34: "3m47s more" on a run served entirely from the cache, and the ETA inside the progress letters
    args = [*SCRIPTED, "--ruler-tasks=niah_single_1,vt", "--ruler-samples=2", "--ruler-cache-dir=cache",
            "--ruler-engine-option=delay=0.05"]
    run(pytester, *args, "--ruler-lengths=1k").assert_outcomes(passed=2)
    cached = run(pytester, *args, "--ruler-lengths=1k", *xdist)
    cached.assert_outcomes(passed=2)
    # (serial: the queue fetched the second item's answers with the first's, from the cache too)
    said = [ln for ln in cached.stdout.lines if re.fullmatch(r"ruler: all from the cache so far \([24] predictions\), so no ETA yet", ln)]
    assert len(said) == 1, cached.stdout.str()
    assert not [ln for ln in cached.stdout.lines if ln.startswith("ruler: ETA ") or "more for" in ln]
    # 1K from the cache, 2K from the engine: the ETA comes with the first 2K prompts answered, between progress letters
    mixed = run(pytester, *args, "--ruler-lengths=1k,2k", *xdist)
    mixed.assert_outcomes(passed=4)
    assert len([ln for ln in mixed.stdout.lines if ln.startswith("ruler: ETA ")]) == 1, mixed.stdout.str()
    _said_apart(cached.stdout.lines, bool(xdist))
    _said_apart(mixed.stdout.lines, bool(xdist))


def test_progress_lines_during_an_item_leave_the_letters_after_their_file_name(pytester):
    pytester.makeconftest(CONFTEST)
    result = run(pytester, *SCRIPTED, "--ruler-tasks=niah_single_1,vt", "--ruler-lengths=1k", "--ruler-samples=3",
                 "--ruler-engine-option=delay=0.1", "--ruler-no-cache", "--ruler-batch-items=1")
    result.assert_outcomes(passed=2)
    assert len([ln for ln in result.stdout.lines if "prompts," in ln]) >= 2, result.stdout.str()
    _said_apart(result.stdout.lines, xdist=False)
    assert [ln for ln in result.stdout.lines if ln.startswith("ruler .")], result.stdout.str()


@pytest.mark.parametrize("xdist", XDIST)
def test_a_second_run_turns_its_tokens_into_time_from_the_first_runs_speed(pytester, xdist):
    # issue 37: the start-up line says what the run will cost in time when this engine's speed (on this
    # processor, with this -n) was measured by an earlier run; the first run says it was not
    args = [*SCRIPTED, "--ruler-tasks=niah_single_1,vt", "--ruler-lengths=1k", "--ruler-samples=2", "--ruler-engine-option=delay=0.05",
            "--ruler-cache-dir=cache", *xdist]
    first = run(pytester, *args)
    first.assert_outcomes(passed=2)
    assert any(ln.startswith("ruler: no time estimate yet: this engine's speed") for ln in first.stdout.lines), first.stdout.str()
    second = run(pytester, *args, "--ruler-samples=3")  # other samples: the engine answers again
    second.assert_outcomes(passed=2)
    line = [ln for ln in second.stdout.lines if ln.startswith("ruler: time estimate: at most about ")]
    assert len(line) == 1 and re.search(r"at [\d.e+-]+ ms per prompt token \(this engine on this processor and process count, "
                                        r"measured \d{4}-\d\d-\d\d over [\d,]+ tokens", line[0]), second.stdout.str()
    no_cache = run(pytester, *args, "--ruler-no-cache")
    assert "ruler: no time estimate: without the prediction cache no engine speed is kept between runs" in no_cache.stdout.lines
