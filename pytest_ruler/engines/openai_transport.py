"""The HTTP side of the ``openai`` engine: one keep-alive client, deadlines, retries, redirects.

:class:`OpenAITransport` is the base class of
:class:`~pytest_ruler.engines.openai.OpenAIEngine` (whose server probing is in
:mod:`.openai_server`); it owns the connection settings (``base_url``, the API
key, ``timeout``, ``max_retries``, ``retry_backoff``) and everything said over
the wire.

Data flow::

    connect(config, options) ──► base URL parsed (credentials refused, query kept apart)
                             ──► api_key(): RULER_API_KEY stripped, control characters refused
                             ──► one httpx.Client over a DeadlineTransport (keep-alive pool
                                 of ``concurrency`` + 1 connections), closed by close_transport()
    get_json(path, deadline) ──► one GET, no retries (start-up: 10 s for the whole check)
    post_json(path, body)    ──► tenacity: retries after 429/5xx/dropped connections
                                 (Retry-After in seconds or as an HTTP date, else exponential
                                 backoff with seeded jitter; at most ``max_retries`` retries, a
                                 timed-out request once, none starting later than 10 minutes
                                 past the first attempt's deadline)
    both ──► _request ──► _exchange: send, follow redirects (at most 5; Authorization only
                          to the same scheme, host and port; said once), the body streamed:
                          at most ``max_bytes`` read (a completion's: answer_cap.answer_bytes of
                          its max_tokens; a longer body is what its first bytes hold, an
                          answer_cap.CutBody), else at most 64 MiB ──► the JSON answer, parsed,
                          nothing scrubbed in it

Deadlines: a request's ``timeout`` bounds the whole request (connect, send,
headers, body), however slowly the server sends its bytes
(:mod:`.http_deadline`). ``timeout`` when given; else 120 s plus 5 s per 1K
prompt tokens (a non-streamed long prompt sends nothing until it is done).

Outside text: whatever the server says (error bodies, model names, redirect
targets) reaches messages only through :func:`~pytest_ruler.outside_text.shown`
(the key scrubbed, control characters escaped). The parsed JSON is handed back
as parsed: the engine scrubs the values it keeps (one rule,
:func:`~pytest_ruler.secrets.scrub`). An error that could quote a request
header (the HTTP library refusing one) is reported by its type only.

Notices: things the user should hear once (a redirect, a server answering as
another model) are logged and kept until the engine's ``on_wait`` line sink
is set, then said there (``ruler: warning: ...``), each once.

Several endpoints (``--ruler-base-url`` given more than once: ``config.base_url`` a
sequence): each has its own transport, ``connect(config, options, url=...)``; the first
URL is the default (:func:`endpoint_urls`). ``post_json(..., move_on_drop=True)`` does not
retry a dropped connection (refused, reset: ``HTTPFailure.dropped``), so the engine can move
the request to another endpoint at once (:mod:`.openai_pool`).

Public names: ``OpenAITransport`` (``connect``, ``get_json``, ``post_json``,
``close_transport``, ``on_wait``), ``HTTPFailure``, ``display_url``, ``endpoint_urls``, ``parse_base_url``,
``BASE_TIMEOUT``, ``STARTUP_TIMEOUT``.
"""

from __future__ import annotations

import email.utils
import json
import logging
import random
import re
import threading
import time
import urllib.parse
from typing import Any, Callable

import httpx
import tenacity

from ..errors import RulerUsageError
from ..outside_text import shown
from ..secrets import API_KEY_ENV, api_key
from .answer_cap import partial_json
from .http_deadline import DeadlineTransport

__all__ = ["BASE_TIMEOUT", "STARTUP_TIMEOUT", "HTTPFailure", "OpenAITransport", "display_url", "endpoint_urls", "parse_base_url"]

log = logging.getLogger("pytest_ruler.engines.openai")  # one logger for the engine and its transport

_RETRY_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
_MAX_RETRY_AFTER = 120.0
_MAX_BACKOFF = 30.0
_RETRY_WINDOW = 600.0  # no retry starts later than this past the first attempt's deadline
STARTUP_TIMEOUT = 10.0  # the whole start-up check (GET /models, and /v1/models when that 404s)
# a request's deadline when none is given: a server that has not answered by then is taken
# as hung. Long prompts get longer (prefill and queueing grow with length).
BASE_TIMEOUT = 120.0
_TIMEOUT_PER_1K_TOKENS = 5.0
_TIMEOUT_RETRIES = 1  # a request that timed out is tried once more, not max_retries times
_MAX_REDIRECTS = 5
_MAX_ANSWER_BYTES = 64 * 2**20


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


