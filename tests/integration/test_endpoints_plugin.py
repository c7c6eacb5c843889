"""Whole runs of the plugin over two OpenAI-compatible endpoints, with and without ``-n 2``.

The servers are the scripted stub (``tests/servers/stub_openai.py``), not models: it
answers a needle prompt with the needle's value read out of the prompt (``oracle``), so a
correct run scores 100, and it counts the requests it serves at once.
"""

from __future__ import annotations

import threading
import time

import pytest

from pytest_ruler.engines.scripted import oracle_answer

from ..servers.stub_openai import DROP, StubServer, completion
from .helpers import XDIST, report, run

TASKS = "niah_single_1,niah_single_2,niah_multikey_1,vt"


class Counting:
    """A stub handler: answers by the oracle after ``delay`` seconds, counting completions in flight."""

    def __init__(self, delay=0.05, die_at=None):
        self.delay, self.die_at = delay, die_at
        self.active = self.peak = self.served = 0
        self.lock = threading.Lock()
        self.server: StubServer | None = None

    def __call__(self, call):
        if call.route != "/v1/completions" or call.body.get("max_tokens", 1) <= 1:
            return None
        with self.lock:
            self.served += 1
            if self.die_at is not None and self.served == self.die_at:  # dies with this request in flight
                threading.Thread(target=self.server.kill).start()
                return DROP
            self.active += 1
            self.peak = max(self.peak, self.active)
        time.sleep(self.delay)
        with self.lock:
            self.active -= 1
        return 200, completion(self.answer(call.prompt))

    def answer(self, prompt):
        return oracle_answer(prompt)


class Thinking(Counting):
    """The same, as a thinking stand-in (not a model): a prompt without an end marker gets a thought,
    the answer call (the thought and RULER's answer prefix appended) the oracle's answer."""

    def answer(self, prompt):
        return oracle_answer(prompt) if "</think>" in prompt else "<think>the needle is in the text</think>"


def _args(*servers, extra=()):
    return ("--ruler-model=stub-model", "--ruler-backend=openai", *(f"--ruler-base-url={s.base_url}" for s in servers),
            "--ruler-tokenizer=smollm2-135m", "--ruler-engine-option=prompt_format=text", f"--ruler-tasks={TASKS}",
            "--ruler-lengths=1k", "--ruler-samples=3", "--ruler-report=r.json", "--ruler-no-cache", *extra)


@pytest.mark.parametrize("xdist", XDIST)
def test_two_endpoints_answer_the_run_each_within_its_bound(pytester, xdist):
    ha, hb = Counting(), Counting()
    with StubServer(ha) as a, StubServer(hb) as b:
        result = run(pytester, *_args(a, b, extra=("--ruler-max-concurrency=1",)), *xdist)
        models = [sum(1 for c in s.calls if c.route == "/v1/models") for s in (a, b)]
    result.assert_outcomes(passed=4)
    data = report(pytester)
    assert all(it["score"] == 100.0 for it in data["items"])
    counts = data["endpoints"]
    assert set(counts) <= {a.base_url, b.base_url}
    assert sum(r["requests"] for r in counts.values()) == 12 == ha.served + hb.served  # every sample, once
    assert all(n >= 1 for n in models)  # each endpoint checked at start
    # one request in flight per endpoint for the whole run: with -n 2 each worker holds one endpoint's slot
    assert ha.peak <= 1 and hb.peak <= 1, (ha.peak, hb.peak)
    if xdist:
        assert ha.served and hb.served  # worker k sends to endpoint k mod 2


@pytest.mark.parametrize("xdist", XDIST)
def test_an_endpoint_killed_mid_run_costs_no_prediction_and_the_report_names_it(pytester, xdist):
    ha, hb = Counting(delay=0.02), Counting(delay=0.02, die_at=3)
    with StubServer(ha) as a, StubServer(hb) as b:
        hb.server = b
        result = run(pytester, *_args(a, b, extra=("--ruler-max-concurrency=2",)), *xdist)
    result.assert_outcomes(passed=4)
    data = report(pytester)
    assert all(it["score"] == 100.0 and it["error"] is None for it in data["items"])
    counts = data["endpoints"]
    # b answered one or two (two requests in flight at most: the one it died on, maybe another) and those count
    assert counts[b.base_url]["moved_off"] >= 1 and counts[b.base_url]["requests"] == b.killed_at in (1, 2)
    assert counts[a.base_url]["requests"] == 12 - b.killed_at  # the rest, the moved ones included
    out = result.stdout.str()
    assert f"endpoint {b.base_url} failed mid-run" in out and "moved to " + a.base_url in out, out
    assert any(w.startswith(f"endpoint {b.base_url} failed mid-run") for w in data["warnings"]), data["warnings"]


@pytest.mark.parametrize("xdist", XDIST)
def test_a_think_budget_counts_both_calls_and_a_failover_on_a_thinking_call_is_named(pytester, xdist):
    """--ruler-think-budget: two calls a sample, both counted; b dies on the first request it gets,
    a thinking call (least loaded placement, so b gets one), and the report still names the failover."""
    ha, hb = Thinking(delay=0.02), Thinking(delay=0.02, die_at=1)
    with StubServer(ha) as a, StubServer(hb) as b:
        hb.server = b
        result = run(pytester, *_args(a, b, extra=("--ruler-max-concurrency=2", "--ruler-think-budget=64",
                                                    "--ruler-engine-option=affinity=false")), *xdist)
    result.assert_outcomes(passed=4)
    data = report(pytester)
    assert all(it["score"] == 100.0 and it["error"] is None for it in data["items"])
    counts = data["endpoints"]
    assert hb.served >= 1 and b.killed_at == 0  # it answered nothing: its one request was a thinking call
    assert sum(r["requests"] for r in counts.values()) == 24 == counts[a.base_url]["requests"]  # 12 samples, two calls each
    assert counts[b.base_url]["moved_off"] >= 1
    assert any(w.startswith(f"endpoint {b.base_url} failed mid-run") for w in data["warnings"]), data["warnings"]


def test_endpoints_with_different_context_lengths_are_refused_at_start(pytester):
    longer = [{"id": "stub-model", "object": "model", "max_model_len": 8192, "root": "/srv/models/stub"}]
    with StubServer() as a, StubServer(models=longer) as b:
        result = run(pytester, *_args(a, b))
        posts = [c for s in (a, b) for c in s.calls if c.method == "POST"]
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    line = next(line for line in err.splitlines() if "different context lengths" in line)
    assert "4096" in line and "8192" in line and a.base_url in line and b.base_url in line
    assert not posts  # nothing was generated
