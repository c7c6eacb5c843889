"""How long an answer can be for its ``max_tokens``, and what is done with one that is longer.

A server that ignores ``max_tokens`` (or a hostile one) can send an answer of any size: four
10 MB answers took a gigabyte of memory and made an 80 MB report. No token is longer than a
few dozen characters, so an answer far longer than its ``max_tokens`` allows is not what the
model was asked for; it is cut where it is read, and the cut is said:

    answer_bytes(max_tokens) ──► the most bytes of an answer's body read from the server:
        BODY_BYTES + TOKEN_BYTES per token (room for the text and a reasoning field at
        CHARS_PER_TOKEN characters a token, JSON escapes, log-probabilities), at most MAX_BODY_BYTES;
        the transport stops reading there (:mod:`.openai_transport`: ``post_json(max_bytes=)``)
    partial_json(raw) ──► what the body's first bytes hold: objects and lists as far as they
        go, the string being read when the bytes ran out cut where they did (so the answer's
        text, which servers send before usage and log-probabilities, is kept); a ``CutBody``
    answer_chars(max_tokens) ──► the most characters an answer (and a reasoning field) keeps:
        CHARS_PER_TOKEN per token, at least MIN_CHARS
    cap_text(text, max_tokens) ──► (the text, cut to answer_chars; its length, or None when it fits)
    cut_answer(text, reasoning, max_tokens, read) ──► a Cut (the text and reasoning kept, and the
        note that says what was cut: ``Completion.cut``), or None when nothing was

The engine (:mod:`.openai`) marks a cut answer's ``Completion.cut`` with what was done, a cut
answer is never cached (``run.cache``), and the item's prediction record and reasons name it.
What a completion's text holds is what the server sent, as far as it was read.

Public names: ``BODY_BYTES``, ``CHARS_PER_TOKEN``, ``Cut``, ``CutBody``, ``MAX_BODY_BYTES``, ``MIN_CHARS``,
``TOKEN_BYTES``, ``answer_bytes``, ``answer_chars``, ``cap_text``, ``cut_answer``, ``partial_json``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

__all__ = ["BODY_BYTES", "CHARS_PER_TOKEN", "MAX_BODY_BYTES", "MIN_CHARS", "TOKEN_BYTES", "Cut", "CutBody", "answer_bytes",
           "answer_chars", "cap_text", "cut_answer", "partial_json"]

CHARS_PER_TOKEN = 64  # generous: the longest tokens of common vocabularies are runs of a few dozen characters
MIN_CHARS = 4096
BODY_BYTES = 256 * 2**10  # the answer's envelope: ids, usage, a finish reason, a server's extras
TOKEN_BYTES = 2**10  # per token: text and reasoning (CHARS_PER_TOKEN characters, JSON escapes), log-probabilities
MAX_BODY_BYTES = 64 * 2**20

_WS = " \t\r\n"
_SCALAR = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?|true|false|null")
_SCALARS = {"true": True, "false": False, "null": None}
_MISSING = object()


class CutBody(dict):
    """A JSON answer of which only the first ``limit`` bytes were read (``partial_json`` of them)."""

    limit: int = 0


def answer_bytes(max_tokens: int | None) -> int:
    """The most bytes of an answer's body read for ``max_tokens`` (see the module docstring)."""
    tokens = max(1, int(max_tokens or 1))
    return min(MAX_BODY_BYTES, BODY_BYTES + TOKEN_BYTES * tokens)


def answer_chars(max_tokens: int | None) -> int:
    """The most characters an answer keeps for ``max_tokens``."""
    return max(MIN_CHARS, CHARS_PER_TOKEN * max(1, int(max_tokens or 1)))


def cap_text(text: str, max_tokens: int | None) -> tuple[str, int | None]:
    """(``text``, None) when it fits its ``max_tokens``; else (its first ``answer_chars`` characters, its length)."""
    cap = answer_chars(max_tokens)
    if len(text) <= cap:
        return text, None
    return text[:cap], len(text)


@dataclass(frozen=True)
class Cut:
    """An answer cut to its max_tokens (``cut_answer``): the text and reasoning kept, and what was done."""

    text: str
    reasoning: str | None
    note: str  # what was done, in words: Completion.cut


