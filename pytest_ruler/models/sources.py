"""What a model name means: one resolver for ``--ruler-model`` and ``--ruler-tokenizer``.

    name ──► embedded alias ──► its GGUF file (embedded.py; assembled once if need be) ─┐
         ──► a ``.gguf`` path ──────────────────────────────────────────────────────────┤ kind "gguf"
         ──► a folder (save_pretrained's, or one holding tokenizer.json / one .gguf) ─── kind "folder"
         ──► a ``tokenizer.json`` file (a tokenizer only) ───────────────────────────── kind "tokenizer_file"
         ──► else a Hugging Face Hub id (``org/name``), at a revision ────────────────── kind "hub"

A name that looks like a path but is none, or a ``.gguf`` that does not exist, is
refused here, naming the option typed, the accepted forms and the nearest embedded
alias (did you mean). Whether a Hub id can
be had is :func:`~.hub.check_hub_name`'s question, asked by the start-up check and
by the tokenizer before a load. The engines and the tokenizer ask :func:`resolve`;
what an engine loads, and the model part of its cache identity, come from
:meth:`ModelSource.identity` and :func:`weights_to_load`.

Public names: ``ModelSource``, ``resolve``, ``names_gguf``, ``folder_identity``,
``weights_to_load``.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ..errors import RulerUsageError
from .embedded import EMBEDDED_ALIASES, EmbeddedModel, embedded_gguf_path, nearest_alias

__all__ = ["ModelSource", "folder_identity", "names_gguf", "resolve", "weights_to_load"]

Kind = Literal["gguf", "folder", "tokenizer_file", "hub"]

_ALIASES = " or ".join(repr(a) for a in EMBEDDED_ALIASES)


def accepted_forms(tokenizer: bool) -> str:
    """The forms a model (or tokenizer) name may take, as the fix of a refusal."""
    if tokenizer:
        return (f"use {_ALIASES} (the embedded models), a .gguf file, a local folder with tokenizer.json, "
                "or a Hugging Face model id already in the local Hugging Face cache")
    return f"pass an existing model folder or .gguf file, a Hugging Face id, or {_ALIASES}"


@dataclass(frozen=True)
class ModelSource:
    """A resolved model name: ``kind``, the local ``path`` (None for a Hub id), the
    ``embedded`` model when the name is an alias, and the Hub ``revision`` (None: main)."""

    name: str
    kind: Kind
    path: Path | None = None
    embedded: EmbeddedModel | None = None
    revision: str | None = None

    @property
    def is_gguf(self) -> bool:
        return self.kind == "gguf"

    def identity(self) -> dict[str, Any]:
        """The model part of a cache identity, for a folder or a Hub id (a GGUF's needs its
        sha256, which its conversion records: :func:`weights_to_load`)."""
        if self.kind == "hub":
            return {"hub_id": self.name, "revision": self.revision or "main"}
        if self.kind == "folder" and self.path is not None:
            return {"folder": str(self.path.resolve()), "content": folder_identity(self.path)}
        raise ValueError(f"{self.name!r} is a {self.kind}: its identity is its converted file's sha256")


def names_gguf(name: str) -> bool:
    """Whether ``name`` names a GGUF model (an embedded alias or a ``.gguf`` path), from the name alone."""
    return name in EMBEDDED_ALIASES or name.lower().endswith(".gguf")


def resolve(name: str, parameter: str = "--ruler-model", *, revision: str | None = None, tokenizer: bool = False) -> ModelSource:
    """What ``name`` means (see the module docstring); refuses a path that does not exist.

    ``parameter`` is the option the user typed; ``tokenizer`` asks for a tokenizer (a
    ``tokenizer.json`` file is then accepted, and the fix lists a tokenizer's forms).
    An embedded alias whose package is missing is refused here, with its install command.
    """
    help_ = accepted_forms(tokenizer)
    if not isinstance(name, str) or not name.strip():
        raise RulerUsageError(parameter, name, help_)
    embedded = EMBEDDED_ALIASES.get(name)
    if embedded is not None:
        return ModelSource(name, "gguf", embedded_gguf_path(name, parameter), embedded=embedded)
    path = Path(name).expanduser()
    if path.suffix == ".gguf":
        if not path.is_file():
            raise RulerUsageError(parameter, name, f"this .gguf file does not exist; {help_}.{nearest_alias(path.stem)}")
        return ModelSource(name, "gguf", path)
    if path.is_dir():
        return ModelSource(name, "folder", path, revision=revision)
    if path.is_file():
        if tokenizer and path.name == "tokenizer.json":
            return ModelSource(name, "tokenizer_file", path)
        raise RulerUsageError(parameter, name, f"this is a file, not a model folder; {help_}")
    looks_like_path = name.startswith((".", "/", "~")) or os.sep in name.strip("/").replace("/", "", 1)
    if looks_like_path or name.count("/") > 1:
        raise RulerUsageError(parameter, name, f"no such file or folder; {help_}.{nearest_alias(path.name)}")
    return ModelSource(name, "hub", revision=revision)


def folder_identity(folder: Path) -> str:
    """A cheap content identity for a local model folder: names, sizes, mtimes of its weights."""
    parts = []
    for p in sorted(folder.glob("*")):
        if p.is_file() and p.suffix in (".safetensors", ".bin", ".json", ".gguf"):
            st = p.stat()
            parts.append(f"{p.name}:{st.st_size}:{st.st_mtime_ns}")
    return hashlib.sha256("|".join(parts).encode()).hexdigest()


def weights_to_load(source: ModelSource) -> tuple[str, dict[str, Any]]:
    """(what transformers loads, the model part of the identity): a GGUF is converted once
    (:func:`~.gguf.converted_gguf_folder`) and known by its file name and sha256."""
    if source.kind == "gguf":
        from .gguf import converted_gguf_folder

        assert source.path is not None
        folder, digest = converted_gguf_folder(source.path, source.name)
        return str(folder), {"gguf": source.path.name, "sha256": digest}
    if source.kind == "folder":
        return str(source.path), source.identity()
    return source.name, source.identity()
