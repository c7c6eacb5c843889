"""Secrets never reach logs, reports or caches.

Two kinds of secret reach pytest-ruler:

- the OpenAI-compatible server's API key, read from the environment variable
  ``RULER_API_KEY`` by :func:`api_key`, the one reader: it strips surrounding
  whitespace (a key read with ``"$(cat key.txt)"`` from a CRLF file ends in ``\\r``)
  and refuses, at start, a key with any other control character or a character an
  HTTP header cannot carry, in one line that does not hold the key;
- secrets the user typed: option values (command line, ini) that look like
  credentials, e.g. ``--ruler-engine-option=extra_body={"metadata": {"token": ...}}``.

One rule decides what looks like a secret in typed text (:func:`scrub_typed`):

- a value under a credential-like name (:func:`is_secret_name`: ``api_key``,
  ``*token``, ``secret``, ``password``, ``auth*``, ``credential``, ...), as
  ``NAME=VALUE``, ``NAME: VALUE``, quoted or not, and at any depth of a JSON value
  (the whole value of such a key, also an object or a list);
- a known key shape anywhere (``SHAPES``: ``sk-...``, ``hf_...``, GitHub, Slack,
  GitLab, AWS and Google keys, JWTs), and what follows ``Bearer`` or ``Basic``;
- URL user info and URL queries.

Data flow::

    argv ──scrub_command──► provenance.command (each argument: scrub_typed)
    an option's bad value ──typed_value──► the RulerUsageError of its parser (parsers, options,
        engines.options): the value shown with what looks like a secret masked
    parsed option values ──remember(value)──► the typed secrets of this process
    any text kept or shown ──scrub(text)──► the API key and the remembered typed secrets masked:
        answers (before scoring), error messages, terminal lines, JUnit properties, reports, logs
    JSON-like values ──scrubbed(value)──► the engine identity, the cache's identity rows

:func:`scrub` is applied to *parsed* text (a model's answer once taken out of the
server's JSON, an error message, a terminal line, a report), never to a server's raw
JSON, whose structure a replacement could break. It guesses nothing: it replaces only
secrets this process knows (the key, and the typed secrets :func:`remember` was given
when the options were parsed), so a model's answer that merely looks like a key is
scored as it is. Its rule for a known secret:

- one of at least ``MIN_SCRUBBED_LENGTH`` (8) characters is replaced by ``<secret>``
  wherever it occurs (also in its JSON-escaped form, for text already serialised);
- a shorter one is replaced only where it follows ``Bearer `` (a server echoing the
  request's header). Anywhere else a 1-7 character key cannot be told from ordinary
  text (every ``x`` of an answer for ``RULER_API_KEY=x``), and replacing it would
  change what the model said, hence its score; such a key is also guessable, so there
  is nothing left to protect. Typed text itself (the command line, an option's value in
  an error) is masked by name and shape whatever the length.

Public names: ``API_KEY_ENV``, ``MIN_SCRUBBED_LENGTH``, ``SECRET_MARK``, ``SHAPES``,
``api_key``, ``is_secret_name``, ``remember``, ``scrub``, ``scrub_command``,
``scrub_typed``, ``scrubbed``, ``typed_value``.
"""

from __future__ import annotations

import json
import os
import re
import unicodedata
from collections.abc import Mapping
from typing import Any, Iterable

from .errors import RulerUsageError

__all__ = ["API_KEY_ENV", "MIN_SCRUBBED_LENGTH", "SECRET_MARK", "SHAPES", "api_key", "is_secret_name", "remember", "scrub",
           "scrub_command", "scrub_typed", "scrubbed", "typed_value"]

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


# ----------------------------------------------------------------------------- known secrets

_TYPED: set[str] = set()  # secrets the user typed, as parsed from the options (remember)


def _known() -> list[str]:
    key = _raw_key()
    return sorted(_TYPED | ({key} if key else set()), key=len, reverse=True)  # a longer one first: masked whole


def scrub(text: str) -> str:
    """``text`` with every secret this process knows (the API key, the remembered typed
    secrets) replaced by ``<secret>``, by the rule of the module docstring."""
    if not text:
        return text
    for secret in _known():
        if len(secret) >= MIN_SCRUBBED_LENGTH:
            if secret in text:
                text = text.replace(secret, SECRET_MARK)
            escaped = json.dumps(secret)[1:-1]
            if escaped != secret and escaped in text:
                text = text.replace(escaped, SECRET_MARK)
        elif secret in text:
            text = re.sub(rf"(\bBearer\s+){re.escape(secret)}{_TOKEN_TAIL}", lambda m: m.group(1) + SECRET_MARK, text)
    return text


