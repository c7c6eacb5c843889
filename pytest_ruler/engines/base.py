"""The engine contract: a batch of prompts in, a batch of completions out.

Data flow::

    Sample ──► GenerationRequest(prompt, prompt_ids, max_tokens)
           ──► Engine.generate(requests, on_result) ──► Completion per request

An engine knows its tokenizer and its maximum context; it never truncates a
prompt. Requests that do not fit are answered by ``check_context`` without
calling the engine at all (finish_reason ``"over_length"``). ``on_result`` is
called as each completion finishes, so the cache can keep finished work and a
progress line can move while a long batch runs.

:class:`EngineBase` is the abstract base class of the built-in engines, with every member the
run relies on: ``identity()`` and ``generate()`` abstract, the others with their default. Before an engine is built (class members):
``describe(config)`` (the cache identity, so a cached rerun never loads the model;
default None: build the engine and ask ``identity()``), ``preflight(config)`` (the
start-up check without loading weights; returns the context length the engine reports,
default None: unknown) and ``context_length(config, reported)`` (the one resolver of
:mod:`.context`, with the engine's declared fallbacks). On an engine: ``on_wait`` and
``on_progress`` (set by the session: a line for the user while it waits, its progress
inside a batch), ``identity()``, ``generate()`` and ``close()`` (default: nothing to free).
:class:`Engine` is the same contract as a protocol, for type checks of any engine object.

A completion that folds several engine calls (``--ruler-think-budget``: a thinking call and an
answer call) lists them in ``Completion.calls`` (``EndpointCall`` each, with the endpoint that
answered it); ``endpoint_calls(c)`` gives a completion's calls either way.

Public names: ``GenerationRequest``, ``Completion``, ``EndpointCall``, ``Engine``, ``EngineBase``,
``EngineConfig``, ``ResultCallback``, ``check_context``, ``endpoint_calls``, ``over_length``.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Callable, ClassVar, Mapping, Protocol, Sequence, runtime_checkable

from .context import ContextLength, resolve_context

if TYPE_CHECKING:  # the tokenizer's type only: importing this module loads no task code
    from ..tasks.tokenizer import Tokenizer

__all__ = [
    "Completion",
    "EndpointCall",
    "Engine",
    "EngineBase",
    "EngineConfig",
    "GenerationRequest",
    "ResultCallback",
    "check_context",
    "endpoint_calls",
    "over_length",
]


@dataclass(frozen=True)
class GenerationRequest:
    """One prompt to complete greedily.

    ``prompt`` is the full text (chat-framed input + answer prefix) and
    ``prompt_ids`` its token ids, counted without special tokens: engines that
    accept ids use them, so what was budgeted is exactly what runs.
    ``affinity`` groups requests whose prompts share an opening (the runner's: the
    item's ``task/length/seed``): an engine over several endpoints sends a group to one
    endpoint, whose prefix cache then holds it. Never sent, not part of the cache key.
    """

    prompt: str
    prompt_ids: tuple[int, ...]
    max_tokens: int
    stop: tuple[str, ...] = ()
    # the end of ``prompt`` that is RULER's answer prefix ("" when unknown): with a think budget
    # it goes after the thinking (run.reasoning), never before it; not part of the cache key
    answer_prefix: str = ""
    affinity: str | None = field(default=None, compare=False)
    # the chat the prompt renders (``Sample.messages``, the MRCR pack's): an engine that takes messages sends
    # these; None: the prompt is one user turn (and its answer prefix). Not part of the cache key
    messages: tuple | None = field(default=None, compare=False)

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
    # prompt tokens the engine served from its prefix cache, where it reports them (vLLM's
    # RequestOutput.num_cached_tokens, an OpenAI server's usage.prompt_tokens_details.cached_tokens)
    cached_tokens: int | None = None
    # a thinking model's reasoning, where the engine got it apart from the answer (a server's
    # ``reasoning`` / ``reasoning_content`` field); None: none given apart (it may be in ``text``)
    reasoning: str | None = None
    # set after the thinking is split off (run.reasoning, engines.thinking): the outcome
    # (engines.thinking.OUTCOMES) and the tokens spent thinking; ``text`` is then the answer
    outcome: str | None = None
    thinking_tokens: int = 0
    # an engine over several endpoints (openai): the URL that answered (no credentials, no
    # query) and those that failed it first (the endpoint went down, the request moved)
    endpoint: str | None = None
    moved_from: tuple[str, ...] = ()
    # the engine calls this completion folds, each with its own endpoint (a think budget's thinking
    # call and answer call; those answered from the cache left out); None: it is one call, itself
    calls: tuple["EndpointCall", ...] | None = None
    # what our code cut from the answer, said in words (None: the text is whole as the engine gave it):
    # an answer far longer than its max_tokens allows (engines.answer_cap); never cached
    cut: str | None = None

    @property
    def ok(self) -> bool:
        return self.finish_reason in ("stop", "length")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class EndpointCall:
    """One engine call of a completion that folds several (``Completion.calls``): what
    ``results.endpoints.tally`` counts of it."""

    endpoint: str | None
    seconds: float = 0.0
    prompt_tokens: int = 0
    cached_tokens: int | None = None
    moved_from: tuple[str, ...] = ()


def endpoint_calls(c: Completion) -> tuple[EndpointCall, ...]:
    """The engine calls of ``c`` for the per-endpoint counts: ``c.calls``, or ``c`` itself as one call."""
    if c.calls is not None:
        return c.calls
    return (EndpointCall(c.endpoint, c.seconds, c.prompt_tokens, c.cached_tokens, tuple(c.moved_from)),)


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
    base_url: str | Sequence[str] | None = None  # several: the endpoints of one engine (openai)
    batch_size: int | None = None
    seed: int = 0
    options: Mapping[str, Any] = field(default_factory=dict)


@runtime_checkable
class Engine(Protocol):
    """What the plugin needs from a back end."""

    name: str  # "hf", "vllm", "openai", or a custom engine's name
    tokenizer: "Tokenizer"
    max_context: int  # prompt + generated tokens the model accepts

    def identity(self) -> Mapping[str, Any]:
        """Everything that changes an answer: model identity, back end, its options.

        JSON-serialisable; used in the cache key. Never contains secrets.
        """

    def generate(self, requests: Sequence[GenerationRequest], on_result: ResultCallback | None = None) -> list[Completion]:
        """Greedy completions, one per request, in order."""

    def close(self) -> None: ...


class EngineBase(ABC):
    """The base of the built-in engines: the members the run relies on, with defaults.

    An abstract base: a subclass sets ``name`` (the name it is registered under), ``tokenizer`` and
    ``max_context`` (from :meth:`context_length`) and must implement ``identity()`` and
    ``generate()`` (a class without them cannot be built: ``TypeError`` names what is missing). ``options`` (class attribute, optional) declares the
    ``--ruler-engine-option`` keys it reads, as a custom engine's factory does. Class
    attributes say how its context is found: ``context_option`` (an engine option that
    declares the context when the engine reports none; its declared default counts),
    ``tokenizer_context`` (the tokenizer's ``model_max_length`` as a last resort) and
    ``context_source`` (the engine's report, in the user's words).
    """

    name: ClassVar[str] = "engine"
    context_option: ClassVar[str | None] = None
    tokenizer_context: ClassVar[bool] = False
    context_source: ClassVar[str] = "the {name} engine's model config"
    tokenizer: "Tokenizer"
    max_context: int
    on_wait: Callable[[str], None] | None = None  # set by the session: says what a long wait is for
    # set by the session for one generate call: (prompts, their prompt tokens, new tokens each, most new tokens)
    on_progress: Callable[[int, int, int, int], None] | None = None

    @classmethod
    def describe(cls, config: EngineConfig) -> Mapping[str, Any] | None:
        """The cache identity without building the engine; None: build it and ask ``identity()``."""
        return None

    @classmethod
    def preflight(cls, config: EngineConfig) -> int | None:
        """The start-up check, without loading a model; returns the context the engine reports (None: unknown)."""
        return None

    @classmethod
    def context_length(cls, config: EngineConfig, reported: Any = None, *, tokenizer: Any = None) -> ContextLength:
        """The context length from ``reported`` (the preflight's answer, or what the loaded engine
        runs with) and the options, by :func:`.context.resolve_context`'s precedence."""
        fallbacks: list[tuple[str, Any]] = []
        if cls.context_option:
            key = cls.context_option
            value = (config.options or {}).get(key)  # typed at start-up (plugin.config.build_config)
            label = f"--ruler-engine-option {key}"
            if value is None:  # the engine's declared default, if it declares one
                value = next((o.default for o in (getattr(cls, "options", None) or ()) if getattr(o, "key", None) == key), None)
                label = f"the {cls.name} engine's default {key}"
            fallbacks.append((label, value))
        if cls.tokenizer_context and tokenizer is not None:
            fallbacks.append(("the tokenizer's model_max_length", getattr(tokenizer, "model_max_length", None)))
        return resolve_context(config.max_model_len, reported, reported_by=cls.context_source.format(name=cls.name), fallbacks=fallbacks)

    @abstractmethod
    def identity(self) -> Mapping[str, Any]:
        """Everything that changes an answer (see :class:`Engine`); JSON-serialisable, never a secret."""

    @abstractmethod
    def generate(self, requests: Sequence[GenerationRequest], on_result: ResultCallback | None = None) -> list[Completion]:
        """Greedy completions, one per request, in order; ``on_result(i, c)`` as each finishes."""

    def close(self) -> None:
        """Free what the engine holds (worker processes, a connection pool); nothing by default."""


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
