"""The engine's queue across items (run.queue), with fake works and a fake engine call."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from pytest_ruler.engines.base import Completion, GenerationRequest
from pytest_ruler.run.queue import EngineQueue, prefix_order


def req(ids, tag=""):
    return GenerationRequest(tag or str(ids), tuple(ids), 4)


@dataclass
class FakeWork:
    """A fake item: ``batches`` batches of 2 prompts; ``decide_after`` batches received ends it."""

    cell: tuple
    batches: int = 3
    decide_after: int | None = None
    sent: int = 0
    received: list = field(default_factory=list)
    done: bool = False
    waiting: bool = False

    def next_requests(self):
        if self.done or self.waiting:
            return None
        if self.sent == self.batches:
            self.done = True
            return None
        self.sent += 1
        self.waiting = True
        return [req((hash(self.cell) % 97, self.sent, k), f"{self.cell}/{self.sent}/{k}") for k in range(2)]

    def receive(self, completions, from_cache):
        self.waiting = False
        self.received.append([c.text for c in completions])
        if self.decide_after is not None and len(self.received) >= self.decide_after:
            self.done = True


@dataclass
class FixedWork(FakeWork):
    """A fake item with one batch of given requests."""

    fixed: list = field(default_factory=list)

    def next_requests(self):
        if self.sent:
            self.done = True
            return None
        self.sent = 1
        return self.fixed


class FakeEngineCall:
    """Answers each request with its prompt text; records every call."""

    def __init__(self, fail_on_call=None):
        self.calls = []
        self.fail_on_call = fail_on_call

    def __call__(self, requests, label):
        self.calls.append([r.prompt for r in requests])
        if self.fail_on_call == len(self.calls):
            raise RuntimeError("fake engine down")
        return [Completion(r.prompt, r.prompt_tokens, 1, "stop") for r in requests], [False] * len(requests)


def queue_of(items, works, engine, tokens=1 << 22):
    return EngineQueue(items, lambda cell: works.get(cell), engine, tokens)


def test_one_call_carries_the_next_batch_of_each_open_item_and_answers_reach_their_item():
    cells = [("t", 1, s) for s in range(4)]
    works = {c: FakeWork(c) for c in cells}
    engine = FakeEngineCall()
    q = queue_of(3, works, engine)
    q.ahead(cells[1:])
    first = works[cells[0]]
    q.run(first, "t")
    assert len(engine.calls) == 3  # three rounds for the running item's three batches
    assert all(len(call) == 6 for call in engine.calls)  # its batch and the next two items' (cap 3)
    for c in cells[:3]:  # each item got its own answers, batch by batch, in order
        assert works[c].received == [[f"{c}/{b}/{k}" for k in range(2)] for b in (1, 2, 3)]
    assert works[cells[3]].received == []  # outside the window of 3 items
    assert q.take(cells[1]) is works[cells[1]] and q.take(cells[1]) is None


def test_batch_items_1_sends_one_item_at_a_time():
    cells = [("t", 1, s) for s in range(3)]
    works = {c: FakeWork(c) for c in cells}
    engine = FakeEngineCall()
    q = queue_of(1, works, engine)
    q.ahead(cells[1:])
    q.run(works[cells[0]], "t")
    assert [len(c) for c in engine.calls] == [2, 2, 2] and works[cells[1]].received == []


def test_a_decided_item_sends_no_more_batches():
    cells = [("t", 1, 0), ("t", 1, 1)]
    works = {cells[0]: FakeWork(cells[0], batches=4), cells[1]: FakeWork(cells[1], batches=4, decide_after=1)}
    engine = FakeEngineCall()
    q = queue_of(4, works, engine)
    q.ahead(cells[1:])
    q.run(works[cells[0]], "t")
    assert [len(c) for c in engine.calls] == [4, 2, 2, 2]  # the second item only in the first call
    assert works[cells[1]].sent == 1


def test_the_token_budget_bounds_what_upcoming_items_add():
    cells = [("t", 1, s) for s in range(5)]
    works = {c: FakeWork(c, batches=1) for c in cells}
    engine = FakeEngineCall()
    q = queue_of(16, works, engine, tokens=14)  # each batch is 2 prompts x 3 tokens
    q.ahead(cells[1:])
    q.run(works[cells[0]], "t")
    # the running item's 6 tokens, then items until the budget is spent (the last one may pass it)
    assert len(engine.calls[0]) == 6 and not works[cells[3]].received


def test_a_failed_shared_call_is_retried_with_the_running_items_batch_alone_and_the_others_start_over():
    cells = [("t", 1, 0), ("t", 1, 1)]
    works = {c: FakeWork(c, batches=1) for c in cells}
    engine = FakeEngineCall(fail_on_call=1)
    q = queue_of(2, works, engine)
    q.ahead(cells[1:])
    q.run(works[cells[0]], "t")
    assert [len(c) for c in engine.calls] == [4, 2]  # the shared call failed; the running item's batch alone
    assert works[cells[0]].received == [[f"{cells[0]}/1/{k}" for k in range(2)]]
    assert q.take(cells[1]) is None  # forgotten: built afresh when it runs


def test_an_engine_failing_on_the_items_own_batch_fails_it():
    work = FakeWork(("t", 1, 0))
    engine = FakeEngineCall(fail_on_call=1)
    with pytest.raises(RuntimeError, match="fake engine down"):
        EngineQueue(4, lambda c: None, engine).run(work, "t")
    assert len(engine.calls) == 1  # alone already: not retried


def test_when_the_retry_fails_too_the_item_fails_with_the_first_error():
    cells = [("t", 1, 0), ("t", 1, 1)]
    works = {c: FakeWork(c) for c in cells}
    seen = []

    def down(requests, label):
        seen.append(len(requests))
        raise RuntimeError("engine failed to load: no memory" if len(seen) == 1 else "engine failed to load earlier")

    q = queue_of(2, works, down)
    q.ahead(cells[1:])
    with pytest.raises(RuntimeError, match="no memory"):
        q.run(works[cells[0]], "t")
    assert seen == [4, 2]


def test_an_interrupt_is_not_retried():
    cells = [("t", 1, 0), ("t", 1, 1)]
    works = {c: FakeWork(c) for c in cells}

    def interrupted(requests, label):
        raise KeyboardInterrupt

    q = queue_of(2, works, interrupted)
    q.ahead(cells[1:])
    with pytest.raises(KeyboardInterrupt):
        q.run(works[cells[0]], "t")
    assert q.take(cells[1]) is None


def test_an_upcoming_item_that_cannot_be_built_is_left_to_fail_on_its_own():
    cells = [("t", 1, 0), ("t", 1, 1), ("t", 1, 2)]
    works = {cells[0]: FakeWork(cells[0], batches=1), cells[2]: FakeWork(cells[2], batches=1)}

    def make(cell):
        if cell == cells[1]:
            raise ValueError("bad task")
        return works.get(cell)

    engine = FakeEngineCall()
    q = EngineQueue(3, make, engine)
    q.ahead(cells[1:])
    q.run(works[cells[0]], "t")
    assert len(engine.calls[0]) == 4 and works[cells[2]].received  # the third item still went along


def test_prefix_order_puts_shared_prefixes_together_and_answers_come_back_in_order():
    requests = [req((5, 1, 9)), req((1, 2, 3)), req((5, 1, 2)), req((1, 2, 4)), req((1, 2, 3))]
    order = prefix_order(requests)
    assert [requests[i].prompt_ids for i in order] == [(1, 2, 3), (1, 2, 3), (1, 2, 4), (5, 1, 2), (5, 1, 9)]
    assert order[:2] == [1, 4]  # stable for equal prompts
    engine = FakeEngineCall()
    work = FixedWork(("t", 1, 0), fixed=requests)
    EngineQueue(1, lambda c: None, engine).run(work, "t")
    assert engine.calls == [[requests[i].prompt for i in order]]  # sent sorted
    assert work.received == [[r.prompt for r in requests]]  # received in the item's order
