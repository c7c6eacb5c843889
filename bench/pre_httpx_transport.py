"""THE PRE-HTTPX BASELINE, for bench/transport.py only: not part of pytest-ruler.

This is ``pytest_ruler/engines/openai_transport.py`` as it was before the
transport moved to httpx (``git show dcf0d61:pytest_ruler/engines/openai_transport.py``):
urllib, one new connection per request, hand-made backoff. Only what a copy
outside the package needs was changed: absolute imports, and the public names
``connect``/``post_json``/``close_transport`` the bench calls on both transports.
Do not import it from the package or the tests.
"""

from __future__ import annotations

# ---- the original module follows (its docstring kept, as a plain string) ----
"""The HTTP side of the ``openai`` engine: requests, retries, timeouts, scrubbing, probing.

:class:`OpenAITransport` is the base class of
:class:`~pytest_ruler.engines.openai.OpenAIEngine`; it owns the connection
settings (``base_url``, the API key, ``timeout``, ``max_retries``,
``retry_backoff``) and everything said over the wire, with ``urllib`` only.

Data flow::

    _connect(config) ──► base URL parsed (credentials refused, query hidden)
    _served_entry()   ──► GET {base}/models once (10 s at most; no retries)
    _choose_endpoint  ──► one-token probes of /completions: ids, text, or chat
    _post_json        ──► POST with retries after 429/5xx/dropped connections
                          (exponential backoff with jitter, Retry-After honoured,
                          a timed-out request retried once only)

Timeouts: ``timeout`` when given; else 120 s plus 5 s per 1K prompt tokens
(a non-streamed long prompt sends nothing until it is done).

Secrets: the API key comes only from ``RULER_API_KEY`` and is sent as
``Authorization: Bearer``; every text that leaves here (errors, bodies,
answers) has it scrubbed, and URLs are shown without user info or query.

Public names: ``OpenAITransport``; :mod:`.openai` also uses the private
helpers ``_HTTPFailure`` and ``_display_url``.
"""


import email.utils
import http.client
import json
import logging
import os
import random
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from pytest_ruler.errors import RulerUsageError

API_KEY_ENV = "RULER_API_KEY"
PARAMETER = "--ruler-engine-option"

__all__ = ["PreHttpxTransport"]

log = logging.getLogger("pytest_ruler.engines.openai")  # one logger for the engine and its transport

_RETRY_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
_MAX_RETRY_AFTER = 120.0
_MAX_BACKOFF = 30.0
_STARTUP_TIMEOUT = 10.0
# a request's read timeout when none is given: a server that sends nothing for this long is
# taken as hung. Long prompts get longer (prefill and queueing grow with length).
_BASE_TIMEOUT = 120.0
_TIMEOUT_PER_1K_TOKENS = 5.0
_TIMEOUT_RETRIES = 1  # a request that timed out is tried once more, not max_retries times


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


class OpenAITransport:
    """Connection settings, HTTP requests and server probing of the openai engine.

    The engine subclass supplies ``tokenizer`` and ``extra_body``, which the
    one-token probes of :meth:`_choose_endpoint` send.
    """

    def _connect(self, config: Any, options: dict[str, Any]) -> None:
        """The connection settings from a config and its coerced options (no request yet)."""
        self.config, self.model = config, config.model
        self._key = _Secret(os.environ.get(API_KEY_ENV))
        self._base, self._query, self.base_url = _parse_base_url(config.base_url)
        # None: scaled with the prompt (see _timeout_for); a number: that many seconds for every request
        self.timeout = options["timeout"]
        self.max_retries = options["max_retries"]
        self.retry_backoff = options["retry_backoff"]
        self.on_wait: Any = None  # callable(line): told what the run waits for, every WAIT_NOTICE seconds

    # ------------------------------------------------------------------ server probing

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
            PARAMETER, f"endpoint={endpoint}",
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


class PreHttpxTransport(OpenAITransport):
    """The baseline with the calls bench/transport.py makes on both transports."""

    def connect(self, config: Any, options: dict[str, Any]) -> None:
        self._connect(config, options)

    def post_json(self, path: str, body: Any) -> Any:
        return self._post_json(path, body)

    def close_transport(self) -> None:  # urllib keeps no connection open
        pass
