"""Engines by name: one entry per engine, carrying its factory and its option declarations.

Data flow::

    the built-in entries (hf, vllm, openai, ray, scripted) ─┐
    register_engine(name, factory)  (a conftest)      ─┴─► one EngineEntry per name
    resolve_backend(name) ──► a concrete name (auto: vllm where it runs here, else hf)
    entry(name) ──► EngineEntry
        .options        its declared --ruler-engine-option keys (None: passed through unchecked)
        .factory()      the engine class (or callable), imported on first use
        .describe(config), .preflight(config), .context_length(config, reported, tokenizer=)
                        the :class:`~.base.EngineBase` members; a factory that does not derive
                        from it keeps its own where it has them and gets the defaults otherwise
        .class_name()   ``module.qualname`` of the factory (the engine class, or the callable)
    load_engine(config) ──► entry(resolve_backend(config.backend)).factory()(config)
    engine_identity(config, loaded=) ──► {"backend": the concrete name, "class": .class_name(),
        "engine": .describe(config), else loaded().identity() (None: not loaded)}: the cache identity
        (run.cache.prediction_key) and the report's ``engine`` (results.identity.engine_record).
        The name and class are part of it, so an engine registered under another name, or a
        subclass that inherits its parent's ``identity()``, never gets its parent's answers.

``auto`` is vllm when it is importable and can run here (a GPU is visible, or the
installed vLLM is the CPU build, measured faster than hf on CPU: see bench/engines.py
and the README), else hf (asked of :mod:`.gpus`, which reads package metadata and device
files). Importing this module reads the built-in declarations (import-light modules over
:mod:`.declaration`; the registry never imports :mod:`.options`, which looks declarations up
through it) and imports no engine, torch, transformers or vllm.

Public names: ``EngineEntry``, ``BUILTIN_ENGINES``, ``register_engine``,
``unregister_engine``, ``engine_names``, ``entry``, ``resolve_backend``,
``describe_engine``, ``engine_identity``, ``load_engine``.
"""

from __future__ import annotations

import importlib
import importlib.util
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Callable, Mapping

from ..errors import RulerUsageError
from . import gpus, hf_options, openai_options, ray_options, scripted_options, vllm_options
from .base import EngineBase, EngineConfig
from .context import ContextLength, resolve_context
from .declaration import EngineOption

__all__ = ["BUILTIN_ENGINES", "EngineEntry", "describe_engine", "engine_identity", "engine_names", "entry", "load_engine",
           "register_engine", "resolve_backend", "unregister_engine"]


@dataclass(frozen=True)
class EngineEntry:
    """One engine: its name, how to build it, and the options it reads."""

    name: str
    load: str | Callable[[EngineConfig], Any]  # "module:attribute", imported on first use, or the factory itself
    options: tuple[EngineOption, ...] | None = None  # None: the engine declares none; its options pass through
    builtin: bool = False

    def factory(self) -> Callable[[EngineConfig], Any]:
        if callable(self.load):
            return self.load
        module, attribute = self.load.split(":")
        return getattr(importlib.import_module(module), attribute)

    def _base(self) -> type[EngineBase] | None:
        factory = self.factory()
        return factory if isinstance(factory, type) and issubclass(factory, EngineBase) else None

    def _own(self, member: str) -> Callable[..., Any] | None:
        """A factory outside EngineBase may still bring a member of that name (duck-typed)."""
        found = getattr(self.factory(), member, None)
        return found if callable(found) else None

    def class_name(self) -> str:
        """``module.qualname`` of the factory: the engine class, or the callable that builds it."""
        factory = self.factory()
        named = factory if hasattr(factory, "__qualname__") else type(factory)
        return f"{getattr(named, '__module__', None) or '?'}.{named.__qualname__}"

    def describe(self, config: EngineConfig) -> Mapping[str, Any] | None:
        """What the engine says of itself without building it, when it can tell (else None)."""
        base = self._base()
        own = base.describe if base is not None else self._own("describe")
        return own(config) if own is not None else None

    def preflight(self, config: EngineConfig) -> int | None:
        """The engine's start-up check without loading a model: the context it reports, or None."""
        base = self._base()
        own = base.preflight if base is not None else self._own("preflight")
        return own(config) if own is not None else None

    def context_length(self, config: EngineConfig, reported: Any = None, *, tokenizer: Any = None) -> ContextLength:
        """The context by the one resolver (:mod:`.context`), with the engine's declared fallbacks."""
        base = self._base()
        if base is not None:
            return base.context_length(config, reported, tokenizer=tokenizer)
        return resolve_context(config.max_model_len, reported, reported_by=f"the {self.name} engine's preflight")


