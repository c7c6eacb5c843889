"""A scripted OpenAI-compatible stub server for engine tests (stdlib only).

``StubServer(handler)`` serves on 127.0.0.1 on a free port in a daemon thread.
``handler(call)`` gets a :class:`Call` (method, path, headers, JSON body) and
returns ``(status, body)`` or ``(status, body, headers)``; ``None`` means the
default: ``/v1/models`` lists the stub's models, ``/v1/completions`` and
``/v1/chat/completions`` answer ``"ok"``. Every call is recorded in
``server.calls`` (thread-safe) so a test can count what reached the server.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

__all__ = ["Call", "StubServer", "completion", "chat_completion"]


@dataclass
class Call:
    method: str
    path: str
    headers: dict[str, str]
    body: Any = None
    attempt: int = 0  # how many earlier calls had the same method, path and body
    route: str = ""  # the path without its query string

    @property
    def prompt(self) -> Any:
        return (self.body or {}).get("prompt")


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


@dataclass
class StubServer:
    handler: Callable[[Call], Any] | None = None
    models: list[dict] = field(default_factory=lambda: [{"id": "stub-model", "object": "model", "max_model_len": 4096, "root": "/srv/models/stub"}])
    calls: list[Call] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
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
                    attempt = sum(1 for c in stub.calls if (c.method, c.path, c.body) == (self.command, self.path, body))
                    call = Call(self.command, self.path, dict(self.headers.items()), body, attempt)
                    stub.calls.append(call)
                call.route = self.path.split("?", 1)[0]
                answer = stub.handler(call) if stub.handler else None
                if answer is None:
                    answer = stub.default(call)
                status, payload, *rest = answer
                headers = rest[0] if rest else {}
                data = json.dumps(payload).encode()
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

            do_GET = do_POST = _serve

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)

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
        self._server.shutdown()
        self._server.server_close()
