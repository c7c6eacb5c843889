"""Bounded resources and one server counted once (issue 35, items 4, 5 and 7) for the ``openai`` engine.

The servers are the scripted stub (``tests/servers/stub_openai.py``, on 127.0.0.1), not models.
What is asserted is what the code does: threads started, bytes read, an answer's length,
the identity that keys the cache; never timings.
"""

from __future__ import annotations

import threading

import pytest

from pytest_ruler.engines.base import EngineConfig, GenerationRequest
from pytest_ruler.engines.endpoints import EndpointPool, Job
from pytest_ruler.engines.openai_transport import OpenAITransport
from pytest_ruler.errors import RulerUsageError

from ..servers.stub_openai import StubServer, chat_completion, completion


def _engine(base_url, *, model="stub-model", **options):
    from pytest_ruler.engines.openai import OpenAIEngine

    options.setdefault("retry_backoff", 0.01)
    return OpenAIEngine(EngineConfig(model=model, backend="openai", tokenizer="smollm2-135m", base_url=base_url, options=options))


def _pool_threads(before=frozenset()) -> list[str]:
    """The pools' threads alive now, less those of ``before`` (an earlier test's pool may still be ending)."""
    return [t.name for t in threading.enumerate() if t.name.startswith("ruler-endpoint-") and t not in before]


@pytest.fixture(autouse=True)
def _no_key(monkeypatch):
    monkeypatch.delenv("RULER_API_KEY", raising=False)


# ---------------------------------------------------------------- concurrency: capped, and a pool


def test_a_concurrency_above_the_maximum_is_refused_at_start_naming_the_option():
    from pytest_ruler.options import option

    with pytest.raises(RulerUsageError) as err:
        option("max-concurrency").parse("--ruler-max-concurrency", "1000000")
    assert err.value.parameter == "--ruler-max-concurrency" and err.value.value == "1000000"
    assert "1024" in err.value.fix
    assert option("max-concurrency").parse("--ruler-max-concurrency", "1024") == 1024


def test_the_pool_starts_no_more_threads_than_requests_however_large_the_bound():
    seen, before = [], frozenset(threading.enumerate())

    def send(e, job):
        seen.append(len(_pool_threads(before)))
        return "ok"

    pool = EndpointPool(["http://a:8000/v1", "http://b:8000/v1"], [1024, 1024])
    try:
        got = []
        pool.run([Job(i, f"cell/{i % 2}") for i in range(4)], send, lambda job, why: why, lambda job, r, e: got.append(r), tick=5)
        again = []
        pool.run([Job(i, None) for i in range(3)], send, lambda job, why: why, lambda job, r, e: again.append(r), tick=5)
        threads = len(_pool_threads(before))
    finally:
        pool.close()
    assert got == ["ok"] * 4 and again == ["ok"] * 3
    assert threads <= 4 and max(seen) <= 4, (threads, seen)  # not 2 x 1024: the idle ones take the next call's jobs


def test_the_engine_at_the_maximum_concurrency_holds_a_thread_per_request_not_per_slot():
    inside, before = [], frozenset(threading.enumerate())

    def handler(call):
        if call.route == "/v1/completions" and call.body.get("max_tokens") != 1:
            inside.append(len(_pool_threads(before)))
        return None

    with StubServer(handler) as a:
        eng = _engine(a.base_url, concurrency=1024)
        try:
            out = eng.generate([GenerationRequest(f"q{i}", (1, 2, 3, i), 4) for i in range(4)])
        finally:
            eng.close()
    assert all(c.ok for c in out) and len(inside) == 4
    assert max(inside) <= 4, inside


# ---------------------------------------------------------------- answers: cut where they are read, and marked


def test_the_transport_stops_reading_a_body_at_its_byte_limit():
    pulled = []

    class Endless:
        def iter_bytes(self):
            for _ in range(10_000):  # 640 MB if it were all read
                pulled.append(1)
                yield b"x" * 65536

    raw, whole = OpenAITransport._read(Endless(), "POST http://stub/v1/completions", max_bytes=100_000)
    assert not whole and len(raw) == 100_000
    assert len(pulled) == 2  # the chunk that crossed the limit is the last one read


