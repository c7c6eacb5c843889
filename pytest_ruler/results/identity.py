"""The engine's identity in a report: the identity that keyed the cache, written down and compared.

    engines.registry.engine_identity(config) ──► {"backend", "class", "engine": what the engine
        says of itself (``describe(config)`` or ``identity()``), None when only a loaded engine can tell}
        (the engine part of every prediction's cache key: run.cache.prediction_key)
    engine_record(identity, options=, versions=) ──► the report's top-level ``engine``:
        {"backend": the registered name, "class": module.qualname of its factory,
         <the engine's own identity, key by key: dtype, model (revision or weights digest), ...>,
         "options": the --ruler-engine-option values, "versions": {torch, transformers, vllm}}
        (an own key named like one of those four is written as ``engine_<key>``); when the engine's
        own part is unknown (no ``describe()``, never loaded in this process) ``unknown`` says so.
        Every string is scrubbed (:func:`scrubbed`, which is :func:`pytest_ruler.secrets.scrubbed`).
    engine_differences(old, new) ──► ["dtype: bfloat16 -> float32", "versions.torch: 2.4.0 -> 2.5.1", ...]
        (``pytest-ruler merge`` refuses shards with any; the verdict and ``compare`` name them
        for a baseline). Nested values are named by dotted paths. ``options`` are not compared:
        an option that changes an answer is in the engine's own identity (scripted: ``mode``),
        the others (timeouts, concurrency, delays) do not make another engine. Nothing to
        compare (a report from before this field, or not a mapping) gives no differences; an
        unknown own part compares only backend, class and versions.

Public names: ``RESERVED``, ``engine_differences``, ``engine_record``, ``scrubbed``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ..secrets import scrubbed  # the one rule of secrets.scrub_typed, at any depth; re-exported

__all__ = ["RESERVED", "engine_differences", "engine_record", "scrubbed"]

#: the record's own keys; an engine's identity key of the same name is written as ``engine_<key>``
RESERVED = ("backend", "class", "options", "versions", "unknown")
_LIBRARIES = ("torch", "transformers", "vllm")
_UNKNOWN = ("the engine's own identity: it has no describe(), and its identity() needs the engine loaded, "
            "which no item of this process did")


def engine_record(identity: Mapping[str, Any] | None, *, options: Mapping[str, Any] | None = None,
                  versions: Mapping[str, Any] | None = None) -> dict[str, Any] | None:
    """The report's ``engine`` from the cache identity (see the module docstring); None without one."""
    if not isinstance(identity, Mapping):
        return None
    record: dict[str, Any] = {"backend": identity.get("backend"), "class": identity.get("class")}
    own = identity.get("engine")
    if isinstance(own, Mapping):
        for k, v in own.items():
            record[f"engine_{k}" if k in RESERVED else str(k)] = v
    elif own is not None:
        record["engine_identity"] = own
    else:
        record["unknown"] = _UNKNOWN
    record["options"] = dict(options or {})
    record["versions"] = {k: (versions or {}).get(k) for k in _LIBRARIES}
    return scrubbed(record)


def _flat(value: Any, path: str, out: dict[str, Any]) -> None:
    if isinstance(value, Mapping) and value:
        for k, v in value.items():
            _flat(v, f"{path}.{k}" if path else str(k), out)
    else:
        out[path] = value


def _shown(value: Any, limit: int = 80) -> str:
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def engine_differences(old: Any, new: Any) -> list[str]:
    """The fields in which two reports' ``engine`` entries differ, each ``"field: old -> new"``
    (a missing field shows as ``(none)``), in a stable order; empty when equal or unknown."""
    if not isinstance(old, Mapping) or not isinstance(new, Mapping):
        return []
    sides = []
    for record in (old, new):
        flat: dict[str, Any] = {}
        _flat({k: v for k, v in record.items() if k not in ("options", "unknown")}, "", flat)
        sides.append(flat)
    a, b = sides
    keys = list(dict.fromkeys([*a, *b]))
    if "unknown" in old or "unknown" in new:  # one side knows only what it ran on: backend, class, versions
        keys = [k for k in keys if k in ("backend", "class") or k.startswith("versions.")]
    none = object()
    out = []
    for k in keys:
        x, y = a.get(k, none), b.get(k, none)
        if x != y:
            out.append(f"{k}: {'(none)' if x is none else _shown(x)} -> {'(none)' if y is none else _shown(y)}")
    return out
