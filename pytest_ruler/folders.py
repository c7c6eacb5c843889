"""Where pytest-ruler keeps what it makes once: converted models, tokenizers, data, predictions.

One reader of the cache root, shared by the tasks (tokenizers, the embedded models),
the engines (converted model folders) and the data downloads, so none of those parts
imports another to find it; and one reader of the prediction cache's default folder
(``run.cache``), kept apart from the converted models and outside pytest's own
``.pytest_cache``, so ``pytest --cache-clear`` never deletes hours of answers:

    RULER_PREDICTIONS_DIR                     the prediction cache itself, when set
    RULER_CACHE_DIR/predictions               when only the cache root is moved
    the per-user cache folder/pytest-ruler/predictions, that folder being
        $XDG_CACHE_HOME (when set), else ~/Library/Caches on macOS,
        %LOCALAPPDATA% on Windows (…\\pytest-ruler\\Cache\\predictions), else ~/.cache

``--ruler-cache-dir`` / ini ``ruler_cache_dir`` win over all of these (plugin).

Public names: ``PREDICTIONS_ENV``, ``cache_root``, ``predictions_dir``.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

__all__ = ["PREDICTIONS_ENV", "cache_root", "predictions_dir"]

#: the environment variable that names the prediction cache folder (``--ruler-cache-dir`` wins over it)
PREDICTIONS_ENV = "RULER_PREDICTIONS_DIR"


def cache_root() -> Path:
    """The pytest-ruler cache folder (``RULER_CACHE_DIR`` or ``~/.cache/pytest-ruler``)."""
    env = os.environ.get("RULER_CACHE_DIR")
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "pytest-ruler"


def predictions_dir() -> Path:
    """The prediction cache's default folder (absolute), by the precedence of the module docstring."""
    env = os.environ.get(PREDICTIONS_ENV)
    if env:
        return Path(env).expanduser().absolute()
    root = os.environ.get("RULER_CACHE_DIR")
    if root:
        return Path(root).expanduser().absolute() / "predictions"
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg:
        return Path(xdg).expanduser().absolute() / "pytest-ruler" / "predictions"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches" / "pytest-ruler" / "predictions"
    local = os.environ.get("LOCALAPPDATA")
    if sys.platform == "win32" and local:
        return Path(local) / "pytest-ruler" / "Cache" / "predictions"
    return Path.home() / ".cache" / "pytest-ruler" / "predictions"
