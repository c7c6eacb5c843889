"""Start llama-cpp-python's OpenAI-compatible server on a GGUF file, for tests.

    with llama_cpp_server(gguf_path, alias="smollm2-135m") as base_url:
        ...  # base_url = "http://127.0.0.1:<free port>/v1"

The server runs as a subprocess (``python -m llama_cpp.server``) on
127.0.0.1 and a free port; start-up waits (bounded) until ``GET /v1/models``
answers, and the process is terminated, then killed, on exit. Its output goes
to a log file whose tail is shown when start-up fails.

Install: ``pip install "llama-cpp-python[server]==0.3.36"`` (source build of
llama.cpp, several minutes on a small CPU). Also runnable by hand:
``python tests/servers/llama_cpp_server.py [GGUF | smollm2-135m | gemma3-270m]`` serves until Ctrl-C.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Iterator

__all__ = ["INSTALL", "free_port", "llama_cpp_server", "missing_modules"]

INSTALL = 'pip install "llama-cpp-python[server]==0.3.36"'  # the version .ci/run installs
# modules the server needs: llama_cpp itself and its [server] extra
_NEEDED = ("llama_cpp", "uvicorn", "fastapi", "sse_starlette", "starlette_context", "pydantic_settings")


def missing_modules() -> list[str]:
    return [m for m in _NEEDED if importlib.util.find_spec(m) is None]


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _ready(base_url: str, key: str | None = None) -> bool:
    request = urllib.request.Request(base_url + "/models", headers={"Authorization": f"Bearer {key}"} if key else {})
    try:
        with urllib.request.urlopen(request, timeout=2) as resp:
            return bool(json.loads(resp.read()).get("data"))
    except Exception:
        return False


@contextlib.contextmanager
def llama_cpp_server(
    gguf: str | os.PathLike,
    *,
    alias: str | None = None,
    n_ctx: int = 8192,
    n_threads: int | None = None,
    startup_timeout: float = 120.0,
    extra_args: tuple[str, ...] = (),
    log_path: str | os.PathLike | None = None,
    ready_key: str | None = None,
) -> Iterator[str]:
    """Serve ``gguf``; ``ready_key``: the API key the readiness check sends (with ``--api_key`` in ``extra_args``)."""
    port = free_port()
    cmd = [
        sys.executable, "-m", "llama_cpp.server",
        "--model", str(gguf),
        "--host", "127.0.0.1",
        "--port", str(port),
        "--n_ctx", str(n_ctx),
        "--n_threads", str(n_threads or max(1, os.cpu_count() or 1)),
        *(("--model_alias", alias) if alias else ()),
        *extra_args,
    ]
    base_url = f"http://127.0.0.1:{port}/v1"
    log_file = Path(log_path) if log_path else Path(tempfile.mkstemp(prefix="llama-cpp-server-", suffix=".log")[1])
    with open(log_file, "wb") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + startup_timeout
        while not _ready(base_url, ready_key):
            if proc.poll() is not None:
                raise RuntimeError(f"llama_cpp.server exited with {proc.returncode}:\n{_tail(log_file)}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"llama_cpp.server did not answer within {startup_timeout:g} s:\n{_tail(log_file)}")
            time.sleep(0.2)
        yield base_url
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)


def _tail(path: Path, n: int = 4000) -> str:
    try:
        return path.read_text(errors="replace")[-n:]
    except OSError:
        return "(no log)"


if __name__ == "__main__":  # manual use: serve an embedded model (alias) or a .gguf file until Ctrl-C
    from pytest_ruler.tasks.tokenizer import EMBEDDED_ALIASES, embedded_gguf_path

    arg = sys.argv[1] if len(sys.argv) > 1 else "smollm2-135m"
    target = embedded_gguf_path(arg) if arg in EMBEDDED_ALIASES else Path(arg)
    ctx = EMBEDDED_ALIASES[arg].context if arg in EMBEDDED_ALIASES else 8192
    with llama_cpp_server(target, alias=arg if arg in EMBEDDED_ALIASES else target.stem, n_ctx=ctx) as url:
        print(f"serving {target} at {url}", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            while True:
                time.sleep(3600)
