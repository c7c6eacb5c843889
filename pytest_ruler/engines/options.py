"""Engine options: one typed declaration per engine, coerced once at start-up.

``--ruler-engine-option KEY=VALUE`` values arrive as strings (ini files) or
JSON-parsed (the command line) in ``EngineConfig.options``. Each engine
declares what it reads as a tuple of :class:`EngineOption`; the values are
converted to the declared kinds and range-checked here, in one place.

Data flow::

    ini / argv ──► plugin.config.build_config ──► coerce_engine_options(backend, raw)
                                              (typed dict, or RulerUsageError)
               ──► EngineConfig.options ──► engine: engine_options(config, name)
                                              (coerces again: a no-op on typed
                                              values; declared defaults filled in)

The declaration type and the coercion against a tuple of declarations live in
:mod:`.declaration` (below the registry); this module looks them up by engine name
through the registry, and re-exports :class:`EngineOption`. Each engine's declarations
are on its registry entry (:mod:`.registry`); those of the
built-in engines live in import-light modules (``hf_options``, ``vllm_options``,
``openai_options``, ``scripted_options``: no torch, vllm, transformers or HTTP client
is imported to read them). A third-party engine registered with
``register_engine(name, factory)`` declares its own with
``factory.options = (EngineOption(...), ...)``; without one its options pass
through unchecked.

The kinds of an option: see :mod:`.declaration`.

Secrets: the raw values are handed to :func:`pytest_ruler.secrets.remember` (a value
under a credential-like name, at any depth, or of a known key shape is then masked
wherever it shows up: a server's echo, the terminal, JUnit, reports); an error shows a
bad value as the typed-text rule leaves it, and an unknown option's value not at all.

Public names: ``EngineOption`` (from :mod:`.declaration`), ``declared_options``, ``coerce_engine_options``,
``cli_options``, ``engine_options``, ``unknown_keys``.
"""

from __future__ import annotations

from typing import Any, Mapping

from .declaration import KINDS, PARAMETER, EngineOption, coerce_declared, read_declared, unknown_in
from .registry import BUILTIN_ENGINES, entry

__all__ = ["KINDS", "PARAMETER", "EngineOption", "cli_options", "coerce_engine_options", "declared_options", "engine_options",
           "unknown_keys"]


def declared_options(backend: str) -> dict[str, EngineOption] | None:
    """The options ``backend`` declares, by key; None when it declares none (pass through)."""
    declared = entry(backend).options
    return None if declared is None else {o.key: o for o in declared}


def coerce_engine_options(backend: str, raw: Mapping[str, Any], *, drop_unknown: bool = False) -> dict[str, Any]:
    """``raw`` with every value converted to its declared kind and range-checked.

    ``backend`` is a resolved engine name. An unknown key raises
    :class:`RulerUsageError` naming it and the known keys (never its value), unless ``drop_unknown``
    (``--ruler-backend=auto``: one ini file may hold options for hf and vllm).
    Idempotent: coercing typed values returns equal values.
    """
    return coerce_declared(backend, declared_options(backend), raw, drop_unknown=drop_unknown)


def cli_options() -> list[EngineOption]:
    """Every built-in declaration with a top-level pytest option (``--ruler-<cli>``)."""
    return [o for e in BUILTIN_ENGINES.values() for o in (e.options or ()) if o.cli]


def unknown_keys(backend: str, raw: Mapping[str, Any]) -> list[str]:
    """Keys of ``raw`` that ``backend`` does not declare (none when it declares nothing)."""
    return unknown_in(declared_options(backend), raw)


def engine_options(config: Any, backend: str) -> dict[str, Any]:
    """What an engine reads: ``config.options`` coerced for ``backend``, every declared
    key present (its declared default when absent).

    Unknown keys are an error when the config names this engine; with
    ``auto`` (or another name) they are dropped, as they may be meant for
    another engine. Keys set by another engine's top-level flag (e.g.
    ``--ruler-tensor-parallel-size`` with ``--ruler-backend=hf``) are dropped
    too: the user named no option of this engine.
    """
    return read_declared(declared_options(backend), config, backend, foreign=[o.key for o in cli_options()])
