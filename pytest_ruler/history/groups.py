"""Which runs of a history folder are drawn together: the same model on the same settings.

    group_of(report) ──► (group id, settings): runs with equal settings share a group id (a short hash);
        the settings are the model, the engine's identity (backend, class and the engine's own entries:
        dtype, mode, ...), each mode's tasks and lengths, the pass mark, the samples, the seeds and the
        chat template
    engine_summary(engine) ──► the engine's identity in one line, for the list of runs

What does not split a group: the library versions (torch, transformers, vllm) and the weights'
identity (an own entry named like ``revision``, ``digest``, ``sha`` or ``weights``), because a trend
across releases is made of exactly those changes; both are shown in the list of runs. The engine
options (``--ruler-engine-option``) do not either: an option that changes answers is in the engine's
own identity (``results.identity``).

Public names: ``group_of``, ``engine_summary``, ``WEIGHT_KEYS``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from ..results.identity import RESERVED
from ..results.report import MODES, Report

__all__ = ["WEIGHT_KEYS", "engine_summary", "group_of"]

#: an engine's own entries whose name holds one of these identify the weights (a release), not a setting
WEIGHT_KEYS = ("revision", "digest", "sha", "weights", "hash", "commit")


def _own(engine: Any) -> dict[str, Any]:
    """The engine's own identity entries (neither versions nor options)."""
    if not isinstance(engine, Mapping):
        return {}
    return {k: v for k, v in engine.items() if k not in RESERVED}


def _setting(key: str) -> bool:
    return not any(w in key.lower() for w in WEIGHT_KEYS)


def group_of(report: Report) -> tuple[str, dict[str, Any]]:
    """The run's group id and the settings that make it (see the module docstring)."""
    engine = report.field("engine")
    modes = {}
    for mode in MODES:
        m = report.mode(mode)
        if m.items:
            modes[mode] = {"tasks": sorted({r.task for r in m.items}), "lengths": m.lengths}
    settings = {
        "model": report.model,
        "backend": report.backend,
        "engine_class": engine.get("class") if isinstance(engine, Mapping) else None,
        "engine": {k: v for k, v in sorted(_own(engine).items()) if _setting(k)},
        "modes": modes,
        "threshold": report.field("relative_threshold", {}).get("fraction") if report.field("relative_threshold") else report.threshold,
        "task_thresholds": dict(sorted(report.task_thresholds.items())),
        "samples_per_item": report.field("samples_per_item"),
        "seeds": report.field("seeds"),
        "chat_template": report.field("chat_template"),
    }
    digest = hashlib.sha256(json.dumps(settings, sort_keys=True, default=str).encode()).hexdigest()[:10]
    return digest, settings


def _short(value: Any, limit: int = 24) -> str:
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def engine_summary(engine: Any) -> str:
    """``backend (k=v, ...); torch X, transformers Y`` from the report's ``engine``; ``unknown`` without one."""
    if not isinstance(engine, Mapping):
        return "unknown"
    own = ", ".join(f"{k}={_short(v)}" for k, v in _own(engine).items() if k != "engine")
    versions = ", ".join(f"{k} {v}" for k, v in (engine.get("versions") or {}).items() if v)
    head = f"{engine.get('backend')}" + (f" ({own})" if own else "")
    return head + (f"; {versions}" if versions else "")
