"""A scripted OpenAI-compatible stub server for engine tests (stdlib only).

``StubServer(handler)`` serves on 127.0.0.1 on a free port in a daemon thread.
``handler(call)`` gets a :class:`Call` (method, path, headers, JSON body) and
returns ``(status, body)`` or ``(status, body, headers)``, or ``DROP`` (the connection
closes without an answer); ``None`` means the
default: ``/v1/models`` lists the stub's models, ``/v1/completions`` and
``/v1/chat/completions`` answer ``"ok"``. Every call is recorded in
``server.calls`` (thread-safe) so a test can count what reached the server,
and over which connection (``Call.peer``, the client's address and port).

A body given as ``bytes`` is sent as is (not JSON); an answer wrapped in
:class:`Trickle` is sent one byte at a time, status line and headers
included, the way a hostile or broken server can hold a client.

A stand-in for a remote GPU server (the scale-out bench and the endpoint tests):
``service_time`` seconds per completion, at most ``max_concurrency`` served at
once (the rest wait, as a server's ``--max-num-seqs`` makes them); ``prefix_cache``
keeps the prompts' 16-token blocks the way vLLM's automatic prefix caching does
(an LRU of ``cache_blocks`` blocks) and reports the leading blocks it already held as
``usage.prompt_tokens_details.cached_tokens``; ``kill()`` ends the server the way a
crashed process does: new connections are refused and requests in flight are dropped
without an answer (``killed_at``: the completions answered before).
"""

from __future__ import annotations

import json
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

__all__ = ["DROP", "THINKING_SHAPES", "Call", "StubServer", "Trickle", "completion", "chat_completion", "thinking_completion"]

DROP = object()  # a handler's answer: close the connection without answering (a dropped request)


@dataclass
class Call:
    method: str
    path: str
    headers: dict[str, str]
    body: Any = None
    attempt: int = 0  # how many earlier calls had the same method, path and body
    route: str = ""  # the path without its query string
    peer: tuple = ()  # the client's (address, port): one per connection

    @property
    def prompt(self) -> Any:
        return (self.body or {}).get("prompt")


@dataclass
class Trickle:
    """An answer the stub sends one byte every ``interval`` seconds."""

    status: int
    payload: Any
    interval: float = 0.05
    headers: dict = field(default_factory=dict)


def completion(text: str = "ok", *, finish_reason: str = "stop", prompt_tokens: int | None = None, completion_tokens: int = 1) -> dict:
    usage = {"completion_tokens": completion_tokens}
    if prompt_tokens is not None:
        usage["prompt_tokens"] = prompt_tokens
    return {"object": "text_completion", "choices": [{"index": 0, "text": text, "finish_reason": finish_reason}], "usage": usage}


def chat_completion(text: str = "ok", *, finish_reason: str = "stop") -> dict:
    return {
        "object": "chat.completion",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": finish_reason}],
        "usage": {"completion_tokens": 1},
    }


THINKING_SHAPES = ("reasoning", "reasoning_content", "think_in_content", "reasoning_no_content", "end_missing")


def thinking_completion(shape: str, reasoning: str, answer: str, *, chat: bool = True, finish_reason: str = "stop",
                        completion_tokens: int = 1) -> dict:
    """A thinking model's answer in one of the shapes servers give (a stand-in, not a model):

    - ``reasoning``: a parser's separate field, current vLLM's name; ``answer`` as content;
    - ``reasoning_content``: the same under older vLLM's (and other servers') name;
    - ``think_in_content``: no parser: ``<think>reasoning</think>answer`` in the content;
    - ``reasoning_no_content``: the reasoning field and content ``null`` (``answer`` unused);
    - ``end_missing``: no parser, and the model stopped inside ``<think>`` (``answer`` unused).
    """
    if shape not in THINKING_SHAPES:
        raise ValueError(f"shape must be one of {THINKING_SHAPES}, got {shape!r}")
    fields: dict[str, Any] = {}
    if shape in ("reasoning", "reasoning_content"):
        fields = {shape: reasoning, "content": answer}
    elif shape == "think_in_content":
        fields = {"content": f"<think>{reasoning}</think>{answer}"}
    elif shape == "reasoning_no_content":
        fields = {"reasoning": reasoning, "content": None}
    else:
        fields = {"content": f"<think>{reasoning}"}
    if chat:
        choice = {"index": 0, "message": {"role": "assistant", **fields}, "finish_reason": finish_reason}
    else:
        fields["text"] = fields.pop("content")
        choice = {"index": 0, **fields, "finish_reason": finish_reason}
    return {"object": "chat.completion" if chat else "text_completion", "choices": [choice],
            "usage": {"completion_tokens": completion_tokens}}


