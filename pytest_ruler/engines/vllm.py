"""The ``vllm`` engine: offline batch generation with ``vllm.LLM`` on local GPUs.

Install with ``pip install "pytest-ruler[vllm]"`` on a machine with a CUDA GPU
(vLLM has no CPU wheel; on CPU use ``--ruler-backend=hf``). ``vllm`` is imported
only when this engine is built, never at plugin import.

Data flow::

    EngineConfig ──► llm_kwargs(config) ──► vllm.LLM(**kwargs)       (once)
    generate(requests)
        ──► check_context            over-length → recorded failure, never truncated
        ──► llm.generate([TokensPrompt(prompt_token_ids=ids) ...],
                         [SamplingParams(**sampling_kwargs(r)) ...],
                         use_tqdm=False)                  one blocking call per batch
        ──► Completion per request, on_result(i, c) in order after the batch

Prompts go in as token ids (``GenerationRequest.prompt_ids``), so what the
length budget counted is exactly what runs: vLLM does not re-tokenize, adds
no BOS and applies no template (the prompt is already chat-framed).

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
``dtype``                         ``config.dtype`` (auto)     weights/activations dtype (auto, bfloat16,
                                                              float16, float32).
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
``enforce_eager``                 vLLM's (false)              true: no CUDA graphs / torch.compile (starts
                                                              faster, decodes slower).
``enable_prefix_caching``         vLLM's (on in V1)           reuse KV cache across prompts that share a
                                                              prefix.
``max_num_seqs``                  vLLM's                      sequences scheduled together.
``max_num_batched_tokens``        vLLM's                      tokens per scheduler step (chunked prefill).
``quantization``                  from the model              e.g. ``fp8``, ``awq``, ``gptq``, ``gguf``.
``seed``                          ``config.seed``             engine seed (greedy decoding does not sample,
                                                              but vLLM seeds every worker with it).
``trust_remote_code``             ``config.trust_remote_code``  never on unless asked.
``tokenizer``                     ``config.tokenizer``        the Hugging Face tokenizer vLLM uses (needed
                                                              for a GGUF model: the base model's).
``revision``                      none                        model revision (branch, tag or commit).
``skip_special_tokens``           true                        drop special tokens from the decoded answer
                                                              (vLLM's default, like the RULER reference).
``engine_args``                   none                        JSON object of further ``vllm.EngineArgs``
                                                              (e.g. ``{"kv_cache_dtype": "fp8"}``); it is
                                                              part of identity().
================================  ==========================  ==============================================

Greedy decoding is not bit-stable across batch compositions in vLLM; set
``VLLM_BATCH_INVARIANT=1`` (beta, compute capability >= 8.0) when answers must
not depend on what else is in the batch. Its value is part of identity().

Public names: ``VLLMEngine``, ``llm_kwargs``, ``sampling_kwargs``,
``long_context_env``, ``native_max_len``, ``rope_key``, ``VLLM_OPTIONS``.
"""

from __future__ import annotations

import gc
import glob
import json
import logging
import os
import time
from dataclasses import replace
from pathlib import Path
from typing import Any, Mapping, Sequence

from ..errors import RulerUsageError
from ..tokenizer import EMBEDDED_ALIASES, Tokenizer, embedded_gguf_path, load_tokenizer
from .base import Completion, EngineConfig, GenerationRequest, ResultCallback, check_context

__all__ = [
    "INSTALL_HINT",
    "VLLMEngine",
    "VLLM_OPTIONS",
    "llm_kwargs",
    "long_context_env",
    "native_max_len",
    "read_model_config",
    "rope_key",
    "sampling_kwargs",
    "unknown_options",
]

log = logging.getLogger(__name__)

