"""A scripted engine for testing the plugin's plumbing — not a model.

It answers from the prompt text by rule, instantly, so pytester runs of the
plugin can check items, caching, reports and xdist without a model. It is
never chosen by ``auto`` and says what it is in every identity and report.

Modes (``--ruler-engine-option=mode=...``):

- ``oracle`` (default): reads the answer out of a niah prompt — the values of
  the queried keys' needle sentences — and a vt prompt's chain; other tasks
  get an empty answer. A map-reduce map prompt (it ends with "Extracted
  Information:") gets the record a perfect reader of that chunk would write:
  the needle sentences of the queried keys, every ``VAR X = Y`` line, or
  ``word: count`` for the chunk's most frequent words (``record_oracle``).
- ``know_nothing``: a stand-in for a reader that understands nothing of the question.
  A map prompt gets a confident four-field record listing every 7-digit number or uuid
  of its chunk; any other prompt (reduce, collapse, native) is answered with every such
  value it shows, joined. It exists to test that code never turns such a reader into a
  right answer (``know_nothing_answer``).
- ``empty``: always answers "".
- ``echo``: answers the last 40 characters of the prompt.
- ``error``: every request fails (finish_reason "error").
- ``thinking``: a stand-in for a thinking model (not one): it writes ``<think>``, ``think_tokens``
  tokens of thinking (default 200), ``</think>``, then the oracle's answer, all within the
  request's ``max_tokens`` (cut there, finish_reason ``"length"``). A prompt that already holds
  ``</think>`` (the answer call of ``--ruler-think-budget``) gets the oracle's answer alone; a
  prompt that ends inside ``<think>`` (a template that opened it) gets no second ``<think>``.
  Stop strings are honoured (cut before the first, not included).
- ``crash_after=N``: raises after N completions (to test that finished work is kept).
- ``blind_above=N``: a prompt of more than N tokens gets "" (a model perfect up to N tokens and blind
  beyond, measured like a real one: its prompts are built and sent).

Options: :mod:`.scripted_options` declares them (``max_context``, ``mode``, ``crash_after``,
``delay``, ``think_tokens``, ``fail_load``); they are coerced by :mod:`.options`. Its context is
``max_context`` unless ``--ruler-max-model-len`` says otherwise (:mod:`.context`).
"""

from __future__ import annotations

import re
import time
from typing import Any, Mapping, Sequence

from ..tasks.tokenizer import load_tokenizer
from .base import Completion, EngineBase, EngineConfig, GenerationRequest, ResultCallback, check_context
from .options import engine_options
from .thinking import Markers, opens_thinking
from .scripted_options import DEFAULT_CONTEXT, MODES, OPTIONS  # noqa: F401 - DEFAULT_CONTEXT, MODES: their home is scripted_options

__all__ = ["OPTIONS", "ScriptedEngine", "know_nothing_answer", "oracle_answer", "record_oracle", "thinking_answer"]


def _map_chunk(prompt: str) -> tuple[str, str]:
    """(chunk, question) of a map prompt, any layout (see mapreduce.pipeline.MAP_LAYOUTS)."""
    body = prompt.split("the other parts are read separately)", 1)[-1]
    body = body.split("\n\n", 1)[-1]
    chunk, _, question = body.rpartition("\n\n")
    return chunk, question


