"""A map-reduce twin's engine calls count per endpoint like a native item's: each CallRecord keeps the
endpoints of the calls that answered it (``served``; none for a cache hit) and run_mapreduce tallies
them into ``ItemResult.endpoints``, so a failover in a map, collapse or reduce call reaches the report's
warnings. A fake completion callable stands in for a pool over two endpoints (no server)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from pytest_ruler.engines.base import Completion
from pytest_ruler.engines.scripted import oracle_answer
from pytest_ruler.mapreduce import MapReduceConfig, MapReducer, document_for
from pytest_ruler.run_config import RulerConfig
from pytest_ruler.results.endpoints import endpoint_total, failover_notes
from pytest_ruler.run.runner import ItemInputs, run_mapreduce
from pytest_ruler.tasks import BASE_FRAME, GenerationContext, generate_samples, get_family, get_task
from pytest_ruler.tasks.tokenizer import load_tokenizer

A, B = "http://10.0.0.1:8000/v1", "http://10.0.0.2:8000/v1"


@pytest.fixture(scope="module")
def tok():
    return load_tokenizer("smollm2-135m")


class TwoEndpoints:
    """A fake pool: map calls answered by A, reduce calls by B; the first map call of each batch
    failed on B first (a failover); ``hit`` marks calls as cache hits (answered by no endpoint)."""

    def __init__(self, hit=False):
        self.hit = hit
        self.sent = {"map": 0, "reduce": 0}

    def __call__(self, requests, label):
        stage = "map" if label.endswith("map") else "reduce"
        self.sent[stage] += len(requests)
        out = [Completion(oracle_answer(r.prompt), r.prompt_tokens, 5, "stop", 0.25, endpoint=A if stage == "map" else B,
                          moved_from=(B,) if stage == "map" and i == 0 else ()) for i, r in enumerate(requests)]
        return out, [self.hit] * len(requests)


def _samples(tok, n=2):
    ctx = GenerationContext(tok, frame=BASE_FRAME)
    spec = get_task("niah_single_1")
    return spec, generate_samples("niah_single_1", 4096, samples=n, seed=0, ctx=ctx)


def test_each_call_record_keeps_the_endpoints_that_served_it_and_the_report_dict_does_not(tok):
    spec, samples = _samples(tok)
    docs = [document_for(s, spec, get_family(spec.family)) for s in samples]
    outcomes = MapReducer(TwoEndpoints(), tok, BASE_FRAME, MapReduceConfig(chunk_tokens=1024), window=2048).run(docs)
    calls = [c for o in outcomes for c in o.calls]
    assert {c.stage for c in calls} == {"map", "reduce"}
    for c in calls:
        [served] = c.served
        assert served.endpoint == (A if c.stage == "map" else B) and served.prompt_tokens == c.prompt_tokens
        assert "served" not in c.to_dict()
    assert sum(bool(c.served[0].moved_from) for c in calls) == 1  # the one map call that moved
    cached = MapReducer(TwoEndpoints(hit=True), tok, BASE_FRAME, MapReduceConfig(chunk_tokens=1024), window=2048).run(docs)
    assert all(c.cached and c.served == () for o in cached for c in o.calls)


def _session(tok, complete, spec, samples):
    inputs = ItemInputs(spec, None, list(samples), [])
    return SimpleNamespace(config=RulerConfig(model="m", samples=len(samples)), complete=complete, tokenizer=tok, frame=BASE_FRAME,
                           mapreduce_window=lambda cfg: 2048, shared=SimpleNamespace(take=lambda key: inputs))


def test_the_twin_item_tallies_its_calls_per_endpoint_and_the_failover_is_named(tok):
    spec, samples = _samples(tok)
    pool = TwoEndpoints()
    item = run_mapreduce(_session(tok, pool, spec, samples), "niah_single_1", 4096, config=MapReduceConfig(chunk_tokens=1024))
    assert item.error is None and item.mode == "mapreduce"
    assert item.endpoints[A]["requests"] == pool.sent["map"] and item.endpoints[B]["requests"] == pool.sent["reduce"] == 2
    assert item.endpoints[B]["moved_off"] == 1 and item.endpoints[A]["moved_off"] == 0
    assert item.endpoints[B]["seconds"] == 0.5
    [note] = failover_notes(endpoint_total([item]))
    assert note.startswith(f"endpoint {B} failed mid-run: 1 request moved to {A}")
    cached = run_mapreduce(_session(tok, TwoEndpoints(hit=True), spec, samples), "niah_single_1", 4096,
                           config=MapReduceConfig(chunk_tokens=1024))
    assert cached.endpoints == {}  # every call from the cache: no endpoint answered one
