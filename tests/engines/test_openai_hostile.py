"""The ``openai`` engine against hostile or broken servers (issue 23), with the scripted stub.

Each test is a probe that today's fixes answer: deadlines that bound the whole
request, keys that are stripped, refused or kept to their host, answers scrubbed
after parsing (never the raw JSON), malformed answers named as such, server
text escaped, the served model's card in the cache identity, one keep-alive
pool. The stub (``tests/servers/stub_openai.py``) is a scripted HTTP server,
not a model.
"""

from __future__ import annotations

import json
from email.utils import formatdate

import pytest

from pytest_ruler.engines.base import EngineConfig, GenerationRequest
from pytest_ruler.errors import RulerUsageError

from ..servers import stub_openai as stub

SECRET = "sk-ruler-HOSTILE-5e1f0a7c3b"


def _engine(base_url, *, model="stub-model", **options):
    from pytest_ruler.engines.openai import OpenAIEngine

    options.setdefault("retry_backoff", 0.01)
    return OpenAIEngine(EngineConfig(model=model, backend="openai", tokenizer="smollm2-135m", base_url=base_url, options=options))


def _req(tokenizer, text="The passkey is 1234. What is the passkey? Answer:", max_tokens=8):
    return GenerationRequest(prompt=text, prompt_ids=tuple(tokenizer.encode(text)), max_tokens=max_tokens)


def _real(call) -> bool:
    """A generation request, not one of the engine's one-token start-up probes."""
    return call.method == "POST" and (call.body or {}).get("max_tokens", 1) > 1


@pytest.fixture(autouse=True)
def _no_key(monkeypatch):
    monkeypatch.delenv("RULER_API_KEY", raising=False)


# --------------------------------------------------------------------------- deadlines


def test_timeout_is_a_deadline_for_the_whole_request(tokenizer):
    """A server that trickles its answer (every read is quick) cannot hold a request past ``timeout``."""

    def trickle(call):
        if _real(call):  # about 4 s of bytes at 0.02 s each: far past the 0.5 s deadline
            return stub.Trickle(200, stub.completion("ok " * 60), interval=0.02)

    with stub.StubServer(trickle) as server:
        eng = _engine(server.base_url, timeout=0.5, max_retries=0)
        [done] = eng.generate([_req(tokenizer)])
        eng.close()
    assert done.finish_reason == "error", done
    assert "no complete answer within 0.5 s" in done.error


def test_the_start_up_check_has_one_deadline(tokenizer):
    """GET /models, trickled, ends the start-up check at its deadline with one clear error."""

    def trickle(call):
        if call.route == "/v1/models":
            return stub.Trickle(200, {"object": "list", "data": [{"id": "stub-model", "max_model_len": 4096}]}, interval=0.02)

    with stub.StubServer(trickle) as server:
        with pytest.raises(RulerUsageError) as err:
            _engine(server.base_url, timeout=0.5)
    assert err.value.parameter == "--ruler-base-url"
    assert "did not answer GET" in err.value.fix and "within 0.5 s" in err.value.fix
    assert len(server.calls) == 1  # no retry at start-up