def test_a_cut_body_keeps_the_text_it_began():
    from pytest_ruler.engines.answer_cap import partial_json

    body = b'{"id": "x", "choices": [{"index": 0, "text": "needle 12345 \\u00e9\\n' + b"a" * 50
    data = partial_json(body + b"\\u00")
    assert data["choices"][0]["text"] == "needle 12345 \u00e9\n" + "a" * 50
    assert partial_json(b'{"choices": [{"text": "caf\xc3')["choices"][0]["text"] == "caf"  # cut inside a UTF-8 character
    assert partial_json(b"not json at all") == {}
    assert partial_json(b"[" * 100_000) == {}  # nested past any recursion limit: nothing usable, no crash


@pytest.mark.parametrize("chat", [False, True], ids=["completions", "chat"])
def test_an_answer_far_longer_than_its_max_tokens_is_cut_where_it_is_read_and_marked(chat):
    from pytest_ruler.engines.answer_cap import answer_bytes, answer_chars

    huge = "needle " + "z" * (10 * 2**20)  # 10 MB for an answer of at most 8 tokens

    def handler(call):
        if call.body and call.body.get("max_tokens") == 8:
            return 200, chat_completion(huge) if chat else completion(huge)
        if chat and call.route == "/v1/completions":
            return 404, {"error": {"message": "no completions here"}}
        return None

    with StubServer(handler) as a:
        eng = _engine(a.base_url, endpoint="chat" if chat else "auto")
        try:
            [c] = eng.generate([GenerationRequest("q", (1, 2, 3), 8)])
        finally:
            eng.close()
    assert c.ok and c.text.startswith("needle zzz")
    assert len(c.text) <= answer_chars(8) < answer_bytes(8)
    assert c.cut and "cut by pytest-ruler" in c.cut and "max_tokens=8" in c.cut and f"more than {answer_bytes(8)} bytes" in c.cut


def test_a_long_answer_within_the_byte_limit_is_cut_to_its_characters_and_an_answer_that_fits_is_whole():
    from pytest_ruler.engines.answer_cap import answer_chars

    def handler(call):
        if call.body and call.body.get("max_tokens") == 2:
            return 200, completion("y" * 20_000)
        if call.body and call.body.get("max_tokens") == 3:
            return 200, completion("fits " * 100)
        return None

    with StubServer(handler) as a:
        eng = _engine(a.base_url)
        try:
            long, fits = eng.generate([GenerationRequest("q", (1, 2), 2), GenerationRequest("r", (1, 3), 3)])
        finally:
            eng.close()
    assert len(long.text) == answer_chars(2) and "had 20000 characters" in long.cut
    assert fits.text == "fits " * 100 and fits.cut is None


def test_a_cut_answer_is_never_cached(tmp_path):
    from pytest_ruler.engines.base import Completion
    from pytest_ruler.run.cache import PredictionCache

    cache = PredictionCache(tmp_path)
    cache.put("cut", Completion("y" * 10, 3, 2, "stop", cut="cut by pytest-ruler: ..."))
    cache.put("whole", Completion("y" * 10, 3, 2, "stop"))
    assert set(cache.get_many(["cut", "whole"])) == {"whole"}


# ---------------------------------------------------------------- one server, however spelt


