"""GGUF files, converted once into the cache: their weights, and their tokenizer.

transformers reads a GGUF file by de-quantizing it, which is slow (~20 s for the
embedded model's weights on two cores, ~7 s for its vocabulary, ~30 s for Gemma 3's
262K one), so each is done once and kept under :func:`~pytest_ruler.folders.cache_root`,
keyed by the file's path, size and mtime (:func:`gguf_key`):

    models/<key>/       an fp32 safetensors folder (:func:`converted_gguf_folder`),
                        its ``ruler-meta.json`` recording the GGUF's sha256
    tokenizers/<key>/   ``tokenizer.json`` and ``meta.json`` (chat template, BOS, EOS)
                        (:func:`gguf_tokenizer_files`): later runs load it through the
                        Rust ``tokenizers`` library without importing transformers

Each conversion says on the ``pytest_ruler`` logger (WARNING) what it does, once,
and how long it took. Writes go to a temporary name first, then are renamed, so a
crash or a second worker never leaves half a folder.
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
from typing import Any

from ..errors import RulerUsageError
from ..folders import cache_root
from .embedded import EMBEDDED_ALIASES

__all__ = ["converted_gguf_folder", "file_sha256", "gguf_key", "gguf_tokenizer_files", "special_token"]

log = logging.getLogger("pytest_ruler")


def gguf_key(gguf: Path) -> str:
    """The cache key of a GGUF file: its resolved path, size and mtime (cheap; no read)."""
    st = gguf.stat()
    return hashlib.sha256(f"{gguf.resolve()}|{st.st_size}|{st.st_mtime_ns}".encode()).hexdigest()[:16]


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def converted_gguf_folder(gguf: Path, name: str | None = None) -> tuple[Path, str]:
    """An fp32 safetensors copy of a GGUF model (made once), and the GGUF's sha256.

    transformers refuses ``save_pretrained`` on a GGUF-loaded model, so the
    conversion rebuilds it from its config and loads the state dict (all keys must
    match). ``name`` is the model as the user named it (for the messages).
    """
    folder = cache_root() / "models" / gguf_key(gguf)
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
    plain.load_state_dict(quantized.state_dict(), strict=True)
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=folder.parent, prefix=folder.name + ".tmp"))
    try:
        plain.save_pretrained(tmp)
        quantized.generation_config.save_pretrained(tmp)
        (tmp / "ruler-meta.json").write_text(json.dumps({"gguf": str(gguf), "sha256": file_sha256(gguf)}))
        try:
            os.replace(tmp, folder)
        except OSError:  # another worker finished first: use theirs
            shutil.rmtree(tmp, ignore_errors=True)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    log.warning("ruler: converted %s in %.1fs; later runs load the folder directly", what, time.perf_counter() - started)
    return folder, json.loads(meta_path.read_text())["sha256"]


def _write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)
    os.replace(tmp, path)


def special_token(tok: Any, attr: str) -> str | None:
    """A transformers tokenizer's special token ``attr`` (``bos_token``, ...) as text, or None."""
    value = getattr(tok, attr, None)
    return str(value) if value is not None else None


def gguf_tokenizer_files(gguf: Path, name: str) -> tuple[Path, dict[str, Any]]:
    """The GGUF's tokenizer as a ``tokenizer.json`` (converted once) and its meta
    (``chat_template``, ``bos_token``, ``eos_token``). Errors name ``tokenizer``: a GGUF
    without a (fast) tokenizer is fixed with ``--ruler-tokenizer``."""
    cache = cache_root() / "tokenizers" / gguf_key(gguf)
    tok_json, meta_json = cache / "tokenizer.json", cache / "meta.json"
    if not (tok_json.is_file() and meta_json.is_file()):
        log.warning("ruler: reading the tokenizer of %s from its GGUF file into %s, once", name, cache)
        started = time.perf_counter()
        try:
            from transformers import AutoTokenizer
        except ImportError as exc:  # pragma: no cover - depends on install
            raise RulerUsageError(
                "tokenizer", name, 'reading a GGUF tokenizer needs transformers and gguf: pip install "pytest-ruler[hf]"'
            ) from exc
        try:
            hf = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
        except Exception as exc:
            raise RulerUsageError(
                "tokenizer", str(gguf), f"could not read a tokenizer from this GGUF file ({exc}); "
                "pass the base model's tokenizer with --ruler-tokenizer"
            ) from exc
        if not getattr(hf, "is_fast", False):
            raise RulerUsageError("tokenizer", str(gguf), "the GGUF tokenizer has no fast (Rust) form; pass --ruler-tokenizer")
        meta = {
            "chat_template": hf.chat_template,
            "bos_token": special_token(hf, "bos_token"),
            "eos_token": special_token(hf, "eos_token"),
            "gguf": str(gguf),
        }
        _write_atomic(tok_json, hf.backend_tokenizer.to_str())
        _write_atomic(meta_json, json.dumps(meta))
        log.warning("ruler: read the tokenizer of %s in %.1fs; later runs load it directly", name, time.perf_counter() - started)
    return tok_json, json.loads(meta_json.read_text(encoding="utf-8"))
