"""The engine's queue across items (issue 22), through the plugin, on a fake engine.

``fake_counting`` is the scripted test engine (answers by rule, not a model) that also
writes the size of every engine call it gets to ``calls-<pid>.txt``, one line per call, so
a test sees how items shared calls, in xdist workers too.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys

import pytest

from .helpers import XDIST, prediction_db, report, run, wait_for_cached

FAKE_CONFTEST = """
import os
from pytest_ruler.engines.scripted import ScriptedEngine

class FakeCountingEngine(ScriptedEngine):
    name = "fake_counting"
    def generate(self, requests, on_result=None):
        with open(f"calls-{os.getpid()}.txt", "a") as f:
            f.write(f"{len(requests)}\\n")
        return super().generate(requests, on_result)

def pytest_ruler_register(registry):
    registry.engine("fake_counting", FakeCountingEngine)
"""

FAKE = ["--ruler-model=smollm2-135m", "--ruler-backend=fake_counting"]


def calls(pytester) -> list[int]:
    sizes = []
    for path in sorted(pytester.path.glob("calls-*.txt")):
        sizes += [int(n) for n in path.read_text().split()]
        path.unlink()
    return sizes


def verdicts(data: dict) -> list[tuple]:
    return sorted((i["task"], i["length"], i["seed"], i["passed"], i["samples"], i["score"], i["stopped"], tuple(i["sample_hashes"]))
                  for i in data["items"])


@pytest.mark.parametrize("xdist", XDIST)
def test_sequential_verdicts_are_the_same_with_and_without_items_sharing_calls(pytester, xdist):
    """cwe fails under the fake oracle (it answers nothing) and stops early; niah and vt pass.
    The same items stop at the same sample with or without cross-item calls."""
    pytester.makeconftest(FAKE_CONFTEST)
    args = [*FAKE, "--ruler-tasks=niah_single_1,cwe,vt,fwe", "--ruler-lengths=1k", "--ruler-samples=40", "--ruler-seeds=0,1",
            "--ruler-sequential", "--ruler-no-cache", *xdist]
    run(pytester, *args, "--ruler-batch-items=1", "--ruler-report=one.json")
    alone = calls(pytester)
    run(pytester, *args, "--ruler-report=queue.json")
    shared = calls(pytester)
    one, queue = report(pytester, "one.json"), report(pytester, "queue.json")
    assert verdicts(one) == verdicts(queue)
    stopped = [i for i in queue["items"] if i["stopped"]]
    assert stopped and all(i["samples"] < 40 for i in stopped)  # early stops happened, in both runs alike
    assert sum(alone) == sum(shared)  # a decided item sent no more batches with the queue either
    assert max(alone) == 4 and max(shared) > 4  # sequential batches of 4; the queue put several items in a call
    assert len(shared) < len(alone)


@pytest.mark.parametrize("xdist", XDIST)
def test_shared_calls_fill_the_cache_like_one_item_at_a_time(pytester, xdist):
    """The queue's answers are in the cache: a rerun (with or without xdist the other way
    round) makes no engine call and scores alike."""
    pytester.makeconftest(FAKE_CONFTEST)
    args = [*FAKE, "--ruler-tasks=niah_single_1,vt,niah_multikey_2", "--ruler-lengths=1k,2k", "--ruler-samples=3"]
    first = run(pytester, *args, "--ruler-report=first.json", *xdist)
    first.assert_outcomes(passed=6)
    assert max(calls(pytester)) > 3  # items shared calls (in a worker too)
    again = run(pytester, *args, "--ruler-report=again.json", *([] if xdist else ["-n", "2"]))
    again.assert_outcomes(passed=6)
    assert calls(pytester) == []
    a, b = report(pytester, "first.json"), report(pytester, "again.json")
    assert all(i["cached"] == 3 and i["engine_calls"] == 0 for i in b["items"])
    assert all(i["engine_calls"] == 3 and i["cached"] == 0 for i in a["items"])  # answered ahead: still this run's calls
    key = lambda d: sorted((i["task"], i["length"], i["score"], json.dumps(i["predictions"])) for i in d["items"])  # noqa: E731
    assert key(a) == key(b)


def test_predictions_are_the_same_one_item_at_a_time_and_sorted_across_items(pytester):
    pytester.makeconftest(FAKE_CONFTEST)
    args = [*FAKE, "--ruler-tasks=niah_single_1,niah_multikey_2,vt,fwe,cwe", "--ruler-lengths=1k", "--ruler-samples=5", "--ruler-no-cache"]
    run(pytester, *args, "--ruler-batch-items=1", "--ruler-report=one.json")
    run(pytester, *args, "--ruler-report=queue.json")
    key = lambda d: sorted((i["task"], json.dumps(i["predictions"])) for i in d["items"])  # noqa: E731
    assert key(report(pytester, "one.json")) == key(report(pytester, "queue.json"))


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT], ids=["kill-9", "ctrl-c"])
def test_a_killed_run_keeps_the_answers_of_a_shared_call(pytester, sig):
    """kill -9 or Ctrl-C in the middle of one engine call carrying two items: every answer
    that arrived is in the cache, and the rerun asks only for the rest."""
    args = [sys.executable, "-m", "pytest", "-p", "no:hypothesispytest", "--ruler-model=smollm2-135m", "--ruler-backend=scripted",
            "--ruler-tasks=niah_single_1,vt", "--ruler-lengths=1k", "--ruler-samples=20", "--ruler-engine-option=delay=0.1"]
    proc = subprocess.Popen(args, cwd=pytester.path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))  # as a terminal would
    db = prediction_db()
    done = wait_for_cached(db, 5)
    proc.send_signal(sig)
    proc.wait(timeout=60)
    assert done >= 5
    run(pytester, *args[5:-1], "--ruler-report=r.json").assert_outcomes(passed=2)
    items = report(pytester)["items"]
    assert sum(i["cached"] for i in items) >= done and sum(i["cached"] + i["engine_calls"] for i in items) == 40


FAKE_PREFIX_CONFTEST = """
from pytest_ruler.engines.base import Completion
from pytest_ruler.engines.scripted import ScriptedEngine