def record_oracle(prompt: str) -> str:
    """The four-field record a perfect reader writes for one chunk (test engine)."""
    from collections import Counter

    chunk, question = _map_chunk(prompt)
    m = re.search(r"for (.+) mentioned in the provided text\?", question)
    if m:
        keys = [k.strip() for k in re.split(r", and |, ", m.group(1))]
        sentences, values = [], []
        for key in keys:
            for found in re.finditer(rf"One of the special magic \w+ for {re.escape(key)} is: (\S+?)\.(?=\s|$)", chunk):
                sentences.append(found.group(0))
                values.append(found.group(1))
        if not values:
            return " none\nRationale: no sentence about the key.\nAnswer: NO INFORMATION\nConfidence Score: 0"
        return f" {' '.join(sentences)}\nRationale: stated in this part.\nAnswer: {', '.join(values)}\nConfidence Score: 5"
    if "assigned the value" in question:
        lines = re.findall(r"VAR [A-Z]+ = (?:VAR [A-Z]+|\d+)", chunk)
        if not lines:
            return " none\nRationale: no assignment here.\nAnswer: NO INFORMATION\nConfidence Score: 0"
        return f" {'; '.join(lines)}\nRationale: every assignment of this part.\nAnswer: {'; '.join(lines)}\nConfidence Score: 5"
    if "most common words" in question or "most frequently appeared" in question:
        counts = Counter(re.findall(r"[A-Za-z][A-Za-z'-]*", chunk))
        top = "; ".join(f"{w}: {n}" for w, n in counts.most_common(15))
        return f" {top}\nRationale: counted.\nAnswer: {top}\nConfidence Score: 5"
    return " none\nRationale: -\nAnswer: NO INFORMATION\nConfidence Score: 0"


_VALUE = re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b|\b\d{7}\b")


def know_nothing_answer(prompt: str) -> str:
    """A reader that understands nothing: it lists every 7-digit number or uuid it sees."""
    if prompt.endswith("Extracted Information:") and "the other parts are read separately)" in prompt:
        chunk, _ = _map_chunk(prompt)
        values = ", ".join(dict.fromkeys(_VALUE.findall(chunk))) or "NO INFORMATION"
        return f" {values}\nRationale: these are the values in this part.\nAnswer: {values}\nConfidence Score: 5"
    shown = prompt.split("These records say", 1)[-1]
    values = ", ".join(dict.fromkeys(_VALUE.findall(shown)))
    if prompt.endswith("Extracted Information:"):  # collapse
        return f" {values}\nRationale: -\nAnswer: {values or 'NO INFORMATION'}\nConfidence Score: 5"
    return f" {values}."


def oracle_answer(prompt: str) -> str:
    if prompt.endswith("Extracted Information:") and "the other parts are read separately)" in prompt:
        return record_oracle(prompt)
    tail = prompt[prompt.rfind(" The special magic "):]
    m = re.fullmatch(r" The special magic \w+ for (.+) mentioned in the provided text (?:is|are)", tail)
    if m:
        keys = [k.strip() for k in re.split(r", and |, ", m.group(1))]
        values = []
        for key in keys:
            values += re.findall(rf"One of the special magic \w+ for {re.escape(key)} is: (\S+?)\.(?=\s|$)", prompt)
        return " " + ", ".join(values) + "."
    m = re.search(r"assigned the value (\d+), they are: $", prompt)
    if m:
        start = m.group(1)
        names = re.findall(rf"VAR ([A-Z]+) = {start}\b", prompt)
        chain = names[-1:]  # the real chain comes after the one-shot example
        while chain:
            nxt = re.findall(rf"VAR ([A-Z]+) = VAR {chain[-1]} ", prompt)
            if not nxt or nxt[-1] in chain:
                break
            chain.append(nxt[-1])
        return " ".join(chain)
    return ""


def thinking_answer(prompt: str, think_tokens: int, markers: Markers = Markers()) -> str:
    """A thinking stand-in's whole output: thinking of about ``think_tokens`` tokens, then the oracle's answer."""
    if markers.end in prompt and not opens_thinking(prompt, markers):
        # a closed thinking block in the prompt (a forced answer, or thinking turned off): the
        # oracle's answer to the prompt without that block
        start = prompt.rfind(markers.start)
        end = prompt.find(markers.end, start if start >= 0 else 0)
        head = prompt[:start] if start >= 0 else prompt[:end]
        tail = prompt[end + len(markers.end):]
        return oracle_answer(head + (tail[2:] if tail.startswith("\n\n") else tail))
    answer = oracle_answer(prompt)
    opening = "" if opens_thinking(prompt, markers) else markers.start
    return f"{opening}\nLet me find it.{' step' * max(0, think_tokens - 5)}\n{markers.end}\n\n{answer.lstrip()}"


