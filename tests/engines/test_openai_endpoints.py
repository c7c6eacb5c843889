"""The ``openai`` engine over several endpoints (``--ruler-base-url`` given several times).

The servers are the scripted stub (``tests/servers/stub_openai.py``), not models: a
stand-in with a service time, a bound on requests served at once, a prefix cache that
reports ``cached_tokens``, and ``kill()`` (a crashed process: new connections refused,
requests in flight dropped). Real servers: bench/scale_out.py.
"""

from __future__ import annotations

import threading
import time

import pytest

from pytest_ruler.engines.base import EngineConfig, GenerationRequest
from pytest_ruler.errors import RulerUsageError

from ..servers.stub_openai import DROP, StubServer, completion


def _engine(base_url, *, model="stub-model", **options):
    from pytest_ruler.engines.openai import OpenAIEngine

    options.setdefault("retry_backoff", 0.01)
    return OpenAIEngine(EngineConfig(model=model, backend="openai", tokenizer="smollm2-135m", base_url=base_url, options=options))


def _requests(cells=6, per_cell=4, opening=200):
    """``per_cell`` requests per cell, sharing a ``opening``-token prefix (a haystack's), then one token of their own."""
    return [GenerationRequest(f"cell {c} sample {i}", tuple(1000 * c + t for t in range(opening)) + (i,), 4, affinity=f"task/{c}/0")
            for c in range(cells) for i in range(per_cell)]


@pytest.fixture(autouse=True)
def _no_key(monkeypatch):
    monkeypatch.delenv("RULER_API_KEY", raising=False)


def test_requests_spread_over_the_endpoints_one_item_on_one_endpoint():
    peak, active, lock = {}, {}, threading.Lock()

    def counting(name):
        def handler(call):
            if call.route != "/v1/completions" or call.body.get("max_tokens") == 1:
                return None
            with lock:
                active[name] = active.get(name, 0) + 1
                peak[name] = max(peak.get(name, 0), active[name])
            time.sleep(0.05)
            with lock:
                active[name] -= 1
            return 200, completion(f"from {name}")
        return handler

    with StubServer(counting("a"), prefix_cache=True) as a, StubServer(counting("b"), prefix_cache=True) as b:
        eng = _engine([a.base_url, b.base_url], concurrency=2)
        try:
            requests = _requests()
            out = eng.generate(requests)
            ident = eng.identity()
        finally:
            eng.close()
    assert all(c.ok for c in out)
    assert {c.endpoint for c in out} == {a.base_url, b.base_url}
    for c in out:  # the answer came from the endpoint the completion names
        assert c.text == f"from {'a' if c.endpoint == a.base_url else 'b'}"
    by_cell = {}
    for r, c in zip(requests, out):
        by_cell.setdefault(r.affinity, set()).add(c.endpoint)
    assert sum(len(v) == 1 for v in by_cell.values()) >= 3, by_cell  # affinity (a spill or a stolen tail may split some)
    assert max(peak.values()) <= 2, peak  # --ruler-max-concurrency: per endpoint
    assert ident["base_url"] == sorted([a.base_url, b.base_url])  # in one order whatever the order given
    assert all(c.cached_tokens is not None for c in out)


def test_endpoints_that_report_different_context_lengths_are_refused_naming_both():
    long_model = [{"id": "stub-model", "object": "model", "max_model_len": 8192, "root": "/srv/models/stub"}]
    with StubServer() as a, StubServer(models=long_model) as b:
        with pytest.raises(RulerUsageError) as err:
            _engine([a.base_url, b.base_url])
        from pytest_ruler.engines.openai import OpenAIEngine

        with pytest.raises(RulerUsageError) as pre:  # the start-up check, before any engine is built
            OpenAIEngine.preflight(EngineConfig(model="stub-model", backend="openai", base_url=(a.base_url, b.base_url), options={}))
    for e in (err.value, pre.value):
        assert e.parameter == "--ruler-base-url" and e.value == b.base_url
        assert "different context lengths" in e.fix and "4096" in e.fix and "8192" in e.fix
        assert a.base_url in e.fix and b.base_url in e.fix


def test_endpoints_that_serve_different_models_under_one_name_are_refused_naming_both():
    other = [{"id": "stub-model", "object": "model", "max_model_len": 4096, "root": "/srv/models/another"}]
    with StubServer() as a, StubServer(models=other) as b:
        with pytest.raises(RulerUsageError) as err:
            _engine([a.base_url, b.base_url])
    assert "different models" in err.value.fix and "/srv/models/stub" in err.value.fix and "/srv/models/another" in err.value.fix


