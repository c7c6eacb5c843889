"""Pairing a baseline's questions with the current run's, for the paired regression test.

    report items ──question_scores(items)──► {(task, length, mode): {prompt hash: score}} (None: not pairable)
    both sides' maps of one cell ──paired_scores(base, cur)──► (baseline scores, current scores) of the shared questions

RULER samples are deterministic per (task, length, seed, index), so a baseline made with
the same tokenizer and chat template asks the very same questions: each item records a
hash of every sample's prompt (``sample_hashes``, beside ``sample_scores``), equal across
runs exactly when the question is the same. A cell is pairable when all its items carry
one hash per score; a question asked twice on one side (it should not happen) counts
with its mean score. :func:`pytest_ruler.results.baseline.compare` tests the shared
questions with :func:`pytest_ruler.results.stats.paired_less` and falls back to the
unpaired test when a cell is not pairable or the two runs share no question (another
tokenizer or template), and says so.

Public names: ``question_scores``, ``paired_scores``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["paired_scores", "question_scores"]

Key = tuple[str, int, str]


def question_scores(items: Iterable[Mapping[str, Any]]) -> dict[Key, dict[str, float] | None]:
    """Per cell, ``{prompt hash: score in [0, 1]}``; ``None`` for a cell with an item
    that has no hashes, or not one per score."""
    sums: dict[Key, dict[str, list[float]] | None] = {}
    for item in items:
        key = (item["task"], int(item["length"]), item.get("mode", "native"))
        hashes, scores = list(item.get("sample_hashes") or ()), list(item.get("sample_scores") or ())
        acc = sums.setdefault(key, {})
        if acc is None or not hashes or len(hashes) != len(scores):
            sums[key] = None
            continue
        for h, s in zip(hashes, scores):
            acc.setdefault(str(h), []).append(float(s))
    return {k: (None if v is None else {h: sum(s) / len(s) for h, s in v.items()}) for k, v in sums.items()}


def paired_scores(base: Mapping[str, float], cur: Mapping[str, float]) -> tuple[list[float], list[float]]:
    """The scores of the questions both runs asked, in the same (hash) order."""
    shared = sorted(set(base) & set(cur))
    return [base[h] for h in shared], [cur[h] for h in shared]