def _builtin(name: str, load: str, options: tuple[EngineOption, ...]) -> EngineEntry:
    return EngineEntry(name, load, options, builtin=True)


BUILTIN_ENGINES: "MappingProxyType[str, EngineEntry]" = MappingProxyType({
    "hf": _builtin("hf", "pytest_ruler.engines.hf:HFEngine", hf_options.OPTIONS),
    "vllm": _builtin("vllm", "pytest_ruler.engines.vllm:VLLMEngine", vllm_options.OPTIONS),
    "openai": _builtin("openai", "pytest_ruler.engines.openai:OpenAIEngine", openai_options.OPTIONS),
    # vLLM inside Ray Data (ray.data.llm): an engine call's prompts as a Ray dataset (engines.ray_data)
    "ray": _builtin("ray", "pytest_ruler.engines.ray_data:RayDataEngine", ray_options.OPTIONS),
    # answers by rule from the prompt: for testing the plugin's plumbing only
    "scripted": _builtin("scripted", "pytest_ruler.engines.scripted:ScriptedEngine", scripted_options.OPTIONS),
})
_REGISTERED: dict[str, EngineEntry] = {}


def _declared(name: str, factory: Any) -> tuple[EngineOption, ...] | None:
    """A third-party factory's ``options`` (EngineOption objects), or None when it declares none."""
    declared = getattr(factory, "options", None)
    if not isinstance(declared, (tuple, list)):
        return None  # none declared (or an unrelated attribute of that name)
    for option in declared:
        if not isinstance(option, EngineOption):
            raise RulerUsageError(
                "--ruler-backend", name,
                f"the engine's options must be EngineOption objects (got {type(option).__name__}); "
                "declare them with pytest_ruler.engines.options.EngineOption",
            )
    return tuple(declared)


def register_engine(name: str, factory: Callable[[EngineConfig], Any]) -> EngineEntry:
    """Make ``--ruler-backend=name`` build ``factory(config)``; its ``options`` (if any) are its declarations.

    Re-registering a name replaces it (conftests run once per process). A declaration that
    is not made of EngineOption objects is refused when the engine is chosen.
    """
    if name in BUILTIN_ENGINES or name == "auto":
        raise RulerUsageError("engine name", name, "is built in; register the custom engine under another name")
    found = EngineEntry(name, factory)
    _REGISTERED[name] = found
    return found


def unregister_engine(name: str) -> None:
    """Forget a registered engine (tests); a built-in one cannot be removed."""
    _REGISTERED.pop(name, None)


def engine_names() -> list[str]:
    return ["auto", *BUILTIN_ENGINES, *sorted(_REGISTERED)]


def entry(backend: str) -> EngineEntry:
    """The entry of a concrete engine name (see :func:`resolve_backend` for ``auto``)."""
    found = BUILTIN_ENGINES.get(backend) or _REGISTERED.get(backend)
    if found is None:
        raise RulerUsageError("--ruler-backend", backend, f"choose one of {', '.join(engine_names())}")
    if not found.builtin and found.options is None:
        options = _declared(backend, found.factory())
        if options is not None:
            return EngineEntry(found.name, found.load, options)
    return found


def _vllm_runs_here() -> bool:
    """vLLM is installed and has a device: a visible GPU, or it is the CPU build (no import)."""
    if importlib.util.find_spec("vllm") is None:
        return False
    return gpus.vllm_device() == "cpu" or gpus.gpu_visible()


def resolve_backend(backend: str) -> str:
    """The concrete back end for a name; ``auto`` is vllm where it runs, else hf."""
    if backend == "auto":
        return "vllm" if _vllm_runs_here() else "hf"
    entry(backend)  # an unknown name is refused here, before anything loads
    return backend


def describe_engine(config: EngineConfig) -> Mapping[str, Any] | None:
    """What the engine says of itself without loading it, when its factory can tell."""
    return entry(resolve_backend(config.backend)).describe(config)


def engine_identity(config: EngineConfig, loaded: Callable[[], Any] | None = None) -> dict[str, Any]:
    """The cache identity of ``config``'s engine (see the module docstring): ``loaded`` gives the
    built engine when its factory cannot describe it (None: its own part stays None)."""
    found = entry(resolve_backend(config.backend))
    own = found.describe(config)
    if own is None and loaded is not None:
        own = loaded().identity()
    return {"backend": found.name, "class": found.class_name(), "engine": None if own is None else dict(own)}


def load_engine(config: EngineConfig) -> Any:
    return entry(resolve_backend(config.backend)).factory()(config)