def test_an_endpoint_that_does_not_serve_the_model_is_refused_by_its_url():
    with StubServer() as a, StubServer(models=[{"id": "other-model", "object": "model"}]) as b:
        with pytest.raises(RulerUsageError) as err:
            _engine([a.base_url, b.base_url])
    assert err.value.parameter == "--ruler-model" and b.base_url in err.value.fix and "other-model" in err.value.fix


def test_the_same_endpoint_twice_is_refused():
    with StubServer() as a:
        with pytest.raises(RulerUsageError) as err:
            _engine([a.base_url, a.base_url + "/"])
    assert "given twice" in err.value.fix


def test_credentials_in_a_second_url_are_refused_and_a_query_never_shows(monkeypatch):
    # a slow, b quick, one slot each: b answers its own requests and takes a's waiting ones
    with StubServer(service_time=1.0) as a, StubServer() as b:
        with pytest.raises(RulerUsageError) as err:
            _engine([a.base_url, b.base_url.replace("http://", "http://user:hunter2@")])
        assert "hunter2" not in str(err.value)
        eng = _engine([a.base_url, b.base_url + "?api-key=sk-query-secret-77"], concurrency=1)
        try:
            out = eng.generate(_requests(cells=4, per_cell=2))
            shown = repr(eng.identity()) + repr([c.endpoint for c in out])
        finally:
            eng.close()
    assert "sk-query-secret" not in shown and b.base_url in shown
    posts = [c for c in b.calls if c.method == "POST"]
    assert posts and all(c.path.endswith("?api-key=sk-query-secret-77") for c in posts)  # the query still reaches the server


def test_an_endpoint_killed_mid_run_hands_its_requests_to_the_others():
    said = []
    with StubServer(service_time=0.02, max_concurrency=2) as a, StubServer(service_time=0.02, max_concurrency=2) as b:
        eng = _engine([a.base_url, b.base_url], concurrency=2)
        eng.on_wait = said.append
        try:
            killer = threading.Timer(0.1, b.kill)
            killer.start()
            out = eng.generate(_requests(cells=8, per_cell=6))
            after = eng.generate(_requests(cells=2, per_cell=2))
            stats = eng.pool.stats
        finally:
            eng.close()
    assert all(c.ok for c in out + after), [c.error for c in out if not c.ok]
    answered_by_b = [c for c in out if c.endpoint == b.base_url]
    assert len(answered_by_b) == b.killed_at == stats[1].requests  # what it answered before it died stays answered
    moved = [c for c in out if c.moved_from]
    assert moved and all(c.moved_from == (b.base_url,) and c.endpoint == a.base_url for c in moved)
    assert stats[1].moved == len(moved) and stats[1].down
    assert all(c.endpoint == a.base_url for c in after)  # down for the rest of the run
    assert any("stopped answering" in line and b.base_url in line for line in said), said


def test_with_one_endpoint_a_dropped_connection_is_retried_not_moved():
    drops = []

    def flaky(call):
        if call.route == "/v1/completions" and call.body.get("max_tokens") != 1 and not drops:
            drops.append(call)
            return DROP
        return None

    with StubServer(flaky) as a:
        eng = _engine(a.base_url)
        try:
            [done] = eng.generate(_requests(cells=1, per_cell=1))
        finally:
            eng.close()
    assert done.ok and done.endpoint == a.base_url and not done.moved_from and len(drops) == 1


def test_an_engine_built_mid_run_starts_with_a_dead_endpoint_down_the_start_up_check_refuses_it():
    from pytest_ruler.engines.openai import OpenAIEngine

    said = []
    with StubServer() as a, StubServer() as b:
        urls = [a.base_url, b.base_url]
        a.kill()  # the first endpoint: the engine's probes run on the next one
        with pytest.raises(RulerUsageError) as err:
            OpenAIEngine.preflight(EngineConfig(model="stub-model", backend="openai", base_url=urls, options={}))
        eng = _engine(urls)
        eng.on_wait = said.append
        try:
            out = eng.generate(_requests(cells=2, per_cell=2))
            ident = eng.identity()
        finally:
            eng.close()
    assert err.value.parameter == "--ruler-base-url" and err.value.value == a.base_url and "unreachable" in err.value.fix
    assert all(c.ok and c.endpoint == b.base_url and not c.moved_from for c in out)
    assert ident["base_url"] == sorted(urls)  # the cache key names every endpoint given, whichever answers
    assert any(a.base_url in line and "does not answer" in line for line in said), said
