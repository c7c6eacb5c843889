"""The context length: one resolver, used by the start-up check, every engine and map-reduce.

Data flow::

    EngineConfig + what the engine reports (preflight: the model config or the server's
    GET /models, without loading; after load: what the engine itself runs with)
        ──► resolve_context ──► ContextLength(tokens, source)
              start-up check (run.preflight): lengths that can never fit are refused there
              the engine: its max_context (over-length prompts are refused, never cut)
              map-reduce: the window, unless --ruler-mapreduce-window says

Precedence, first found wins:

1. ``--ruler-max-model-len`` (``EngineConfig.max_model_len``);
2. what the engine reports (``reported``);
3. the engine's declared fallbacks, in order: its context option when it declares one
   (``--ruler-engine-option max_context=N``: openai, scripted, a custom engine's), then
   the tokenizer's ``model_max_length`` for an engine that reads it (openai).

A value out of (0, 10**9] is no answer (transformers uses a huge number for "unknown");
one that is not a number is a usage error naming where it came from. An engine that cannot
run without a context length (openai: a server's ``/models`` may say nothing, or ``-1``,
``'abc'``, ``10**12``) refuses at start what this gives it (``plausible`` tells a context
length from the rest), naming ``--ruler-max-model-len``, rather than failing every item.

Public names: ``ContextLength``, ``MAX_PLAUSIBLE``, ``plausible``, ``resolve_context``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from ..errors import RulerUsageError

__all__ = ["ContextLength", "MAX_PLAUSIBLE", "plausible", "resolve_context"]

MAX_PLAUSIBLE = 10**9


def plausible(value: Any) -> int | None:
    """``value`` as a context length: a whole number of tokens in (0, ``MAX_PLAUSIBLE``] (an int,
    or text or a float that is one), else None."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, float) and not value.is_integer():
        return None
    try:
        n = int(value.strip()) if isinstance(value, str) else int(value)
    except (TypeError, ValueError, OverflowError):
        return None
    return n if 0 < n <= MAX_PLAUSIBLE else None


@dataclass(frozen=True)
class ContextLength:
    """Tokens a prompt and its answer may use together, and where that number came from."""

    tokens: int | None
    source: str = ""  # in the user's words, e.g. "--ruler-max-model-len" or "the server's max_model_len"


def resolve_context(max_model_len: int | None, reported: Any, *, reported_by: str,
                    fallbacks: Sequence[tuple[str, Any]] = ()) -> ContextLength:
    """The context length by the module's precedence; ``ContextLength(None)`` when nothing says.

    ``reported_by`` names the engine's report for messages; ``fallbacks`` are (label, value)
    pairs tried after it, in order.
    """
    for label, value in (("--ruler-max-model-len", max_model_len), (reported_by, reported), *fallbacks):
        if value is None:
            continue
        if isinstance(value, bool):
            raise RulerUsageError(label, value, "must be a positive integer")
        try:
            n = int(value)
        except (TypeError, ValueError):
            raise RulerUsageError(label, value, "must be a positive integer") from None
        if 0 < n <= MAX_PLAUSIBLE:
            return ContextLength(n, label)
    return ContextLength(None)
