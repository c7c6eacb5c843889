"""Chat templates as a :class:`~pytest_ruler.tasks.Frame`.

The RULER paper wraps each task prompt in the model's chat template and
appends the answer prefix as the start of the assistant's turn (Appendix D).
A frame is the text before and after the user message, found by rendering the
Jinja chat template once around a sentinel message with
``add_generation_prompt=True``. The budget then counts the framed prompt.

``frame_for(choice, tokenizer)`` with choice ``none``/``base`` (no wrapper),
``auto`` (the tokenizer's own template; base when it has none) or a path to a
Jinja file; ``kwargs`` (``--ruler-chat-template-kwargs``, e.g. ``enable_thinking=False``) are
template variables of the render, as vLLM's ``chat_template_kwargs`` and transformers'
``apply_chat_template(**kwargs)`` pass them.

A template is code from outside (a model's tokenizer files, a user's file):
its render is bounded, in Jinja's sandbox, to ``RENDER_SECONDS`` (5 s) and
``RENDER_CHARS`` (1M characters, more than any context holds): a template that
loops, or renders a huge frame, is refused at start by name and reason instead
of hanging start-up. The time bound is checked on every template line and call
(a trace function during the render; a coverage tracer pauses meanwhile); the
size bound on the output as it streams, and on ``*``/``**`` before they build a
huge string, list or number.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any, Mapping

from ..errors import RulerUsageError
from .base import BASE_FRAME, Frame
from .tokenizer import Tokenizer

__all__ = ["RENDER_CHARS", "RENDER_SECONDS", "frame_for", "frame_from_template"]

_SENTINEL = "\x00RULER-PROMPT\x00"
_RESERVED = ("messages", "add_generation_prompt", "bos_token", "eos_token")  # what the frame's render sets itself
RENDER_SECONDS = 5.0
RENDER_CHARS = 1_000_000


class _RenderBound(Exception):
    """A template's render passed its time or size bound (the message says which)."""


def _bounded_sandbox() -> Any:
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    class BoundedSandbox(ImmutableSandboxedEnvironment):
        intercepted_binops = frozenset({"*", "**"})

        def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
            if operator == "*":
                for seq, n in ((left, right), (right, left)):
                    if isinstance(seq, (str, list, tuple)) and isinstance(n, int) and len(seq) * n > RENDER_CHARS:
                        raise _RenderBound(f"it builds a sequence of {len(seq) * n:,} items (more than {RENDER_CHARS:,})")
            if operator == "**" and isinstance(left, int) and isinstance(right, int) and abs(left) > 1:
                if right * left.bit_length() > 8 * RENDER_CHARS:
                    raise _RenderBound(f"it computes {left}**{right}, a number too large to render")
            return super().call_binop(context, operator, left, right)

    return BoundedSandbox(trim_blocks=True, lstrip_blocks=True)


def _render_bounded(template: Any, **context: Any) -> str:
    """``template`` rendered, or :class:`_RenderBound` past RENDER_SECONDS or RENDER_CHARS."""
    deadline = time.monotonic() + RENDER_SECONDS

    def trace(frame: Any, event: str, arg: Any) -> Any:
        if time.monotonic() > deadline:
            raise _RenderBound(f"it did not finish rendering within {RENDER_SECONDS:g} s (a loop that does not end?)")
        return trace if frame.f_code.co_filename == "<template>" else None

    previous = sys.gettrace()
    sys.settrace(trace)
    try:
        parts, size = [], 0
        for part in template.generate(**context):
            size += len(part)
            if size > RENDER_CHARS:
                raise _RenderBound(f"it renders more than {RENDER_CHARS:,} characters around one user message, "
                                   "more than any model's context")
            parts.append(part)
        return "".join(parts)
    finally:
        sys.settrace(previous)


def frame_from_template(template: str, *, bos_token: str | None = None, eos_token: str | None = None, name: str = "chat",
                        kwargs: Mapping[str, Any] | None = None) -> Frame:
    try:
        env = _bounded_sandbox()
    except ImportError as exc:  # pragma: no cover
        raise RulerUsageError("chat template", name, "rendering chat templates needs jinja2: pip install jinja2") from exc

    def raise_exception(message: str) -> None:
        raise RulerUsageError("chat template", name, f"the template refused a single user message: {message}")

    env.globals["raise_exception"] = raise_exception
    try:
        text = _render_bounded(
            env.from_string(template),
            messages=[{"role": "user", "content": _SENTINEL}],
            add_generation_prompt=True,
            bos_token=bos_token or "",
            eos_token=eos_token or "",
            **{k: v for k, v in (kwargs or {}).items() if k not in _RESERVED},
        )
    except RulerUsageError:
        raise
    except _RenderBound as exc:
        raise RulerUsageError("chat template", name, f"the chat template {name} is refused: {exc}; pass another template or 'none'") from None
    except Exception as exc:
        raise RulerUsageError("chat template", name, f"it does not render ({type(exc).__name__}: {exc}); pass a valid Jinja chat template or 'none'") from exc
    if text.count(_SENTINEL) != 1:
        raise RulerUsageError("chat template", name, "it must place the user message exactly once; pass another template or 'none'")
    head, tail = text.split(_SENTINEL)
    return Frame(head=head, tail=tail, name=name, source=(template, bos_token or "", eos_token or "", dict(kwargs or {})))


def frame_for(choice: str | None, tokenizer: Tokenizer, kwargs: Mapping[str, Any] | None = None) -> Frame:
    if choice in (None, "", "none", "base"):
        return BASE_FRAME
    if choice == "auto":
        if not tokenizer.chat_template:
            return BASE_FRAME
        return frame_from_template(tokenizer.chat_template, bos_token=tokenizer.bos_token, eos_token=tokenizer.eos_token,
                                   name=f"chat:{tokenizer.name}", kwargs=kwargs)
    path = Path(choice).expanduser()
    if not path.is_file():
        raise RulerUsageError("chat template", choice, "use 'auto' (the model's own), 'none' (base prompts) or a path to a Jinja file")
    return frame_from_template(path.read_text(encoding="utf-8"), bos_token=tokenizer.bos_token, eos_token=tokenizer.eos_token,
                               name=f"chat:{path.name}", kwargs=kwargs)
