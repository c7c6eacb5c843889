"""Table 3's notation that the report model and its renderers share: row order and lengths.

    task names ──ordered_tasks(names)──► Table 3's row order
    an effective length + the tested lengths ──format_effective_length(n, lengths)──► "8K", "<4K", "≥128K"

The lowest layer of the results' presentation: it reads no report, so the typed report
(:mod:`.report`, whose ``ModeResults.effective`` prints an effective length), the budgets'
notes (:mod:`.budgets`) and the renderers above them (:mod:`.table`, :mod:`.cells`, the
``report`` part) all use it without importing each other.

Public names: ``TASK_ORDER``, ``format_effective_length``, ``ordered_tasks``.
"""

from __future__ import annotations

from typing import Sequence

from ..lengths import format_length

__all__ = ["TASK_ORDER", "format_effective_length", "ordered_tasks"]

#: the paper's row order for the 13 standard tasks; other tasks follow in report order
TASK_ORDER = ("niah_single_1", "niah_single_2", "niah_single_3", "niah_multikey_1", "niah_multikey_2", "niah_multikey_3",
              "niah_multivalue", "niah_multiquery", "vt", "cwe", "fwe", "qa_1", "qa_2")


def ordered_tasks(names: Sequence[str]) -> list[str]:
    """Table 3's row order: the paper's 13 tasks, then each pack's tasks in the pack's own order
    (``tasks.registry.PACKS``), then the others in the order given."""
    from ..tasks.registry import PACKS  # another part, and not light: read when a table is ordered

    seen = list(dict.fromkeys(names))
    order = [*TASK_ORDER, *(t for members in PACKS.values() for t in members)]
    known = set(order)
    return [t for t in order if t in seen] + [t for t in seen if t not in known]


def format_effective_length(n: int | None, lengths: Sequence[int] = ()) -> str:
    """An effective length as the paper prints it, over the tested ``lengths``."""
    lengths = sorted(int(L) for L in lengths)
    if n is None:
        return f"<{format_length(lengths[0])}" if lengths else "-"
    if lengths and n >= lengths[-1]:
        return f"≥{format_length(n)}"
    return format_length(n)
