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

Options (``EngineConfig.options``):

- ``concurrency`` (8): requests in flight at once.
- ``timeout``: seconds a request may wait for the server's answer; by default
  120 s plus 5 s per 1K prompt tokens (140 s at 4K, 760 s at 128K), since a
  non-streamed long prompt sends nothing until it is done. Start-up
  (GET /models) waits at most 10 s.
- ``max_retries`` (5): retries after 429, 5xx and dropped connections, with
  exponential backoff and jitter; ``Retry-After`` is honoured. A request that
  timed out is retried once only (a hung server stays hung).
  ``retry_backoff`` (1.0) is the first delay in seconds.
- While requests are in flight and none has finished for 30 s, the engine says
  so through ``on_wait`` ("waiting for the server: 2 requests in flight, 45 s").
- ``endpoint`` (``auto``): ``completions``, ``chat`` or ``auto`` (completions,
  falling back to chat when the server answers 404/405 for it).
- ``prompt_format`` (``auto``): ``ids`` or ``text`` for the completions
  prompt; ``auto`` sends token ids when the server accepts them (vLLM,
  OpenAI do), so what was budgeted is exactly what runs.
- ``max_context``: the model's context when the server does not say
  (``EngineConfig.max_model_len`` overrides every other source).
- ``extra_body``: JSON fields added to every request, for server-specific
  sampling settings. llama.cpp servers apply ``repeat_penalty`` 1.1 even at
  temperature 0; when ``/models`` says the server is llama.cpp the engine
  sends ``{"repeat_penalty": 1.0}`` itself (``extra_body`` overrides it).

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

import email.utils
import http.client
import json
import logging
import os
import random
import socket
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Any, Mapping, Sequence

from ..errors import RulerUsageError
from ..secrets import API_KEY_ENV
from ..tasks.tokenizer import Tokenizer, load_tokenizer
from .base import Completion, EngineConfig, GenerationRequest, ResultCallback, check_context

__all__ = ["API_KEY_ENV", "OpenAIEngine"]

log = logging.getLogger(__name__)

_ENDPOINTS = ("auto", "completions", "chat")
_PROMPT_FORMATS = ("auto", "ids", "text")
_RETRY_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
_MAX_RETRY_AFTER = 120.0
_MAX_BACKOFF = 30.0
_STARTUP_TIMEOUT = 10.0
# a request's read timeout when none is given: a server that sends nothing for this long is
# taken as hung. Long prompts get longer (prefill and queueing grow with length).
_BASE_TIMEOUT = 120.0
_TIMEOUT_PER_1K_TOKENS = 5.0
_TIMEOUT_RETRIES = 1  # a request that timed out is tried once more, not max_retries times
WAIT_NOTICE = 30.0


class _Secret:
    """A string that never shows itself (repr, str, vars(), pickling by accident)."""

    __slots__ = ("_value",)

    def __init__(self, value: str | None) -> None:
        self._value = value or None

    def get(self) -> str | None:
        return self._value

    def __bool__(self) -> bool:
        return self._value is not None

    def __repr__(self) -> str:
        return "<secret>" if self._value else "<none>"

    __str__ = __repr__

    def __reduce__(self):  # never serialise the key
        return (_Secret, (None,))


class _HTTPFailure(Exception):
    """An HTTP answer or transport failure, already scrubbed of secrets."""

    def __init__(self, message: str, *, status: int | None = None, retryable: bool = False, retry_after: float | None = None, body: str = "", detail: str = "", timed_out: bool = False) -> None:
        super().__init__(message)
        self.timed_out = timed_out
        self.detail = detail or message
        self.status = status
        self.retryable = retryable
        self.retry_after = retry_after
        self.body = body


