"""Text that came from outside the run, made safe to show.

A server's error body, the model names and paths it reports, a redirect's
target: any of them may hold terminal control sequences (``\\x1b[2J`` clears
the screen, and can leave a fake verdict above the real one) or the API key.
:func:`shown` is what every such text goes through before it reaches an error
message, a log record or the terminal: the key scrubbed
(:func:`pytest_ruler.secrets.scrub`), then every character Python does not
call printable (controls, format characters such as bidi overrides, lone
surrogates, line and paragraph separators) written as its escape, as
``repr`` writes a model's output in failure messages; runs of whitespace
become one space, and the text is cut to ``limit`` characters.

Public names: ``escaped``, ``shown``.
"""

from __future__ import annotations

from .secrets import scrub

__all__ = ["escaped", "shown"]


def _escape(char: str) -> str:
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def escaped(text: str) -> str:
    """``text`` with every non-printable character written as its escape (``\\x1b``, ``\\u202e``)."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else _escape(c) for c in text)


def shown(value: object, limit: int | None = 300) -> str:
    """``value`` as one safe line: secrets scrubbed, whitespace collapsed, controls escaped, at most ``limit`` characters."""
    text = " ".join(scrub(str(value)).split())
    text = escaped(text)
    if limit is not None and len(text) > limit:
        text = text[: max(0, limit - 3)] + "..."
    return text