INSTALL_HINT = 'pip install "pytest-ruler[vllm]" (vLLM needs a CUDA GPU; on CPU use --ruler-backend=hf)'
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
) -> dict[str, Any]:
    """The keyword arguments of ``vllm.LLM`` for a config (pure; no vllm needed).

    ``model_config`` is the model's parsed ``config.json`` when it is known
    locally (see :func:`read_model_config`); it only fills a missing
    ``rope_theta`` into a RoPE override. Raises :class:`RulerUsageError` for a
    bad option, an unknown option name (when the back end was chosen
    explicitly; with ``auto`` unknown names are dropped, as they may be meant
    for the hf engine), or a GGUF model without a tokenizer.
    """
    options = dict(config.options or {})
    unknown = unknown_options(config)
    if unknown and config.backend == "vllm":
        raise RulerUsageError(_param(unknown[0]), options[unknown[0]], f"unknown vllm option; valid options: {', '.join(VLLM_OPTIONS)}")
    for name in unknown:  # --ruler-backend=auto: options may be meant for the other back end
        del options[name]
    config = replace(config, options=options)

    tokenizer = _opt_str(options, "tokenizer", config.tokenizer)
    if _is_gguf(config.model) and not tokenizer:
        hint = " (for smollm2-135m: HuggingFaceTB/SmolLM2-135M-Instruct)" if config.model in EMBEDDED_ALIASES else ""
        raise RulerUsageError(
            "--ruler-tokenizer", None,
            f"vLLM needs the base model's Hugging Face tokenizer for the GGUF model {config.model!r}: "
            f"pass --ruler-tokenizer=<HF id or local folder>{hint}, or use --ruler-backend=hf",
        )

    kwargs: dict[str, Any] = {
        "model": _model_path(config.model),
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
    for name in ("enforce_eager", "enable_prefix_caching"):
        flag = _opt_bool(options, name, None)
        if flag is not None:
            kwargs[name] = flag
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


def read_model_config(model: str, revision: str | None = None) -> dict[str, Any] | None:
    """The model's ``config.json`` when it is on this machine (folder or HF cache), else None.

    Never touches the network.
    """
    path = Path(model).expanduser()
    candidate: Path | None = None
    if path.is_dir():
        candidate = path / "config.json"
    elif path.suffix.lower() != ".gguf" and model.count("/") == 1 and not path.exists():
        try:
            from huggingface_hub import try_to_load_from_cache

            found = try_to_load_from_cache(model, "config.json", revision=revision)
            if isinstance(found, str):
                candidate = Path(found)
        except Exception:  # no huggingface_hub, odd cache: unknown
            return None
    if candidate is None or not candidate.is_file():
        return None
    try:
        data = json.loads(candidate.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def native_max_len(model_config: Mapping[str, Any] | None) -> int | None:
    """The model's own context limit from its config.json fields, or None if unknown."""
    found = []
    for key in _CONTEXT_KEYS:
        value = _config_value(model_config, key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            found.append(value)
    return min(found) if found else None


def long_context_env(config: EngineConfig, native: int | None) -> dict[str, str]:
    """Environment to set before building the LLM: ``VLLM_ALLOW_LONG_MAX_MODEL_LEN=1`` or nothing.

    Set only when the user explicitly asked for a ``max_model_len`` above the
    model's own limit ``native`` (or above an unknown one), unless the option
    ``allow_long_max_model_len`` is false; an existing value in the
    environment is left to the caller to respect.
    """
    options = dict(config.options or {})
    requested = _opt_int(options, "max_model_len", config.max_model_len)
    allow = _opt_bool(options, "allow_long_max_model_len", None)
    if requested is None or allow is False:
        return {}
    if allow is True or native is None or requested > native:
        return {ALLOW_LONG_ENV: "1"}
    return {}


# --------------------------------------------------------------------------- engine helpers


def _import_vllm() -> Any:
    try:
        import vllm  # noqa: PLC0415 - imported only when this engine is chosen
    except ImportError as exc:
        raise RulerUsageError("--ruler-backend", "vllm", INSTALL_HINT) from exc
    return vllm


def _cuda_device_count() -> int:
    """GPUs this process may use (honours CUDA_VISIBLE_DEVICES); 0 without CUDA."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None and visible.strip() in ("", "-1"):
        return 0
    try:
        import torch

        return int(torch.cuda.device_count()) if torch.cuda.is_available() else 0
    except Exception:  # no torch (unusual next to vllm): look at the device files
        pass
    count = len(glob.glob("/dev/nvidia[0-9]*"))
    if visible:
        count = min(count, len([v for v in visible.split(",") if v.strip()]))
    return count


def _tokens_prompt(vllm: Any) -> Any:
    cls = getattr(vllm, "TokensPrompt", None)
    if cls is None:
        try:
            from vllm.inputs import TokensPrompt as cls  # noqa: PLC0415
        except ImportError:
            cls = None
    if cls is None:  # a TypedDict: a plain dict is the same thing
        return lambda prompt_token_ids: {"prompt_token_ids": prompt_token_ids}
    return cls


def _sampling_fields(cls: Any) -> set[str] | None:
    fields = getattr(cls, "__struct_fields__", None)  # msgspec.Struct (vLLM >= 0.6)
    if fields:
        return set(fields)
    try:
        import inspect

        return set(inspect.signature(cls).parameters)
    except (TypeError, ValueError):
        return None


def _short(exc: BaseException, limit: int = 400) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    text = f"{type(exc).__name__}: {text}"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _startup_hint(exc: BaseException) -> str:
    text = str(exc).lower()
    if "max_model_len" in text or "max_position_embeddings" in text or ALLOW_LONG_ENV.lower() in text:
        return (
            "the context limit is not accepted: lower --ruler-max-model-len, or extend the context with the "
            "vllm option rope_scaling (and keep allow_long_max_model_len unset)"
        )
    if "out of memory" in text or "kv cache" in text or "memory" in text:
        return (
            "the model or its KV cache does not fit: lower max_model_len, raise gpu_memory_utilization, "
            "set max_num_seqs lower, or raise tensor_parallel_size"
        )
    if "trust_remote_code" in text:
        return "this model ships its own code: set the vllm option trust_remote_code=true if you trust it"
    return "check the model path or id, its files, and the vllm options (see pytest_ruler.engines.vllm)"


# --------------------------------------------------------------------------- the engine


class VLLMEngine:
    """Greedy completions from ``vllm.LLM`` on this machine's GPUs (see module doc)."""

    name = "vllm"

    def __init__(self, config: EngineConfig) -> None:
        self.config = config
        self._llm: Any = None
        vllm = _import_vllm()
        self._vllm = vllm
        self.vllm_version = str(getattr(vllm, "__version__", "unknown"))

        gpus = _cuda_device_count()
        if gpus < 1:
            raise RulerUsageError(
                "--ruler-backend", "vllm",
                "no CUDA GPU is visible to this process (check nvidia-smi and CUDA_VISIBLE_DEVICES); "
                "use --ruler-backend=hf on CPU, or --ruler-backend=openai with --ruler-base-url to reach "
                "a vLLM server elsewhere",
            )

        options = dict(config.options or {})
        ignored = unknown_options(config)
        if ignored and config.backend != "vllm":
            log.warning("vllm engine: ignoring options it does not know: %s (valid: %s)", ", ".join(ignored), ", ".join(VLLM_OPTIONS))
            options = {k: v for k, v in options.items() if k not in ignored}
        revision = _opt_str(options, "revision", None)
        model_config = read_model_config(config.model, revision)
        kwargs = llm_kwargs(config, model_config=model_config)
        need = kwargs["tensor_parallel_size"] * kwargs["pipeline_parallel_size"]
        if need > gpus:
            raise RulerUsageError(
                _param("tensor_parallel_size"), kwargs["tensor_parallel_size"],
                f"tensor_parallel_size × pipeline_parallel_size = {need} GPUs, but {gpus} "
                f"{'is' if gpus == 1 else 'are'} visible (CUDA_VISIBLE_DEVICES="
                f"{os.environ.get('CUDA_VISIBLE_DEVICES', '<unset>')}); lower them or give this worker more GPUs",
            )
        self._llm_kwargs = kwargs
        self._skip_special = bool(_opt_bool(options, "skip_special_tokens", True))
        self._revision = revision

        # The budget is counted with the same tokenizer vLLM decodes with.
        self.tokenizer: Tokenizer = load_tokenizer(
            kwargs.get("tokenizer") or config.model, trust_remote_code=kwargs["trust_remote_code"]
        )

        native = native_max_len(model_config)
        for key, value in long_context_env(config, native).items():
            if key in os.environ:
                log.info("vllm engine: %s=%s is already set in the environment; leaving it", key, os.environ[key])
                continue
            os.environ[key] = value
            log.warning(
                "vllm engine: max_model_len=%s was asked for, above the model's own limit (%s); "
                "setting %s=%s so vLLM accepts it (answers past the trained context may be unreliable "
                "without rope_scaling)",
                kwargs.get("max_model_len"), native if native is not None else "unknown", key, value,
            )
        self._multiproc_method()

        t0 = time.perf_counter()
        try:
            self._llm = vllm.LLM(**kwargs)
        except RulerUsageError:
            raise
        except Exception as exc:
            raise RulerUsageError("--ruler-model", config.model, f"vLLM could not start it ({_short(exc)}); {_startup_hint(exc)}") from exc
        self.load_seconds = time.perf_counter() - t0

        self.model_config = self._model_config()
        self.max_context: int = self._resolve_max_context()
        self._SamplingParams = vllm.SamplingParams
        self._sampling_fields = _sampling_fields(vllm.SamplingParams)
        self._TokensPrompt = _tokens_prompt(vllm)
        log.info(
            "vllm engine: %s loaded in %.1f s (vLLM %s, max_context %d, TP %d, PP %d)",
            config.model, self.load_seconds, self.vllm_version, self.max_context,
            kwargs["tensor_parallel_size"], kwargs["pipeline_parallel_size"],
        )

    # ------------------------------------------------------------------ set-up

    @staticmethod
    def _multiproc_method() -> None:
        """vLLM's workers cannot fork from a process where CUDA is initialised."""
        try:
            import torch

            initialised = bool(torch.cuda.is_initialized())
        except Exception:
            return
        if initialised and "VLLM_WORKER_MULTIPROC_METHOD" not in os.environ:
            os.environ["VLLM_WORKER_MULTIPROC_METHOD"] = "spawn"
            log.info("vllm engine: CUDA is already initialised here; VLLM_WORKER_MULTIPROC_METHOD=spawn")

    def _model_config(self) -> Any:
        llm = self._llm
        for getter in (
            lambda: llm.model_config,  # vLLM >= 0.11: LLM.model_config
            lambda: llm.llm_engine.model_config,  # V1 LLMEngine (and V0)
            lambda: llm.llm_engine.get_model_config(),  # older V0
        ):
            try:
                value = getter()
            except Exception:
                continue
            if value is not None:
                return value
        return None

    def _resolve_max_context(self) -> int:
        value = getattr(self.model_config, "max_model_len", None)
        if value is None:
            value = self._llm_kwargs.get("max_model_len")
        if value is None:
            raise RulerUsageError(
                "--ruler-max-model-len", None,
                "vLLM did not report the model's context length; pass it with --ruler-max-model-len=N",
            )
        return int(value)

    def _sampling_params(self, request: GenerationRequest) -> Any:
        kwargs = sampling_kwargs(request, seed=self._llm_kwargs.get("seed"), skip_special_tokens=self._skip_special)
        if self._sampling_fields is not None:
            kwargs = {k: v for k, v in kwargs.items() if k in self._sampling_fields}
        return self._SamplingParams(**kwargs)

    # ------------------------------------------------------------------ generation

    def generate(self, requests: Sequence[GenerationRequest], on_result: ResultCallback | None = None) -> list[Completion]:
        """Greedy completions in request order; one ``LLM.generate`` call for the batch.

        Over-length prompts are answered without calling vLLM. An exception
        from vLLM becomes a ``finish_reason="error"`` completion for each
        request it hit (a rejected input is retried alone, so one bad prompt
        does not fail its neighbours). ``on_result`` is called for every
        request, in order, once the batch is done.
        """
        if self._llm is None:
            raise RuntimeError("this vllm engine is closed")
        requests = list(requests)
        results: list[Completion | None] = [None] * len(requests)
        run, refused = check_context(requests, self.max_context)
        for i, completion in refused.items():
            results[i] = completion
        empty = [i for i in run if not requests[i].prompt_ids]
        for i in empty:
            results[i] = Completion("", 0, 0, "error", error="empty prompt (no token ids)")
        run = [i for i in run if requests[i].prompt_ids]
        if run:
            for i, completion in zip(run, self._run(requests, run)):
                results[i] = completion
        done = [c for c in results if c is not None]
        assert len(done) == len(requests)
        if on_result is not None:
            for i, completion in enumerate(done):
                on_result(i, completion)
        return done

    def _run(self, requests: list[GenerationRequest], run: list[int]) -> list[Completion]:
        t0 = time.perf_counter()
        try:
            outputs = self._call(requests, run)
        except (ValueError, TypeError) as exc:
            if len(run) == 1:
                return [self._error(requests[run[0]], exc, time.perf_counter() - t0)]
            log.warning("vllm engine: the batch was rejected (%s); retrying its %d requests one by one", _short(exc), len(run))
            return [c for i in run for c in self._run(requests, [i])]
        except Exception as exc:
            per = (time.perf_counter() - t0) / len(run)
            log.error("vllm engine: generate failed for a batch of %d: %s", len(run), _short(exc))
            return [self._error(requests[i], exc, per) for i in run]
        per = (time.perf_counter() - t0) / len(run)
        if len(outputs) != len(run):
            exc = RuntimeError(f"vLLM returned {len(outputs)} outputs for {len(run)} prompts")
            return [self._error(requests[i], exc, per) for i in run]
        return [self._completion(requests[i], out, per) for i, out in zip(run, outputs)]

    def _call(self, requests: list[GenerationRequest], run: list[int]) -> list[Any]:
        prompts = [self._TokensPrompt(prompt_token_ids=list(requests[i].prompt_ids)) for i in run]
        params = [self._sampling_params(requests[i]) for i in run]
        return list(self._llm.generate(prompts, params, use_tqdm=False))

    @staticmethod
    def _error(request: GenerationRequest, exc: BaseException, seconds: float) -> Completion:
        return Completion(
            text="", prompt_tokens=request.prompt_tokens, completion_tokens=0,
            finish_reason="error", seconds=seconds, error=f"vllm: {_short(exc)}",
        )

    def _completion(self, request: GenerationRequest, output: Any, seconds: float) -> Completion:
        choices = getattr(output, "outputs", None) or []
        prompt_ids = getattr(output, "prompt_token_ids", None)
        prompt_tokens = len(prompt_ids) if prompt_ids is not None else request.prompt_tokens
        if not choices:
            return Completion("", prompt_tokens, 0, "error", seconds, error="vllm returned no completion")
        out = choices[0]
        token_ids = list(getattr(out, "token_ids", None) or [])
        text = getattr(out, "text", None)
        if text is None:  # detokenize switched off somewhere: decode ourselves
            text = self.tokenizer.decode(token_ids)
        reason = getattr(out, "finish_reason", None)
        if reason in ("stop", "length"):
            return Completion(text, prompt_tokens, len(token_ids), reason, seconds)
        return Completion(text, prompt_tokens, len(token_ids), "error", seconds, error=f"vllm finished with reason {reason!r}")

    # ------------------------------------------------------------------ identity, life cycle

    def identity(self) -> Mapping[str, Any]:
        kw = self._llm_kwargs
        dtype = getattr(self.model_config, "dtype", None)
        ident: dict[str, Any] = {
            "engine": "vllm",
            "model": self.config.model,
            "vllm_version": self.vllm_version,
            "dtype": str(dtype).replace("torch.", "") if dtype is not None else kw.get("dtype"),
            "max_model_len": self.max_context,
            "hf_overrides": kw.get("hf_overrides"),
            "quantization": getattr(self.model_config, "quantization", None) or kw.get("quantization"),
            "tensor_parallel_size": kw["tensor_parallel_size"],
            "pipeline_parallel_size": kw["pipeline_parallel_size"],
            "skip_special_tokens": self._skip_special,
            "batch_invariant": os.environ.get(BATCH_INVARIANT_ENV),
        }
        if self._revision:
            ident["revision"] = self._revision
        if kw.get("tokenizer"):
            ident["tokenizer"] = kw["tokenizer"]
        extra = {k: v for k, v in kw.items() if k not in _KNOWN_KWARGS}
        if extra:
            ident["engine_args"] = extra
        return json.loads(json.dumps(ident, default=str))

    def close(self) -> None:
        """Shut vLLM down and give its GPU memory back (idempotent)."""
        llm, self._llm = self._llm, None
        if llm is None:
            return
        engine = getattr(llm, "llm_engine", None)
        core = getattr(engine, "engine_core", None)  # V1: the EngineCore process client
        shutdown = getattr(core, "shutdown", None)
        if callable(shutdown):
            try:
                shutdown()
            except Exception as exc:  # pragma: no cover - depends on vLLM internals
                log.debug("vllm engine: engine_core.shutdown failed: %s", exc)
        del engine, core, shutdown, llm
        gc.collect()
        try:
            from vllm.distributed import destroy_distributed_environment, destroy_model_parallel  # noqa: PLC0415

            destroy_model_parallel()
            destroy_distributed_environment()
        except Exception as exc:  # missing helpers or nothing to destroy
            log.debug("vllm engine: distributed cleanup skipped: %s", exc)
        try:
            import torch

            if torch.distributed.is_available() and torch.distributed.is_initialized():
                torch.distributed.destroy_process_group()
            gc.collect()
            if torch.cuda.is_available():
                torch.cuda.empty_cache()
        except Exception as exc:  # pragma: no cover - depends on the install
            log.debug("vllm engine: torch cleanup skipped: %s", exc)

    def __enter__(self) -> "VLLMEngine":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._llm is None else f"max_context={getattr(self, 'max_context', '?')}"
        return f"VLLMEngine(model={self.config.model!r}, vllm={self.vllm_version}, {state})"


# LLM kwargs built from named options; anything else came in through engine_args
_KNOWN_KWARGS = frozenset(
    {
        "model", "tokenizer", "tensor_parallel_size", "pipeline_parallel_size", "gpu_memory_utilization",
        "dtype", "seed", "trust_remote_code", "max_model_len", "enforce_eager", "enable_prefix_caching",
        "max_num_seqs", "max_num_batched_tokens", "quantization", "revision", "hf_overrides",
    }
)