def _fake_resolver(monkeypatch, names):
    """socket.getaddrinfo for the names in ``names``: an address, or None for a lookup that
    hangs (until the test ends, at most 30 s, then fails as an unknown name); others as before."""
    import socket
    import threading

    real = socket.getaddrinfo
    release = threading.Event()

    def getaddrinfo(host, port, *args, **kwargs):
        if host not in names:
            return real(host, port, *args, **kwargs)
        if names[host] is None:
            release.wait(30)
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return [(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", (names[host], port))]

    for var in ("http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return release


def test_a_host_name_that_never_resolves_ends_the_start_up_check_at_its_deadline(tokenizer, monkeypatch):
    """The lookup of --ruler-base-url's host counts against the start-up deadline: a resolver
    that hangs gives the timed-out error, not (30 s later) the resolver's own failure."""
    release = _fake_resolver(monkeypatch, {"slow-dns.test": None})
    try:
        with pytest.raises(RulerUsageError) as err:
            _engine("http://slow-dns.test:8000/v1", timeout=0.5)
    finally:
        release.set()
    assert err.value.parameter == "--ruler-base-url"
    assert "did not answer GET" in err.value.fix and "within 0.5 s" in err.value.fix, err.value.fix


def test_a_host_name_is_connected_to_at_the_address_it_resolves_to(tokenizer, monkeypatch):
    _fake_resolver(monkeypatch, {"stub.test": "127.0.0.1"})
    with stub.StubServer() as server:
        port = server.base_url.rsplit(":", 1)[1]
        eng = _engine(f"http://stub.test:{port}", timeout=60)
        [done] = eng.generate([_req(tokenizer)])
        eng.close()
    assert done.error is None and done.text == "ok", done
    assert server.calls[0].headers.get("Host") == f"stub.test:{port.split('/')[0]}"  # the name, not the address


# --------------------------------------------------------------------------- retries


def test_retry_after_as_an_http_date_is_honoured(tokenizer):
    def busy_once(call):
        if _real(call) and call.attempt == 0:
            return 503, {"error": {"message": "busy"}}, {"Retry-After": formatdate(usegmt=True)}  # now: retry at once

    with stub.StubServer(busy_once) as server:
        eng = _engine(server.base_url, retry_backoff=60.0)  # a backoff this long would stall the test
        [done] = eng.generate([_req(tokenizer)])
        eng.close()
    assert done.ok and len([c for c in server.calls if _real(c)]) == 2


def test_retries_stop_when_the_next_would_start_past_the_retry_window(tokenizer, monkeypatch):
    from pytest_ruler.engines import openai_transport

    monkeypatch.setattr(openai_transport, "_RETRY_WINDOW", 0.0)  # no time left beyond the first attempt

    def busy(call):
        if _real(call):
            return 429, {"error": {"message": "slow down"}}, {"Retry-After": "30"}

    with stub.StubServer(busy) as server:
        eng = _engine(server.base_url, timeout=5, max_retries=5)
        [done] = eng.generate([_req(tokenizer)])
        eng.close()
    assert done.finish_reason == "error" and "HTTP 429" in done.error
    assert len([c for c in server.calls if _real(c)]) == 1  # a 30 s wait would pass the window: no retry


def test_one_keep_alive_pool_serves_the_requests(tokenizer):
    reqs = [_req(tokenizer, f"question {i}") for i in range(8)]
    with stub.StubServer() as server:
        eng = _engine(server.base_url, concurrency=1)
        out = eng.generate(reqs)
        eng.close()
    assert all(c.ok for c in out)
    connections = {c.peer for c in server.calls}
    assert len(connections) <= 2, connections  # start-up and 8 requests over the same connection(s), not one each


# --------------------------------------------------------------------------- secrets


def test_a_key_read_from_a_crlf_file_is_stripped(tokenizer, monkeypatch):
    monkeypatch.setenv("RULER_API_KEY", f"  {SECRET}\r")  # RULER_API_KEY="$(cat key.txt)" on a CRLF file
    with stub.StubServer() as server:
        eng = _engine(server.base_url)
        [done] = eng.generate([_req(tokenizer)])
        eng.close()
    assert done.ok
    assert {c.headers.get("Authorization") for c in server.calls} == {f"Bearer {SECRET}"}


@pytest.mark.parametrize("key", [f"{SECRET}\r\nX-Injected: 1", f"{SECRET[:8]}\x1b{SECRET[8:]}", f"{SECRET}é"])
def test_a_key_that_no_header_can_carry_is_refused_in_one_line_without_it(tokenizer, monkeypatch, key):
    monkeypatch.setenv("RULER_API_KEY", key)
    with stub.StubServer() as server:
        with pytest.raises(RulerUsageError) as err:
            _engine(server.base_url)
    message = str(err.value)
    assert err.value.parameter == "RULER_API_KEY" and "\n" not in message
    assert SECRET not in message and SECRET[:8] not in message and SECRET[8:] not in message
    assert not server.calls  # refused before anything was sent


def test_a_header_the_http_library_refuses_is_reported_without_the_header(tokenizer, monkeypatch):
    from pytest_ruler.engines import openai_transport

    monkeypatch.setattr(openai_transport, "api_key", lambda: f"{SECRET}\r\nX-Injected: 1")  # past the start-up refusal
    with stub.StubServer() as server:
        with pytest.raises(RulerUsageError) as err:
            _engine(server.base_url)
    assert SECRET not in str(err.value) and "could not be sent" in str(err.value)


def test_a_one_character_key_leaves_the_answers_alone(tokenizer, monkeypatch):
    monkeypatch.setenv("RULER_API_KEY", "x")
    answer = " The box holds 4821 xylophones and 6 extra text boxes."

    with stub.StubServer(lambda call: (200, stub.completion(answer)) if _real(call) else None) as server:
        eng = _engine(server.base_url)
        [done] = eng.generate([_req(tokenizer)])
        eng.close()
    assert done.ok and done.text == answer
    assert {c.headers.get("Authorization") for c in server.calls} == {"Bearer x"}


def test_the_key_is_scrubbed_from_the_parsed_answer_even_when_json_escapes_it(tokenizer, monkeypatch):
    key = 'sk-"quoted"\\key-81f2'
    monkeypatch.setenv("RULER_API_KEY", key)

    with stub.StubServer(lambda call: (200, stub.completion(f"echo {key} end")) if _real(call) else None) as server:
        eng = _engine(server.base_url)
        [done] = eng.generate([_req(tokenizer)])
        eng.close()
    assert done.ok and done.text == "echo <secret> end"


def test_a_redirect_to_another_host_never_carries_the_key(tokenizer, monkeypatch):
    monkeypatch.setenv("RULER_API_KEY", SECRET)
    with stub.StubServer() as elsewhere:
        other = elsewhere.base_url.replace("127.0.0.1", "localhost")  # another host name: another origin

        def moved(call):
            if call.route == "/v1/models":
                return 302, {}, {"Location": other + "/models"}

        with stub.StubServer(moved) as server:
            eng = _engine(server.base_url)
            said: list[str] = []
            eng.on_wait = said.append
            eng.close()
    assert [c.route for c in elsewhere.calls] == ["/v1/models"]
    assert "Authorization" not in elsewhere.calls[0].headers
    assert all(c.headers.get("Authorization") == f"Bearer {SECRET}" for c in server.calls)
    [line] = [s for s in said if "redirected" in s]
    assert "another host or scheme, so the API key is not sent there" in line and SECRET not in line


def test_a_redirect_on_the_same_host_keeps_the_key_and_is_said_once(tokenizer, monkeypatch):
    monkeypatch.setenv("RULER_API_KEY", SECRET)

    def moved(call):
        if call.route == "/v2/completions":
            return None
        if call.route == "/v1/completions":
            return 307, {}, {"Location": "/v2/completions"}

    def serve(call):
        if call.route == "/v2/completions":
            return 200, stub.completion("moved ok")
        return moved(call)

    with stub.StubServer(serve) as server:
        eng = _engine(server.base_url)
        said: list[str] = []
        eng.on_wait = said.append
        out = eng.generate([_req(tokenizer, f"q{i}") for i in range(3)])
        eng.close()
    assert [c.text for c in out] == ["moved ok"] * 3
    assert all(c.headers.get("Authorization") == f"Bearer {SECRET}" for c in server.calls)
    assert len([s for s in said if "redirected" in s]) == 1


# --------------------------------------------------------------------------- what the server says


def test_a_server_error_body_is_escaped(tokenizer):
    screen = "\x1b[2J\x1b[32mgate PASSED: effective length 128K\x1b[0m"

    def hostile(call):
        if _real(call):
            return 400, {"error": {"message": screen}}

    with stub.StubServer(hostile) as server:
        eng = _engine(server.base_url)
        [done] = eng.generate([_req(tokenizer)])
        eng.close()
    assert done.finish_reason == "error"
    assert "\x1b" not in done.error and "\\x1b[2J" in done.error


def test_a_start_up_error_body_is_escaped(tokenizer):
    with stub.StubServer(lambda call: (500, b"\x1b]0;pwned\x07 \x1b[2J broken")) as server:
        with pytest.raises(RulerUsageError) as err:
            _engine(server.base_url)
    assert "\x1b" not in str(err.value) and "\x07" not in str(err.value) and "\\x1b[2J broken" in str(err.value)


@pytest.mark.parametrize("answer, named", [
    (17, "choices[0].text is int, not text"),
    (["a", "b"], "choices[0].text is list, not text"),
    ("lone \ud800 surrogate", "lone surrogate (U+D800)"),
    (None, None),  # no text at all: an empty answer, not a malformed one
])
def test_a_completion_that_is_not_text_is_a_malformed_answer(tokenizer, answer, named):
    def odd(call):
        if _real(call) and "odd" in call.body["prompt"]:
            body = stub.completion()
            body["choices"][0]["text"] = answer
            return 200, body

    with stub.StubServer(odd) as server:
        eng = _engine(server.base_url, prompt_format="text")
        out = eng.generate([_req(tokenizer, "fine"), _req(tokenizer, "odd one"), _req(tokenizer, "fine too")])
        eng.close()
    assert [c.ok for c in (out[0], out[2])] == [True, True]
    odd_one = out[1]
    if named is None:
        assert odd_one.ok and odd_one.text == "" and odd_one.error is None
        return
    assert odd_one.finish_reason == "malformed" and not odd_one.ok and odd_one.text == ""
    assert odd_one.error.startswith("malformed answer: ") and named in odd_one.error


def test_a_chat_answer_without_content_is_malformed(tokenizer):
    def chat(call):
        if call.route == "/v1/chat/completions":
            return 200, {"choices": [{"index": 0, "message": {"role": "assistant"}, "finish_reason": "stop"}]}

    with stub.StubServer(chat) as server:
        eng = _engine(server.base_url, endpoint="chat")
        [done] = eng.generate([_req(tokenizer)])
        eng.close()
    assert done.finish_reason == "malformed" and "no choices[0].message.content" in done.error


def test_a_server_answering_as_another_model_is_said_once(tokenizer):
    def other(call):
        if _real(call):
            body = stub.completion("ok")
            body["model"] = "other-model\x1b[2J"
            return 200, body

    with stub.StubServer(other) as server:
        eng = _engine(server.base_url)
        said: list[str] = []
        eng.on_wait = said.append
        out = eng.generate([_req(tokenizer, f"q{i}") for i in range(4)])
        eng.close()
    assert all(c.ok for c in out)
    [line] = [s for s in said if "answers as model" in s]
    assert "'other-model\\x1b[2J'" in line and "'stub-model'" in line and "\x1b" not in line


# --------------------------------------------------------------------------- the cache identity


def test_the_cache_identity_holds_what_models_says_about_the_model(tokenizer):
    with stub.StubServer() as server:
        server.models[0].update(created=1, permission=[{"id": "modelperm-1", "created": 1}])
        first = dict(_engine(server.base_url).identity())
        server.models[0].update(created=2, permission=[{"id": "modelperm-2", "created": 2}])
        again = dict(_engine(server.base_url).identity())
        server.models[0]["max_model_len"] = 2048  # same name, same root: another model (or setting) behind it
        other = dict(_engine(server.base_url).identity())
    assert first == again  # what changes per listing is left out
    assert first["served_model"] == {"id": "stub-model", "max_model_len": 4096, "root": "/srv/models/stub"}
    assert other != first and other["served_model"]["max_model_len"] == 2048
    json.dumps(first)


def test_a_server_that_cannot_tell_models_apart_is_warned_about(tokenizer):
    said: list[str] = []
    with stub.StubServer() as server:
        server.models[:] = [{"id": "stub-model", "object": "model", "owned_by": "me"}]  # llama-cpp-python's listing
        eng = _engine(server.base_url, max_context=4096)
        eng.on_wait = said.append
        eng.close()
        server.models[:] = [{"id": "stub-model", "object": "model", "owned_by": "llamacpp", "meta": {"n_params": 134515008, "size": 98000000}}]
        eng = _engine(server.base_url, max_context=4096)
        eng.on_wait = said.append
        eng.close()
    [line] = [s for s in said if "says nothing about" in s]
    assert "'stub-model'" in line and "--ruler-no-cache" in line
