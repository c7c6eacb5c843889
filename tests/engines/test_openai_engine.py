"""The ``openai`` engine against real OpenAI-compatible servers and a scripted stub.

Real servers, each started on 127.0.0.1 and a free port by a module fixture and
stopped by pid (skipped with the install command when missing):

- vLLM's (``python -m vllm.entrypoints.openai.api_server``, the server the docs
  point users to), serving the embedded model's converted folder: token-id
  prompts, ``max_model_len`` from ``/v1/models`` (no ``max_context`` option).
- llama-cpp-python's (``python -m llama_cpp.server``) on the embedded GGUF: the
  text-prompt fallback and a server that does not report its context.

Stub: ``tests/servers/stub_openai.py``, an ``http.server`` in a thread whose
answers each test scripts (retries, 404 fallback, API key, over-length).
"""

from __future__ import annotations

import contextlib
import json
import logging
import time

import pytest

from pytest_ruler.engines.base import EngineConfig, GenerationRequest
from pytest_ruler.errors import RulerUsageError

from ..servers import llama_cpp_server as launcher
from ..servers import stub_openai as stub
from ..servers import vllm_server as vllm_launcher

SECRET = "sk-ruler-TEST-8f3b2c1d9e"


def _engine(base_url, *, model="stub-model", **options):
    from pytest_ruler.engines.openai import OpenAIEngine

    options.setdefault("retry_backoff", 0.01)
    return OpenAIEngine(EngineConfig(model=model, backend="openai", tokenizer="smollm2-135m", base_url=base_url, options=options))


def _req(tokenizer, text="The passkey is 1234. What is the passkey? Answer:", max_tokens=8):
    return GenerationRequest(prompt=text, prompt_ids=tuple(tokenizer.encode(text)), max_tokens=max_tokens)


@pytest.fixture(autouse=True)
def _no_key(monkeypatch):
    monkeypatch.delenv("RULER_API_KEY", raising=False)


# --------------------------------------------------------------------------- start-up


def test_base_url_required(tokenizer):
    from pytest_ruler.engines.openai import OpenAIEngine

    with pytest.raises(RulerUsageError) as err:
        OpenAIEngine(EngineConfig(model="m", backend="openai", tokenizer="smollm2-135m"))
    assert err.value.parameter == "--ruler-base-url"
    assert "vllm serve" in str(err.value)


def test_unreachable_server_is_one_clear_error_fast(tokenizer):
    port = launcher.free_port()  # nothing listens there
    url = f"http://127.0.0.1:{port}/v1"
    t0 = time.monotonic()
    with pytest.raises(RulerUsageError) as err:
        _engine(url)
    assert time.monotonic() - t0 < 20  # refused at once: no network timeout, no retry loop
    msg = str(err.value)
    assert err.value.parameter == "--ruler-base-url"
    assert url in msg and "unreachable" in msg and "vllm serve" in msg


def test_wrong_model_name_lists_served_models(tokenizer):
    with stub.StubServer() as server:
        with pytest.raises(RulerUsageError) as err:
            _engine(server.base_url, model="no-such-model")
    assert err.value.parameter == "--ruler-model"
    assert "'stub-model'" in str(err.value) and "no-such-model" in str(err.value)
    assert not server.posts()  # nothing was generated


def test_tokenizer_must_be_local(tokenizer):
    """The budget needs the tokenizer here; a name that is not local is a clear error."""
    from pytest_ruler.engines.openai import OpenAIEngine

    with stub.StubServer() as server:
        server.models.append({"id": "./no/such/model", "max_model_len": 4096})
        with pytest.raises(RulerUsageError) as err:
            OpenAIEngine(EngineConfig(model="./no/such/model", backend="openai", base_url=server.base_url))
    assert err.value.parameter == "--ruler-tokenizer"
    assert "--ruler-tokenizer" in err.value.fix


def test_context_length_from_server_options_or_error(tokenizer):
    with stub.StubServer() as server:
        assert _engine(server.base_url).max_context == 4096  # vLLM's max_model_len
        server.models[0].pop("max_model_len")
        with pytest.raises(RulerUsageError) as err:
            _engine(server.base_url)
        assert err.value.parameter == "--ruler-max-model-len"
        assert _engine(server.base_url, max_context=2048).max_context == 2048
        from pytest_ruler.engines.openai import OpenAIEngine

        cfg = EngineConfig(model="stub-model", tokenizer="smollm2-135m", base_url=server.base_url, max_model_len=1000)
        assert OpenAIEngine(cfg).max_context == 1000


