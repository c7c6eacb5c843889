"""MRCR's grade, as its data set's README defines it: a prefix gate, then a similarity ratio.

    grade(response, answer, random_string) ──► 0.0 when the response does not start with the
        random string; else difflib.SequenceMatcher(None, response', answer').ratio(), where ' is
        the text with that prefix removed once from the front (the answer starts with it too)

The item's score is the mean over its samples × 100 (the ``mrcr`` metric of
:mod:`pytest_ruler.results.scoring`). The response is graded as the engine gave it: no strip,
no case folding (the reference neither), so a leading space or newline before the prefix
scores 0, as it does there.

A sample's references are ``(answer, random_string)``: the task family writes them in that
order (``tasks.mrcr``), so the report's ``answers`` of a prediction shows both.

Public names: ``grade``, ``sample_score_mrcr``, ``SCORERS``.
"""

from __future__ import annotations

from difflib import SequenceMatcher
from typing import Sequence

from ..errors import RulerUsageError

__all__ = ["SCORERS", "grade", "sample_score_mrcr"]


def grade(response: str, answer: str, random_string: str) -> float:
    """MRCR's grade of one response, in [0, 1] (see the module docstring)."""
    if not response.startswith(random_string):
        return 0.0
    rest = response[len(random_string):]
    reference = answer[len(random_string):] if answer.startswith(random_string) else answer
    return float(SequenceMatcher(None, rest, reference).ratio())


def sample_score_mrcr(pred: str, refs: Sequence[str]) -> float:
    """One sample's grade; ``refs`` is ``(answer, random_string)``."""
    if isinstance(refs, str) or len(refs) != 2:
        raise RulerUsageError("refs", refs, "an MRCR sample's references are [answer, random_string_to_prepend]")
    return grade(pred, refs[0], refs[1])


SCORERS = {"mrcr": sample_score_mrcr}
