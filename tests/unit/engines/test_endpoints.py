"""EndpointPool (engines/endpoints.py): affinity with bounded load, stealing, failover, xdist shares.

A fake ``send`` stands in for the HTTP side: it records which endpoint got which job.
"""

from __future__ import annotations

import threading
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_ruler.engines.endpoints import SLACK, EndpointDown, EndpointPool, Job, affinity_order, worker_limits

NAMES = ["http://a:8000/v1", "http://b:8000/v1", "http://c:8000/v1", "http://d:8000/v1"]


def _run(pool, jobs, send):
    got = {}

    def done(job, result, e):
        got[job.index] = (result, e)

    pool.run(jobs, send, lambda job, why: f"failed: {why}", done, tick=5)
    return got


@given(st.lists(st.text(min_size=1, max_size=12), min_size=1, max_size=30, unique=True), st.integers(2, 6))
@settings(max_examples=60, deadline=None)
def test_affinity_order_is_stable_and_losing_an_endpoint_moves_only_its_keys(keys, n):
    names = [f"http://h{i}:8000/v1" for i in range(n)]
    first = {k: affinity_order(k, names)[0] for k in keys}
    assert first == {k: affinity_order(k, names)[0] for k in keys}  # stable
    lost = names[0]
    rest = names[1:]
    for k in keys:
        now = rest[affinity_order(k, rest)[0]]
        if names[first[k]] != lost:
            assert now == names[first[k]]  # a key whose endpoint stays keeps it


@given(st.integers(1, 64), st.integers(1, 8), st.integers(1, 8))
@settings(max_examples=200, deadline=None)
def test_worker_limits_keep_the_per_endpoint_bound_over_all_workers(limit, endpoints, workers):
    shares = [worker_limits(limit, endpoints, k, workers) for k in range(workers)]
    for e in range(endpoints):
        assert sum(s[e] for s in shares) == limit or limit * endpoints < workers  # the bound, exactly, shared out
    assert all(any(s) for s in shares)  # every worker can send
    if limit * endpoints < workers:  # too few slots: one each, no more
        assert all(sum(s) == 1 for s in shares)


def test_with_one_slot_per_endpoint_worker_k_sends_to_endpoint_k_mod_e():
    for endpoints, workers in ((2, 2), (2, 4), (3, 2), (4, 4)):
        for k in range(workers):
            share = worker_limits(1, endpoints, k, workers)
            assert share[k % endpoints] == 1, (endpoints, workers, k, share)
    assert [worker_limits(2, 2, k, 4) for k in range(4)] == [[1, 0], [1, 0], [0, 1], [0, 1]]
    assert [worker_limits(8, 2, k, 2) for k in range(2)] == [[4, 4], [4, 4]]


def test_one_call_keeps_each_key_on_one_endpoint_and_no_endpoint_far_above_its_share():
    pool = EndpointPool(NAMES[:2], [4, 4])
    seen = {}

    def send(e, job):
        time.sleep(0.002)
        return e

    jobs = [Job(i, f"cell{i // 4}") for i in range(64)]  # 16 keys x 4 samples
    got = _run(pool, jobs, send)
    for job in jobs:
        seen.setdefault(job.key, set()).add(got[job.index][1])
    stolen = sum(len(v) - 1 for v in seen.values())
    assert stolen <= 4, seen  # only the tail is stolen
    counts = [sum(1 for r, e in got.values() if e == k) for k in range(2)]
    assert max(counts) <= (1 + SLACK) * 32 + 4, counts
    assert pool.stats[0].requests + pool.stats[1].requests == 64
    pool.close()


def test_a_key_seen_before_goes_back_to_its_endpoint():
    pool = EndpointPool(NAMES, [2, 2, 2, 2])
    first = _run(pool, [Job(0, "niah_single_1/4096/0")], lambda e, job: e)[0][1]
    again = _run(pool, [Job(i, "niah_single_1/4096/0") for i in range(2)], lambda e, job: e)  # its 2 slots
    assert {e for _, e in again.values()} == {first} == {pool.home("niah_single_1/4096/0")}
    spill = _run(pool, [Job(i, "niah_single_1/4096/0") for i in range(8)], lambda e, job: time.sleep(0.05) or e)
    assert len({e for _, e in spill.values()}) > 1  # more than its slots: the others take the rest
    pool.close()


def test_without_affinity_the_least_loaded_endpoint_takes_each_job():
    pool = EndpointPool(NAMES[:2], [1, 1], affinity=False)
    release = threading.Event()

    def send(e, job):
        release.wait(5)
        return e

    threading.Timer(0.2, release.set).start()
    got = _run(pool, [Job(i, "one-key") for i in range(2)], send)
    assert {e for _, e in got.values()} == {0, 1}  # the same key, spread
    pool.close()


def test_an_idle_endpoint_steals_from_a_busy_one():
    pool = EndpointPool(NAMES[:2], [1, 1])

    def send(e, job):
        time.sleep(0.05 if e == 0 else 0.0)
        return e

    key = next(f"k{i}" for i in range(100) if affinity_order(f"k{i}", NAMES[:2])[0] == 0)
    got = _run(pool, [Job(i, key) for i in range(8)], send)
    assert {e for _, e in got.values()} == {0, 1}  # endpoint 1 took some of endpoint 0's key
    pool.close()


def test_an_endpoint_that_goes_down_hands_its_jobs_to_the_others_and_none_is_lost():
    pool = EndpointPool(NAMES[:3], [2, 2, 2])
    answered = {0: 0, 1: 0, 2: 0}
    lock = threading.Lock()

    def send(e, job):
        time.sleep(0.005)
        with lock:
            if e == 1 and answered[1] >= 3:
                raise EndpointDown("connection refused")
            answered[e] += 1
        return f"answer {job.index} from {e}"

    jobs = [Job(i, f"cell{i % 6}") for i in range(60)]
    got = _run(pool, jobs, send)
    assert sorted(got) == list(range(60))
    assert all(r.startswith(f"answer {i} ") for i, (r, e) in got.items())  # every job answered, none twice
    assert pool.stats[1].down == "connection refused" and pool.stats[1].moved >= 1
    assert pool.stats[1].requests == answered[1] == 3  # what it answered before going down stays answered
    moved = [j for j in jobs if j.moved_from]
    assert len(moved) == pool.stats[1].moved and all(j.moved_from == [1] for j in moved)
    assert all(got[j.index][1] in (0, 2) for j in moved)
    later = _run(pool, [Job(i, f"cell{i}") for i in range(10)], send)
    assert all(e != 1 for _, e in later.values())  # down for the rest of the run
    pool.close()


def test_with_every_endpoint_down_a_job_is_answered_as_failed():
    pool = EndpointPool(NAMES[:2], [1, 1])

    def send(e, job):
        raise EndpointDown(f"refused at {e}")

    got = _run(pool, [Job(i, None) for i in range(3)], send)
    assert all(r.startswith("failed: every endpoint is down") and e is None for r, e in got.values()), got
    pool.close()


def test_an_interrupt_sends_nothing_more():
    pool = EndpointPool(NAMES[:1], [1])
    sent = []

    def send(e, job):
        sent.append(job.index)
        time.sleep(0.01)
        return e

    def done(job, result, e):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        pool.run([Job(i, None) for i in range(20)], send, lambda j, w: w, done)
    time.sleep(0.1)
    assert len(sent) <= 3, sent
    pool.close()