def test_base_url_without_v1_and_credentials(tokenizer):
    with stub.StubServer() as server:
        eng = _engine(server.base_url[: -len("/v1")] + "/")
        assert eng.base_url == server.base_url
        with pytest.raises(RulerUsageError) as err:
            _engine(server.base_url.replace("http://", f"http://user:{SECRET}@"))
    assert SECRET not in str(err.value) and "RULER_API_KEY" in str(err.value)


# --------------------------------------------------------------------------- requests


def test_token_ids_sent_when_accepted_else_text(tokenizer):
    req = _req(tokenizer)
    with stub.StubServer() as server:
        eng = _engine(server.base_url)
        assert (eng.endpoint, eng.prompt_format) == ("completions", "ids")
        [done] = eng.generate([req])
        body = server.posts()[-1].body
        assert body["prompt"] == list(req.prompt_ids)
        assert body["temperature"] == 0 and body["top_p"] == 1 and body["seed"] == 0
        assert body["max_tokens"] == 8 and body["model"] == "stub-model"
        assert done.ok and done.text == "ok"

    def no_ids(call):
        if call.path == "/v1/completions" and not isinstance(call.prompt, str):
            return 422, {"detail": [{"msg": "Input should be a valid string"}]}

    with stub.StubServer(no_ids) as server:
        eng = _engine(server.base_url)
        assert eng.prompt_format == "text"
        [done] = eng.generate([req])
        body = server.posts()[-1].body
        assert body["prompt"] == req.prompt and body["add_special_tokens"] is False
        assert done.ok

    def llama_cpp_like(call):  # llama-cpp-python answers a token-id prompt with HTTP 500
        if call.route == "/v1/completions" and not isinstance(call.prompt, str):
            return 500, {"error": {"message": "17 validation errors: Input should be a valid string"}}

    with stub.StubServer(llama_cpp_like) as server:
        t0 = time.monotonic()
        eng = _engine(server.base_url, retry_backoff=1.0)
        # the ids probe is not retried: with backoff 1 s, retries would take 1+2+4+8+16 s
        assert time.monotonic() - t0 < 10
        assert eng.prompt_format == "text"
        assert [isinstance(c.prompt, str) for c in server.posts()] == [False, True, False]

    def transient(call):  # one 503 at start-up must not switch a vLLM server to text
        if call.route == "/v1/completions" and not isinstance(call.prompt, str) and call.attempt == 0:
            return 503, {"error": {"message": "warming up"}}

    with stub.StubServer(transient) as server:
        assert _engine(server.base_url).prompt_format == "ids"

    def strict(call):  # text only, and unknown fields refused (as api.openai.com does)
        if call.route == "/v1/completions":
            if not isinstance(call.prompt, str):
                return 400, {"error": {"message": "prompt must be a string"}}
            if set(call.body) - {"model", "prompt", "max_tokens", "temperature", "top_p", "seed", "stop"}:
                return 400, {"error": {"message": "Unrecognized request argument supplied"}}

    with stub.StubServer(strict) as server:
        eng = _engine(server.base_url)
        [done] = eng.generate([req])
        assert eng.prompt_format == "text" and done.ok, done
        assert "add_special_tokens" not in server.posts()[-1].body


def test_over_length_answered_without_calling_the_server(tokenizer):
    with stub.StubServer() as server:
        server.models[0]["max_model_len"] = 64
        eng = _engine(server.base_url)
        probes = len(server.posts())
        long_req = _req(tokenizer, "word " * 80, max_tokens=8)
        short_req = _req(tokenizer)
        seen = []
        out = eng.generate([long_req, short_req], on_result=lambda i, c: seen.append(i))
        assert out[0].finish_reason == "over_length" and "64" in out[0].error
        assert out[1].ok
        assert sorted(seen) == [0, 1]
        assert len(server.posts()) == probes + 1  # only the short one went out


def test_the_servers_cached_prompt_tokens_are_recorded(tokenizer):
    """usage.prompt_tokens_details.cached_tokens (vLLM's server, OpenAI) becomes cached_tokens; a
    server that does not say leaves it unknown (None), never 0."""
    def caching(call):
        if call.route == "/v1/completions" and call.body.get("max_tokens") == 8:
            answer = stub.completion("ok", prompt_tokens=12)
            answer["usage"]["prompt_tokens_details"] = {"cached_tokens": 10}
            return 200, answer

    with stub.StubServer(caching) as server:
        [cached] = _engine(server.base_url).generate([_req(tokenizer)])
    with stub.StubServer() as server:
        [plain] = _engine(server.base_url).generate([_req(tokenizer)])
    assert cached.ok and cached.cached_tokens == 10 and cached.prompt_tokens == 12
    assert plain.ok and plain.cached_tokens is None


