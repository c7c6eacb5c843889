"""Split a document into chunks of at most N tokens, only at text boundaries.

Data flow::

    context ──split_units──► units (paragraphs, else lines, else sentences, else words;
                               each keeps its trailing separator, so "".join(units) == context)
            ──pack(units, budget, overlap)──► Chunk(text, first, last, tokens) ...

A unit is the coarsest piece that fits the budget: a paragraph that fits stays
whole, one that does not is split into lines, a line into sentences, a sentence
into words. A RULER needle, a variable-tracking statement or a numbered word is
one line or one sentence, so a chunk boundary never cuts one. Packing is greedy
over consecutive units; ``overlap`` repeats the last units of a chunk (up to
that many tokens) at the start of the next one.

Token counts are sums of per-unit counts (memoised by the tokenizer), an
estimate: the caller verifies each finished prompt by tokenizing it and
re-packs with a smaller budget if one overshoots (``pipeline.map_requests``).

Public names: ``Chunk``, ``split_units``, ``pack``, ``chunk_text``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Sequence

__all__ = ["Chunk", "chunk_text", "pack", "split_units"]

# the separator stays with the piece before it
_LEVELS: tuple[re.Pattern[str], ...] = (
    re.compile(r".*?(?:\n[ \t]*\n\s*|$)", re.S),  # paragraphs (blank lines)
    re.compile(r".*?(?:\n|$)", re.S),  # lines
    re.compile(r".*?(?:(?<=[.!?])\s+|$)", re.S),  # sentences
    re.compile(r"\S*\s*|.+", re.S),  # words
)


@dataclass(frozen=True)
class Chunk:
    """Units ``first .. last-1`` of the document; ``text`` is their concatenation."""

    index: int
    text: str
    first: int
    last: int
    tokens: int  # estimated (sum of unit counts)
    start_char: int
    end_char: int


def _pieces(text: str, level: int) -> list[str]:
    return [p for p in _LEVELS[level].findall(text) if p]


def split_units(text: str, budget: int, count: Callable[[Sequence[str]], list[int]]) -> list[str]:
    """``text`` as units that each fit ``budget`` tokens where a boundary allows.

    ``count`` gives token counts of many pieces. Concatenating the units gives
    ``text`` back exactly. A single word longer than the budget stays one unit
    (the caller's fit check reports it).
    """

    def split(piece: str, level: int) -> list[str]:
        if level >= len(_LEVELS):
            return [piece]
        parts = _pieces(piece, level)
        if len(parts) <= 1 and level + 1 < len(_LEVELS):
            return split(piece, level + 1)
        out: list[str] = []
        for part, n in zip(parts, count(parts)):
            out += [part] if n <= budget else split(part, level + 1)
        return out

    if not text:
        return []
    return split(text, 0)


def pack(units: Sequence[str], counts: Sequence[int], budget: int, overlap: int = 0) -> list[Chunk]:
    """Greedy chunks of consecutive units, each at most ``budget`` tokens (estimated).

    ``overlap`` (tokens) repeats trailing units of a chunk at the start of the
    next, never so many that a chunk makes no progress. A unit alone over the
    budget gets a chunk of its own.
    """
    if budget < 1:
        raise ValueError(f"chunk budget must be positive, got {budget}")
    overlap = max(0, min(overlap, budget // 2))
    offsets = [0]
    for u in units:
        offsets.append(offsets[-1] + len(u))
    chunks: list[Chunk] = []
    start = 0
    n = len(units)
    while start < n:
        end, total = start, 0
        while end < n and (end == start or total + counts[end] <= budget):
            total += counts[end]
            end += 1
        chunks.append(Chunk(len(chunks), "".join(units[start:end]), start, end, total, offsets[start], offsets[end]))
        if end >= n:
            break
        nxt, kept = end, 0
        while overlap and nxt - 1 > start and kept + counts[nxt - 1] <= overlap:
            nxt -= 1
            kept += counts[nxt]
        start = nxt
    return chunks


def chunk_text(text: str, budget: int, count: Callable[[Sequence[str]], list[int]], overlap: int = 0) -> list[Chunk]:
    """``split_units`` then ``pack``: the chunks of one document."""
    units = split_units(text, budget, count)
    return pack(units, count(units), budget, overlap)
