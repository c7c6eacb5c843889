"""engines.thinking: the answer is what follows the thinking; one outcome per answered sample."""

from __future__ import annotations

import pytest
from hypothesis import given, strategies as st

from pytest_ruler.engines.base import Completion
from pytest_ruler.engines.thinking import OUTCOMES, Markers, opens_thinking, split


def _c(text, finish="stop", reasoning=None, tokens=10):
    return Completion(text, 5, tokens, finish, reasoning=reasoning)


@pytest.mark.parametrize("completion, opened, answer, outcome", [
    (_c("<think>the key is alpha</think> 1234567."), False, " 1234567.", "answered"),
    (_c("the key is alpha</think>\n\n 1234567."), True, " 1234567.", "answered"),  # the template opened <think>
    (_c(" 1234567.", reasoning="the key is alpha"), False, " 1234567.", "answered"),
    (_c("<think>still looking", "length"), False, "", "thinking_truncated"),
    (_c("still looking", "length"), True, "", "thinking_truncated"),
    (_c("", "length", reasoning="still looking"), False, "", "thinking_truncated"),
    (_c("<think>found it</think> 12345", "length"), False, " 12345", "answer_truncated"),
    (_c(" 12345", "length", reasoning="found it"), False, " 12345", "answer_truncated"),
    (_c("<think>found it</think>"), False, "", "empty_answer"),
    (_c("", reasoning="found it"), False, "", "empty_answer"),
    (_c("<think>I give up"), False, "", "end_missing"),
    (_c("I give up"), True, "", "end_missing"),
    (_c(" 1234567."), False, " 1234567.", "answered"),  # no thinking at all: a plain answer
    (_c(" 1234", "length"), False, " 1234", "answer_truncated"),
    (_c(""), False, "", "empty_answer"),
])
def test_each_shape_gives_its_answer_and_outcome(completion, opened, answer, outcome):
    s = split(completion, opened=opened)
    assert (s.answer, s.outcome) == (answer, outcome)
    assert s.outcome in OUTCOMES


def test_the_thinking_is_kept_without_its_markers_and_counted():
    s = split(_c("<think>abc def</think> 42", tokens=9), count=lambda t: len(t.split()))
    assert s.reasoning == "abc def" and s.answer == " 42"
    assert (s.thinking_tokens, s.answer_tokens) == (2, 1)


def test_a_plain_answer_has_no_thinking():
    s = split(_c(" 42"), count=len)
    assert s.reasoning is None and not s.thought and s.thinking_tokens == 0


def test_other_markers():
    m = Markers("<|begin_of_thought|>", "<|end_of_thought|>")
    s = split(_c("<|begin_of_thought|>hmm<|end_of_thought|> 7"), m)
    assert (s.answer, s.reasoning, s.outcome) == (" 7", "hmm", "answered")
    assert split(_c("<think>x</think> 7"), m).outcome == "answered"  # not its markers: a plain answer
    assert split(_c("<think>x</think> 7"), m).answer == "<think>x</think> 7"


def test_a_parser_that_left_the_end_marker_in_the_content():
    s = split(_c("more thinking</think> 42", reasoning="thinking "))
    assert (s.answer, s.reasoning, s.outcome) == (" 42", "thinking more thinking", "answered")


def test_opens_thinking():
    assert opens_thinking("<|im_start|>assistant\n<think>\n")
    assert not opens_thinking("<|im_start|>assistant\n<think>\n\n</think>\n\n")  # thinking turned off
    assert not opens_thinking("<|im_start|>assistant\n")


_plain = st.text(st.characters(blacklist_characters="<>\n"), max_size=40)


@given(reasoning=_plain, answer=_plain)
def test_every_shape_of_the_same_answer_splits_the_same(reasoning, answer):
    shapes = [_c(f"<think>{reasoning}</think>{answer}"), _c(f"{reasoning}</think>{answer}"),
              _c(answer, reasoning=reasoning)]
    got = {(split(c, opened=i == 1).answer, split(c, opened=i == 1).reasoning) for i, c in enumerate(shapes)}
    assert got == {(answer, reasoning)}


@given(text=st.text(max_size=60), finish=st.sampled_from(["stop", "length"]), opened=st.booleans())
def test_the_answer_is_a_suffix_of_the_text_and_a_cut_is_never_answered(text, finish, opened):
    s = split(_c(text, finish), opened=opened)
    assert text.endswith(s.answer) or s.answer == ""
    assert s.outcome in OUTCOMES
    if finish == "length":
        assert s.outcome in ("thinking_truncated", "answer_truncated")
    else:
        assert s.outcome not in ("thinking_truncated", "answer_truncated")
