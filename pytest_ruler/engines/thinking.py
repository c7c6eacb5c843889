"""Thinking models: the answer is what follows the thinking, and every answer gets one outcome.

A thinking model writes its reasoning first and its answer after it. Where the reasoning
ends up depends on the engine:

- an OpenAI-compatible server with a reasoning parser (vLLM ``--reasoning-parser``) puts
  it in a separate field of the answer: ``reasoning`` (current vLLM) or
  ``reasoning_content`` (older vLLM and other servers); the engine keeps it in
  ``Completion.reasoning`` and the answer in ``Completion.text``;
- otherwise (``hf``, offline ``vllm``, a server without a parser) it is in the text:
  ``<think>…</think>`` and then the answer. Markers are configurable (``Markers``;
  ``--ruler-think-start`` / ``--ruler-think-end``). A chat template may open the
  block itself (Qwen3 ends its generation prompt inside ``<think>`` for some models):
  then the text holds no start marker, and ``opened`` (``opens_thinking(prompt)``) says so.

Data flow::

    Completion (raw, from the engine or the cache) ──► split(c, markers, opened, count)
        ──► Split(answer, reasoning, outcome, thinking_tokens, answer_tokens)

Outcomes (``OUTCOMES``), one per answered sample:

- ``answered``: thinking (if any) ended and an answer followed;
- ``thinking_truncated``: the token budget ran out inside the thinking: no answer was
  ever started (a budget failure, not the model's: raise ``--ruler-think-budget``);
- ``answer_truncated``: the budget ran out inside the answer;
- ``empty_answer``: the model stopped with nothing after its thinking (a server's reasoning
  field is thinking, never the answer: an empty content is an empty answer, with a think
  budget too: ``run.reasoning``);
- ``end_missing``: the model stopped inside an open thinking block (no end marker).

A sample the engine did not answer (``error``, ``over_length``, ``malformed``) gets no
outcome here: it is counted as an error or an over-length sample where those are counted.

Public names: ``OUTCOMES``, ``TRUNCATED``, ``Markers``, ``Split``, ``opens_thinking``, ``split``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

__all__ = ["OUTCOMES", "TRUNCATED", "Markers", "Split", "opens_thinking", "split"]

OUTCOMES = ("answered", "thinking_truncated", "answer_truncated", "empty_answer", "end_missing")
TRUNCATED = ("thinking_truncated", "answer_truncated")


@dataclass(frozen=True)
class Markers:
    """The text that opens and closes a thinking block (``--ruler-think-start`` / ``--ruler-think-end``)."""

    start: str = "<think>"
    end: str = "</think>"


@dataclass(frozen=True)
class Split:
    """One completion, split: the answer that is scored, the thinking, and what happened."""

    answer: str
    reasoning: str | None  # None: the model did not think
    outcome: str  # one of OUTCOMES
    thinking_tokens: int = 0
    answer_tokens: int = 0

    @property
    def thought(self) -> bool:
        return self.reasoning is not None


def opens_thinking(prompt: str, markers: Markers = Markers()) -> bool:
    """Whether ``prompt`` ends inside an open thinking block (its template opened it)."""
    start = prompt.rfind(markers.start)
    return start >= 0 and prompt.find(markers.end, start) < 0


def _outcome(length: bool, answer: str, *, closed: bool, thought: bool) -> str:
    if thought and not closed:
        return "thinking_truncated" if length else "end_missing"
    if length:  # the thinking had ended (or there was none): the cut fell in the answer
        return "answer_truncated"
    return "answered" if answer.strip() else "empty_answer"


def split(completion: Any, markers: Markers = Markers(), *, opened: bool = False,
          count: Callable[[str], int] | None = None) -> Split:
    """The answer of a ``Completion`` (a server's reasoning field, else the text after the end
    marker), its thinking, the outcome and the token counts (``count``: the tokenizer's).

    A separate reasoning field means the thinking ended where the server's parser saw it end,
    unless the budget ran out with no content at all (thinking truncated). In the text, the
    thinking is what precedes the end marker; with no end marker, the text is thinking when
    it opens a block (or the prompt did: ``opened``), else it is a plain answer.
    """
    length = completion.finish_reason == "length"
    text = completion.text or ""
    reasoning = getattr(completion, "reasoning", None)
    total = int(getattr(completion, "completion_tokens", 0) or 0)
    if reasoning is not None:
        answer = text
        if markers.end in answer:  # a parser that left the end of the thinking in the content
            head, _, answer = answer.partition(markers.end)
            reasoning += head
        if length and not answer.strip():
            outcome = "thinking_truncated"
        else:
            outcome = _outcome(length, answer, closed=True, thought=True)
        thought: str | None = reasoning
    else:
        end = text.find(markers.end)
        start = text.find(markers.start)
        if end >= 0:
            head, answer = text[:end], text[end + len(markers.end):]
            thought = head[start + len(markers.start):] if 0 <= start < end else head
            outcome = _outcome(length, answer, closed=True, thought=True)
        elif start >= 0 or opened:
            thought = text[start + len(markers.start):] if start >= 0 else text
            answer = ""
            outcome = _outcome(length, answer, closed=False, thought=True)
        else:
            thought, answer = None, text
            outcome = _outcome(length, answer, closed=True, thought=False)
    answer = answer.lstrip("\n") if thought is not None else answer
    if count is None:
        return Split(answer, thought, outcome, 0, total)
    thinking_tokens = count(thought) if thought else 0
    answer_tokens = count(answer) if answer else 0
    if total and thinking_tokens + answer_tokens > total:  # the tokenizer's count of a piece may round up
        thinking_tokens = max(0, total - answer_tokens)
    return Split(answer, thought, outcome, thinking_tokens, answer_tokens)
