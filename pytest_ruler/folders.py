"""Where pytest-ruler keeps what it makes once: converted models, tokenizers, data.

One reader of the cache root, shared by the tasks (tokenizers, the embedded models),
the engines (converted model folders) and the data downloads, so none of those parts
imports another to find it.

Public names: ``cache_root``.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["cache_root"]


def cache_root() -> Path:
    """The pytest-ruler cache folder (``RULER_CACHE_DIR`` or ``~/.cache/pytest-ruler``)."""
    env = os.environ.get("RULER_CACHE_DIR")
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "pytest-ruler"