def _option(options: Mapping[str, Any], name: str, default: Any, kind: type, *, minimum: float | None = None) -> Any:
    value = options.get(name, default)
    try:
        value = kind(value)
    except (TypeError, ValueError):
        raise RulerUsageError("--ruler-engine-option", f"{name}={value}", f"{name} must be a {kind.__name__}") from None
    if minimum is not None and value < minimum:
        raise RulerUsageError("--ruler-engine-option", f"{name}={value}", f"{name} must be >= {minimum}")
    return value


def _parse_base_url(raw: str) -> tuple[str, str, str]:
    """(request base without trailing slash, query string, display form)."""
    parts = urllib.parse.urlsplit(raw.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise RulerUsageError(
            "--ruler-base-url", _display_url(raw),
            "give the server's OpenAI API root, e.g. http://127.0.0.1:8000/v1",
        )
    if parts.username or parts.password:
        raise RulerUsageError(
            "--ruler-base-url", _display_url(raw),
            f"do not put credentials in the URL; set the API key in the environment variable {API_KEY_ENV}",
        )
    base = urllib.parse.urlunsplit((parts.scheme, parts.netloc, parts.path.rstrip("/"), "", ""))
    return base, parts.query, base


def _display_url(raw: str) -> str:
    """A URL without user info, query or fragment (they may hold secrets)."""
    try:
        parts = urllib.parse.urlsplit(str(raw).strip())
        host = parts.hostname or ""
        if ":" in host:
            host = f"[{host}]"
        netloc = host + (f":{parts.port}" if parts.port else "")
        return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path.rstrip("/"), "", ""))
    except ValueError:
        return "<unparsable URL>"


def _retry_after(value: str | None) -> float | None:
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, min(float(value), _MAX_RETRY_AFTER))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None:
        return None
    return max(0.0, min(when.timestamp() - time.time(), _MAX_RETRY_AFTER))


def _error_text(body: str, limit: int = 300) -> str:
    """The useful part of an error body (OpenAI shape ``{"error": {"message"}}``)."""
    text = body.strip()
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if isinstance(data, dict):
        err = data.get("error", data.get("detail", data.get("message")))
        if isinstance(err, dict):
            err = err.get("message", err)
        if err is not None:
            text = err if isinstance(err, str) else json.dumps(err)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