class ScriptedEngine(EngineBase):
    name = "scripted"
    options = OPTIONS  # a subclass registered under another name declares the same options
    context_option = "max_context"

    def __init__(self, config: EngineConfig):
        opts = engine_options(config, "scripted")
        self.mode = opts["mode"]
        if opts["fail_load"] is not None:  # to test that a failing engine load is reported once
            raise RuntimeError(f"scripted engine told to fail at load: {opts['fail_load']}")
        self.max_context = int(self.context_length(config).tokens)  # max_context always has a value
        self.crash_after = opts["crash_after"]
        self.delay = opts["delay"]
        self.think_tokens = opts["think_tokens"]
        self.blind_above = opts["blind_above"]
        self.tokenizer = load_tokenizer(config.tokenizer or "smollm2-135m")
        self.calls = 0

    @staticmethod
    def describe(config: EngineConfig) -> Mapping[str, Any]:
        opts = engine_options(config, "scripted")
        thinking = {"think_tokens": opts["think_tokens"]} if opts["mode"] == "thinking" else {}
        blind = {"blind_above": opts["blind_above"]} if opts["blind_above"] is not None else {}
        return {"engine": "scripted (test engine, not a model)", "mode": opts["mode"], "tokenizer": config.tokenizer or "smollm2-135m", **thinking, **blind}

    def identity(self) -> Mapping[str, Any]:
        thinking = {"think_tokens": self.think_tokens} if self.mode == "thinking" else {}
        blind = {"blind_above": self.blind_above} if self.blind_above is not None else {}
        return {"engine": "scripted (test engine, not a model)", "mode": self.mode, "tokenizer": self.tokenizer.name, **thinking, **blind}

    def _thinking(self, r: GenerationRequest) -> Completion:
        text = thinking_answer(r.prompt, self.think_tokens)
        finish = "stop"
        for s in r.stop:
            if s in text:
                text = text[: text.find(s)]
        ids = self.tokenizer.encode(text)
        if len(ids) > r.max_tokens:
            ids, finish = ids[: r.max_tokens], "length"
            text = self.tokenizer.decode(ids)
        return Completion(text, r.prompt_tokens, len(ids), finish, 0.0)

    def generate(self, requests: Sequence[GenerationRequest], on_result: ResultCallback | None = None) -> list[Completion]:
        run, refused = check_context(requests, self.max_context)
        out: list[Completion | None] = [None] * len(requests)
        for i in range(len(requests)):
            if i in refused:
                c = refused[i]
            else:
                if self.crash_after is not None and self.calls >= self.crash_after:
                    raise RuntimeError(f"scripted engine crashed after {self.calls} completions")
                self.calls += 1
                if self.delay:
                    time.sleep(self.delay)
                r = requests[i]
                if self.blind_above is not None and r.prompt_tokens > self.blind_above:
                    c = Completion("", r.prompt_tokens, 0, "stop", 0.0)  # blind beyond blind_above
                elif self.mode == "error":
                    c = Completion("", r.prompt_tokens, 0, "error", 0.0, "scripted failure")
                elif self.mode == "thinking":
                    c = self._thinking(r)
                else:
                    text = {"oracle": lambda: oracle_answer(r.prompt), "know_nothing": lambda: know_nothing_answer(r.prompt), "empty": lambda: "", "echo": lambda: r.prompt[-40:]}[self.mode]()
                    c = Completion(text, r.prompt_tokens, len(self.tokenizer.encode(text)), "stop", 0.0)
            out[i] = c
            if on_result:
                on_result(i, c)
        return [c for c in out if c is not None]
