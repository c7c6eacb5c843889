"""Benchmark: requests/s of the openai engine's transport, before and after httpx.

Same process, same local server, same requests:

- ``pre_httpx``: the urllib transport as it was (``bench/pre_httpx_transport.py``, a
  bench-only copy from git): a new TCP connection for every request;
- ``httpx``: today's ``pytest_ruler.engines.openai_transport.OpenAITransport``: one
  httpx client per engine, a keep-alive pool, whole-request deadlines.

The server is ``CannedServer``, a small local HTTP/1.1 server (``http.server`` in a
child process, a thread per connection, keep-alive, TCP_NODELAY) that answers every
POST with one canned completion: a transport bench, not a model. Each round sends ``--requests`` POSTs
of a 1K-token-id prompt from ``--concurrency`` threads; rounds alternate between
the two transports, so a load change on the machine hits both. Reported per
concurrency: each round's requests/s, the medians, and ``ratio`` = median over
round pairs of httpx / pre_httpx (above 1: the new transport is faster).

    python bench/transport.py [--requests 400] [--rounds 5] [--concurrency 1,8]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import platform
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

CANNED = json.dumps({
    "object": "text_completion", "model": "bench-model",
    "choices": [{"index": 0, "text": " The special magic number is: 4821937.", "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 1024, "completion_tokens": 12},
}).encode()


class _CannedHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # as uvicorn (vLLM's server) does: without it, a kept-alive connection waits for the
    # client's delayed ACK between the header and body writes (about 40 ms per request)
    disable_nagle_algorithm = True

    def log_message(self, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(CANNED)))
        self.end_headers()
        self.wfile.write(CANNED)


def _serve(ports: "multiprocessing.Queue[int]") -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _CannedHandler)
    server.daemon_threads = True
    ports.put(server.server_address[1])
    server.serve_forever()


class CannedServer:
    """A local HTTP/1.1 server answering every request with ``CANNED`` (not a model), in a child
    process: sharing this process's GIL would charge every socket call of the client for the
    server's Python work."""

    def __enter__(self) -> "CannedServer":
        ports: multiprocessing.Queue[int] = multiprocessing.Queue()
        self._process = multiprocessing.Process(target=_serve, args=(ports,), daemon=True)
        self._process.start()
        self.port = ports.get(timeout=60)
        return self

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def __exit__(self, *exc: object) -> None:
        self._process.terminate()
        self._process.join(timeout=10)


def _transport(kind: str, base_url: str, concurrency: int):
    if kind == "pre_httpx":
        from pre_httpx_transport import PreHttpxTransport as cls
    else:
        from pytest_ruler.engines.openai_transport import OpenAITransport as cls
    transport = cls()
    config = SimpleNamespace(model="bench-model", base_url=base_url)
    transport.connect(config, {"timeout": 30.0, "max_retries": 0, "retry_backoff": 0.0, "concurrency": concurrency})
    return transport


def _round(kind: str, base_url: str, concurrency: int, n: int) -> float:
    """Requests/s of one round: ``n`` POSTs from ``concurrency`` threads over one transport."""
    transport = _transport(kind, base_url, concurrency)
    body = {"model": "bench-model", "prompt": list(range(1024)), "max_tokens": 16, "temperature": 0}
    try:
        transport.post_json("/completions", body)  # warm-up (the httpx pool opens its first connection)
        with ThreadPoolExecutor(max_workers=concurrency) as pool:
            started = time.perf_counter()
            answers = list(pool.map(lambda _: transport.post_json("/completions", body), range(n)))
            seconds = time.perf_counter() - started
    finally:
        transport.close_transport()
    assert all(a["choices"][0]["text"] for a in answers)
    return n / seconds


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=400)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--concurrency", default="1,8")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "transport.json"))
    ns = ap.parse_args()

    import httpx
    import tenacity

    results = []
    with CannedServer() as server:
        for concurrency in (int(c) for c in ns.concurrency.split(",")):
            rates: dict[str, list[float]] = {"pre_httpx": [], "httpx": []}
            for _ in range(ns.rounds):
                for kind in ("pre_httpx", "httpx"):
                    rates[kind].append(_round(kind, server.base_url, concurrency, ns.requests))
            pairs = [new / old for new, old in zip(rates["httpx"], rates["pre_httpx"])]
            results.append({
                "concurrency": concurrency,
                "requests_per_round": ns.requests,
                "pre_httpx_rps": [round(r, 1) for r in rates["pre_httpx"]],
                "httpx_rps": [round(r, 1) for r in rates["httpx"]],
                "pre_httpx_median_rps": round(statistics.median(rates["pre_httpx"]), 1),
                "httpx_median_rps": round(statistics.median(rates["httpx"]), 1),
                "ratio": round(statistics.median(pairs), 3),
            })
            print(json.dumps(results[-1]), flush=True)

    out = {
        "bench": "transport",
        "what": "requests/s of POST /v1/completions (1K token ids in, a canned completion out) against a local "
                "HTTP/1.1 server in a child process (CannedServer, not a model); ratio = median of per-round httpx/pre_httpx",
        "baseline": "bench/pre_httpx_transport.py (urllib, a connection per request), same process, rounds alternating",
        "python": platform.python_version(),
        "httpx": httpx.__version__,
        "tenacity": getattr(tenacity, "__version__", None),
        "machine": platform.machine(),
        "results": results,
    }
    Path(ns.out).parent.mkdir(parents=True, exist_ok=True)
    Path(ns.out).write_text(json.dumps(out, indent=2) + "\n")
    print(f"wrote {ns.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