def cut_answer(text: str, reasoning: str | None, max_tokens: int, read: int | None) -> Cut | None:
    """The answer (and reasoning) cut to what ``max_tokens`` allows (answer_cap), and the note that says
    so; ``read``: the body was cut after that many bytes. None when nothing was cut."""
    kept, length = cap_text(text, max_tokens)
    thought, thought_length = cap_text(reasoning, max_tokens) if reasoning is not None else (None, None)
    if read is None and length is None and thought_length is None:
        return None
    said = []
    if read is not None:
        said.append(f"the server sent more than {read} bytes for max_tokens={max_tokens} ({TOKEN_BYTES} a token and "
                    f"{BODY_BYTES // 1024} KiB more); only those were read")
    for what, size, now in (("answer", length, kept), ("reasoning", thought_length, thought)):
        if size is not None:
            said.append(f"the {what} had {'at least ' if read is not None else ''}{size} characters, more than "
                        f"max_tokens={max_tokens} allows ({CHARS_PER_TOKEN} a token); kept: its first {len(now or '')}")
    if read is not None and length is None:
        said.append(f"kept: the answer's first {len(kept)} characters, as far as they were read")
    return Cut(kept, thought, "cut by pytest-ruler: " + "; ".join(said))


def _decode(raw: bytes) -> str:
    for trim in range(4):  # the last character may be cut inside its UTF-8 bytes
        try:
            return raw[:len(raw) - trim].decode("utf-8")
        except UnicodeDecodeError as exc:
            if exc.start < len(raw) - 4:
                break
    return raw.decode("utf-8", "replace")


def _string(s: str, i: int) -> tuple[str, int, bool]:
    j, n = i + 1, len(s)
    while j < n:
        if s[j] == "\\":
            j += 2
            continue
        if s[j] == '"':
            return json.loads(s[i:j + 1]), j + 1, True
        j += 1
    body = s[i + 1:]
    body = re.sub(r"(?<!\\)((?:\\\\)*)\\(?:u[0-9a-fA-F]{0,3})?$", r"\1", body)  # an escape cut short
    text = json.loads(f'"{body}"')
    if text and "\ud800" <= text[-1] <= "\udbff":  # half a surrogate pair
        text = text[:-1]
    return text, n, False


def _value(s: str, i: int) -> tuple[Any, int, bool]:
    """(the value at ``i``, where it ends, whether it is whole); ``_MISSING`` when nothing of it came."""
    n = len(s)
    while i < n and s[i] in _WS:
        i += 1
    if i >= n:
        return _MISSING, i, False
    if s[i] == '"':
        return _string(s, i)
    if s[i] in "{[":
        is_object = s[i] == "{"
        out: Any = {} if is_object else []
        close = "}" if is_object else "]"
        i += 1
        while True:
            while i < n and s[i] in _WS + ",":
                i += 1
            if i >= n:
                return out, i, False
            if s[i] == close:
                return out, i + 1, True
            if is_object:
                if s[i] != '"':
                    raise ValueError(f"a key was expected at byte {i}")
                key, i, whole = _string(s, i)
                while i < n and s[i] in _WS + ":":
                    i += 1
                if not whole:
                    return out, i, False
            value, i, whole = _value(s, i)
            if value is not _MISSING:
                if is_object:
                    out[key] = value
                else:
                    out.append(value)
            if not whole:
                return out, i, False
    found = _SCALAR.match(s, i)
    if found is None or found.end() == n:  # a number or word cut short says nothing sure
        if found is None and s[i] not in "-0123456789tfn":
            raise ValueError(f"not JSON at byte {i}")
        return _MISSING, n, False
    word = found.group()
    return (_SCALARS[word] if word in _SCALARS else json.loads(word)), found.end(), True


def partial_json(raw: bytes, limit: int = 0) -> CutBody:
    """What the first bytes of a JSON answer hold (see the module docstring); empty when they
    hold no object, or nothing readable."""
    try:
        value, _, _ = _value(_decode(raw), 0)
    except (ValueError, RecursionError):
        value = None
    out = CutBody(value if isinstance(value, dict) else {})
    out.limit = limit
    return out
