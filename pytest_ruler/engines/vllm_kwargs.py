"""The vllm engine's options mapped to ``vllm.LLM``: what a config asks vLLM for (pure; no vllm import).

    EngineConfig ──llm_kwargs(config, model_path=, device=)──► the keyword arguments of ``vllm.LLM``
                 ──dtype_choice(config, device)──► DtypeChoice(dtype, reason)
                 ──unknown_options(config)──► option names the vllm engine does not know

The declarations themselves (``OPTIONS``, the CPU defaults, ``sampling_kwargs``) are the
import-light :mod:`.vllm_options`, which the registry reads at plugin import; this module reads
the options through :func:`.options.engine_options` (so it sits above the registry) and is
imported by the engines that load vLLM (:mod:`.vllm`, :mod:`.vllm_model`, :mod:`.ray_data`) and by
the run header's :mod:`.dtypes`.

The dtype: :func:`dtype_choice` (the option ``dtype``, else ``--ruler-dtype``; for
``auto`` on the CPU build, :func:`~.processor.cpu_dtype` of this processor:
bfloat16 only where it is native, float32 otherwise; on GPU vLLM's own ``auto``).
``llm_kwargs`` passes its dtype, so the identity built from it names the concrete one.

Public names: ``dtype_choice``, ``llm_kwargs``, ``unknown_options``.
"""

from __future__ import annotations

import json
from typing import Any, Mapping

from ..errors import RulerUsageError
from . import processor as cpu
from .base import EngineConfig
from .declaration import PARAMETER
from .options import engine_options, unknown_keys
from .processor import DtypeChoice, Processor
from .vllm_options import CPU_ENFORCE_EAGER, CPU_KV_CACHE_GIB, config_value, rope_key

__all__ = ["dtype_choice", "llm_kwargs", "unknown_options"]

_ROPE_KEYS = ("rope_parameters", "rope_scaling")


def _is_gguf(model: str) -> bool:
    from ..models.embedded import EMBEDDED_ALIASES  # here, not at import: reading OPTIONS stays light

    return model.lower().endswith(".gguf") or model in EMBEDDED_ALIASES


def _model_path(model: str) -> str:
    """What vLLM loads: an embedded alias becomes its GGUF file."""
    from ..models.embedded import EMBEDDED_ALIASES, embedded_gguf_path

    if model in EMBEDDED_ALIASES:
        return str(embedded_gguf_path(model))
    return model


def unknown_options(config: EngineConfig) -> list[str]:
    """Option names this engine does not know (an error with --ruler-backend=vllm, ignored with auto)."""
    return unknown_keys("vllm", config.options or {})


def _given(value: Any, fallback: Any) -> Any:
    """An option's value, or the run's setting when the option was not given."""
    return fallback if value is None else value


def dtype_choice(config: EngineConfig, device: str = "cuda", processor: Processor | None = None) -> DtypeChoice:
    """The dtype vLLM is given, and why: the option ``dtype``, else ``config.dtype``; ``auto``
    on CPU becomes :func:`~.processor.cpu_dtype` of ``processor`` (default: this machine's)."""
    option = engine_options(config, "vllm")["dtype"]
    asked_by = "--ruler-dtype" if option is None else "--ruler-engine-option=dtype"
    requested = _given(option, config.dtype) or "auto"
    if device != "cpu":
        if requested != "auto":
            return cpu.DtypeChoice(requested, f"{asked_by}={requested}")
        return cpu.DtypeChoice("auto", "auto: vLLM chooses on GPU (from the model's config)")
    return cpu.cpu_dtype(requested, processor or cpu.this_processor(), asked_by=asked_by)