@pytest.mark.parametrize("spelling", [
    "http://localhost:{port}/v1", "http://127.1:{port}/v1", "http://[::ffff:127.0.0.1]:{port}/v1",
    "http://127.0.0.1:{port}//v1", "HTTP://127.0.0.1:{port}/v1/",
])
def test_one_server_spelt_twice_is_refused_at_start_naming_both_spellings(spelling):
    from pytest_ruler.engines.openai import OpenAIEngine

    with StubServer() as a:
        port = a.base_url.split(":")[2].split("/")[0]
        other = spelling.format(port=port)
        for build in (lambda urls: _engine(urls),
                      lambda urls: OpenAIEngine.preflight(EngineConfig(model="stub-model", backend="openai", base_url=urls, options={}))):
            with pytest.raises(RulerUsageError) as err:
                build([a.base_url, other])
            assert err.value.parameter == "--ruler-base-url"
            assert "one server" in err.value.fix and a.base_url in err.value.fix and other in err.value.fix
    assert not [c for c in a.calls if c.method == "POST"]  # refused before anything was sent


def test_two_servers_on_one_host_are_two_endpoints():
    with StubServer() as a, StubServer() as b:
        eng = _engine([a.base_url, b.base_url.replace("127.0.0.1", "localhost")])
        try:
            assert len(eng.endpoints) == 2
        finally:
            eng.close()


def test_the_cache_key_does_not_depend_on_the_endpoints_order_or_spelling():
    with StubServer() as a, StubServer() as b:
        port_b = b.base_url.split(":")[2].split("/")[0]
        idents = []
        for urls in ([a.base_url, b.base_url], [b.base_url, a.base_url],
                     [f"http://LOCALHOST:{port_b}//v1/", a.base_url.replace("127.0.0.1", "127.1")]):
            eng = _engine(urls)
            try:
                idents.append(eng.identity())
            finally:
                eng.close()
        single = []
        for url in (a.base_url, a.base_url.replace("127.0.0.1", "localhost") + "/"):
            eng = _engine(url)
            try:
                single.append(eng.identity())
            finally:
                eng.close()
    assert idents[0] == idents[1] == idents[2]
    assert idents[0]["base_url"] == sorted([a.base_url, b.base_url])
    assert single[0] == single[1] and single[0]["base_url"] == a.base_url


def test_a_host_that_does_not_resolve_is_the_dead_server_error(monkeypatch):
    import socket

    real = socket.getaddrinfo
    asked = []

    def getaddrinfo(host, *args, **kwargs):
        if host == "no-such-host.test":
            asked.append(host)
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    from pytest_ruler.engines.openai import OpenAIEngine

    with StubServer() as a:
        with pytest.raises(RulerUsageError) as err:  # the start-up check
            OpenAIEngine.preflight(EngineConfig(model="stub-model", backend="openai", base_url=(a.base_url, "http://no-such-host.test:8000/v1"),
                                                options={}))
    assert err.value.parameter == "--ruler-base-url" and err.value.value == "http://no-such-host.test:8000/v1"
    assert "unreachable" in err.value.fix and "no-such-host.test" in err.value.fix
    assert asked == ["no-such-host.test"]  # looked up once, at start


# ---------------------------------------------------------------- a prefix-cache count that cannot be true


def test_a_cached_token_count_larger_than_the_prompt_is_not_trusted():
    from pytest_ruler.results.endpoints import count_prefix_cache, prefix_cache_record, tally

    def handler(call):
        if call.body and call.body.get("max_tokens") == 4:
            answer = completion("ok", prompt_tokens=900)
            answer["usage"]["prompt_tokens_details"] = {"cached_tokens": 10**12}
            return 200, answer
        return None

    with StubServer(handler) as a:
        eng = _engine(a.base_url)
        try:
            [c] = eng.generate([GenerationRequest("q", (1, 2, 3), 4)])
        finally:
            eng.close()
    assert c.ok and c.cached_tokens == 10**12  # what the server said, kept as said
    acc, per_endpoint = {"prompt_tokens": 0, "cached_tokens": 0}, {}
    count_prefix_cache(acc, c)
    tally(per_endpoint, c)
    assert prefix_cache_record(acc) == {"prompt_tokens": 0, "cached_tokens": 0, "untrusted": 1}
    assert "cached_tokens" not in per_endpoint[a.base_url] and per_endpoint[a.base_url]["cached_untrusted"] == 1
