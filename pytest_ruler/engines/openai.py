"""The ``openai`` engine: any OpenAI-compatible server (vLLM's own first).

On a cluster this is how a run scales past one machine: start
``vllm serve MODEL`` (tensor/pipeline/data parallel as you like) and point
``--ruler-base-url`` at it. The engine needs the model's tokenizer locally,
because the length budget is counted here, before anything is sent.

Data flow::

    EngineConfig ──► GET {base}/models  (reachable? model served? max_model_len)
                 ──► probe POST {base}/completions with token ids (once)
                        200      → completions, prompt = token ids
                        400/422  → completions, prompt = text
                        404/405  → chat/completions with an assistant prefill
    generate(requests) ──► check_context (over-length answered locally)
                       ──► the endpoints' pool (.openai_pool: ``concurrency`` in flight per
                           endpoint, prefix affinity, failover) ──► POST, retries
                       ──► on_result(i, Completion) as each finishes, with the endpoint
                           that answered

Options (``EngineConfig.options``): ``concurrency`` (per endpoint;
``--ruler-max-concurrency``), ``timeout``, ``max_retries``, ``retry_backoff``,
``endpoint``, ``prompt_format``, ``max_context``, ``extra_body``, ``affinity``; declared with their defaults and meanings in
:mod:`.openai_options`, coerced by :mod:`.options`. Probing the server is
:mod:`.openai_server`; the HTTP side (one keep-alive client, deadlines,
retries, redirects) is :mod:`.openai_transport`. While requests are in flight
and none has finished for 30 s, the engine says so through ``on_wait``
("waiting for the server: 2 requests in flight, 45 s"); notices (a redirect,
a server answering as another model, a server whose /models cannot tell
models apart) are said there once.

Answers: ``choices[0].text`` (chat: ``.message.content``) as parsed, then
scrubbed of the key (:func:`~pytest_ruler.secrets.scrub`). An answer that is
not a string, lacks the field, or holds a lone surrogate is a *malformed
answer*: a sample with ``finish_reason`` ``"malformed"`` and an error naming
it, scored as no answer, never cached, and not an engine error (the other
samples and the item go on). An HTTP failure is ``finish_reason`` ``"error"``.

Reasoning: a server that parses a thinking model's reasoning apart gives it as ``reasoning``
(current vLLM) or ``reasoning_content`` (older vLLM, other servers), in ``message`` (chat) or
the choice (completions); it is kept, scrubbed, as ``Completion.reasoning`` and the answer is the
content (``None`` content: an empty answer).

Long answers: at most :func:`~.answer_cap.answer_bytes` of a completion's body is read, and an
answer (or reasoning) longer than :func:`~.answer_cap.answer_chars` of its ``max_tokens`` is cut
there; ``Completion.cut`` says what was cut and why (never cached; the item's report names it). Splitting and counting is :mod:`.thinking`'s.

Several endpoints (``--ruler-base-url`` given more than once): :mod:`.openai_pool`
checks them at start and spreads the requests; the probes below run on the first.

Cache identity: base URL (several: the sorted list; each in one spelling, ``endpoints_key``), model, endpoint, prompt format, ``extra_body``, and
``served_model``: what ``GET /models`` says about the model, without the
fields that change per call (:func:`~.openai_server.model_card`).

Chat mode: RULER prompts are already rendered with the chat template. When a
prompt has the shape ``frame.head + user + frame.tail + answer_prefix`` for
the tokenizer's own template, chat mode sends ``user`` as the user message and
``answer_prefix`` as an assistant message to continue (vLLM:
``continue_final_message``); otherwise the whole prompt is one user message
with no prefill. A request object may also carry ``messages`` (duck-typed;
a list of ``{"role", "content"}`` dicts, the last one an assistant prefill).

Secrets: the API key comes only from ``RULER_API_KEY``
(:func:`~pytest_ruler.secrets.api_key`) and is sent as ``Authorization:
Bearer``, never to another host or scheme on a redirect; it never appears in
``identity()``, ``repr``, log records or error messages. Credentials and query
strings in the base URL are refused or hidden likewise.
"""

from __future__ import annotations

