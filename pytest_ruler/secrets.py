"""Secrets never reach logs, reports or caches.

The only secret pytest-ruler holds is the OpenAI-compatible server's API key,
read from the environment variable ``RULER_API_KEY`` by :func:`api_key`, the
one reader: it strips surrounding whitespace (a key read with
``"$(cat key.txt)"`` from a CRLF file ends in ``\\r``) and refuses, at start,
a key with any other control character or a character an HTTP header cannot
carry, in one line that does not hold the key.

:func:`scrub` is the one rule, applied to *parsed* text wherever it is about
to be kept or shown (a model's answer once taken out of the server's JSON, an
error message, a terminal line, a report, a log record); it is never applied
to a server's raw JSON, whose structure a replacement could break:

- a key of at least ``MIN_SCRUBBED_LENGTH`` (8) characters is replaced by
  ``<secret>`` wherever it occurs (also in its JSON-escaped form, for text
  that is already serialised);
- a shorter key is replaced only where it follows ``Bearer `` (a server
  echoing the request's header). Anywhere else a 1-7 character key cannot be
  told from ordinary text (every ``x`` of an answer for ``RULER_API_KEY=x``),
  and replacing it would change what the model said, hence its score; such a
  key is also guessable, so there is nothing left to protect.

The command line the report records (``provenance.command``) may hold secrets
of its own (``--ruler-engine-option=api_key=...``, a URL with user info or a
``?api-key=`` query): ``scrub_command`` masks those as well.

Public names: ``API_KEY_ENV``, ``MIN_SCRUBBED_LENGTH``, ``SECRET_MARK``,
``api_key``, ``scrub``, ``scrub_command``.
"""

from __future__ import annotations

import json
import os
import re
import unicodedata
from typing import Iterable

from .errors import RulerUsageError

__all__ = ["API_KEY_ENV", "MIN_SCRUBBED_LENGTH", "SECRET_MARK", "api_key", "scrub", "scrub_command"]

API_KEY_ENV = "RULER_API_KEY"
SECRET_MARK = "<secret>"
MIN_SCRUBBED_LENGTH = 8

# the characters of an RFC 6750 bearer token: what may follow "Bearer " in an echoed header
_TOKEN_TAIL = r"(?![A-Za-z0-9\-._~+/=])"


def _raw_key() -> str | None:
    value = os.environ.get(API_KEY_ENV)
    value = value.strip() if value else None
    return value or None


def api_key() -> str | None:
    """The API key from ``RULER_API_KEY``, surrounding whitespace stripped; None when unset or blank.

    Raises :class:`~pytest_ruler.errors.RulerUsageError` (naming the variable, never the key)
    when the key holds a control character or a character outside printable ASCII, which an
    HTTP header cannot carry.
    """
    key = _raw_key()
    if key is None:
        return None
    for position, char in enumerate(key, 1):
        if unicodedata.category(char) == "Cc":
            raise RulerUsageError(
                API_KEY_ENV, SECRET_MARK,
                f"the key holds the control character U+{ord(char):04X} ({_char_name(char)}) at position {position} of "
                f"{len(key)}; set the variable to the key alone, on one line, e.g. "
                f"export {API_KEY_ENV}=\"$(tr -d '\\r\\n' < key.txt)\"",
            )
        if not (" " <= char <= "~"):
            raise RulerUsageError(
                API_KEY_ENV, SECRET_MARK,
                f"the key holds a character outside printable ASCII (U+{ord(char):04X} at position {position} of {len(key)}), "
                "which an HTTP header cannot carry; copy the key again from the server's settings",
            )
    return key


def _char_name(char: str) -> str:
    return {"\r": "carriage return", "\n": "line feed", "\t": "tab", "\x00": "NUL", "\x1b": "escape"}.get(char, "control")


def scrub(text: str) -> str:
    """``text`` with the API key replaced by ``<secret>``, by the rule of the module docstring."""
    key = _raw_key()
    if not key or not text:
        return text
    if len(key) >= MIN_SCRUBBED_LENGTH:
        text = text.replace(key, SECRET_MARK)
        escaped = json.dumps(key)[1:-1]
        if escaped != key:
            text = text.replace(escaped, SECRET_MARK)
        return text
    if key in text:
        text = re.sub(rf"(\bBearer\s+){re.escape(key)}{_TOKEN_TAIL}", lambda m: m.group(1) + SECRET_MARK, text)
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