@dataclass
class StubServer:
    handler: Callable[[Call], Any] | None = None
    models: list[dict] = field(default_factory=lambda: [{"id": "stub-model", "object": "model", "max_model_len": 4096, "root": "/srv/models/stub"}])
    calls: list[Call] = field(default_factory=list)
    service_time: float = 0.0  # seconds per completion (a stand-in for a GPU server)
    max_concurrency: int | None = None  # completions served at once; the others wait
    prefix_cache: bool = False  # report cached_tokens from a block cache of the prompts seen
    cache_blocks: int = 1 << 16
    answered: int = 0  # completions answered
    killed_at: int | None = None  # completions answered when kill() was called
    record: bool = True  # keep every call in ``calls`` (a bench of thousands of calls turns it off)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._slots = threading.BoundedSemaphore(self.max_concurrency) if self.max_concurrency else None
        self._blocks: OrderedDict = OrderedDict()
        self._dead = threading.Event()
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def _serve(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw) if raw else None
                except ValueError:
                    body = None
                with stub._lock:
                    attempt = sum(1 for c in stub.calls if (c.method, c.path, c.body) == (self.command, self.path, body)) if stub.record else 0
                    call = Call(self.command, self.path, dict(self.headers.items()), body, attempt, peer=tuple(self.client_address))
                    if stub.record:
                        stub.calls.append(call)
                call.route = self.path.split("?", 1)[0]
                if stub._dead.is_set():
                    self.close_connection = True
                    return
                completion_call = call.method == "POST" and call.route in ("/v1/completions", "/v1/chat/completions")
                cached = stub._serve_time(call) if completion_call else None
                if stub._dead.is_set():  # killed while this request was in flight: no answer at all
                    self.close_connection = True
                    return
                answer = stub.handler(call) if stub.handler else None
                if answer is None:
                    answer = stub.default(call)
                if answer is DROP:  # the connection closes without an answer
                    self.close_connection = True
                    return
                if cached is not None and isinstance(answer, tuple) and isinstance(answer[1], dict):
                    usage = answer[1].setdefault("usage", {})
                    usage["prompt_tokens_details"] = {"cached_tokens": cached[0]}
                    usage.setdefault("prompt_tokens", cached[1])
                with stub._lock:
                    if stub._dead.is_set():  # killed while the handler ran: no answer (killed_at counts the others)
                        self.close_connection = True
                        return
                    stub.answered += completion_call
                if isinstance(answer, Trickle):
                    self._trickle(answer)
                    return
                status, payload, *rest = answer
                headers = rest[0] if rest else {}
                data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for k, v in headers.items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout test)
                    pass

            def _trickle(self, answer: Trickle) -> None:
                data = answer.payload if isinstance(answer.payload, bytes) else json.dumps(answer.payload).encode()
                head = [f"HTTP/1.1 {answer.status} {self.responses.get(answer.status, ('',))[0]}",
                        "Content-Type: application/json", f"Content-Length: {len(data)}",
                        *(f"{k}: {v}" for k, v in answer.headers.items())]
                raw = ("\r\n".join(head) + "\r\n\r\n").encode() + data
                self.close_connection = True
                try:
                    for i in range(len(raw)):
                        self.wfile.write(raw[i:i + 1])
                        time.sleep(answer.interval)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up: what a deadline is for
                    pass

            do_GET = do_POST = _serve

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)

    def _serve_time(self, call: Call) -> tuple[int, int] | None:
        """Hold a slot for ``service_time``; (cached tokens, prompt tokens) when ``prefix_cache``."""
        if self._slots is not None:
            self._slots.acquire()
        try:
            if self.service_time:
                self._dead.wait(self.service_time)
            return self._cache(call.prompt) if self.prefix_cache else None
        finally:
            if self._slots is not None:
                self._slots.release()

    def _cache(self, prompt: Any) -> tuple[int, int]:
        tokens = list(prompt) if isinstance(prompt, list) else list(str(prompt or "").encode())
        size, cached, parent, hit = 16, 0, 0, True
        with self._lock:
            for start in range(0, len(tokens) - size + 1, size):
                parent = hash((parent, tuple(tokens[start:start + size])))
                if hit and parent in self._blocks:
                    cached += size
                    self._blocks.move_to_end(parent)
                else:
                    hit = False
                    self._blocks[parent] = True
                    if len(self._blocks) > self.cache_blocks:
                        self._blocks.popitem(last=False)
        return cached, len(tokens)

    def kill(self) -> None:
        """End the server as a crash would: refuse new connections, drop the requests in flight."""
        with self._lock:  # an answer counted before this is sent; none after
            self.killed_at = self.answered
            self._dead.set()
        self._server.shutdown()
        self._server.server_close()

    def default(self, call: Call) -> tuple[int, Any]:
        if call.route == "/v1/models":
            return 200, {"object": "list", "data": self.models}
        if call.route == "/v1/completions":
            return 200, completion()
        if call.route == "/v1/chat/completions":
            return 200, chat_completion()
        return 404, {"error": {"message": f"no route {call.path}"}}

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def posts(self, path: str = "/v1/completions") -> list[Call]:
        with self._lock:
            return [c for c in self.calls if c.method == "POST" and c.path == path]

    def __enter__(self) -> "StubServer":
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        if not self._dead.is_set():
            self._server.shutdown()
            self._server.server_close()