class OpenAIEngine:
    """Greedy completions from an OpenAI-compatible server (see module doc)."""

    name = "openai"

    def __init__(self, config: EngineConfig) -> None:
        if not config.base_url:
            raise RulerUsageError(
                "--ruler-base-url", None,
                "the openai back end needs the server's API root, e.g. "
                "--ruler-base-url=http://127.0.0.1:8000/v1 (start one with `vllm serve MODEL`)",
            )
        self.config = config
        self.model = config.model
        self._key = _Secret(os.environ.get(API_KEY_ENV))
        self._base, self._query, self.base_url = _parse_base_url(config.base_url)
        options = dict(config.options or {})
        self.concurrency = _option(options, "concurrency", 8, int, minimum=1)
        # None: scaled with the prompt (see _timeout_for); a number: that many seconds for every request
        self.timeout = _option(options, "timeout", None, float, minimum=0.001) if options.get("timeout") is not None else None
        self.on_wait: Any = None  # callable(line): told what the run waits for, every WAIT_NOTICE seconds
        self.max_retries = _option(options, "max_retries", 5, int, minimum=0)
        self.retry_backoff = _option(options, "retry_backoff", 1.0, float, minimum=0.0)
        endpoint = str(options.get("endpoint", "auto"))
        if endpoint not in _ENDPOINTS:
            raise RulerUsageError("--ruler-engine-option", f"endpoint={endpoint}", f"endpoint: choose one of {', '.join(_ENDPOINTS)}")
        prompt_format = str(options.get("prompt_format", "auto"))
        if prompt_format not in _PROMPT_FORMATS:
            raise RulerUsageError("--ruler-engine-option", f"prompt_format={prompt_format}", f"prompt_format: choose one of {', '.join(_PROMPT_FORMATS)}")

        self._entry = self._served_entry()  # first: an unreachable server fails fast
        self.tokenizer: Tokenizer = self._load_tokenizer(config)
        self.max_context: int = self._resolve_max_context(options)
        self._frame = self._chat_frame()
        extra = options.get("extra_body") or {}
        if not isinstance(extra, Mapping):
            raise RulerUsageError("--ruler-engine-option", f"extra_body={extra}", "extra_body must be a JSON object of JSON fields added to every request")
        self.extra_body: dict[str, Any] = {**self._server_defaults(), **extra}
        self._no_bos_field = False
        self.endpoint, self.prompt_format = self._choose_endpoint(endpoint, prompt_format)
        self._pool: ThreadPoolExecutor | None = None
        self._pool_lock = threading.Lock()

    @classmethod
    def preflight(cls, config: EngineConfig) -> int | None:
        """The start-up check, within seconds: the server answers GET /models and serves
        the model. Returns the server's ``max_model_len`` (None when it does not say)."""
        if not config.base_url:
            raise RulerUsageError("--ruler-base-url", None, "the openai back end needs the server's API root, e.g. --ruler-base-url=http://127.0.0.1:8000/v1")
        probe = cls.__new__(cls)
        probe.config, probe.model = config, config.model
        probe._key = _Secret(os.environ.get(API_KEY_ENV))
        probe._base, probe._query, probe.base_url = _parse_base_url(config.base_url)
        given = dict(config.options or {}).get("timeout")
        probe.timeout = _option({"timeout": given}, "timeout", None, float, minimum=0.001) if given is not None else None
        probe.on_wait = None
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

    def _served_entry(self) -> dict[str, Any]:
        """GET /models once: the server must answer and serve ``self.model``."""
        try:
            data = self._get_json("/models")
        except _HTTPFailure as exc:
            if exc.status == 404 and not self._base.rstrip("/").endswith("/v1"):
                alt = self._base + "/v1"
                try:
                    data = self._get_json("/models", base=alt)
                except _HTTPFailure:
                    data = None
                if data is not None:
                    log.info("openai engine: %s has no /models; using %s", self.base_url, alt)
                    self._base = self.base_url = alt
                    return self._pick_model(data)
            raise self._startup_error(exc) from None
        return self._pick_model(data)

    def _startup_error(self, exc: _HTTPFailure) -> RulerUsageError:
        url = self.base_url
        if exc.status in (401, 403):
            have = "is set but was refused" if self._key else "is not set"
            return RulerUsageError(
                "--ruler-base-url", url,
                f"the server refused the request (HTTP {exc.status}): the API key from {API_KEY_ENV} {have}; "
                f"export {API_KEY_ENV} with the server's key",
            )
        if exc.status is None:
            return RulerUsageError(
                "--ruler-base-url", url,
                f"the OpenAI-compatible server is unreachable ({exc.detail}); start it first, e.g. "
                f"`vllm serve MODEL --port 8000`, then pass its API root, e.g. http://127.0.0.1:8000/v1",
            )
        return RulerUsageError(
            "--ruler-base-url", url,
            f"GET {url}/models answered HTTP {exc.status} ({exc.detail}); is this the API root of an "
            "OpenAI-compatible server (it usually ends in /v1)?",
        )

    def _pick_model(self, data: Any) -> dict[str, Any]:
        entries = data.get("data") if isinstance(data, dict) else None
        if not isinstance(entries, list):
            raise RulerUsageError(
                "--ruler-base-url", self.base_url,
                "GET /models did not return an OpenAI model list; is this an OpenAI-compatible server?",
            )
        served = [e for e in entries if isinstance(e, dict) and "id" in e]
        for entry in served:
            if entry["id"] == self.model:
                return entry
        names = ", ".join(repr(str(e["id"])) for e in served) or "none"
        raise RulerUsageError(
            "--ruler-model", self.model,
            f"the server at {self.base_url} does not serve this model; it serves: {names}. "
            "Pass one of these with --ruler-model (and the matching --ruler-tokenizer if it is not a local name)",
        )

    def _resolve_max_context(self, options: Mapping[str, Any]) -> int:
        sources = [
            ("--ruler-max-model-len", self.config.max_model_len),
            ("the server's max_model_len", self._entry.get("max_model_len")),
            ("--ruler-engine-option max_context", options.get("max_context")),
            ("the tokenizer's model_max_length", getattr(self.tokenizer, "model_max_length", None)),
        ]
        for label, value in sources:
            if value is None:
                continue
            try:
                n = int(value)
            except (TypeError, ValueError):
                raise RulerUsageError(label, value, "must be a positive integer") from None
            if n <= 0 or n > 10**9:  # HF uses a huge sentinel for "unknown"
                continue
            return n
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

    def _choose_endpoint(self, endpoint: str, prompt_format: str) -> tuple[str, str]:
        """Probe /completions with one-token requests: which endpoint, ids or text.

        Token ids first (exactly what was budgeted). Servers that want text say
        so differently: 400/422, or 500 from llama-cpp-python (its validation
        error). A 5xx is only taken as "no ids" when a text probe then works
        and the ids probe fails a second time, so a transient error never
        switches a vLLM server to text. Text is sent with
        ``add_special_tokens: false`` (vLLM: no BOS, as counted) or, when a
        strict server refuses that field, without it.
        """
        if endpoint == "chat":
            return "chat", "messages"
        if prompt_format in ("auto", "ids"):
            try:
                self._probe("ids", retries=0 if prompt_format == "auto" else 2)
                return "completions", "ids"
            except _HTTPFailure as exc:
                if exc.status in (404, 405):
                    return self._no_completions(endpoint, exc)
                if prompt_format == "ids" or not (exc.status in (400, 422) or exc.retryable):
                    raise self._probe_error(exc) from None
                ids_failure = exc
            self._probe_text()  # raises when text fails too
            if ids_failure.status not in (400, 422):
                try:
                    self._probe("ids", retries=0)
                except _HTTPFailure:
                    pass
                else:  # the first failure was transient after all
                    return "completions", "ids"
            log.info("openai engine: %s refuses token-id prompts (%s); sending text", self.base_url, ids_failure.detail)
            return "completions", "text"
        self._probe_text()
        return "completions", "text"

    def _probe(self, fmt: str, *, retries: int, no_bos_field: bool = False) -> None:
        body: dict[str, Any] = {"model": self.model, "max_tokens": 1, "temperature": 0, **self.extra_body}
        if fmt == "ids":
            body["prompt"] = self.tokenizer.encode("Hello") or [0]
        else:
            body["prompt"] = "Hello"
            if no_bos_field:
                body["add_special_tokens"] = False
        self._post_json("/completions", body, retries=retries)

    def _probe_text(self) -> None:
        try:
            self._probe("text", retries=2, no_bos_field=True)
            self._no_bos_field = True
            return
        except _HTTPFailure as exc:
            if exc.status not in (400, 422):
                raise self._probe_error(exc) from None
        try:  # a strict server that refuses the add_special_tokens field
            self._probe("text", retries=2)
        except _HTTPFailure as exc:
            raise self._probe_error(exc) from None
        self._no_bos_field = False

    def _no_completions(self, endpoint: str, exc: _HTTPFailure) -> tuple[str, str]:
        if endpoint == "auto":
            log.info("openai engine: %s has no /completions; using /chat/completions", self.base_url)
            return "chat", "messages"
        raise RulerUsageError(
            "--ruler-engine-option", f"endpoint={endpoint}",
            f"the server at {self.base_url} has no /completions endpoint (HTTP {exc.status}); use 'chat' or 'auto'",
        )

    def _probe_error(self, exc: _HTTPFailure) -> RulerUsageError:
        return RulerUsageError(
            "--ruler-base-url", self.base_url,
            f"a one-token test completion failed ({exc}); check the model name, the options and the server's log",
        )

    # ------------------------------------------------------------------ HTTP

    def _scrub(self, text: str) -> str:
        key = self._key.get()
        if key:
            text = text.replace(key, "<secret>")
        return text

    def _url(self, path: str, base: str | None = None) -> str:
        url = (base or self._base) + path
        return f"{url}?{self._query}" if self._query else url

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json", "Accept": "application/json", "User-Agent": "pytest-ruler"}
        key = self._key.get()
        if key:
            headers["Authorization"] = f"Bearer {key}"
        return headers

    def _timeout_for(self, prompt_tokens: int) -> float:
        if self.timeout is not None:
            return self.timeout
        return _BASE_TIMEOUT + _TIMEOUT_PER_1K_TOKENS * prompt_tokens / 1000

    def _request(self, method: str, path: str, body: Any = None, *, base: str | None = None, timeout: float | None = None) -> Any:
        data = None if body is None else json.dumps(body).encode("utf-8")
        req = urllib.request.Request(self._url(path, base), data=data, headers=self._headers(), method=method)
        where = f"{method} {_display_url(base or self._base)}{path}"
        timeout = timeout or self._timeout_for(0)
        try:
            with urllib.request.urlopen(req, timeout=timeout) as resp:
                raw = resp.read()
        except urllib.error.HTTPError as exc:
            try:
                text = exc.read().decode("utf-8", "replace")
            except Exception:
                text = ""
            status = exc.code
            detail = self._scrub(_error_text(text) or str(exc.reason))
            raise _HTTPFailure(
                f"{where}: HTTP {status}: {detail}",
                status=status,
                retryable=status in _RETRY_STATUS,
                retry_after=_retry_after(exc.headers.get("Retry-After") if exc.headers else None),
                body=self._scrub(text),
                detail=detail,
            ) from None
        except (socket.timeout, TimeoutError):
            raise _HTTPFailure(f"{where}: no answer within {timeout:g} s (set --ruler-engine-option=timeout=SECONDS to wait longer)", retryable=True, timed_out=True) from None
        except urllib.error.URLError as exc:
            reason = exc.reason
            # refused/reset connections and timeouts are worth retrying while a
            # batch runs (a server restarting); at start-up GET /models never retries
            retryable = isinstance(reason, OSError)
            detail = self._scrub(str(reason))
            raise _HTTPFailure(f"{where}: {detail}", retryable=retryable, detail=detail) from None
        except (http.client.HTTPException, ConnectionError, OSError) as exc:
            raise _HTTPFailure(f"{where}: {type(exc).__name__}: {self._scrub(str(exc))}", retryable=True) from None
        try:  # whatever the server sends back, the key never gets further than here
            return json.loads(self._scrub(raw.decode("utf-8")))
        except ValueError:
            raise _HTTPFailure(f"{where}: the answer is not JSON", retryable=False) from None

    def _get_json(self, path: str, base: str | None = None) -> Any:
        return self._request("GET", path, base=base, timeout=self.timeout or _STARTUP_TIMEOUT)

    def _post_json(self, path: str, body: Any, *, retries: int | None = None, jitter: random.Random | None = None, timeout: float | None = None) -> Any:
        retries = self.max_retries if retries is None else retries
        jitter = jitter or random.Random(0)
        attempt = timeouts = 0
        while True:
            try:
                return self._request("POST", path, body, timeout=timeout)
            except _HTTPFailure as exc:
                timeouts += exc.timed_out
                if not exc.retryable or attempt >= retries or timeouts > _TIMEOUT_RETRIES:
                    if attempt:
                        exc.args = (f"{exc.args[0]} (after {attempt} retries)",)
                    raise
                delay = exc.retry_after
                if delay is None:
                    delay = min(_MAX_BACKOFF, self.retry_backoff * 2**attempt) * (0.5 + jitter.random())
                attempt += 1
                log.warning("openai engine: %s; retry %d/%d in %.1f s", exc, attempt, retries, delay)
                time.sleep(delay)

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
