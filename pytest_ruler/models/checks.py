"""The start-up check of a model: everything knowable without loading its weights.

Both weight-loading engines (``hf``, ``vllm``) run it before any item: a folder must
hold a readable ``config.json`` and whole weights (each safetensors file exactly as
long as its header says: :func:`safetensors_damage`); a GGUF is converted once (as the
first load would) and its converted weights checked the same way; a Hub id is read
from the local cache when its config is there (else the context is unknown and the load
decides), and one neither cached nor reachable is refused at once
(:func:`~.hub.check_hub_name`). The answer is the model's own context length.

Public names: ``check_model``, ``config_context``, ``read_config``, ``safetensors_damage``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping

from ..errors import RulerUsageError
from .gguf import converted_gguf_folder
from .hub import check_hub_name
from .sources import resolve

__all__ = ["check_model", "config_context", "read_config", "safetensors_damage"]

_WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".gguf")


def config_context(cfg: Mapping[str, Any]) -> int | None:
    """The context length a transformers config declares (text models and multimodal wrappers)."""
    for source in (cfg, cfg.get("text_config") or {}):
        for key in ("max_position_embeddings", "n_positions", "max_sequence_length", "seq_length"):
            value = source.get(key)
            if isinstance(value, int) and 0 < value < 10**9:
                return value
    return None


def read_config(path: Path, model: str) -> dict[str, Any]:
    """A model's ``config.json`` as a dict; a damaged one is refused naming ``--ruler-model``."""
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


def check_model(model: str, *, revision: str | None = None) -> int | None:
    """The start-up check of ``--ruler-model`` (see the module docstring): its context length,
    None when only the load can tell (a Hub id not in the local cache)."""
    source = resolve(model, "--ruler-model", revision=revision)
    if source.kind == "hub":
        check_hub_name(model, "--ruler-model")
        try:
            from huggingface_hub import try_to_load_from_cache

            cached = try_to_load_from_cache(model, "config.json", revision=revision)
        except Exception:
            return None
        return config_context(read_config(Path(cached), model)) if isinstance(cached, str) else None
    assert source.path is not None
    if source.kind == "gguf":
        folder, _ = converted_gguf_folder(source.path, model)
        # our own conversion, damaged since (a full disk, a cut copy): say how to redo it
        _check_weights(folder, model, f"this is the converted copy of {source.path.name}: delete {folder} and run again to convert it once more")
        return config_context(read_config(folder / "config.json", model))
    path = source.path
    cfg_path = path / "config.json"
    if not cfg_path.is_file():
        raise RulerUsageError("--ruler-model", model, "this folder has no config.json, so it is not a transformers model folder; pass a folder written by save_pretrained, a .gguf file or a Hugging Face id")
    cfg = read_config(cfg_path, model)
    weights = sorted(p for p in path.iterdir() if p.is_file() and p.suffix in _WEIGHT_SUFFIXES)
    if not weights:
        raise RulerUsageError("--ruler-model", model, "this folder has a config.json but no weights (*.safetensors or *.bin); copy or save the weights into it")
    _check_weights(path, model)
    return config_context(cfg)