class HTTPFailure(Exception):
    """An HTTP answer or transport failure; its message is safe to show (scrubbed, escaped)."""

    def __init__(self, message: str, *, status: int | None = None, retryable: bool = False, retry_after: float | None = None,
                 detail: str = "", timed_out: bool = False) -> None:
        super().__init__(message)
        self.timed_out = timed_out
        self.detail = detail or message
        self.status = status
        self.retryable = retryable
        self.retry_after = retry_after

    @property
    def dropped(self) -> bool:
        """No HTTP answer at all: the connection was refused, reset or closed (not a timeout)."""
        return self.status is None and self.retryable and not self.timed_out


def endpoint_urls(value: Any) -> tuple[str, ...]:
    """The endpoints' URLs as given: ``--ruler-base-url`` once (a string) or several times (a sequence)."""
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    return tuple(str(v) for v in value)


def parse_base_url(raw: str) -> tuple[str, str, str]:
    """(request base without trailing slash, repeated slashes in its path made one; query string; display form)."""
    parts = urllib.parse.urlsplit(raw.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise RulerUsageError(
            "--ruler-base-url", display_url(raw),
            "give the server's OpenAI API root, e.g. http://127.0.0.1:8000/v1",
        )
    if parts.username or parts.password:
        raise RulerUsageError(
            "--ruler-base-url", display_url(raw),
            f"do not put credentials in the URL; set the API key in the environment variable {API_KEY_ENV}",
        )
    path = re.sub(r"/{2,}", "/", parts.path).rstrip("/")  # http://host//v1 means /v1
    base = urllib.parse.urlunsplit((parts.scheme, parts.netloc, path, "", ""))
    return base, parts.query, display_url(base)


def display_url(raw: object) -> str:
    """A URL without user info, query or fragment (they may hold secrets), controls escaped."""
    try:
        parts = urllib.parse.urlsplit(str(raw).strip())
        host = parts.hostname or ""
        if ":" in host:
            host = f"[{host}]"
        netloc = host + (f":{parts.port}" if parts.port else "")
        return shown(urllib.parse.urlunsplit((parts.scheme, netloc, parts.path.rstrip("/"), "", "")), limit=None)
    except ValueError:
        return "<unparsable URL>"


def _retry_after(value: str | None) -> float | None:
    """Retry-After as seconds to wait: a number of seconds or an HTTP date (RFC 9110), at most 120 s."""
    if not value:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        pass
    else:
        return max(0.0, min(seconds, _MAX_RETRY_AFTER)) if seconds == seconds else None  # NaN: no advice
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None or when.tzinfo is None:
        return None
    return max(0.0, min(when.timestamp() - time.time(), _MAX_RETRY_AFTER))


def _error_text(body: bytes, limit: int = 300) -> str:
    """The useful part of an error body (OpenAI shape ``{"error": {"message"}}``), safe to show."""
    text = body.decode("utf-8", "replace")
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        data = None
    if isinstance(data, dict):
        err = data.get("error", data.get("detail", data.get("message")))
        if isinstance(err, dict):
            err = err.get("message", err)
        if err is not None:
            try:
                text = err if isinstance(err, str) else json.dumps(err)
            except (TypeError, ValueError, RecursionError):
                text = type(err).__name__
    return shown(text, limit)


def _same_origin(a: httpx.URL, b: httpx.URL) -> bool:
    return (a.scheme, a.host, a.port) == (b.scheme, b.host, b.port)


class _RetryPolicy:
    """When and how long to wait before retrying one POST (tenacity's stop, wait and retry)."""

    def __init__(self, retries: int, backoff: float, jitter: random.Random, window: float, move_on_drop: bool = False) -> None:
        self.retries, self.backoff, self.jitter, self.window = retries, backoff, jitter, window
        self.move_on_drop = move_on_drop
        self.timeouts = 0

    def worth_retrying(self, exc: BaseException) -> bool:
        return isinstance(exc, HTTPFailure) and exc.retryable and not (self.move_on_drop and exc.dropped)

    def wait(self, state: tenacity.RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        advised = getattr(exc, "retry_after", None)
        if advised is not None:
            return advised
        return min(_MAX_BACKOFF, self.backoff * 2 ** (state.attempt_number - 1)) * (0.5 + self.jitter.random())

    def stop(self, state: tenacity.RetryCallState) -> bool:
        exc = state.outcome.exception() if state.outcome else None
        self.timeouts += bool(getattr(exc, "timed_out", False))
        late = (state.seconds_since_start or 0.0) + state.upcoming_sleep > self.window
        return state.attempt_number > self.retries or self.timeouts > _TIMEOUT_RETRIES or late

    def before_sleep(self, state: tenacity.RetryCallState) -> None:
        exc = state.outcome.exception() if state.outcome else None
        log.warning("openai engine: %s; retry %d/%d in %.1f s", exc, state.attempt_number, self.retries, state.upcoming_sleep)


class OpenAITransport:
    """Connection settings and HTTP requests of the openai engine (see the module docstring)."""

    def connect(self, config: Any, options: dict[str, Any], *, url: str | None = None) -> None:
        """The connection settings from a config and its coerced options (``url``: one endpoint of
        several; default the first); opens the client (no request yet)."""
        self.config, self.model = config, config.model
        self._base, self._query, self.base_url = parse_base_url(url if url is not None else endpoint_urls(config.base_url)[0])
        self._key = _Secret(api_key())
        # None: scaled with the prompt (see _timeout_for); a number: the deadline of every request
        self.timeout = options["timeout"]
        self.max_retries = options["max_retries"]
        self.retry_backoff = options["retry_backoff"]
        self._notes_lock = threading.Lock()
        self._said: set[str] = set()
        self._unsaid: list[str] = []
        self._on_wait: Callable[[str], None] | None = None
        transport = DeadlineTransport(self._base, max_connections=options["concurrency"] + 1)
        self._client = httpx.Client(transport=transport, follow_redirects=False, trust_env=False, timeout=None)

    def close_transport(self) -> None:
        """Close the client and its connections (idempotent)."""
        client = getattr(self, "_client", None)
        if client is not None:
            client.close()

    # ------------------------------------------------------------------ notices

    @property
    def on_wait(self) -> Callable[[str], None] | None:
        """Where lines for the user go (the plugin sets it): waits, and each notice once."""
        return getattr(self, "_on_wait", None)

    @on_wait.setter
    def on_wait(self, say: Callable[[str], None] | None) -> None:
        self._on_wait = say
        self._say_notices()

    def _notice(self, text: str) -> None:
        """Tell the user ``text`` once (logged now, said when the line sink is there)."""
        with self._notes_lock:
            if text in self._said:
                return
            self._said.add(text)
            self._unsaid.append(text)
        log.warning("openai engine: %s", text)

    def _say_notices(self) -> None:
        """Say the notices not said yet; call from the thread that owns the line sink."""
        say = self.on_wait
        if say is None:
            return
        with self._notes_lock:
            lines, self._unsaid = self._unsaid, []
        for line in lines:
            say(f"ruler: warning: {line}")

    # ------------------------------------------------------------------ HTTP

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
        return BASE_TIMEOUT + _TIMEOUT_PER_1K_TOKENS * prompt_tokens / 1000

    def _request(self, method: str, path: str, body: Any = None, *, base: str | None = None, seconds: float | None = None,
                 deadline: float | None = None, max_bytes: int | None = None) -> Any:
        """One request, ended by ``deadline`` (monotonic) or ``seconds`` from now; the parsed JSON answer.
        ``max_bytes``: read at most that much of the answer; a longer one is what its first bytes hold
        (an ``answer_cap.CutBody``). Without it an answer over 64 MiB is refused."""
        seconds = seconds or self._timeout_for(0)
        deadline = deadline if deadline is not None else time.monotonic() + seconds
        where = f"{method} {display_url(base or self._base)}{path}"
        status, headers, raw, whole = self._exchange(method, self._url(path, base), body, deadline, where, seconds, max_bytes)
        if status >= 300:
            detail = _error_text(raw) or f"HTTP {status}"
            raise HTTPFailure(f"{where}: HTTP {status}: {detail}", status=status, retryable=status in _RETRY_STATUS,
                              retry_after=_retry_after(headers.get("Retry-After")), detail=detail)
        if not whole:
            return partial_json(raw, len(raw))
        try:
            return json.loads(raw.decode("utf-8"))
        except (ValueError, RecursionError):
            raise HTTPFailure(f"{where}: the answer is not JSON") from None

    def _exchange(self, method: str, url: str, body: Any, deadline: float, where: str, seconds: float,
                  max_bytes: int | None = None) -> tuple[int, httpx.Headers, bytes, bool]:
        """Send, follow redirects, read the body: (status, headers, body bytes, whether the body was read whole)."""
        try:
            request = self._client.build_request(
                method, url, headers=self._headers(), content=None if body is None else json.dumps(body).encode("utf-8"),
                timeout=httpx.Timeout(seconds), extensions={"deadline": deadline},
            )
            for _ in range(_MAX_REDIRECTS + 1):
                response = self._client.send(request, stream=True)
                try:
                    if response.is_redirect and response.next_request is not None:
                        request = self._redirected(request, response.next_request)
                        continue
                    raw, whole = self._read(response, where, max_bytes)
                    return response.status_code, response.headers, raw, whole
                finally:
                    response.close()  # a body left unread closes its connection: it is never reused
        except httpx.TimeoutException:
            raise HTTPFailure(f"{where}: no complete answer within {seconds:g} s "
                              "(set --ruler-engine-option=timeout=SECONDS to wait longer)", retryable=True, timed_out=True) from None
        except (httpx.LocalProtocolError, UnicodeError, ValueError, TypeError) as exc:
            # the HTTP library refused what we send: its message may quote a header (the key)
            raise HTTPFailure(f"{where}: the request could not be sent ({type(exc).__name__}; its headers are not shown, "
                              f"they carry the API key: check {API_KEY_ENV})") from None
        except httpx.HTTPError as exc:  # refused/reset connections, a server restarting: worth retrying
            detail = shown(exc) or type(exc).__name__
            raise HTTPFailure(f"{where}: {detail}", retryable=isinstance(exc, httpx.TransportError), detail=detail) from None
        raise HTTPFailure(f"{where}: more than {_MAX_REDIRECTS} redirects")

    def _redirected(self, sent: httpx.Request, following: httpx.Request) -> httpx.Request:
        """The next request of a redirect: the key goes only where the first request went."""
        elsewhere = not _same_origin(sent.url, following.url)
        if elsewhere:
            following.headers.pop("Authorization", None)
        self._notice(
            f"the server at {self.base_url} redirected {sent.method} {display_url(sent.url)} to {display_url(following.url)}"
            + ("; that is another host or scheme, so the API key is not sent there" if elsewhere and self._key else "")
            + "; pass the address it redirects to as --ruler-base-url"
        )
        return following

    @staticmethod
    def _read(response: httpx.Response, where: str, max_bytes: int | None = None) -> tuple[bytes, bool]:
        """The body, streamed: (its bytes, True); with ``max_bytes``, a longer body's first ``max_bytes``
        bytes and False (nothing past the chunk that crossed the limit is read). Without it, a body
        over 64 MiB is an HTTPFailure."""
        limit = _MAX_ANSWER_BYTES if max_bytes is None else max_bytes
        parts, size = [], 0
        for part in response.iter_bytes():
            size += len(part)
            if size > limit:
                if max_bytes is None:
                    raise HTTPFailure(f"{where}: the answer is larger than {_MAX_ANSWER_BYTES // 2**20} MiB")
                parts.append(part[:len(part) - (size - limit)])
                return b"".join(parts), False
            parts.append(part)
        return b"".join(parts), True

    def get_json(self, path: str, base: str | None = None, *, deadline: float | None = None) -> Any:
        """GET once, no retries, within ``deadline`` (monotonic; default: ``timeout`` or 10 s from now)."""
        seconds = self.timeout or STARTUP_TIMEOUT
        return self._request("GET", path, base=base, seconds=seconds, deadline=deadline)

    def post_json(self, path: str, body: Any, *, retries: int | None = None, jitter: random.Random | None = None,
                   timeout: float | None = None, move_on_drop: bool = False, max_bytes: int | None = None) -> Any:
        """POST with retries (see the module docstring); each attempt within ``timeout`` seconds; the JSON
        answer. ``move_on_drop``: a dropped connection is raised at once, not retried here. ``max_bytes``:
        at most that much of the answer is read; a longer one comes back as an ``answer_cap.CutBody``."""
        retries = self.max_retries if retries is None else retries
        seconds = timeout or self._timeout_for(0)
        policy = _RetryPolicy(retries, self.retry_backoff, jitter or random.Random(0), window=seconds + _RETRY_WINDOW,
                              move_on_drop=move_on_drop)
        attempts = tenacity.Retrying(stop=policy.stop, wait=policy.wait, retry=tenacity.retry_if_exception(policy.worth_retrying),
                                     before_sleep=policy.before_sleep, reraise=True)
        tries = 0
        try:
            for attempt in attempts:
                tries = attempt.retry_state.attempt_number
                with attempt:
                    return self._request("POST", path, body, seconds=seconds, max_bytes=max_bytes)
        except HTTPFailure as exc:
            if tries > 1:
                exc.args = (f"{exc.args[0]} (after {tries - 1} retries)",)
            raise
        raise AssertionError("unreachable: tenacity either returns or raises")  # pragma: no cover