def test_retries_429_then_503_then_success(tokenizer):
    def flaky(call):
        if call.path == "/v1/completions" and call.body.get("max_tokens") == 8:
            if call.attempt == 0:
                return 429, {"error": {"message": "slow down"}}, {"Retry-After": "0"}
            if call.attempt == 1:
                return 503, {"error": {"message": "overloaded"}}

    with stub.StubServer(flaky) as server:
        eng = _engine(server.base_url)
        [done] = eng.generate([_req(tokenizer)])
    assert done.ok and done.text == "ok", done
    assert len([c for c in server.posts() if c.body["max_tokens"] == 8]) == 3


def test_persistent_500_is_an_error_result_and_others_survive(tokenizer):
    def broken(call):
        if call.path == "/v1/completions" and "BROKEN" in json.dumps(call.body.get("prompt")):
            return 500, {"error": {"message": "kaput"}}

    with stub.StubServer(broken) as server:
        eng = _engine(server.base_url, max_retries=2, prompt_format="text", endpoint="completions")
        reqs = [_req(tokenizer, "fine one"), _req(tokenizer, "BROKEN"), _req(tokenizer, "fine two")]
        out = eng.generate(reqs)
        eng.close()
    assert [c.finish_reason for c in out] == ["stop", "error", "stop"]
    assert "HTTP 500" in out[1].error and "kaput" in out[1].error and "2 retries" in out[1].error
    assert len([c for c in server.posts() if c.body["prompt"] == "BROKEN"]) == 3


def test_timeout_is_retried(tokenizer):
    def slow_once(call):
        if call.path == "/v1/completions" and call.body.get("max_tokens") == 8 and call.attempt == 0:
            time.sleep(1.0)

    with stub.StubServer(slow_once) as server:
        eng = _engine(server.base_url, timeout=0.5, max_retries=8)  # headroom on a loaded machine
        [done] = eng.generate([_req(tokenizer)])
    assert done.ok, done


def test_bounded_concurrency_and_results_in_order(tokenizer):
    import threading

    active, peak, lock = [0], [0], threading.Lock()

    def slow(call):
        if call.path == "/v1/completions" and call.body.get("max_tokens") == 8:
            with lock:
                active[0] += 1
                peak[0] = max(peak[0], active[0])
            time.sleep(0.05)
            with lock:
                active[0] -= 1
            return 200, stub.completion(f"answer {call.body['prompt'][-1]}", prompt_tokens=len(call.body["prompt"]))

    reqs = [_req(tokenizer, f"question {i}") for i in range(12)]
    with stub.StubServer(slow) as server:
        eng = _engine(server.base_url, concurrency=3)
        out = eng.generate(reqs)
    assert peak[0] <= 3
    assert [c.text for c in out] == [f"answer {r.prompt_ids[-1]}" for r in reqs]
    assert all(c.prompt_tokens == r.prompt_tokens for c, r in zip(out, reqs))


def test_api_key_only_in_the_authorization_header(tokenizer, monkeypatch, caplog):
    monkeypatch.setenv("RULER_API_KEY", SECRET)

    def echo(call):  # a careless server that echoes the header back in its errors
        if call.path == "/v1/completions" and call.body.get("max_tokens") == 8:
            return 500, {"error": {"message": f"bad auth {call.headers.get('Authorization')}"}}

    caplog.set_level(logging.DEBUG, logger="pytest_ruler")
    with stub.StubServer(echo) as server:
        eng = _engine(server.base_url, max_retries=1)
        [done] = eng.generate([_req(tokenizer)])
    assert all(c.headers.get("Authorization") == f"Bearer {SECRET}" for c in server.calls)
    assert done.finish_reason == "error"
    for text in (repr(eng), str(vars(eng)), json.dumps(dict(eng.identity())), done.error, repr(done), caplog.text):
        assert SECRET not in text
    assert "<secret>" in done.error


def test_api_key_refused_names_the_variable_not_the_key(tokenizer, monkeypatch):
    monkeypatch.setenv("RULER_API_KEY", SECRET)
    with stub.StubServer(lambda call: (401, {"error": {"message": "invalid key"}})) as server:
        with pytest.raises(RulerUsageError) as err:
            _engine(server.base_url)
    assert "RULER_API_KEY" in str(err.value) and SECRET not in str(err.value)


