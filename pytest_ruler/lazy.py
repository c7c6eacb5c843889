"""A package's public names, each loaded from its module on first use (PEP 562).

A part's ``__init__`` that re-exports names eagerly makes importing any one of its modules import
them all (``engines.thinking`` would load the engine registry and every engine's declarations;
``tasks.tokenizer`` every family). With ``__getattr__ = exports_getattr(__name__, EXPORTS)`` the
package imports nothing of its own until a name is asked for; a name that is no export but a
submodule (``tasks.niah``) is imported as the eager imports once made it reachable.

An export must not bear the name of a submodule: once ``pkg.name`` is imported, the import
system binds the module over the name (``results.gate``, the function in the module of that
name, is why ``results`` keeps its eager imports). tests/unit/test_lazy.py checks it.

Public names: ``exports_getattr``.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any, Callable, Mapping

__all__ = ["exports_getattr"]


def exports_getattr(package: str, exports: Mapping[str, str]) -> Callable[[str], Any]:
    """The module ``__getattr__`` of ``package``: ``exports`` maps a public name to the submodule
    (``"base"``) that defines it. Nothing is cached in the package's globals, so a re-imported
    module (pytester) never hands out a stale class."""

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            if name.isidentifier() and not name.startswith("_"):
                try:
                    return import_module(f"{package}.{name}")
                except ModuleNotFoundError as exc:
                    if exc.name != f"{package}.{name}":
                        raise
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(import_module(f"{package}.{module}"), name)

    return __getattr__
