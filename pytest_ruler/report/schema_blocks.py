"""Building blocks of the report's JSON Schema (``report.schema``): a field's node from its type and description.

    t(kind, desc)         a field of a JSON type      opt(kind, desc)     the same, or null
    obj(desc, props, ...) an object with properties   arr(desc, items)    an array
    ref(name)             one of the schema's $defs   mapping(desc, values) an object keyed by data

A part of the report that a feature adds describes its fields in its own module with these blocks
(``report.schema_*``), and ``build_schema`` adds it in one line.

Public names: ``Node``, ``arr``, ``mapping``, ``obj``, ``opt``, ``ref``, ``t``.
"""

from __future__ import annotations

from typing import Any

__all__ = ["Node", "arr", "mapping", "obj", "opt", "ref", "t"]


Node = dict[str, Any]


def _kinds(kind: str | list[str], nullable: bool) -> str | list[str]:
    kinds = [kind] if isinstance(kind, str) else list(kind)
    return [*kinds, "null"] if nullable else kinds[0] if len(kinds) == 1 else kinds


def t(kind: str | list[str], desc: str, **kw: Any) -> Node:
    """A field of JSON type ``kind`` (a name or a list of names)."""
    return {"type": kind, "description": desc, **kw}


def opt(kind: str, desc: str, **kw: Any) -> Node:
    """A field that may also be null."""
    return {"type": _kinds(kind, True), "description": desc, **kw}


def obj(desc: str, props: dict[str, Node], required: tuple[str, ...] = (), extra: Any = None, nullable: bool = False) -> Node:
    """An object with these properties (``extra``: its additionalProperties, when it says)."""
    node = {"type": _kinds("object", nullable), "description": desc, "properties": props}
    if required:
        node["required"] = list(required)
    if extra is not None:
        node["additionalProperties"] = extra
    return node


def arr(desc: str, items: Node, nullable: bool = False) -> Node:
    return {"type": _kinds("array", nullable), "description": desc, "items": items}


def ref(name: str, desc: str | None = None) -> Node:
    """One of ``$defs`` (an item, a summary, ...), with this field's own description."""
    return {"$ref": f"#/$defs/{name}", **({"description": desc} if desc else {})}


def mapping(desc: str, values: Node, nullable: bool = False, keys: str | None = None) -> Node:
    """An object keyed by data (task names, lengths, URLs): every value as ``values``."""
    node = {"type": _kinds("object", nullable), "description": desc, "additionalProperties": values}
    if keys:
        node["propertyNames"] = {"pattern": keys}
    return node
