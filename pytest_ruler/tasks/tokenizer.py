"""Tokenizers: load by name, count exactly, count pieces cheaply.

The length budget of RULER is counted with the evaluated model's own tokenizer,
without a BOS token. This module turns a user-facing name into a
:class:`Tokenizer` that does exactly that, fast. What the name means is the
model-source part's answer (:func:`pytest_ruler.models.sources.resolve`):

    name ──► models.resolve (alias | .gguf file | folder | tokenizer.json | HF id)
               │ gguf: models.gguf.gguf_tokenizer_files (tokenizer.json, converted once)
               ▼
             tokenizers.Tokenizer ──► count(text) / encode(text)
                                      count_pieces(texts)  (memoised)

Public names:

- ``load_tokenizer(name, *, trust_remote_code=False) -> Tokenizer``
- ``Tokenizer``: ``name``, ``encode``, ``count``, ``count_pieces``,
  ``chat_template``, ``bos_token``, ``eos_token``, ``source``
- re-exported from :mod:`pytest_ruler.models` for older imports: ``EMBEDDED_ALIASES``,
  ``EmbeddedModel``, ``embedded_gguf_path``, ``check_hub_name``, ``hub_cached``,
  ``hub_offline``, ``nearest_alias``, and ``cache_root`` (:mod:`pytest_ruler.folders`)

Why a cache: converting the GGUF vocabulary of the embedded model through
transformers takes ~7 s on two cores (~30 s for Gemma 3's 262K vocabulary). The
converted fast tokenizer is saved once as ``tokenizer.json`` (:mod:`pytest_ruler.models.gguf`)
and later runs load it through the Rust ``tokenizers`` library in a fraction of a
second, without importing transformers at all. Importing this module loads the
model-source part and nothing of the task families.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable, Sequence

from ..errors import RulerUsageError
from ..folders import cache_root
from ..models.embedded import EMBEDDED_ALIASES, EmbeddedModel, embedded_gguf_path, nearest_alias
from ..models.gguf import gguf_tokenizer_files, special_token
from ..models.hub import check_hub_name, hub_cached, hub_offline
from ..models.sources import accepted_forms, resolve

__all__ = [
    "EMBEDDED_ALIASES",
    "EmbeddedModel",
    "Tokenizer",
    "cache_root",
    "check_hub_name",
    "embedded_gguf_path",
    "hub_cached",
    "hub_offline",
    "load_tokenizer",
    "nearest_alias",
]

# Pieces shaped like a byte-level BPE pre-tokenizer's: a word, a digit run or a
# punctuation run with its leading space, or whitespace.
_RUNS = re.compile(r" ?[^\W\d_]+| ?\d+| ?[^\s\w]+|_+|\s+")


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


def _load_gguf(name: str, gguf: Path) -> Tokenizer:
    tok_json, meta = gguf_tokenizer_files(gguf, name)
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


def _load_hf(name: str, ident: str, trust_remote_code: bool, *, hub: bool = False) -> Tokenizer:
    if hub:
        check_hub_name(ident, "tokenizer")
    try:
        from transformers import AutoTokenizer
    except ImportError as exc:  # pragma: no cover - depends on install
        raise RulerUsageError("tokenizer", name, 'loading Hugging Face tokenizers needs transformers: pip install "pytest-ruler[hf]"') from exc
    try:
        hf = AutoTokenizer.from_pretrained(ident, trust_remote_code=trust_remote_code)
    except Exception as exc:
        raise RulerUsageError("tokenizer", name, f"{accepted_forms(tokenizer=True)} (loading failed: {type(exc).__name__}).{nearest_alias(name)}") from exc
    if not getattr(hf, "is_fast", False):
        raise RulerUsageError("tokenizer", name, "this tokenizer has no fast (Rust) form; convert it or pass a tokenizer.json folder")
    meta = {
        "chat_template": hf.chat_template,
        "bos_token": special_token(hf, "bos_token"),
        "eos_token": special_token(hf, "eos_token"),
    }
    backend = hf.backend_tokenizer
    backend.no_truncation()
    backend.no_padding()
    return Tokenizer(name=name, backend=backend, source=ident, **meta)


@lru_cache(maxsize=8)
def load_tokenizer(name: str, *, trust_remote_code: bool = False) -> Tokenizer:
    """Load a tokenizer by alias, .gguf path, folder, tokenizer.json or Hugging Face id.

    Raises :class:`RulerUsageError` (parameter ``tokenizer``) when the name
    cannot be resolved, with the accepted forms as the fix.
    """
    source = resolve(name, "tokenizer", tokenizer=True)
    if source.kind == "gguf":
        assert source.path is not None
        return _load_gguf(name, source.path)
    if source.kind == "folder":
        assert source.path is not None
        return _load_folder(name, source.path)
    if source.kind == "tokenizer_file":
        assert source.path is not None
        return _from_tokenizer_json(name, source.path, {}, source=str(source.path))
    return _load_hf(name, name, trust_remote_code, hub=True)