def test_chat_fallback_when_completions_is_404(tokenizer):
    from pytest_ruler.tasks.chat import frame_for

    frame = frame_for("auto", tokenizer)
    user, prefix = "Remember 4821. What number?", " Answer: The number is"
    prompt = frame.wrap(user) + prefix
    req = GenerationRequest(prompt=prompt, prompt_ids=tuple(tokenizer.encode(prompt)), max_tokens=8)

    def chat_only(call):
        if call.path == "/v1/completions":
            return 404, {"error": {"message": "Not Found"}}
        if call.path == "/v1/chat/completions":
            return 200, stub.chat_completion(" 4821.")

    with stub.StubServer(chat_only) as server:
        eng = _engine(server.base_url)
        assert eng.endpoint == "chat" and eng.identity()["endpoint"] == "chat"
        [done] = eng.generate([req])
        plain = eng.generate([_req(tokenizer, "no template here")])[0]
        bodies = [c.body for c in server.posts("/v1/chat/completions")]
    assert done.ok and done.text == " 4821."
    assert bodies[0]["messages"] == [{"role": "user", "content": user}, {"role": "assistant", "content": prefix}]
    assert bodies[0]["continue_final_message"] is True and bodies[0]["add_generation_prompt"] is False
    assert bodies[1]["messages"] == [{"role": "user", "content": "no template here"}]
    assert "continue_final_message" not in bodies[1] and plain.ok


def test_identity_and_registry(tokenizer):
    from pytest_ruler.engines import load_engine

    with stub.StubServer() as server:
        cfg = EngineConfig(model="stub-model", backend="openai", tokenizer="smollm2-135m", base_url=server.base_url + "?api-version=1")
        eng = load_engine(cfg)
        ident = dict(eng.identity())
        eng.close()
        assert server.calls[0].path == "/v1/models?api-version=1"
    assert ident["engine"] == "openai" and ident["model"] == "stub-model"
    assert ident["base_url"] == server.base_url and ident["served_model"]["root"] == "/srv/models/stub"
    assert ident["endpoint"] == "completions"
    json.dumps(ident)


# --------------------------------------------------------------------------- real server


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory):
    missing = launcher.missing_modules()
    if missing:
        pytest.skip(f"llama-cpp-python's server is not installed (missing {', '.join(missing)}): {launcher.INSTALL}")
    from pytest_ruler.tasks.tokenizer import embedded_gguf_path

    try:
        gguf = embedded_gguf_path("smollm2-135m")
    except RulerUsageError as exc:
        pytest.skip(str(exc))
    log = tmp_path_factory.mktemp("llama-server") / "server.log"
    with launcher.llama_cpp_server(gguf, alias="smollm2-135m", n_ctx=8192, log_path=log) as url:
        yield url


@pytest.fixture(scope="module")
def real_engine(llama_server, tokenizer):
    from pytest_ruler.engines.openai import OpenAIEngine

    # llama.cpp's /v1/models has no max_model_len: the context comes from the option
    eng = OpenAIEngine(EngineConfig(model="smollm2-135m", backend="openai", base_url=llama_server, options={"max_context": 8192}))
    yield eng
    eng.close()


@pytest.mark.slow
def test_real_server_retrieves_the_passkey_at_1k(real_engine, tokenizer):
    from pytest_ruler.tasks.chat import frame_for
    from pytest_ruler.results.scoring import string_match_all
    from pytest_ruler.tasks import GenerationContext, generate_samples

    # llama-cpp-python refuses token-id prompts (HTTP 500), so text is sent; and the
    # engine turns its default repeat_penalty (1.1, applied even when greedy) off
    assert (real_engine.endpoint, real_engine.prompt_format) == ("completions", "text")
    assert real_engine.identity()["extra_body"] == {"repeat_penalty": 1.0}
    ctx = GenerationContext(tokenizer, frame=frame_for("auto", tokenizer))
    samples = generate_samples("niah_single_1", 1024, samples=3, seed=0, ctx=ctx)
    reqs = []
    for s in samples:
        prompt = s.input + s.answer_prefix
        reqs.append(GenerationRequest(prompt=prompt, prompt_ids=tuple(tokenizer.encode(prompt)), max_tokens=128))
    seen = []
    out = real_engine.generate(reqs, on_result=lambda i, c: seen.append(i))
    assert sorted(seen) == [0, 1, 2]
    assert all(c.ok for c in out), out
    # the server counted the text prompt as we did (no BOS added, same tokenizer)
    assert [c.prompt_tokens for c in out] == [r.prompt_tokens for r in reqs]
    score = string_match_all([c.text for c in out], [s.outputs for s in samples])
    assert score >= 66, [(c.text, s.outputs) for c, s in zip(out, samples)]
    # greedy is deterministic: the same prompt again gives the same answer (the one
    # that finished last, whose prefix llama.cpp still holds, so this costs little)
    last = seen[-1]
    again = real_engine.generate([reqs[last]])[0]
    assert again.text == out[last].text


