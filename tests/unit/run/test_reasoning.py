"""run.reasoning: one call (the split) without a think budget; with one, a thinking call and an
answer call whose prompt puts RULER's answer prefix after the thinking. A fake ``raw`` stands in
for the cache and engine (named as such)."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

from pytest_ruler.engines.base import Completion, GenerationRequest
from pytest_ruler.engines.thinking import Markers
from pytest_ruler.results.endpoints import endpoint_total, tally
from pytest_ruler.run.reasoning import ThinkingSettings, answer_request, complete, think_request

PREFIX = " Answer:"


def encode(text):  # a stand-in tokenizer: one id per character
    return [ord(ch) for ch in text]


def _req(body="Q? ", max_tokens=8):
    prompt = body + PREFIX
    return GenerationRequest(prompt, tuple(encode(prompt)), max_tokens, answer_prefix=PREFIX)


class FakeRaw:
    """A fake engine behind the session's cache: answers by a rule, records each call."""

    def __init__(self, answer):
        self.answer = answer
        self.calls = []

    def __call__(self, requests, label):
        self.calls.append(list(requests))
        return [self.answer(r) for r in requests], [False] * len(requests)


def test_no_budget_is_one_call_with_the_task_budget_and_the_answer_split_off():
    raw = FakeRaw(lambda r: Completion("<think>hmm</think> 42", r.prompt_tokens, 6, "stop"))
    [c], hits = complete(raw, [_req()], "x", ThinkingSettings(), encode, len)
    assert len(raw.calls) == 1 and raw.calls[0][0].max_tokens == 8
    assert (c.text, c.outcome, c.reasoning, c.thinking_tokens) == (" 42", "answered", "hmm", 3)
    assert hits == [False]


def test_think_request_drops_the_answer_prefix_and_keeps_the_ids_a_prefix():
    r = _req()
    t = think_request(r, 100, encode)
    assert t.prompt == "Q? " and t.max_tokens == 100 and t.prompt_ids == r.prompt_ids[: -len(PREFIX)]
    assert t.stop == ()  # the thinking call runs to its budget or the model's end: a missing end marker is seen


def test_answer_request_puts_the_prefix_after_the_thinking():
    r = _req()
    t = think_request(r, 100, encode)
    a = answer_request(r, t, Completion("<think>so it is 42</think> 42", 3, 9, "stop"), Markers(), encode)
    assert a.prompt == "Q? <think>so it is 42</think>\n\n Answer:"
    assert a.prompt_ids[: len(t.prompt_ids)] == t.prompt_ids and a.max_tokens == 8
    # a server's reasoning field: the parser took <think> off, it goes back
    a = answer_request(r, t, Completion("", 3, 9, "length", reasoning="so it is"), Markers(), encode)
    assert a.prompt == "Q? <think>so it is</think>\n\n Answer:"


def _thinker(think):
    """A fake thinking model: thinks ``think`` characters, then answers; answers at once after </think>."""
    def answer(r):
        if "</think>" in r.prompt:
            return Completion(" 42", r.prompt_tokens, 3, "stop")
        text = "<think>" + "x" * think + "</think> 42"
        cut = text[: r.max_tokens]
        return Completion(cut, r.prompt_tokens, len(cut), "length" if len(text) > r.max_tokens else "stop")
    return answer


def test_a_budget_that_fits_the_thinking_answers_after_it():
    raw = FakeRaw(_thinker(20))
    [c], _ = complete(raw, [_req()], "x", ThinkingSettings(budget=64), encode, len)
    assert [len(calls) for calls in raw.calls] == [1, 1]
    assert raw.calls[0][0].max_tokens == 64 and raw.calls[1][0].prompt.endswith("</think>\n\n Answer:")
    assert (c.text, c.outcome) == (" 42", "answered")
    assert c.thinking_tokens == 20 and c.completion_tokens == len("<think>" + "x" * 20 + "</think> 42") + 3


def test_the_task_budget_alone_cuts_the_thinking_and_says_so():
    [c], _ = complete(FakeRaw(_thinker(20)), [_req()], "x", ThinkingSettings(), encode, len)
    assert (c.text, c.outcome, c.finish_reason) == ("", "thinking_truncated", "length")


def test_a_budget_too_small_forces_an_answer_but_the_outcome_stays_thinking_truncated():
    raw = FakeRaw(_thinker(200))
    [c], _ = complete(raw, [_req()], "x", ThinkingSettings(budget=50), encode, len)
    assert c.text == " 42" and c.outcome == "thinking_truncated"


def test_a_model_that_does_not_think_is_asked_the_original_request():
    raw = FakeRaw(lambda r: Completion(" 42", r.prompt_tokens, 3, "stop"))
    r = _req()
    [c], _ = complete(raw, [r], "x", ThinkingSettings(budget=50), encode, len)
    assert raw.calls[1] == [r] and (c.text, c.outcome, c.reasoning) == (" 42", "answered", None)