# ----------------------------------------------------------------------------- what looks like a secret

# names of credentials: the word anywhere in the name (client_secret, x-api-key, oauth_token...),
# "token" only at its end (hf_token, accessToken; not max_tokens, tokenizer), special tokens excepted
_SECRET_WORD = re.compile(r"api[_-]?key|secret|passw(?:or)?d|passphrase|credential|private[_-]?key|access[_-]?key|auth|cookie", re.I)
_TOKEN_NAME = re.compile(r"token$", re.I)
_SPECIAL_TOKEN = re.compile(r"(?:^|[_-])(?:eos|bos|pad|unk|sep|cls|mask|stop|start|end|think)[_-]?token$", re.I)

#: key shapes known by their prefix, wherever they occur in typed text
SHAPES = re.compile(
    r"(?<![A-Za-z0-9_-])(?:"
    r"sk-[A-Za-z0-9_-]{16,}"  # OpenAI (sk-, sk-proj-), Anthropic (sk-ant-) and many OpenAI-compatible servers
    r"|hf_[A-Za-z0-9]{16,}"  # Hugging Face
    r"|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}"  # GitHub
    r"|glpat-[A-Za-z0-9_-]{20,}"  # GitLab
    r"|xox[abposr]-[A-Za-z0-9-]{10,}"  # Slack
    r"|(?:gsk|nvapi|pplx|r8)[_-][A-Za-z0-9_-]{20,}"  # Groq, NVIDIA, Perplexity, Replicate
    r"|AKIA[0-9A-Z]{16}|AIza[0-9A-Za-z_-]{35}"  # AWS access key id, Google API key
    r"|eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"  # a JWT
    r")"
)
_SCHEME = re.compile(r"(\b(?:bearer|basic)\s+)([^\s\"',;&]+)", re.I)
_URL_USER = re.compile(r"(\b[a-z][a-z0-9+.-]*://)([^/@\s]+)@", re.I)
_URL_QUERY = re.compile(r"(\b[a-z][a-z0-9+.-]*://[^\s?#]*)\?[^\s#\"']*", re.I)
# NAME followed by = or : (a JSON key's closing quote allowed between): the value is read by _value_span;
# not a URL's host (after / @ or .: auth.example.com:8443 is a host and its port)
_NAME_SEP = re.compile(r"(?<![A-Za-z0-9_/@.])([A-Za-z][A-Za-z0-9_.-]*)([\"']?\s*[=:]\s*)")
_STOP = set(" \t\r\n,&;}])\"'")
_DECODER = json.JSONDecoder()
_JSON_SCAN_LIMIT = 100_000  # characters of one text searched for JSON values


def is_secret_name(name: str) -> bool:
    """Whether ``name`` (an option, a JSON key, a header) names a credential."""
    name = str(name).strip()
    if _SECRET_WORD.search(name):
        return True
    return bool(_TOKEN_NAME.search(name)) and not _SPECIAL_TOKEN.search(name)


def _keep(found: list[str] | None, secret: Any) -> None:
    if found is not None and secret not in (None, "", True, False):
        found.append(str(secret))


def _leaves(value: Any, found: list[str] | None) -> None:
    """Every scalar under a credential-named key, for ``remember``."""
    if isinstance(value, Mapping):
        for v in value.values():
            _leaves(v, found)
    elif isinstance(value, (list, tuple)):
        for v in value:
            _leaves(v, found)
    else:
        _keep(found, value)


def _scrubbed(value: Any, key: str | None, found: list[str] | None) -> Any:
    if key is not None and is_secret_name(key) and value not in (None, "", False):
        _leaves(value, found)
        return SECRET_MARK
    if isinstance(value, Mapping):
        return {str(k): _scrubbed(v, str(k), found) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_scrubbed(v, None, found) for v in value]
    if isinstance(value, str):
        return _mask(value, found)
    if value is None or isinstance(value, (bool, int, float)):
        return value
    return _mask(str(value), found)


def scrubbed(value: Any, key: str | None = None) -> Any:
    """``value`` (JSON-like) safe to keep: the whole value of a credential-named key (at any
    depth) is ``<secret>``; every string goes through :func:`scrub_typed`."""
    return _scrubbed(value, key, None)


