"""Secrets never reach logs, reports or caches.

The only secret pytest-ruler holds is the OpenAI-compatible server's API key,
read from the environment variable ``RULER_API_KEY``. The openai engine scrubs
it from everything a server sends back (model outputs included) before any
other code sees it; ``scrub`` is the same rule applied again wherever the run
writes or prints (JSON report, Markdown, terminal lines), so a key that got
in by another path still never gets out.

Public names: ``API_KEY_ENV``, ``SECRET_MARK``, ``scrub``.
"""

from __future__ import annotations

import os

__all__ = ["API_KEY_ENV", "SECRET_MARK", "scrub"]

API_KEY_ENV = "RULER_API_KEY"
SECRET_MARK = "<secret>"


def scrub(text: str) -> str:
    """``text`` with the API key (when set) replaced by ``<secret>``."""
    key = os.environ.get(API_KEY_ENV)
    if key and len(key) >= 4 and key in text:  # a 1-3 character "key" would scrub ordinary words
        text = text.replace(key, SECRET_MARK)
    return text
