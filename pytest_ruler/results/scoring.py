"""The two RULER metrics: recall-style, case-insensitive substring matching.

RULER scores a prediction by checking which reference strings occur in it, after a
light clean-up of the prediction. Two metrics exist:

- ``string_match_all`` (NIAH, variable tracking, CWE, FWE): per sample, the fraction of
  the references found; the corpus score is 100 times the mean of those fractions.
- ``string_match_part`` (QA): per sample, 1 if any reference is found, else 0; the corpus
  score is 100 times the mean.

Everything here is a pure function over strings. Corpus scores are returned unrounded;
callers round for display (RULER itself prints them to 2 decimals).

Public names:

- :func:`postprocess` -- RULER's clean-up of a raw prediction.
- :func:`sample_score_all`, :func:`sample_score_part` -- one sample's score in [0, 1].
- :func:`string_match_all`, :func:`string_match_part` -- corpus scores in [0, 100].
- :data:`METRICS` -- read-only mapping ``{"all": string_match_all, "part": string_match_part, ...}``
  with RULERv2's soft metrics beside them (``ruler2_all``, ``ruler2_part``, ``ruler2_2steps``,
  ``multichoice``; :mod:`pytest_ruler.results.soft_match`) and MRCR's grade (``mrcr``;
  :mod:`pytest_ruler.results.mrcr_grade`).
- :func:`get_metric` -- a corpus metric by name; :func:`sample_scorer` -- a per-sample
  scorer by name. Both raise :class:`~pytest_ruler.errors.RulerUsageError` for unknown names.
- :func:`count_nulls` -- how many predictions are empty after post-processing ("Nulls").
- :data:`SampleScorer`, :data:`CorpusMetric` -- the two callable types.

Behaviour kept from RULER on purpose, so that scores stay comparable to the paper's:
references are *not* post-processed, so a reference that itself contains a control
character other than ``"\\n"`` (which maps to itself) can never match; matching uses
``str.lower()``, not ``str.casefold()``.
"""

from __future__ import annotations

import math
import re
from functools import partial
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType

from pytest_ruler.errors import RulerUsageError

from .mrcr_grade import SCORERS as MRCR_SCORERS
from .soft_match import SCORERS

__all__ = [
    "CorpusMetric",
    "METRICS",
    "SampleScorer",
    "count_nulls",
    "get_metric",
    "postprocess",
    "sample_score_all",
    "sample_score_part",
    "sample_scorer",
    "string_match_all",
    "string_match_part",
]

SampleScorer = Callable[[str, Sequence[str]], float]
CorpusMetric = Callable[[Sequence[str], Sequence[Sequence[str]]], float]

# RULER replaces every C0 control character (tab and newline included) by a newline.
_CONTROL_CHARS = re.compile(r"[\x00-\x1f]")


def postprocess(pred: str) -> str:
    """Strip, replace each control character ``[\\x00-\\x1f]`` by ``"\\n"``, strip again."""
    if not isinstance(pred, str):
        raise RulerUsageError(
            "pred", pred, "a prediction must be a str (use '' for an empty completion)."
        )
    return _CONTROL_CHARS.sub("\n", pred.strip()).strip()


def _check_refs(refs: Sequence[str], parameter: str = "refs") -> None:
    # A bare string is a Sequence[str] too; iterating it would score single characters.
    if isinstance(refs, str):
        raise RulerUsageError(
            parameter, refs, "references must be a list of strings, e.g. [\"1234\"], not a str."
        )
    if len(refs) == 0:
        raise RulerUsageError(
            parameter, list(refs), "each sample needs at least one reference answer."
        )
    for ref in refs:
        if not isinstance(ref, str):
            raise RulerUsageError(parameter, ref, "every reference must be a str.")
        if ref == "":
            # "" is a substring of everything: it would make any prediction correct.
            raise RulerUsageError(
                parameter, list(refs), "references must be non-empty strings."
            )


def _hits(pred: str, refs: Sequence[str]) -> list[bool]:
    text = postprocess(pred).lower()
    return [ref.lower() in text for ref in refs]


