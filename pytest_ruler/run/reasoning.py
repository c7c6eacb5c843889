"""Thinking models in the session's completions: the answer split off the thinking, and
``--ruler-think-budget``'s two calls. Every call of a run goes through here (``RulerSession.complete``):
native samples, and map, collapse and reduce calls alike.

Data flow, no think budget (one call, the task's answer budget, as RULER runs it)::

    requests ──► raw(requests) ──► engines.thinking.split (opened: the prompt ends inside <think>)
             ──► Completion: text = the answer, outcome, thinking_tokens, reasoning

With ``--ruler-think-budget=N`` (budget forcing: the thinking gets N tokens of its own, the answer
the task's ``tokens_to_generate``, so at most N + tokens_to_generate are generated)::

    requests ──► thinking calls: the prompt without RULER's answer prefix, max_tokens = N
             ──► split: thinking ended | cut by the budget | stopped with no end marker | no thinking
             ──► answer calls: the same prompt + the thinking + end marker + the answer prefix,
                 max_tokens = the task's (a model that did not think: the original request)
             ──► Completion: the answer call's text, the outcome of both (a cut thinking stays
                 ``thinking_truncated`` whatever the forced answer scores; an answer call whose
                 content is empty is ``empty_answer`` even when a server's reasoning field holds
                 text: that text is thinking and is never scored), tokens of both calls,
                 ``calls``: both calls' endpoints (not cached ones), ``moved_from``: of both

This places the answer prefix after the thinking on every engine, whether or not a server parses
the reasoning; each call is cached on its own, so a rerun makes no call. The answer call's ids are
the thinking call's ids followed by the tokens of what was added, so the thinking call's prompt is
an exact prefix (an engine's prefix cache serves it).

Public names: ``ThinkingSettings``, ``complete``, ``finish``, ``think_request``, ``answer_request``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Callable, Sequence

from ..engines.base import Completion, GenerationRequest, endpoint_calls
from ..engines.thinking import Markers, Split, opens_thinking, split

__all__ = ["ThinkingSettings", "answer_request", "complete", "finish", "think_request"]

Raw = Callable[[Sequence[GenerationRequest], str], "tuple[list[Completion], list[bool]]"]


@dataclass(frozen=True)
class ThinkingSettings:
    """``--ruler-think-budget`` (None: one call with the task's budget) and the thinking markers."""

    budget: int | None = None
    markers: Markers = Markers()


def _with(c: Completion, s: Split, **more: object) -> Completion:
    return dataclasses.replace(c, text=s.answer, reasoning=s.reasoning, outcome=s.outcome, thinking_tokens=s.thinking_tokens, **more)


def finish(c: Completion, request: GenerationRequest, markers: Markers, count: Callable[[str], int] | None = None) -> Completion:
    """One call's completion with its answer split off the thinking (an unanswered one as it is)."""
    if not c.ok:
        return c
    return _with(c, split(c, markers, opened=opens_thinking(request.prompt, markers), count=count))


def think_request(r: GenerationRequest, budget: int, encode: Callable[[str], list[int]]) -> GenerationRequest:
    """The thinking call of ``r``: its prompt without RULER's answer prefix, ``budget`` new tokens."""
    prefix = r.answer_prefix
    if not prefix or not r.prompt.endswith(prefix):
        return GenerationRequest(r.prompt, r.prompt_ids, budget, affinity=r.affinity)
    base = r.prompt[: len(r.prompt) - len(prefix)]
    tail = tuple(encode(prefix))
    if tail and len(tail) < len(r.prompt_ids) and tuple(r.prompt_ids[-len(tail):]) == tail:
        ids = tuple(r.prompt_ids[: -len(tail)])
    else:  # the prefix merged with the text before it: count the base on its own
        ids = tuple(encode(base))
    return GenerationRequest(base, ids, budget, affinity=r.affinity)  # one endpoint for both calls (its prefix cache)


def answer_request(r: GenerationRequest, thinking: GenerationRequest, c: Completion, markers: Markers,
                   encode: Callable[[str], list[int]]) -> GenerationRequest:
    """The answer call after the thinking call ``c``: its thinking (cut at the end marker; a
    server's reasoning field gets back the start marker its parser took off), the end marker,
    then RULER's answer prefix; the task's budget."""
    if c.reasoning is not None:
        thought = ("" if opens_thinking(thinking.prompt, markers) else markers.start) + c.reasoning
    else:
        cut = c.text.find(markers.end)
        thought = c.text if cut < 0 else c.text[:cut]
    added = f"{thought}{markers.end}\n\n{r.answer_prefix}"
    return GenerationRequest(thinking.prompt + added, tuple(thinking.prompt_ids) + tuple(encode(added)), r.max_tokens, r.stop,
                             answer_prefix=r.answer_prefix, affinity=r.affinity)


def _forced(first: Split, c1: Completion, c2: Completion, markers: Markers, count: Callable[[str], int] | None) -> Completion:
    """The sample's completion from its thinking call and its answer call."""
    if not c2.ok:
        return dataclasses.replace(c2, completion_tokens=c1.completion_tokens + c2.completion_tokens, seconds=c1.seconds + c2.seconds,
                                   reasoning=first.reasoning, outcome=None, thinking_tokens=first.thinking_tokens)
    # the answer is what follows the thinking: an answer call with no content is an empty answer,
    # whatever a server's reasoning field holds (that is thinking, never scored)
    second = split(c2, markers, opened=False, count=count)
    outcome = first.outcome if first.outcome in ("thinking_truncated", "end_missing") else second.outcome
    reasoning = first.reasoning if second.reasoning is None else f"{first.reasoning}{markers.end}{second.reasoning}"
    return dataclasses.replace(
        c2, text=second.answer, reasoning=reasoning, outcome=outcome, thinking_tokens=first.thinking_tokens + second.thinking_tokens,
        prompt_tokens=c1.prompt_tokens, completion_tokens=c1.completion_tokens + c2.completion_tokens, seconds=c1.seconds + c2.seconds,
    )


def _both_calls(c: Completion, *calls: tuple[Completion, bool]) -> Completion:
    """``c`` with the engine calls it folds (``Completion.calls``, each on its own endpoint; those
    answered from the cache left out) and the endpoints that failed any of them (``moved_from``)."""
    done = [call for one, hit in calls if not hit for call in endpoint_calls(one)]
    moved = tuple(dict.fromkeys(url for one, _ in calls for url in one.moved_from))
    return dataclasses.replace(c, calls=tuple(done), moved_from=moved)


def complete(raw: Raw, requests: Sequence[GenerationRequest], label: str, settings: ThinkingSettings,
             encode: Callable[[str], list[int]], count: Callable[[str], int] | None = None) -> tuple[list[Completion], list[bool]]:
    """Completions for ``requests`` whose ``text`` is the answer (see the module docstring);
    ``raw`` answers requests from the cache or the engine. Returns them and, per request,
    whether every call it needed came from the cache."""
    markers = settings.markers
    if settings.budget is None:
        out, hits = raw(requests, label)
        return [finish(c, r, markers, count) for c, r in zip(out, requests)], hits
    thinking = [think_request(r, settings.budget, encode) for r in requests]
    first_out, first_hits = raw(thinking, f"{label} thinking" if label else "thinking")
    firsts: list[Split | None] = []
    second: list[GenerationRequest] = []
    for r, t, c in zip(requests, thinking, first_out):
        s = split(c, markers, opened=opens_thinking(t.prompt, markers), count=count) if c.ok else None
        firsts.append(s)
        if s is None:
            continue
        second.append(answer_request(r, t, c, markers, encode) if s.thought else r)
    second_out, second_hits = raw(second, label) if second else ([], [])
    results: list[Completion] = []
    hits: list[bool] = []
    j = 0
    for r, c1, s, h1 in zip(requests, first_out, firsts, first_hits):
        if s is None:  # the thinking call got no answer: that is the sample's failure
            results.append(c1)
            hits.append(h1)
            continue
        c2, h2 = second_out[j], second_hits[j]
        j += 1
        both = _forced(s, c1, c2, markers, count) if s.thought else finish(c2, r, markers, count)
        results.append(_both_calls(both, (c1, h1), (c2, h2)))
        hits.append(h1 and h2)
    return results, hits
