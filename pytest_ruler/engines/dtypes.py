"""Which dtype a built-in engine computes in, and why, told without loading it (for the run header).

    backend + EngineConfig ──engine_dtype──► DtypeChoice(dtype, reason) | None ──dtype_line──► "ruler: dtype ..."

- ``hf``: :func:`.hf_options.dtype_choice` on the device the engine will take
  (``--ruler-device``, or CUDA when a GPU is visible).
- ``vllm`` and ``ray`` (vLLM inside Ray Data): :func:`.vllm_kwargs.dtype_choice` on the
  installed build's device; on CPU, ``auto`` follows the processor (:mod:`.processor`).
- ``openai`` (the server's dtype), ``scripted`` (no model) and engines a conftest
  registers: None, and no line.

The choices are the very functions the engines load with and key their identity on, so
the header says what runs.

Public names: ``dtype_line``, ``engine_dtype``.
"""

from __future__ import annotations

from . import gpus
from .base import EngineConfig
from .hf_options import dtype_choice as hf_choice
from .processor import DtypeChoice
from .vllm_kwargs import dtype_choice as vllm_choice

__all__ = ["dtype_line", "engine_dtype"]


def engine_dtype(backend: str, config: EngineConfig) -> DtypeChoice | None:
    """The dtype ``backend`` (resolved: not ``auto``) will compute in, and why; None when it is not ours to say."""
    if backend == "hf":
        device = config.device if config.device != "auto" else ("cuda" if gpus.gpu_visible() else "cpu")
        return hf_choice(config, device)
    if backend in ("vllm", "ray"):
        return vllm_choice(config, gpus.vllm_device())
    return None


def dtype_line(backend: str, config: EngineConfig) -> list[str]:
    """The header's line on the dtype (none for an engine whose dtype is not ours to say)."""
    choice = engine_dtype(backend, config)
    return [] if choice is None else [f"ruler: dtype {choice.dtype} ({choice.reason})"]
