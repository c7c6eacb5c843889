"""The report's fields that the history feature adds (``--ruler-label``, ``--ruler-history``), for ``report.schema``.

    history_fields() ──► {"label": ...}: the top-level properties, added to ``build_schema`` in one line

Public names: ``history_fields``.
"""

from __future__ import annotations

from .schema_blocks import Node, t

__all__ = ["history_fields"]


def history_fields() -> dict[str, Node]:
    """The top-level fields: the run's label."""
    return {
        "label": t("string", "The run's label (--ruler-label; with --ruler-history by default `git describe --always --dirty` "
                   "of the working directory, else the UTC date and time): how the history page and its export name the run."),
    }
