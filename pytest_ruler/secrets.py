"""Secrets never reach logs, reports or caches.

The only secret pytest-ruler holds is the OpenAI-compatible server's API key,
read from the environment variable ``RULER_API_KEY``. The openai engine scrubs
it from everything a server sends back (model outputs included) before any
other code sees it; ``scrub`` is the same rule applied again wherever the run
writes or prints (JSON report, Markdown, terminal lines), so a key that got
in by another path still never gets out.

The command line the report records (``provenance.command``) may hold secrets
of its own (``--ruler-engine-option=api_key=...``, a URL with user info or a
``?api-key=`` query): ``scrub_command`` masks those as well.

Public names: ``API_KEY_ENV``, ``SECRET_MARK``, ``scrub``, ``scrub_command``.
"""

from __future__ import annotations

import os
import re
from typing import Iterable

__all__ = ["API_KEY_ENV", "SECRET_MARK", "scrub", "scrub_command"]

API_KEY_ENV = "RULER_API_KEY"
SECRET_MARK = "<secret>"


def scrub(text: str) -> str:
    """``text`` with the API key (when set) replaced by ``<secret>``."""
    key = os.environ.get(API_KEY_ENV)
    if key and len(key) >= 4 and key in text:  # a 1-3 character "key" would scrub ordinary words
        text = text.replace(key, SECRET_MARK)
    return text


# KEY=VALUE / KEY:VALUE where the key names a credential (api_key, token, secret, password, auth...)
_SECRET_PAIR = re.compile(r"((?:api[_-]?key|[a-z_]*token|secret|password|passwd|auth[a-z_]*)\s*[=:]\s*)[^\s,&;]+", re.I)
_URL_USER = re.compile(r"(\b[a-z][a-z0-9+.-]*://)[^/@\s]+@", re.I)
_URL_QUERY = re.compile(r"(\b[a-z][a-z0-9+.-]*://[^\s?#]*)\?[^\s#]*", re.I)
_BEARER = re.compile(r"(\bbearer\s+)\S+", re.I)


def scrub_command(argv: Iterable[str]) -> list[str]:
    """A command line (``sys.argv``) safe to record: ``scrub`` on each argument, and the
    values of credential-named ``KEY=VALUE`` pairs, URL user info and URL queries masked."""
    out = []
    for arg in argv:
        text = scrub(str(arg))
        text = _URL_USER.sub(lambda m: m.group(1) + SECRET_MARK + "@", text)
        text = _URL_QUERY.sub(lambda m: m.group(1) + "?" + SECRET_MARK, text)
        text = _BEARER.sub(lambda m: m.group(1) + SECRET_MARK, text)
        text = _SECRET_PAIR.sub(lambda m: m.group(1) + SECRET_MARK, text)
        out.append(text)
    return out