def sample_score_all(pred: str, refs: Sequence[str]) -> float:
    """Fraction in [0, 1] of ``refs`` found (case-insensitively) in the post-processed ``pred``."""
    _check_refs(refs)
    hits = _hits(pred, refs)
    return sum(hits) / len(hits)


def sample_score_part(pred: str, refs: Sequence[str]) -> float:
    """1.0 if any of ``refs`` is found (case-insensitively) in the post-processed ``pred``.

    0.0 otherwise.
    """
    _check_refs(refs)
    return 1.0 if any(_hits(pred, refs)) else 0.0


def _corpus_score(
    scorer: SampleScorer, preds: Sequence[str], refs: Sequence[Sequence[str]]
) -> float:
    if isinstance(preds, str):
        raise RulerUsageError("preds", preds, "pass a list of predictions, not a single str.")
    if isinstance(refs, str):
        raise RulerUsageError("refs", refs, "pass one list of references per prediction.")
    if len(preds) == 0:
        raise RulerUsageError("preds", list(preds), "score at least one prediction (N >= 1).")
    if len(preds) != len(refs):
        raise RulerUsageError(
            "refs",
            f"{len(refs)} reference lists",
            f"pass exactly one reference list per prediction ({len(preds)} predictions).",
        )
    for i, sample_refs in enumerate(refs):
        _check_refs(sample_refs, parameter=f"refs[{i}]")
    # fsum is exactly rounded, hence independent of sample order; dividing before
    # scaling keeps a perfect run at exactly 100.0.
    total = math.fsum(scorer(p, r) for p, r in zip(preds, refs))
    return total / len(preds) * 100.0


def string_match_all(preds: Sequence[str], refs: Sequence[Sequence[str]]) -> float:
    """100/N times the sum over samples of :func:`sample_score_all` (unrounded)."""
    return _corpus_score(sample_score_all, preds, refs)


def string_match_part(preds: Sequence[str], refs: Sequence[Sequence[str]]) -> float:
    """100/N times the sum over samples of :func:`sample_score_part` (unrounded)."""
    return _corpus_score(sample_score_part, preds, refs)


def _ruler2_metrics() -> tuple[dict[str, CorpusMetric], dict[str, SampleScorer]]:
    scorers: dict[str, SampleScorer] = {**SCORERS, **MRCR_SCORERS}  # type: ignore[arg-type]
    return {n: partial(_corpus_score, s) for n, s in scorers.items()}, scorers


_R2_METRICS, _R2_SCORERS = _ruler2_metrics()

METRICS: Mapping[str, CorpusMetric] = MappingProxyType(
    {"all": string_match_all, "part": string_match_part, **_R2_METRICS}
)

_SAMPLE_SCORERS: Mapping[str, SampleScorer] = MappingProxyType(
    {"all": sample_score_all, "part": sample_score_part, **_R2_SCORERS}
)


def _unknown_metric(name: object) -> RulerUsageError:
    valid = ", ".join(repr(n) for n in METRICS)
    return RulerUsageError("metric", name, f"use one of {valid}.")


def get_metric(name: str) -> CorpusMetric:
    """The corpus metric called ``name`` (``"all"`` or ``"part"``)."""
    try:
        return METRICS[name]
    except (KeyError, TypeError):
        raise _unknown_metric(name) from None


def sample_scorer(name: str) -> SampleScorer:
    """The per-sample scorer behind the metric called ``name`` (``"all"`` or ``"part"``)."""
    try:
        return _SAMPLE_SCORERS[name]
    except (KeyError, TypeError):
        raise _unknown_metric(name) from None


def count_nulls(preds: Sequence[str]) -> int:
    """How many predictions are empty after :func:`postprocess` (RULER's "Nulls")."""
    if isinstance(preds, str):
        raise RulerUsageError("preds", preds, "pass a list of predictions, not a single str.")
    return sum(1 for p in preds if postprocess(p) == "")