@pytest.mark.slow
def test_real_server_wrong_model_and_over_length(real_engine, llama_server, tokenizer):
    with pytest.raises(RulerUsageError) as err:
        _engine(llama_server, model="gpt-4o", max_context=8192)
    assert "'smollm2-135m'" in str(err.value)
    huge = GenerationRequest(prompt="x", prompt_ids=(1,) * 8190, max_tokens=16)
    [done] = real_engine.generate([huge])
    assert done.finish_reason == "over_length"


@pytest.mark.slow
def test_real_server_chat_endpoint(llama_server, tokenizer):
    eng = _engine(llama_server, model="smollm2-135m", endpoint="chat", max_context=8192)
    [done] = eng.generate([_req(tokenizer, "What is the capital of France? Answer in one word.", max_tokens=8)])
    eng.close()
    assert done.ok and done.text.strip(), done


@pytest.mark.slow
def test_the_plugin_item_passes_through_the_real_server(llama_server, pytester):
    """The issue's item (niah_single_1, 1K, 4 samples) through the plugin and the real server."""
    result = pytester.runpytest_subprocess(
        "-p", "no:hypothesispytest",
        "--ruler-model=smollm2-135m", "--ruler-backend=openai", f"--ruler-base-url={llama_server}",
        # one request at a time: llama.cpp reuses cached prompt prefixes, so the order of
        # concurrent requests changes its numerics, and this 135M model sits at 3-4 of 4 here
        "--ruler-engine-option=max_context=8192,concurrency=1", "--ruler-threshold=70",
        "--ruler-tasks=niah_single_1", "--ruler-lengths=1k", "--ruler-samples=4", "--ruler-report=r.json",
        timeout=600,
    )
    report = json.loads((pytester.path / "r.json").read_text())
    item = report["items"][0]
    assert report["backend"] == "openai" and item["engine_calls"] == 4, item
    assert item["score"] >= 70, item["failures"]
    result.assert_outcomes(passed=1)


@pytest.fixture(scope="module")
def keyed_llama_server(request, tmp_path_factory):
    """llama.cpp's server that wants an API key (``--api_key``); the key is the test's parameter."""
    missing = launcher.missing_modules()
    if missing:
        pytest.skip(f"llama-cpp-python's server is not installed (missing {', '.join(missing)}): {launcher.INSTALL}")
    from pytest_ruler.tasks.tokenizer import embedded_gguf_path

    try:
        gguf = embedded_gguf_path("smollm2-135m")
    except RulerUsageError as exc:
        pytest.skip(str(exc))
    servers = {}
    with contextlib.ExitStack() as stack:
        def start(key: str) -> str:
            if key not in servers:
                log = tmp_path_factory.mktemp("llama-keyed") / "server.log"
                servers[key] = stack.enter_context(launcher.llama_cpp_server(
                    gguf, alias="smollm2-135m", n_ctx=4096, log_path=log, extra_args=("--api_key", key), ready_key=key))
            return servers[key]

        yield start