def test_a_failed_thinking_call_is_the_samples_failure_and_others_go_on():
    def answer(r):
        if r.prompt.startswith("bad"):
            return Completion("", r.prompt_tokens, 0, "error", error="boom")
        return _thinker(5)(r)
    raw = FakeRaw(answer)
    bad, good = complete(raw, [_req("bad "), _req()], "x", ThinkingSettings(budget=64), encode, len)[0]
    assert bad.finish_reason == "error" and bad.outcome is None
    assert good.text == " 42" and len(raw.calls[1]) == 1


def test_cache_hits_count_only_when_both_calls_hit():
    answers = iter([([Completion("<think>a</think>", 1, 3, "stop")], [True]), ([Completion(" 4", 1, 1, "stop")], [False])])
    _, hits = complete(lambda reqs, label: next(answers), [_req()], "x", ThinkingSettings(budget=10), encode, len)
    assert hits == [False]


def test_both_calls_keep_the_requests_affinity():
    """An engine over several endpoints sends one affinity group to one endpoint: the thinking
    call and the answer call of a sample share their prompt's opening, so they go together."""
    for r in (_req(), GenerationRequest("Q?", tuple(encode("Q?")), 8)):  # with and without an answer prefix
        r = GenerationRequest(r.prompt, r.prompt_ids, r.max_tokens, answer_prefix=r.answer_prefix, affinity="niah/4096/0")
        t = think_request(r, 100, encode)
        a = answer_request(r, t, Completion("<think>so</think> 42", 3, 9, "stop"), Markers(), encode)
        assert t.affinity == a.affinity == "niah/4096/0"


A, B = "http://10.0.0.1:8000/v1", "http://10.0.0.2:8000/v1"


def _on(endpoint, moved=(), seconds=0.5):
    """The fake model's answers as a pool over two endpoints would mark them (a stand-in, no server)."""
    def answer(r):
        c = _thinker(5)(r)
        return dataclasses.replace(c, endpoint=endpoint(r), moved_from=moved(r), seconds=seconds, cached_tokens=2)
    return answer


def test_both_calls_count_on_their_endpoints_and_a_failed_thinking_call_is_a_failover():
    """--ruler-think-budget makes two calls a sample: each counts on the endpoint that answered it,
    and an endpoint that failed the thinking call reaches the item's counts (the report's failover)."""
    thinking = lambda r: "</think>" not in r.prompt  # noqa: E731
    raw = FakeRaw(_on(lambda r: A if thinking(r) else B, lambda r: (B,) if thinking(r) else ()))
    [c], hits = complete(raw, [_req()], "x", ThinkingSettings(budget=64), encode, len)
    assert c.text == " 42" and hits == [False] and c.moved_from == (B,)
    counts = {}
    tally(counts, c)
    assert counts[A] == {"requests": 1, "seconds": 0.5, "prompt_tokens": len("Q? "), "cached_tokens": 2, "moved_off": 0}
    assert counts[B]["requests"] == 1 and counts[B]["moved_off"] == 1
    assert counts[B]["prompt_tokens"] == raw.calls[1][0].prompt_tokens
    assert endpoint_total([SimpleNamespace(endpoints=counts)])[B]["moved_off"] == 1


def test_a_model_that_did_not_think_still_counts_its_thinking_call():
    def answer(r):
        return Completion(" 42", r.prompt_tokens, 3, "stop", 0.25, endpoint=A if r.max_tokens == 64 else B)
    [c], _ = complete(FakeRaw(answer), [_req()], "x", ThinkingSettings(budget=64), encode, len)
    counts = {}
    tally(counts, c)
    assert {url: rec["requests"] for url, rec in counts.items()} == {A: 1, B: 1}


def test_a_call_from_the_cache_counts_on_no_endpoint():
    answers = iter([([Completion("<think>a</think>", 1, 3, "stop", endpoint=A)], [True]),
                    ([Completion(" 4", 1, 1, "stop", endpoint=B, moved_from=(A,))], [False])])
    [c], _ = complete(lambda reqs, label: next(answers), [_req()], "x", ThinkingSettings(budget=10), encode, len)
    counts = {}
    tally(counts, c)
    assert counts[B]["requests"] == 1 and counts[A] == {"requests": 0, "seconds": 0.0, "prompt_tokens": 0, "moved_off": 1}


def test_under_a_budget_an_empty_answer_is_not_scored_on_its_reasoning_field():
    """The answer call's content is empty and a server filed text as reasoning: that text is thinking;
    the answer is what follows the thinking, and an empty one is an empty answer (issue 35, item 7)."""
    def answer(r):
        if "</think>" in r.prompt:  # the answer call: nothing as content, "42" as reasoning_content
            return Completion("", r.prompt_tokens, 2, "stop", reasoning=" 42")
        return Completion("<think>so it is 42</think>", r.prompt_tokens, 9, "stop")
    [c], _ = complete(FakeRaw(answer), [_req()], "x", ThinkingSettings(budget=64), encode, len)
    assert (c.text, c.outcome) == ("", "empty_answer")
    assert "42" in c.reasoning  # kept as thinking, for the report
