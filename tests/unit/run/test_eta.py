"""The ETA's arithmetic on a steady fake clock (run.eta): the work the engine did, not the items
finished, over the engine's own time; nothing promised when the cache answered everything so far.

The fake engine is steady: one second per prompt of 1,000 tokens (items of 2 samples at 1K)."""

from __future__ import annotations

import re
from types import SimpleNamespace

import pytest

from pytest_ruler.run_config import RulerConfig
from pytest_ruler.results import ItemResult
from pytest_ruler.run.eta import RunClock, Work, eta_seconds

SECONDS_PER_PROMPT = 1.0
TOKENS = 1000  # per prompt: a 1K budget, filled to 1,000 tokens
IDS = [f"ruler::niah_single_1[1024-seed{s}]" for s in range(8)]
CELLS = {i: ("niah_single_1", 1024, s, "native") for s, i in enumerate(IDS)}


class FakeClock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


class FakeSession:
    """What RunClock reads of a RulerSession (config.samples, engine_load_seconds, queue.works, say)."""

    def __init__(self):
        self.config = RulerConfig(model="fake", tasks=("niah_single_1",), lengths=(1024,), samples=2)
        self.engine_load_seconds = 0.0
        self.queue = SimpleNamespace(works={})
        self.said: list[str] = []

    def say(self, line):
        self.said.append(line)


def result(seed, cached=0, seconds=2.0):
    return ItemResult(task="niah_single_1", length=1024, seed=seed, mode="native", samples=2, score=100.0, threshold=85.6,
                      passed=True, nulls=0, seconds=seconds, cached=cached, engine_calls=2 - cached, prompt_tokens=2 * TOKENS)


def answered_ahead(seed, answers=2, cached=0):
    """A later item's work in this process's engine queue (run.runner.NativeWork), answered in part or whole."""
    return SimpleNamespace(cell=("niah_single_1", 1024, seed), completions=[object()] * answers, cached=cached,
                           prompt_tokens=answers * TOKENS, done=answers == 2)


def _eta(line: str) -> int:
    m = re.fullmatch(r"ruler: ETA \d\d:\d\d \(about (\d+)s more for \d+ items?, at [\d.e+-]+ ms per prompt token so far\)", line)
    assert m, line
    return int(m[1])


def test_eta_seconds_is_the_engine_rate_times_the_tokens_left():
    done = Work(engine_tokens=2000, cached_tokens=0, cached_answers=0, budget=2048)
    assert eta_seconds(2.0, done, 6 * 2048) == pytest.approx(6 * 2.0)  # 6 items like it, filled alike: 6 x 2 s
    assert eta_seconds(2.0, Work(0, 2000, 2, 2048), 6 * 2048) is None  # the cache answered everything: no rate
    assert Work.of(2000, 2, 1, 1024) == Work(1000, 1000, 1, 2048)  # half its answers cached: half its tokens


def test_a_steady_engine_gets_the_truth_after_the_first_item_though_the_queue_answered_ahead():
    # --ruler-batch-items=4: the first item's rounds carried items 1-3 too, so it ended after 4 items' prompts (8 s);
    # items 1-3 then finish at once and items 4-7 take 8 s: the truth is 8 s (the first version said 56 s)
    clock, session = FakeClock(), FakeSession()
    rc = RunClock(session, clock=clock)
    rc.items_known(CELLS)
    clock.now += 8 * SECONDS_PER_PROMPT
    session.queue.works = {w.cell: w for w in (answered_ahead(1), answered_ahead(2), answered_ahead(3))}
    rc.item_done([result(0)], IDS[:1], CELLS)
    assert _eta(session.said[-1]) == 8
    assert "more for 7 items" in session.said[-1]


def test_a_partly_answered_item_counts_its_answers_done_and_the_rest_left():
    clock, session = FakeClock(), FakeSession()
    rc = RunClock(session, clock=clock)
    rc.items_known(CELLS)
    clock.now += 3 * SECONDS_PER_PROMPT  # item 0's two prompts and one of item 1's
    session.queue.works = {("niah_single_1", 1024, 1): answered_ahead(1, answers=1)}
    rc.item_done([result(0)], IDS[:1], CELLS)
    assert _eta(session.said[-1]) == 13  # 13 prompts left


def test_the_model_load_is_not_engine_time():
    clock, session = FakeClock(), FakeSession()
    rc = RunClock(session, clock=clock)
    rc.items_known(CELLS)
    session.engine_load_seconds = 30.0
    clock.now += 30.0 + 2 * SECONDS_PER_PROMPT
    rc.item_done([result(0)], IDS[:1], CELLS)
    assert _eta(session.said[-1]) == 14  # 7 items x 2 s


def test_all_from_the_cache_says_so_and_no_eta_until_the_engine_answers():
    clock, session = FakeClock(), FakeSession()
    rc = RunClock(session, clock=clock)
    rc.items_known(CELLS)
    clock.now += 0.1  # the cache answered item 0: no engine time
    rc.item_done([result(0, cached=2, seconds=0.1)], IDS[:1], CELLS)
    clock.now += 0.1
    rc.item_done([result(0, cached=2), result(1, cached=2)], IDS[:2], CELLS)
    assert session.said[2:] == ["ruler: all from the cache so far (2 predictions), so no ETA yet"]  # once (after the estimate's two lines)
    clock.now += 2 * SECONDS_PER_PROMPT  # item 2: the engine's
    rc.item_done([result(0, cached=2), result(1, cached=2), result(2)], IDS[:3], CELLS)
    assert _eta(session.said[-1]) == 11  # 5 items left, 2.2 s of time charged to item 2's prompts
    rc.item_done([result(s) for s in range(4)], IDS[:4], CELLS)
    assert len(session.said) == 4  # the ETA once


def test_xdist_workers_time_their_items_not_their_start_up_and_work_alike():
    # two workers each report their items (items_known twice); the first result comes 20 s after, of which
    # its worker spent 2 s on it (its own seconds); the other worker did as much meanwhile: 6 items of 2 s left
    # on two workers = 6 s
    clock, session = FakeClock(), FakeSession()
    rc = RunClock(session, clock=clock)
    rc.items_known(CELLS)
    rc.items_known(CELLS)
    assert len(session.said) == 2  # the estimate once (tokens, then time)
    clock.now += 20.0
    rc.item_done([result(0, seconds=2.0)], IDS[:1], CELLS)
    assert _eta(session.said[-1]) == 6


def test_xdist_counts_the_cached_predictions_it_saw_not_each_workers():
    clock, session = FakeClock(), FakeSession()
    rc = RunClock(session, clock=clock)
    rc.items_known(CELLS)
    rc.items_known(CELLS)
    clock.now += 5.0
    rc.item_done([result(0, cached=2, seconds=0.1)], IDS[:1], CELLS)
    assert session.said[2:] == ["ruler: all from the cache so far (2 predictions), so no ETA yet"]
