"""Options of the ``scripted`` test engine (import-light; the engine is :mod:`.scripted`).

Public names: ``OPTIONS``, ``MODES``, ``DEFAULT_CONTEXT``.
"""

from __future__ import annotations

from .declaration import EngineOption

__all__ = ["DEFAULT_CONTEXT", "MODES", "OPTIONS"]

MODES = ("oracle", "know_nothing", "empty", "echo", "error", "thinking")
DEFAULT_CONTEXT = 131072

OPTIONS: tuple[EngineOption, ...] = (
    EngineOption("mode", "choice", "oracle", "how the scripted test engine answers (see the module doc)", choices=MODES),
    EngineOption("max_context", "int", DEFAULT_CONTEXT, "the context it claims (--ruler-max-model-len wins)", minimum=1),
    EngineOption("crash_after", "int", None, "raise after this many completions (finished work must be kept)", minimum=0),
    EngineOption("delay", "float", 0.0, "seconds per request", minimum=0.0),
    EngineOption("think_tokens", "int", 200, "mode=thinking: tokens it thinks before it answers as the oracle does", minimum=0),
    EngineOption("blind_above", "int", None, "answer \"\" to a prompt of more tokens than this (a model perfect up to it, blind beyond)", minimum=1),
    EngineOption("fail_load", "str", None, "refuse to build, with this text (tests of a failing load)"),
)