class FakePrefixCacheEngine(ScriptedEngine):
    '''The scripted test engine, reporting a fake prefix cache: the tokens a prompt shares
    with the one sent just before it in the call, in whole blocks of 16.'''
    name = "fake_prefix"
    def generate(self, requests, on_result=None):
        out = super().generate(requests)
        done, before = [], ()
        for i, (r, c) in enumerate(zip(requests, out)):
            same = 0
            for a, b in zip(before, r.prompt_ids):
                if a != b:
                    break
                same += 1
            before = r.prompt_ids
            done.append(Completion(c.text, c.prompt_tokens, c.completion_tokens, c.finish_reason, cached_tokens=same // 16 * 16))
            if on_result:
                on_result(i, done[-1])
        return done

def pytest_ruler_register(registry):
    registry.engine("fake_prefix", FakePrefixCacheEngine)
"""


def test_the_report_gives_the_engines_prefix_cache_share(pytester):
    """Samples of a task open with the same haystack: sent sorted, each one after the first
    reuses its neighbour's prefix. The items carry their counts, the report the run's share."""
    pytester.makeconftest(FAKE_PREFIX_CONFTEST)
    args = ["--ruler-model=smollm2-135m", "--ruler-backend=fake_prefix", "--ruler-tasks=niah_single_1,vt", "--ruler-lengths=1k",
            "--ruler-samples=4", "--ruler-report=r.json"]
    run(pytester, *args).assert_outcomes(passed=2)
    data = report(pytester)
    items, total = data["items"], data["prefix_cache"]
    assert total["prompt_tokens"] == sum(i["prompt_tokens"] for i in items)
    assert total["cached_tokens"] == sum(i["prefix_cache"]["cached_tokens"] for i in items) > 0
    assert 0 < total["share"] < 1 and total["share"] == round(total["cached_tokens"] / total["prompt_tokens"], 4)
    run(pytester, *args).assert_outcomes(passed=2)  # from the prediction cache: no engine call, nothing to report
    assert "prefix_cache" not in report(pytester) and all(i["prefix_cache"] == {} for i in report(pytester)["items"])


def test_an_xdist_worker_plans_from_the_items_it_has_been_handed(pytester):
    """Each worker's queue is told the items it holds (the next one and those waiting in its
    xdist queue), never another worker's."""
    pytester.makeconftest("""
import json, os
from pytest_ruler.plugin.keys import SESSION_KEY

def pytest_runtest_protocol(item, nextitem):  # after the plugin's (tryfirst), before the item runs
    queue = item.config.stash[SESSION_KEY].queue
    with open(item.config.rootpath / f"plan-{os.getpid()}.jsonl", "a") as f:
        f.write(json.dumps({"item": item.nodeid, "upcoming": [list(c) for c in queue.upcoming]}) + "\\n")
""")
    seeds = ",".join(str(s) for s in range(10))
    run(pytester, "--ruler-model=smollm2-135m", "--ruler-backend=scripted", "--ruler-tasks=niah_single_1,vt,niah_single_2,niah_multikey_1",
        "--ruler-lengths=1k", "--ruler-samples=1", f"--ruler-seeds={seeds}", "--ruler-no-cache", "-n", "2").assert_outcomes(passed=40)
    workers = [[json.loads(line) for line in p.read_text().splitlines()] for p in pytester.path.glob("plan-*.jsonl")]
    assert len(workers) == 2 and sum(map(len, workers)) == 40
    for records in workers:
        ran = [r["item"] for r in records]
        ids = {f"ruler::{t}[{n}-seed{s}]" for r in records for t, n, s in r["upcoming"]}
        assert ids <= set(ran)  # only what this worker runs
        for k, r in enumerate(records):  # and only what it runs later
            assert {f"ruler::{t}[{n}-seed{s}]" for t, n, s in r["upcoming"]} <= set(ran[k + 1:])
    assert max(len(r["upcoming"]) for records in workers for r in records) >= 2  # past nextitem: its waiting queue
