"""Chat templates as a :class:`~pytest_ruler.tasks.Frame`.

The RULER paper wraps each task prompt in the model's chat template and
appends the answer prefix as the start of the assistant's turn (Appendix D).
A frame is the text before and after the user message, found by rendering the
Jinja chat template once around a sentinel message with
``add_generation_prompt=True``. The budget then counts the framed prompt.

``frame_for(choice, tokenizer)`` with choice ``none``/``base`` (no wrapper),
``auto`` (the tokenizer's own template; base when it has none) or a path to a
Jinja file.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import RulerUsageError
from .base import BASE_FRAME, Frame
from .tokenizer import Tokenizer

__all__ = ["frame_for", "frame_from_template"]

_SENTINEL = "\x00RULER-PROMPT\x00"


def frame_from_template(template: str, *, bos_token: str | None = None, eos_token: str | None = None, name: str = "chat") -> Frame:
    try:
        from jinja2.sandbox import ImmutableSandboxedEnvironment
    except ImportError as exc:  # pragma: no cover
        raise RulerUsageError("chat template", name, "rendering chat templates needs jinja2: pip install jinja2") from exc
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)

    def raise_exception(message: str) -> None:
        raise RulerUsageError("chat template", name, f"the template refused a single user message: {message}")

    env.globals["raise_exception"] = raise_exception
    try:
        text = env.from_string(template).render(
            messages=[{"role": "user", "content": _SENTINEL}],
            add_generation_prompt=True,
            bos_token=bos_token or "",
            eos_token=eos_token or "",
        )
    except RulerUsageError:
        raise
    except Exception as exc:
        raise RulerUsageError("chat template", name, f"it does not render ({type(exc).__name__}: {exc}); pass a valid Jinja chat template or 'none'") from exc
    if text.count(_SENTINEL) != 1:
        raise RulerUsageError("chat template", name, "it must place the user message exactly once; pass another template or 'none'")
    head, tail = text.split(_SENTINEL)
    return Frame(head=head, tail=tail, name=name)


def frame_for(choice: str | None, tokenizer: Tokenizer) -> Frame:
    if choice in (None, "", "none", "base"):
        return BASE_FRAME
    if choice == "auto":
        if not tokenizer.chat_template:
            return BASE_FRAME
        return frame_from_template(tokenizer.chat_template, bos_token=tokenizer.bos_token, eos_token=tokenizer.eos_token, name=f"chat:{tokenizer.name}")
    path = Path(choice).expanduser()
    if not path.is_file():
        raise RulerUsageError("chat template", choice, "use 'auto' (the model's own), 'none' (base prompts) or a path to a Jinja file")
    return frame_from_template(path.read_text(encoding="utf-8"), bos_token=tokenizer.bos_token, eos_token=tokenizer.eos_token, name=f"chat:{path.name}")