@pytest.mark.slow
@pytest.mark.parametrize("from_env, key, traces", [
    pytest.param("sk-crlf-2b7e41c9d05af3e8\r", "sk-crlf-2b7e41c9d05af3e8", ["sk-crlf-2b7e41c9d05af3e8"], id="crlf-file"),
    pytest.param("x", "x", ["Bearer x", "API_KEY=x", "'x'"], id="one-character"),
])
def test_a_real_server_with_an_odd_key_answers_right_and_the_key_leaves_no_trace(keyed_llama_server, pytester, monkeypatch,
                                                                                from_env, key, traces):
    """A key read from a CRLF file ("$(cat key.txt)" keeps the \\r) and a 1-character key, through
    the plugin and llama.cpp's server: right answers, and the key in no output, report or cache."""
    url = keyed_llama_server(key)
    monkeypatch.setenv("RULER_API_KEY", from_env)
    args = ("-p", "no:hypothesispytest", "--ruler-model=smollm2-135m", "--ruler-backend=openai", f"--ruler-base-url={url}",
            "--ruler-engine-option=max_context=4096,concurrency=1", "--ruler-threshold=40", "--ruler-tasks=niah_single_1",
            "--ruler-lengths=1k", "--ruler-samples=2", "--ruler-report=r.json", "--ruler-markdown=r.md")
    result = pytester.runpytest_subprocess(*args, timeout=600)
    item = json.loads((pytester.path / "r.json").read_text())["items"][0]
    assert item["error"] is None and item["engine_calls"] == 2 and item["score"] >= 50, item
    result.assert_outcomes(passed=1)
    monkeypatch.setenv("RULER_API_KEY", key + "-wrong")
    with pytest.raises(RulerUsageError) as refused:  # the key matters: a wrong one is refused at start
        _engine(url, model="smollm2-135m", max_context=4096)
    assert "RULER_API_KEY is set but was refused" in str(refused.value)
    shown = result.stdout.str() + result.stderr.str() + str(refused.value)
    written = [(pytester.path / n).read_bytes() for n in ("r.json", "r.md")] + [db.read_bytes() for db in pytester.path.rglob("predictions.sqlite*")]
    for trace in traces:
        assert trace not in shown
        assert all(trace.encode() not in data for data in written)


# --------------------------------------------------------------------------- vLLM's server


@pytest.fixture(scope="module")
def vllm_server(tmp_path_factory):
    why = vllm_launcher.missing()
    if why:
        pytest.skip(why)
    try:
        model_dir = vllm_launcher.embedded_model_dir()
    except RulerUsageError as exc:
        pytest.skip(str(exc))
    log = tmp_path_factory.mktemp("vllm-server") / "server.log"
    with vllm_launcher.vllm_server(model_dir, served_name="smollm2-135m", max_model_len=8192, log_path=log) as url:
        yield url


@pytest.mark.slow
def test_vllm_server_reports_its_context_and_takes_token_ids(vllm_server, tokenizer):
    from pytest_ruler.tasks.chat import frame_for
    from pytest_ruler.engines.openai import OpenAIEngine
    from pytest_ruler.results.scoring import string_match_all
    from pytest_ruler.tasks import GenerationContext, generate_samples

    eng = OpenAIEngine(EngineConfig(model="smollm2-135m", backend="openai", base_url=vllm_server))
    try:
        assert eng.max_context == 8192  # vLLM's /v1/models says max_model_len: no option needed
        assert (eng.endpoint, eng.prompt_format) == ("completions", "ids")
        ctx = GenerationContext(tokenizer, frame=frame_for("auto", tokenizer))
        samples = generate_samples("niah_single_1", 1024, samples=3, seed=0, ctx=ctx)
        reqs = [GenerationRequest(prompt=s.prompt, prompt_ids=tuple(tokenizer.encode(s.prompt)), max_tokens=s.tokens_to_generate) for s in samples]
        huge = GenerationRequest(prompt="x", prompt_ids=(1,) * 8190, max_tokens=16)
        out = eng.generate([*reqs, huge])
    finally:
        eng.close()
    assert all(c.ok for c in out[:3]), out
    assert [c.prompt_tokens for c in out[:3]] == [r.prompt_tokens for r in reqs]  # the ids we counted, as sent
    assert out[3].finish_reason == "over_length"
    assert string_match_all([c.text for c in out[:3]], [list(s.outputs) for s in samples]) == 100.0, [c.text for c in out]


@pytest.mark.slow
def test_the_plugin_item_passes_through_vllms_server(vllm_server, pytester):
    """The issue's item (niah_single_1, 1K, 4 samples) through the plugin and vLLM's server."""
    result = pytester.runpytest_subprocess(
        "-p", "no:hypothesispytest",
        "--ruler-model=smollm2-135m", "--ruler-backend=openai", f"--ruler-base-url={vllm_server}",
        "--ruler-tasks=niah_single_1", "--ruler-lengths=1k", "--ruler-samples=4", "--ruler-report=r.json",
        timeout=600,
    )
    report = json.loads((pytester.path / "r.json").read_text())
    item = report["items"][0]
    assert report["backend"] == "openai" and item["engine_calls"] == 4, item
    assert item["score"] == 100.0, item["failures"]
    result.assert_outcomes(passed=1)
