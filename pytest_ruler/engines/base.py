"""The engine protocol: a batch of prompts in, a batch of completions out.

Data flow::

    Sample ──► GenerationRequest(prompt, prompt_ids, max_tokens)
           ──► Engine.generate(requests, on_result) ──► Completion per request

An engine knows its tokenizer and its maximum context; it never truncates a
prompt. Requests that do not fit are answered by ``check_context`` without
calling the engine at all (finish_reason ``"over_length"``). ``on_result`` is
called as each completion finishes, so the cache can keep finished work and a
progress line can move while a long batch runs.

Public names: ``GenerationRequest``, ``Completion``, ``Engine``,
``EngineConfig``, ``ResultCallback``, ``check_context``, ``over_length``.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Mapping, Protocol, Sequence, runtime_checkable

from ..tasks.tokenizer import Tokenizer

__all__ = [
    "Completion",
    "Engine",
    "EngineConfig",
    "GenerationRequest",
    "ResultCallback",
    "check_context",
    "over_length",
]


@dataclass(frozen=True)
class GenerationRequest:
    """One prompt to complete greedily.

    ``prompt`` is the full text (chat-framed input + answer prefix) and
    ``prompt_ids`` its token ids, counted without special tokens: engines that
    accept ids use them, so what was budgeted is exactly what runs.
    """

    prompt: str
    prompt_ids: tuple[int, ...]
    max_tokens: int
    stop: tuple[str, ...] = ()

    @property
    def prompt_tokens(self) -> int:
        return len(self.prompt_ids)


@dataclass(frozen=True)
class Completion:
    """An engine's answer to one request (or why there is none)."""

    text: str
    prompt_tokens: int
    completion_tokens: int
    finish_reason: str  # "stop" | "length" | "over_length" | "error"
    seconds: float = 0.0
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.finish_reason in ("stop", "length")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


ResultCallback = Callable[[int, Completion], None]


@dataclass(frozen=True)
class EngineConfig:
    """Everything needed to build an engine, from options/ini (validated by the plugin).

    ``options`` holds back-end specific settings (e.g. vLLM's
    ``tensor_parallel_size``); they become part of the cache key.
    """

    model: str
    backend: str = "auto"  # auto | hf | vllm | openai | a registered name
    tokenizer: str | None = None
    dtype: str = "auto"
    device: str = "auto"
    max_model_len: int | None = None  # raise the engine's context limit explicitly
    trust_remote_code: bool = False
    base_url: str | None = None
    batch_size: int | None = None
    seed: int = 0
    options: Mapping[str, Any] = field(default_factory=dict)


@runtime_checkable
class Engine(Protocol):
    """What the plugin needs from a back end."""

    name: str  # "hf", "vllm", "openai", or a custom engine's name
    tokenizer: Tokenizer
    max_context: int  # prompt + generated tokens the model accepts

    def identity(self) -> Mapping[str, Any]:
        """Everything that changes an answer: model identity, back end, its options.

        JSON-serialisable; used in the cache key. Never contains secrets.
        """

    def generate(self, requests: Sequence[GenerationRequest], on_result: ResultCallback | None = None) -> list[Completion]:
        """Greedy completions, one per request, in order."""

    def close(self) -> None: ...


def over_length(request: GenerationRequest, max_context: int) -> Completion | None:
    """The recorded failure for a prompt that does not fit, or None if it fits."""
    need = request.prompt_tokens + request.max_tokens
    if need <= max_context:
        return None
    return Completion(
        text="",
        prompt_tokens=request.prompt_tokens,
        completion_tokens=0,
        finish_reason="over_length",
        error=f"exceeds model context ({need} > {max_context})",
    )


def check_context(requests: Sequence[GenerationRequest], max_context: int) -> tuple[list[int], dict[int, Completion]]:
    """Split requests into those to run and those answered as over-length."""
    run, refused = [], {}
    for i, r in enumerate(requests):
        c = over_length(r, max_context)
        if c is None:
            run.append(i)
        else:
            refused[i] = c
    return run, refused


def stable_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