import logging
import random
import time
from typing import Any, Mapping, Sequence

from ..errors import RulerUsageError
from ..outside_text import shown
from ..secrets import API_KEY_ENV, scrub
from ..tasks.tokenizer import Tokenizer, load_tokenizer
from .answer_cap import CutBody, answer_bytes, cut_answer
from .base import Completion, EngineBase, EngineConfig, GenerationRequest, ResultCallback, check_context
from .context import MAX_PLAUSIBLE, ContextLength, plausible
from .endpoints import EndpointDown
from .openai_pool import OpenAIPool
from .openai_server import model_card, tells_models_apart
from .openai_transport import BASE_TIMEOUT as _BASE_TIMEOUT  # noqa: F401 - tests read it here
from .openai_transport import HTTPFailure, display_url
from .options import engine_options

__all__ = ["API_KEY_ENV", "OpenAIEngine"]

log = logging.getLogger(__name__)

WAIT_NOTICE = 30.0
MALFORMED = "malformed"  # the finish_reason of a sample whose answer is not text
_MISSING = object()


def _answer_text(choice: Mapping[str, Any], *, chat: bool) -> tuple[str, str | None]:
    """(the answer's text, None), or ("", why it is malformed): not a string, or not valid Unicode."""
    field = "choices[0].message.content" if chat else "choices[0].text"
    if chat:
        message = choice.get("message")
        if not isinstance(message, dict):
            return "", "choices[0].message is not an object"
        value = message.get("content", _MISSING)
    else:
        value = choice.get("text", _MISSING)
    if value is _MISSING:
        return "", f"the answer has no {field}"
    if value is None:  # no text at all (e.g. every token spent elsewhere): an empty answer
        return "", None
    if not isinstance(value, str):
        return "", f"{field} is {type(value).__name__}, not text"
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        return "", f"{field} holds a lone surrogate (U+{ord(value[exc.start]):04X}), which is not Unicode text"
    return value, None


def _before_text(choice: Mapping[str, Any], *, chat: bool) -> bool:
    """Whether a cut body ended before the answer's field began (so no answer was read at all)."""
    holder = choice.get("message") if chat else choice
    return holder is None or (isinstance(holder, dict) and ("content" if chat else "text") not in holder)


REASONING_FIELDS = ("reasoning", "reasoning_content")  # current vLLM's name first, then older vLLM's and others'


def _reasoning_text(choice: Mapping[str, Any], *, chat: bool) -> str | None:
    """A thinking model's reasoning where the server parsed it apart (``--reasoning-parser``):
    ``reasoning`` or ``reasoning_content``, beside the answer; None when it gave none as text."""
    holder = choice.get("message") if chat else choice
    if not isinstance(holder, dict):
        return None
    for name in REASONING_FIELDS:
        value = holder.get(name)
        if isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                return None
            return value
    return None


