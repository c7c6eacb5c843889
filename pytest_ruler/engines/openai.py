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
                       ──► ThreadPoolExecutor(concurrency) ──► POST, retries
                       ──► on_result(i, Completion) as each finishes

Options (``EngineConfig.options``): ``concurrency``, ``timeout``,
``max_retries``, ``retry_backoff``, ``endpoint``, ``prompt_format``,
``max_context``, ``extra_body``; declared with their defaults and meanings in
:mod:`.openai_options`, coerced by :mod:`.options`. The HTTP side (requests,
retries, timeouts, scrubbing, probing the server) is
:mod:`.openai_transport`. While requests are in flight and none has finished
for 30 s, the engine says so through ``on_wait`` ("waiting for the server: 2
requests in flight, 45 s").

Chat mode: RULER prompts are already rendered with the chat template. When a
prompt has the shape ``frame.head + user + frame.tail + answer_prefix`` for
the tokenizer's own template, chat mode sends ``user`` as the user message and
``answer_prefix`` as an assistant message to continue (vLLM:
``continue_final_message``); otherwise the whole prompt is one user message
with no prefill. A request object may also carry ``messages`` (duck-typed;
a list of ``{"role", "content"}`` dicts, the last one an assistant prefill).

Secrets: the API key comes only from the environment variable
``RULER_API_KEY`` and is sent as ``Authorization: Bearer``; it never appears
in ``identity()``, ``repr``, log records or error messages (any text that
might echo it is scrubbed). Credentials and query strings in the base URL are
refused or hidden likewise.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Any, Mapping, Sequence

from ..errors import RulerUsageError
from ..secrets import API_KEY_ENV
from ..tasks.tokenizer import Tokenizer, load_tokenizer
from .base import Completion, EngineBase, EngineConfig, GenerationRequest, ResultCallback, check_context
from .openai_transport import _BASE_TIMEOUT, OpenAITransport, _display_url, _HTTPFailure  # noqa: F401 - _BASE_TIMEOUT: tests read it here
from .options import engine_options

__all__ = ["API_KEY_ENV", "OpenAIEngine"]

log = logging.getLogger(__name__)

WAIT_NOTICE = 30.0


def _require_base_url(config: EngineConfig) -> None:
    if not config.base_url:
        raise RulerUsageError(
            "--ruler-base-url", None,
            "the openai back end needs the server's API root, e.g. "
            "--ruler-base-url=http://127.0.0.1:8000/v1 (start one with `vllm serve MODEL`)",
        )


class OpenAIEngine(OpenAITransport, EngineBase):
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
        self._connect(config, options)
        self.concurrency = options["concurrency"]

        self._entry = self._served_entry()  # first: an unreachable server fails fast
        self.tokenizer: Tokenizer = self._load_tokenizer(config)
        self.max_context: int = self._resolve_max_context(options)
        self._frame = self._chat_frame()
        self.extra_body: dict[str, Any] = {**self._server_defaults(), **(options["extra_body"] or {})}
        self._no_bos_field = False
        self.endpoint, self.prompt_format = self._choose_endpoint(options["endpoint"], options["prompt_format"])
        self._pool: ThreadPoolExecutor | None = None
        self._pool_lock = threading.Lock()

    @classmethod
    def preflight(cls, config: EngineConfig) -> int | None:
        """The start-up check, within seconds: the server answers GET /models and serves
        the model. Returns the server's ``max_model_len`` (None when it does not say)."""
        _require_base_url(config)
        probe = cls.__new__(cls)
        probe._connect(config, engine_options(config, "openai"))
        value = probe._served_entry().get("max_model_len")
        return value if isinstance(value, int) and 0 < value < 10**9 else None

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
        found = self.context_length(self.config, self._entry.get("max_model_len"), tokenizer=self.tokenizer).tokens
        if found is not None:
            return found
        raise RulerUsageError(
            "--ruler-max-model-len", None,
            f"the server at {self.base_url} does not report the model's context length; "
            "pass it with --ruler-max-model-len=N",
        )

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

    def _one(self, index: int, request: GenerationRequest) -> Completion:
        start = time.perf_counter()
        path, body = self._body(request)
        try:
            data = self._post_json(path, body, jitter=random.Random(self.config.seed * 1_000_003 + index), timeout=self._timeout_for(request.prompt_tokens))
            choice = data["choices"][0]
            if self.endpoint == "chat":
                text = (choice.get("message") or {}).get("content") or ""
            else:
                text = choice.get("text") or ""
        except _HTTPFailure as exc:
            return self._failed(request, str(exc), start)
        except (KeyError, IndexError, TypeError, AttributeError):
            return self._failed(request, f"POST {self.base_url}{path}: the answer has no choices[0] text", start)
        except Exception as exc:  # never lose the other requests
            return self._failed(request, f"{type(exc).__name__}: {self._scrub(str(exc))}", start)
        text = self._scrub(text)  # also when the server escaped the key in its JSON
        usage = data.get("usage") or {}
        prompt_tokens = usage.get("prompt_tokens")
        completion_tokens = usage.get("completion_tokens")
        if not isinstance(completion_tokens, int):
            completion_tokens = self.tokenizer.count(text)
        reason = choice.get("finish_reason") or "stop"
        if reason == "eos":
            reason = "stop"
        return Completion(
            text=text,
            prompt_tokens=prompt_tokens if isinstance(prompt_tokens, int) else request.prompt_tokens,
            completion_tokens=completion_tokens,
            finish_reason=str(reason),
            seconds=time.perf_counter() - start,
        )

    def _failed(self, request: GenerationRequest, message: str, start: float) -> Completion:
        message = self._scrub(message)
        log.warning("openai engine: request failed: %s", message)
        return Completion(
            text="",
            prompt_tokens=request.prompt_tokens,
            completion_tokens=0,
            finish_reason="error",
            seconds=time.perf_counter() - start,
            error=message,
        )

    def _executor(self) -> ThreadPoolExecutor:
        with self._pool_lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=self.concurrency, thread_name_prefix="ruler-openai")
            return self._pool

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
            pool = self._executor()
            pending: dict[Future, int] = {pool.submit(self._one, i, requests[i]): i for i in run}
            last = started = time.monotonic()
            try:
                while pending:
                    done, _ = wait(pending, timeout=WAIT_NOTICE, return_when=FIRST_COMPLETED)
                    now = time.monotonic()
                    if done:
                        last = now
                    elif self.on_wait is not None and now - last >= WAIT_NOTICE:
                        n = len(pending)
                        self.on_wait(f"ruler: waiting for the server at {self.base_url}: {n} request{'s' if n != 1 else ''} in flight, "
                                     f"{now - started:.0f} s so far ({len(run) - n} of {len(run)} done)")
                    for fut in done:
                        i = pending.pop(fut)
                        results[i] = fut.result()
                        if on_result is not None:
                            on_result(i, results[i])
            finally:
                for fut in pending:
                    fut.cancel()
        return results  # type: ignore[return-value]  # every slot is filled here

    def identity(self) -> Mapping[str, Any]:
        ident: dict[str, Any] = {
            "engine": "openai",
            "base_url": self.base_url,
            "model": self.model,
            "endpoint": self.endpoint,
            "prompt_format": self.prompt_format,
        }
        if self.extra_body:
            ident["extra_body"] = {k: self.extra_body[k] for k in sorted(self.extra_body)}
        root = self._entry.get("root")
        if isinstance(root, str) and root:
            ident["served_model_root"] = _display_url(root) if "://" in root else root
        for key in ("revision", "parent"):
            value = self._entry.get(key)
            if isinstance(value, str) and value:
                ident[key] = value
        return ident

    def close(self) -> None:
        with self._pool_lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)

    def __enter__(self) -> "OpenAIEngine":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return (
            f"OpenAIEngine(base_url={getattr(self, 'base_url', None)!r}, model={self.config.model!r}, endpoint={getattr(self, 'endpoint', None)!r}, "
            f"max_context={getattr(self, 'max_context', None)!r}, api_key={'set' if getattr(self, '_key', None) else 'unset'})"
        )
