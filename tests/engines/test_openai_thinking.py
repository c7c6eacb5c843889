"""A thinking model's answer in every shape a server gives, through the ``openai`` engine and the
split (``engines.thinking``): the same answer from each. The server is the scripted stub
(``tests/servers/stub_openai.py``, ``thinking_completion``), a stand-in, not a model."""

from __future__ import annotations


import pytest

from pytest_ruler.engines.base import Completion, EngineConfig, GenerationRequest
from pytest_ruler.engines.thinking import split
from pytest_ruler.run.reasoning import ThinkingSettings, complete

from ..servers import stub_openai as stub
REASONING, ANSWER = "The key alpha is in the third paragraph: 1234567.", " 1234567."


@pytest.fixture(autouse=True)
def _no_key(monkeypatch):
    monkeypatch.delenv("RULER_API_KEY", raising=False)


def _engine(base_url, **options):
    from pytest_ruler.engines.openai import OpenAIEngine

    options.setdefault("retry_backoff", 0.01)
    return OpenAIEngine(EngineConfig(model="stub-model", backend="openai", tokenizer="smollm2-135m", base_url=base_url, options=options))


def _ask(shape: str, *, chat: bool, finish: str = "stop") -> Completion:
    def answer(call):
        if call.route in ("/v1/completions", "/v1/chat/completions"):
            return 200, stub.thinking_completion(shape, REASONING, ANSWER, chat=chat, finish_reason=finish, completion_tokens=30)

    with stub.StubServer(answer) as server:
        eng = _engine(server.base_url, **({"endpoint": "chat"} if chat else {}))
        prompt = "Where is the key alpha? Answer:"
        [c] = eng.generate([GenerationRequest(prompt, tuple(eng.tokenizer.encode(prompt)), 64)])
        eng.close()
    return c


@pytest.mark.parametrize("chat", [True, False], ids=["chat", "completions"])
@pytest.mark.parametrize("shape", ["reasoning", "reasoning_content", "think_in_content"])
def test_each_shape_with_an_answer_parses_into_the_same_answer(shape, chat):
    c = _ask(shape, chat=chat)
    assert c.ok, c.error
    s = split(c)
    assert (s.answer, s.reasoning, s.outcome) == (ANSWER, REASONING, "answered")


@pytest.mark.parametrize("chat", [True, False], ids=["chat", "completions"])
def test_reasoning_with_no_content_is_an_empty_answer_and_cut_by_length_a_truncated_thinking(chat):
    c = _ask("reasoning_no_content", chat=chat)
    assert c.ok and c.text == "" and c.reasoning == REASONING
    assert split(c).outcome == "empty_answer"
    assert split(_ask("reasoning_no_content", chat=chat, finish="length")).outcome == "thinking_truncated"


@pytest.mark.parametrize("chat", [True, False], ids=["chat", "completions"])
def test_a_missing_end_marker_is_counted_as_such(chat):
    c = _ask("end_missing", chat=chat)
    s = split(c)
    assert (s.answer, s.reasoning, s.outcome) == ("", REASONING, "end_missing")
    assert split(_ask("end_missing", chat=chat, finish="length")).outcome == "thinking_truncated"


def test_the_session_layer_gives_every_shape_the_same_answer(tokenizer):
    """run.reasoning.complete over each shape (the path every native and map-reduce call takes)."""
    answers = set()
    for shape in ("reasoning", "reasoning_content", "think_in_content"):
        c = _ask(shape, chat=True)
        [done], _ = complete(lambda reqs, label, c=c: ([c], [False]), [GenerationRequest("p", (1,), 64)], "x",
                             ThinkingSettings(), tokenizer.encode, tokenizer.count)
        answers.add((done.text, done.outcome, done.reasoning))
        assert 0 < done.thinking_tokens <= 30
    assert answers == {(ANSWER, "answered", REASONING)}


def test_reasoning_is_scrubbed_of_the_key(monkeypatch):
    secret = "sk-ruler-TEST-thinking-7d1e"
    monkeypatch.setenv("RULER_API_KEY", secret)

    def answer(call):
        if call.route == "/v1/chat/completions":
            return 200, stub.thinking_completion("reasoning", f"the key is {secret}", ANSWER, chat=True)

    with stub.StubServer(answer) as server:
        eng = _engine(server.base_url, endpoint="chat")
        [c] = eng.generate([GenerationRequest("q", tuple(eng.tokenizer.encode("q")), 8)])
        eng.close()
    assert secret not in (c.reasoning or "") and c.reasoning.startswith("the key is ")