def _count(value: Any) -> int | None:
    """A token count the server reported, or None when it is not a count."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _first_url(config: EngineConfig) -> str:
    urls = config.base_url if isinstance(config.base_url, (list, tuple)) else [config.base_url]
    return display_url(str(urls[0])) if urls and urls[0] else "(no URL)"


def _require_base_url(config: EngineConfig) -> None:
    if not config.base_url:
        raise RulerUsageError(
            "--ruler-base-url", None,
            "the openai back end needs the server's API root, e.g. "
            "--ruler-base-url=http://127.0.0.1:8000/v1 (start one with `vllm serve MODEL`)",
        )


class OpenAIEngine(OpenAIPool, EngineBase):
    """Greedy completions from an OpenAI-compatible server (see module doc)."""

    name = "openai"
    # the context (engines.context): --ruler-max-model-len, the server's max_model_len, the
    # max_context option, the tokenizer's model_max_length; the start-up check reads the same
    context_option = "max_context"
    tokenizer_context = True
    context_source = "the server's max_model_len"

    def __init__(self, config: EngineConfig) -> None:
        _require_base_url(config)
        options = engine_options(config, "openai")  # typed, with the declared defaults
        self.concurrency = options["concurrency"]  # per endpoint
        try:
            # first: an unreachable server fails fast; several: each checked against the first that answers
            self._entry = self.open_endpoints(config, options)
            self._card = model_card(self._entry)
            if not tells_models_apart(self._card):
                self._notice(
                    f"the server at {self.base_url} says nothing about {shown(repr(self.model))} beyond its name (GET /models "
                    "gives no root, revision, size or context length): if another model is later served under this name, "
                    "the prediction cache answers with this one's predictions; after changing the served model pass "
                    "--ruler-no-cache or another --ruler-cache-dir")
            self.tokenizer: Tokenizer = self._load_tokenizer(config)
            self.max_context: int = self._resolve_max_context(options)
            self._frame = self._chat_frame()
            self.extra_body: dict[str, Any] = {**self._server_defaults(), **(options["extra_body"] or {})}
            self._no_bos_field = False
            self.endpoint, self.prompt_format = self._choose_endpoint(options["endpoint"], options["prompt_format"])
        except BaseException:
            self.close_endpoints()
            raise

    @classmethod
    def preflight(cls, config: EngineConfig) -> Any:
        """The start-up check, within seconds: the server answers GET /models and serves
        the model. Returns the server's ``max_model_len`` as it says it (None when it does not
        say): :meth:`context_length` judges it."""
        _require_base_url(config)
        return cls.check_endpoints(config, engine_options(config, "openai")).get("max_model_len")

    @classmethod
    def context_length(cls, config: EngineConfig, reported: Any = None, *, tokenizer: Any = None) -> ContextLength:
        """The context length (engines.context's precedence); refused, naming ``--ruler-max-model-len``,
        when nothing gives one or the server's ``max_model_len`` is no context length (``-1``, ``'abc'``,
        ``10**12``) and neither ``--ruler-max-model-len`` nor ``max_context`` says otherwise. The
        start-up check and the engine ask the same, so a run never starts to fail each item."""
        given = config.max_model_len is not None or (config.options or {}).get("max_context") is not None
        if reported is not None and plausible(reported) is None and not given:
            said = reported if isinstance(reported, (int, float)) else shown(str(reported), limit=40)
            raise RulerUsageError(
                "the server's max_model_len", said,
                f"GET /models at {_first_url(config)} gives this for {shown(repr(config.model))}, and it is no context length "
                f"(a whole number of tokens, at most {MAX_PLAUSIBLE}); pass the model's context with --ruler-max-model-len=N "
                "(the server's own limit: vLLM's --max-model-len, llama.cpp's --ctx-size)",
            )
        found = super().context_length(config, plausible(reported), tokenizer=tokenizer)
        if found.tokens is None:
            raise RulerUsageError(
                "--ruler-max-model-len", None,
                f"the server at {_first_url(config)} does not report {shown(repr(config.model))}'s context length "
                "(GET /models gives no max_model_len), and every prompt is checked against it; pass it with "
                "--ruler-max-model-len=N (the server's own limit: vLLM's --max-model-len, llama.cpp's --ctx-size)",
            )
        return found

    # ------------------------------------------------------------------ set-up

    def _load_tokenizer(self, config: EngineConfig) -> Tokenizer:
        name = config.tokenizer or config.model
        try:
            return load_tokenizer(name, trust_remote_code=config.trust_remote_code)
        except RulerUsageError as exc:
            raise RulerUsageError(
                "--ruler-tokenizer", name,
                "the openai back end counts the length budget with the model's tokenizer, so it must be "
                "available locally: pass --ruler-tokenizer=<HF id in the local cache, folder with "
                f"tokenizer.json, or .gguf file> ({exc.fix})",
            ) from None

    def _resolve_max_context(self, options: Mapping[str, Any]) -> int:
        return self.context_length(self.config, self._entry.get("max_model_len"), tokenizer=self.tokenizer).tokens

    def _server_defaults(self) -> dict[str, Any]:
        """Fields that make a known server plainly greedy.

        llama.cpp (``llama-server``: owned_by ``llamacpp``; llama-cpp-python:
        ``me``) applies ``repeat_penalty`` 1.1 even at temperature 0, which
        breaks repeated digits of a passkey (measured: 3/4 instead of 4/4 at 4K
        with the embedded model).
        """
        if self._entry.get("owned_by") in ("llamacpp", "me"):
            return {"repeat_penalty": 1.0}
        return {}

    def _chat_frame(self):
        try:
            from ..tasks.chat import frame_for

            frame = frame_for("auto", self.tokenizer)
        except Exception:  # a template we cannot render: chat mode sends whole prompts
            return None
        return frame if (frame.head or frame.tail) else None

    # ------------------------------------------------------------------ requests

    def _messages(self, request: GenerationRequest) -> list[dict[str, str]]:
        given = getattr(request, "messages", None)
        if given:
            return [dict(m) for m in given]
        prompt, frame = request.prompt, self._frame
        if frame is not None and prompt.startswith(frame.head) and frame.tail:
            cut = prompt.rfind(frame.tail)
            if cut >= len(frame.head):
                user = prompt[len(frame.head):cut]
                prefix = prompt[cut + len(frame.tail):]
                messages = [{"role": "user", "content": user}]
                if prefix:
                    messages.append({"role": "assistant", "content": prefix})
                return messages
        return [{"role": "user", "content": prompt}]

    def _body(self, request: GenerationRequest) -> tuple[str, dict[str, Any]]:
        body: dict[str, Any] = {
            "model": self.model,
            "max_tokens": request.max_tokens,
            "temperature": 0,
            "top_p": 1,
            "seed": self.config.seed,
        }
        if request.stop:
            body["stop"] = list(request.stop)
        body.update(self.extra_body)
        if self.endpoint == "chat":
            messages = self._messages(request)
            body["messages"] = messages
            if messages[-1]["role"] == "assistant":
                # vLLM: continue the assistant's turn instead of opening a new one
                body["continue_final_message"] = True
                body["add_generation_prompt"] = False
            return "/chat/completions", body
        if self.prompt_format == "ids":
            body["prompt"] = list(request.prompt_ids)
        else:
            body["prompt"] = request.prompt
            if self._no_bos_field:
                body["add_special_tokens"] = False  # vLLM: the budget counted no BOS
        return "/completions", body

    def _one(self, index: int, request: GenerationRequest, via: Any = None, move_on_drop: bool = False) -> Completion:
        """One request on endpoint ``via`` (default: the first); ``move_on_drop``: a dropped
        connection raises EndpointDown (the pool moves the request) instead of being retried."""
        start = time.perf_counter()
        via = via or self
        path, body = self._body(request)
        where = f"POST {via.base_url}{path}"
        limit = answer_bytes(request.max_tokens)  # an answer far longer than max_tokens allows is cut here
        try:
            data = via.post_json(path, body, jitter=random.Random(self.config.seed * 1_000_003 + index), timeout=self._timeout_for(request.prompt_tokens),
                                 move_on_drop=move_on_drop, max_bytes=limit)
            cut_body = isinstance(data, CutBody)
            choice = data["choices"][0] if not cut_body or data.get("choices") else {}
            if not isinstance(choice, dict):
                raise TypeError
        except HTTPFailure as exc:
            if self.moves(exc, move_on_drop):
                raise EndpointDown(exc.detail) from None
            return self._failed(request, str(exc), start)
        except (KeyError, IndexError, TypeError):
            return self._failed(request, f"{where}: the answer has no choices[0]", start)
        except Exception as exc:  # never lose the other requests
            return self._failed(request, shown(f"{type(exc).__name__}: {exc}"), start)
        self._check_model_name(data.get("model"))
        text, problem = _answer_text(choice, chat=self.endpoint == "chat")
        if problem is not None and cut_body and _before_text(choice, chat=self.endpoint == "chat"):
            text, problem = "", None  # the body was cut before its text began: an empty answer, marked cut
        if problem is not None:
            return self._malformed(request, f"{where}: {problem}", start)
        reasoning = _reasoning_text(choice, chat=self.endpoint == "chat")
        cut = cut_answer(text, reasoning, request.max_tokens, limit if cut_body else None)
        if cut is not None:
            text, reasoning = cut.text, cut.reasoning
            log.warning("openai engine: %s: %s", where, cut.note)
        text = scrub(text)  # the parsed answer, never the raw JSON (one rule: secrets.scrub)
        reasoning = scrub(reasoning) if reasoning is not None else None
        usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
        prompt_tokens = _count(usage.get("prompt_tokens"))
        completion_tokens = _count(usage.get("completion_tokens"))
        if completion_tokens is None:
            completion_tokens = self.tokenizer.count(text)
        reason = choice.get("finish_reason") or ("length" if cut_body else "stop")  # a cut body ran past max_tokens
        if reason == "eos":
            reason = "stop"
        details = usage.get("prompt_tokens_details")  # a server with a prefix cache says how much it reused
        return Completion(
            text=text,
            prompt_tokens=request.prompt_tokens if prompt_tokens is None else prompt_tokens,
            completion_tokens=completion_tokens,
            finish_reason=shown(reason, limit=40),
            seconds=time.perf_counter() - start,
            cached_tokens=_count(details.get("cached_tokens")) if isinstance(details, dict) else None,
            reasoning=reasoning,
            cut=None if cut is None else cut.note,
        )

    def _check_model_name(self, answered: Any) -> None:
        if isinstance(answered, str) and answered and answered != self.model:
            self._notice(f"the server at {self.base_url} answers as model {shown(repr(answered))}, not {shown(repr(self.model))} "
                         "as asked; the scores are recorded under the name asked for")

    def _failed(self, request: GenerationRequest, message: str, start: float) -> Completion:
        message = shown(message, limit=None)
        log.warning("openai engine: request failed: %s", message)
        return Completion(
            text="",
            prompt_tokens=request.prompt_tokens,
            completion_tokens=0,
            finish_reason="error",
            seconds=time.perf_counter() - start,
            error=message,
        )

    def _malformed(self, request: GenerationRequest, message: str, start: float) -> Completion:
        """A sample whose answer is not text: scored as no answer, named, never cached, not an engine error."""
        message = f"malformed answer: {shown(message, limit=None)}"
        log.warning("openai engine: %s", message)
        return Completion(
            text="",
            prompt_tokens=request.prompt_tokens,
            completion_tokens=0,
            finish_reason=MALFORMED,
            seconds=time.perf_counter() - start,
            error=message,
        )

    # ------------------------------------------------------------------ Engine API

    def generate(self, requests: Sequence[GenerationRequest], on_result: ResultCallback | None = None) -> list[Completion]:
        """Greedy completions in order; ``on_result`` runs in the caller's thread."""
        requests = list(requests)
        results: list[Completion | None] = [None] * len(requests)
        run, refused = check_context(requests, self.max_context)
        for i, completion in refused.items():
            results[i] = completion
            if on_result is not None:
                on_result(i, completion)
        if run:
            self.dispatch(requests, run, results, on_result, wait_notice=WAIT_NOTICE)
            self._say_notices()  # what the pool's threads noticed, said from this thread
        return results  # type: ignore[return-value]  # every slot is filled here

    def identity(self) -> Mapping[str, Any]:
        ident: dict[str, Any] = {
            "engine": "openai",
            # several endpoints: all of them (another set of servers is another cache key), in one
            # spelling each and sorted: their order and spelling change no key (.openai_pool)
            "base_url": self.endpoints_key,
            "model": self.model,
            "endpoint": self.endpoint,
            "prompt_format": self.prompt_format,
        }
        if self.extra_body:
            ident["extra_body"] = {k: self.extra_body[k] for k in sorted(self.extra_body)}
        # what GET /models says about the model (vLLM: root, max_model_len): another model
        # served under the same name and URL gets other cache keys
        ident["served_model"] = self._card
        return ident

    def close(self) -> None:
        self.close_endpoints()

    def __enter__(self) -> "OpenAIEngine":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return (
            f"OpenAIEngine(base_url={getattr(self, 'base_url', None)!r}, model={self.config.model!r}, endpoint={getattr(self, 'endpoint', None)!r}, "
            f"max_context={getattr(self, 'max_context', None)!r}, api_key={'set' if getattr(self, '_key', None) else 'unset'})"
        )
