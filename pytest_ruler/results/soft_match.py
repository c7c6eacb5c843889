"""RULERv2's scorers: soft matching (substring, else 1 - word error rate), and the A-D letter.

RULERv2 (NeMo-Skills' ``ruler2``) scores a prediction against each reference with
``max(1 if the reference is a substring, 1 - WER)``, both case-insensitive, so a
near copy of a long reference (a question, a document) earns partial credit. Four
per-sample scorers, each in [0, 1]:

- ``ruler2_all`` (``match_type=all``): the mean over references of the soft match.
- ``ruler2_part`` (``match_type=part``, the QA tasks): ``Document N:`` blocks the model
  copied are removed first, then the best soft match over references.
- ``ruler2_2steps`` (``match_type=2steps``): only the text after the last blank line
  (the answer that follows the copied candidates), then as ``ruler2_all``.
- ``multichoice`` (the two A-D tasks): the letter inside the last ``\\boxed{...}``
  (a longer box content falls back to its last standalone letter A-J; no box at all
  falls back to the last ``Answer: X``) must equal the reference letter exactly.

Every soft scorer first cuts the prediction as the reference does: the text after the
last ``</think>``, then the text after the last ``Answer:``. Unlike RULER v1's
``postprocess``, control characters are kept (the reference passes the raw generation).
WER is the word-level Levenshtein distance over ``str.split()`` words divided by the
reference's word count (infinite for a reference with no words, which then scores only
by substring). A substring hit scores 1 without computing WER (``max`` could not be
higher), so a long prediction is not quadratic when it contains the reference; nor is one
whose word count differs from the reference's by at least the reference's (its WER is then
at least 1: it scores 0 without computing it).

Public names: ``SCORERS`` (name -> per-sample scorer), ``soft_match``, ``word_error_rate``,
``extract_letter``, ``sample_score_ruler2_all``, ``sample_score_ruler2_part``,
``sample_score_ruler2_2steps``, ``sample_score_multichoice``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from types import MappingProxyType

__all__ = [
    "SCORERS",
    "extract_letter",
    "sample_score_multichoice",
    "sample_score_ruler2_2steps",
    "sample_score_ruler2_all",
    "sample_score_ruler2_part",
    "soft_match",
    "word_error_rate",
]

# a copied document: "Document N:" up to and including the first blank line after it
_DOCUMENT_BLOCK = re.compile(r"Document \d+:(?:.*\n)+?\n")
_LAST_LETTER = re.compile(r"\b[A-J]\b(?!.*\b[A-J]\b)", re.DOTALL)
_ANSWER_LETTER = re.compile(r"(?i)[\*\_]{0,2}Answer[\*\_]{0,2}\s*:[\s\*\_]{0,2}\s*([A-Z])(?![a-zA-Z0-9])")


def _answer_part(pred: str) -> str:
    """The reference's cut: after the last ``</think>``, then after the last ``Answer:``."""
    if "</think>" in pred:
        pred = pred.split("</think>")[-1]
    if "Answer:" in pred:
        pred = pred.split("Answer:")[-1]
    return pred


def _levenshtein(a: Sequence[str], b: Sequence[str]) -> int:
    if len(a) < len(b):
        a, b = b, a
    previous = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        current = [i]
        for j, y in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (x != y)))
        previous = current
    return previous[-1]


def word_error_rate(hypothesis: str, reference: str) -> float:
    """Word edits turning ``hypothesis`` into ``reference`` over the reference's words (inf if none)."""
    ref = reference.split()
    if not ref:
        return float("inf")
    return _levenshtein(hypothesis.split(), ref) / len(ref)


def soft_match(pred: str, ref: str) -> float:
    """``max(1 if ref in pred else 0, 1 - WER(pred, ref))``, lower-cased: in [0, 1]."""
    p, r = pred.lower(), ref.lower()
    if r in p:
        return 1.0
    hyp, words = p.split(), r.split()
    if abs(len(hyp) - len(words)) >= len(words):
        return 0.0  # the edit distance is at least the length difference: WER >= 1 (a saved report is re-scored on every read)
    return max(0.0, 1.0 - _levenshtein(hyp, words) / len(words))


def sample_score_ruler2_all(pred: str, refs: Sequence[str]) -> float:
    text = _answer_part(pred)
    return sum(soft_match(text, r) for r in refs) / len(refs)


def sample_score_ruler2_2steps(pred: str, refs: Sequence[str]) -> float:
    text = _answer_part(pred).split("\n\n")[-1]
    return sum(soft_match(text, r) for r in refs) / len(refs)


def sample_score_ruler2_part(pred: str, refs: Sequence[str]) -> float:
    text = _DOCUMENT_BLOCK.sub("", _answer_part(pred))
    return max(soft_match(text, r) for r in refs)


def _boxed(text: str) -> str | None:
    """The content of the last ``\\boxed{...}`` (braces balanced), else None."""
    if "\\boxed" not in text:
        return None
    start = text.rfind("\\boxed")
    depth, end = 0, None
    for i in range(start, len(text)):
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
            if depth == 0:
                end = i
                break
    if end is None:
        return None
    box = text[start:end + 1]
    if not box.startswith("\\boxed{"):
        return None  # e.g. "\boxed {A}": the reference refuses it too
    return box[len("\\boxed{"):-1]


def extract_letter(pred: str) -> str | None:
    """The multiple-choice answer the reference reads from a prediction, or None."""
    parsed = _boxed(pred)
    if parsed is not None and len(parsed) != 1:
        found = _LAST_LETTER.findall(parsed)
        if found:
            parsed = found[-1].strip()
    if parsed is None:
        found = _ANSWER_LETTER.findall(pred)
        if found:
            parsed = found[-1].strip()
    return parsed


def sample_score_multichoice(pred: str, refs: Sequence[str]) -> float:
    """1.0 when the extracted letter equals the reference letter (exactly, as the reference compares)."""
    return 1.0 if extract_letter(pred) == refs[0] else 0.0


SCORERS: Mapping[str, object] = MappingProxyType({
    "ruler2_all": sample_score_ruler2_all,
    "ruler2_part": sample_score_ruler2_part,
    "ruler2_2steps": sample_score_ruler2_2steps,
    "multichoice": sample_score_multichoice,
})