def llm_kwargs(
    config: EngineConfig,
    *,
    transformers_version: str | None = None,
    model_config: Mapping[str, Any] | None = None,
    model_path: str | None = None,
    device: str = "cuda",
    processor: Processor | None = None,
) -> dict[str, Any]:
    """The keyword arguments of ``vllm.LLM`` for a config (pure; no vllm needed).

    ``model_config`` is the model's parsed ``config.json`` when it is known
    locally (see :func:`read_model_config`); it only fills a missing
    ``rope_theta`` into a RoPE override. ``model_path`` is what vLLM loads when
    the engine prepared it (a GGUF model becomes a folder that carries its own
    tokenizer, see :mod:`.vllm_model`); without it a GGUF file goes to vLLM as
    is and needs the base model's tokenizer. ``device`` is ``cpu`` for the CPU
    build of vLLM: it gets the CPU defaults of ``OPTIONS`` and, for ``auto``, the
    dtype :func:`dtype_choice` picks for ``processor`` (default: this machine's). Raises
    :class:`RulerUsageError` for a bad option, an unknown option name (when the
    back end was chosen explicitly; with ``auto`` unknown names are dropped, as
    they may be meant for the hf engine), or a direct GGUF model without a
    tokenizer.
    """
    o = engine_options(config, "vllm")
    tokenizer = _given(o["tokenizer"], config.tokenizer)
    if model_path is not None and _is_gguf(config.model):
        tokenizer = None  # the prepared folder holds the tokenizer the budget counts with
    if model_path is None and _is_gguf(config.model) and not tokenizer:
        from ..models.embedded import EMBEDDED_ALIASES

        embedded = EMBEDDED_ALIASES.get(config.model)
        hint = f" (for {embedded.alias}: {embedded.hub_id})" if embedded is not None else ""
        raise RulerUsageError(
            "--ruler-tokenizer", None,
            f"vLLM needs the base model's Hugging Face tokenizer for the GGUF model {config.model!r}: "
            f"pass --ruler-tokenizer=<HF id or local folder>{hint}, or use --ruler-backend=hf",
        )

    cpu = device == "cpu"
    if o["max_model_len"] is not None and config.max_model_len and o["max_model_len"] != config.max_model_len:
        # two limits for one engine: the context the start-up check uses would not be the one vLLM runs with
        raise RulerUsageError(PARAMETER, f"max_model_len={o['max_model_len']}",
                              f"--ruler-max-model-len={config.max_model_len} says another context length; give one of the two")
    kwargs: dict[str, Any] = {
        "model": model_path if model_path is not None else _model_path(config.model),
        "tensor_parallel_size": o["tensor_parallel_size"],
        "pipeline_parallel_size": o["pipeline_parallel_size"],
        "gpu_memory_utilization": o["gpu_memory_utilization"],
        "dtype": dtype_choice(config, device, processor).dtype,
        "seed": _given(o["seed"], config.seed),
        "trust_remote_code": bool(_given(o["trust_remote_code"], config.trust_remote_code)),
        "tokenizer": tokenizer or None,
        "max_model_len": _given(o["max_model_len"], config.max_model_len),
        "enforce_eager": _given(o["enforce_eager"], CPU_ENFORCE_EAGER if cpu else None),
        "enable_prefix_caching": o["enable_prefix_caching"],
        "kv_cache_memory_bytes": _kv_bytes(_given(o["kv_cache_gib"], CPU_KV_CACHE_GIB if cpu else None)),
        "max_num_seqs": o["max_num_seqs"],
        "max_num_batched_tokens": o["max_num_batched_tokens"],
        "quantization": o["quantization"],
        "revision": o["revision"],
        "hf_overrides": _hf_overrides(o, transformers_version, model_config),
    }
    required = ("model", "tensor_parallel_size", "pipeline_parallel_size", "gpu_memory_utilization", "dtype", "seed", "trust_remote_code")
    kwargs = {k: v for k, v in kwargs.items() if k in required or v is not None}
    extra = o["engine_args"]
    if extra:
        clash = sorted(set(extra) & set(kwargs))
        if clash:
            raise RulerUsageError(
                PARAMETER, f"engine_args={json.dumps(extra)}",
                f"{clash[0]!r} has its own option or comes from the run's settings; set it there",
            )
        kwargs.update(extra)
    return kwargs


def _kv_bytes(gib: float | None) -> int | None:
    return None if gib is None else int(gib * (1 << 30))


def _hf_overrides(o: Mapping[str, Any], transformers_version: str | None, model_config: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """``hf_overrides`` with ``rope_scaling`` merged in under the installed transformers' key."""
    overrides = dict(o["hf_overrides"] or {})
    rope = o["rope_scaling"]
    if rope is None:
        return overrides or None
    clash = [k for k in _ROPE_KEYS if k in overrides]
    if clash:
        raise RulerUsageError(
            PARAMETER, f"rope_scaling={json.dumps(rope)}",
            f"hf_overrides already sets {clash[0]!r}; give the RoPE settings in one of the two options",
        )
    key = rope_key(transformers_version)
    if key == "rope_parameters" and "rope_theta" not in rope:
        theta = config_value(model_config, "rope_theta")
        if theta is None:
            params = config_value(model_config, "rope_parameters")
            theta = params.get("rope_theta") if isinstance(params, Mapping) else None
        if theta is not None:
            rope["rope_theta"] = theta
    overrides[key] = rope
    return overrides