def _json_values(text: str, found: list[str] | None) -> str:
    """``text`` with each JSON object or list in it scrubbed (rewritten only where it held a secret)."""
    if "{" not in text and "[" not in text:
        return text
    out: list[str] = []
    done = pos = 0
    limit = min(len(text), _JSON_SCAN_LIMIT)
    while pos < limit:
        starts = [i for i in (text.find("{", pos, limit), text.find("[", pos, limit)) if i >= 0]
        if not starts:
            break
        at = min(starts)
        try:
            value, end = _DECODER.raw_decode(text, at)
        except ValueError:
            pos = at + 1
            continue
        clean = _scrubbed(value, None, found)
        if clean != value:
            out += [text[done:at], json.dumps(clean, ensure_ascii=False)]
            done = end
        pos = end
    return "".join(out) + text[done:] if out else text


def _value_span(text: str, at: int) -> tuple[int, int]:
    """Where the value that starts at ``at`` lies (inside its quotes when quoted); empty when none."""
    n = len(text)
    if at >= n:
        return at, at
    if text[at] in "\"'":
        quote, end = text[at], at + 1
        while end < n and text[end] != quote:
            end += 2 if text[end] == "\\" else 1
        return at + 1, min(end, n)
    if text[at] in "{[":
        try:
            return at, _DECODER.raw_decode(text, at)[1]
        except ValueError:
            end = at
            while end < n and not text[end].isspace():
                end += 1
            return at, end
    end = at
    while end < n and text[end] not in _STOP:
        end += 1
    word = text[at:end]
    if word.lower() in ("bearer", "basic") and end < n and text[end] == " ":  # "Authorization: Bearer xyz"
        nxt = end + 1
        while nxt < n and text[nxt] not in _STOP:
            nxt += 1
        end = nxt
    return at, end


def _named_values(text: str, found: list[str] | None) -> str:
    spans = []
    for m in _NAME_SEP.finditer(text):
        if is_secret_name(m.group(1)):
            start, end = _value_span(text, m.end())
            if end > start and text[start:end] != SECRET_MARK:
                spans.append((start, end))
    for start, end in reversed(spans):
        _keep(found, text[start:end])
        text = text[:start] + SECRET_MARK + text[end:]
    return text


def _mask(text: str, found: list[str] | None) -> str:
    """The typed-text rule (module docstring), positionally; what it masked is added to ``found``."""
    def masked(m: re.Match, secret: str, before: str = "", after: str = "") -> str:
        if secret != SECRET_MARK:
            _keep(found, secret)
        return before + SECRET_MARK + after

    text = _json_values(text, found)
    text = _named_values(text, found)
    text = _SCHEME.sub(lambda m: masked(m, m.group(2), m.group(1)), text)
    text = _URL_USER.sub(lambda m: masked(m, m.group(2), m.group(1), "@"), text)
    text = _URL_QUERY.sub(lambda m: m.group(1) + "?" + SECRET_MARK, text)
    return SHAPES.sub(lambda m: masked(m, m.group(0)), text)


def scrub_typed(text: str) -> str:
    """Text the user typed (a command-line argument, an option's value), safe to show or keep:
    :func:`scrub`, then every value that looks like a secret by name or shape masked."""
    return _mask(scrub(str(text)), None)


def typed_value(value: Any) -> Any:
    """An option's value as an error may show it (its ``value``): text by :func:`scrub_typed`,
    a JSON-like value by :func:`scrubbed`, anything else as it is."""
    if isinstance(value, str):
        return scrub_typed(value)
    if isinstance(value, (Mapping, list)):
        return scrubbed(value)
    if isinstance(value, tuple):
        return tuple(scrubbed(value))
    return value


def scrub_command(argv: Iterable[str]) -> list[str]:
    """A command line (``sys.argv``) safe to record: :func:`scrub_typed` on each argument."""
    return [scrub_typed(arg) for arg in argv]


def remember(value: Any) -> None:
    """Learn the secrets in a parsed option value (text, or a JSON-like value), so that
    :func:`scrub` masks them wherever they appear later (a server's error that echoes the
    request, a terminal line, a JUnit property, a report)."""
    found: list[str] = []
    if isinstance(value, (Mapping, list, tuple)):
        _scrubbed(value, None, found)
    elif value is not None:
        _mask(str(value), found)
    _TYPED.update(s for s in (f.strip() for f in found) if s and s != SECRET_MARK)
