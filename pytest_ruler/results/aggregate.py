"""Per-length scores, the paper's averages, and effective length.

RULER reports one score per tested context length (the unweighted mean of the task
scores at that length) and condenses those into:

- Avg: the plain mean over lengths;
- wAvg (inc): weights 1..n, shortest length first, over n(n+1)/2 (long contexts matter more);
- wAvg (dec): weights n..1 over n(n+1)/2 (short contexts matter more);
- effective length: the longest tested length whose score is strictly above a threshold,
  by default 85.6, Llama-2-7B-chat's score at 4K (Table 3 of the paper).

Public names:

- :data:`DEFAULT_THRESHOLD` -- 85.6.
- :func:`passes` -- the one pass rule: ``score > threshold`` (the paper's "exceeds").
  Items, Table 3's effective lengths (overall and per task), the confidence bound, the
  gate, Markdown and the CLI all decide through it, so a score exactly at the mark fails
  everywhere alike.
- :func:`mean_over_tasks` -- ``{task: {length: score}}`` to ``{length: mean score}``.
- :func:`avg`, :func:`wavg_inc`, :func:`wavg_dec` -- the three averages over lengths.
- :func:`effective_length` -- longest length strictly above the threshold, or ``None``.
- :class:`LengthSummary` -- all of the above for one run; ``to_dict`` / ``from_dict``
  give the JSON shape used in reports.
- :func:`summarize` -- builds a :class:`LengthSummary` from per-task scores.

Scores are percentages in [0, 100]; lengths are positive token counts (4096, ...). Bad
input raises :class:`~pytest_ruler.errors.RulerUsageError`.

Which rule the paper's effective length follows. Every row of Table 3 gives the same
answer under "longest length above the threshold" and under "last length before the
first failure": no Table 3 row passes at a longer length after failing at a shorter one,
and no Table 3 score ties the threshold. The appendix tables decide it: in Table 13
(retrieval, threshold 96.9) Yi-34B scores 98.2, 96.8, 97.3, ... and is given 16K although
8K fails, and in Table 14 (variable tracking, threshold 58.8) LongLoRA-base scores
92.5, 87.4, 73.1, 56.0, 69.2, 0.0 and is given 64K although 32K fails. So the paper uses
the longest passing length, not a prefix rule, and so does :func:`effective_length`.
A later failure does not cancel an earlier pass and an earlier failure does not cap a
later pass. Strictness cannot be settled from the printed (1-decimal) numbers: in
Table 16 LongAlpaca-13B's 16K score prints as 49.7, equal to that table's 49.7 threshold,
and is counted as passing. We use strictly-above, as the paper's Table 3 caption does (the longest length that exceeds the threshold); with unrounded scores
an exact tie is rare. The paper prints ">128K" when the longest tested length passes
(Gemini-1.5-Pro) and "<4K" when none does; here those are ``max(lengths)`` and ``None``.

Note that the averages are only comparable to the paper's when the same lengths were
tested; with other length sets the weights are still 1..n over whatever was tested.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from numbers import Real
from typing import Any

from pytest_ruler.errors import RulerUsageError

__all__ = [
    "DEFAULT_THRESHOLD",
    "LengthSummary",
    "avg",
    "effective_length",
    "mean_over_tasks",
    "passes",
    "summarize",
    "wavg_dec",
    "wavg_inc",
]

DEFAULT_THRESHOLD = 85.6


def passes(score: float, threshold: float) -> bool:
    """The one pass rule: a score passes when it is strictly above its threshold.

    RULER's effective length is the longest length whose score *exceeds* the threshold
    (Table 3's caption); an item, a cell and a length all pass by the same rule.
    """
    return score > threshold


def _is_number(value: object) -> bool:
    kind = type(value)  # float and int first: the ABC check is the slow part of a large report's summary
    return kind is float or kind is int or (kind is not bool and isinstance(value, Real))


def _check_threshold(threshold: float) -> float:
    if not _is_number(threshold) or not 0.0 <= float(threshold) <= 100.0:
        raise RulerUsageError(
            "threshold",
            threshold,
            f"`threshold` must be a percentage in [0, 100]; the paper's is "
            f"{DEFAULT_THRESHOLD} (Llama-2-7B-chat at 4K).",
        )
    return float(threshold)


def _check_length(length: object, parameter: str) -> int:
    if not isinstance(length, int) or isinstance(length, bool) or length <= 0:
        raise RulerUsageError(
            parameter, length, "context lengths must be positive ints (tokens), e.g. 4096."
        )
    return length


def _check_score(score: object, parameter: str) -> float:
    if not _is_number(score) or not 0.0 <= float(score) <= 100.0:  # NaN fails too
        raise RulerUsageError(
            parameter, score, "scores must be percentages in [0, 100]."
        )
    return float(score)


def _sorted_scores(per_length: Mapping[int, float], parameter: str = "per_length") -> list[float]:
    """Validated scores ordered shortest length first."""
    if not isinstance(per_length, Mapping):
        raise RulerUsageError(parameter, per_length, "pass a mapping {length: score}.")
    if len(per_length) == 0:
        raise RulerUsageError(parameter, {}, "at least one length needs a score.")
    items = []
    for length, score in per_length.items():
        items.append(
            (
                _check_length(length, f"{parameter} length"),
                _check_score(score, f"{parameter}[{length!r}]"),
            )
        )
    items.sort()
    return [score for _, score in items]


def _weighted_mean(scores: list[float], weights: list[int]) -> float:
    total = math.fsum(w * s for w, s in zip(weights, scores))
    mean = total / sum(weights)
    # A weighted mean lies within [min, max]; clamping removes only float rounding.
    return min(max(mean, min(scores)), max(scores))


def mean_over_tasks(task_scores: Mapping[str, Mapping[int, float]]) -> dict[int, float]:
    """Per length, the unweighted mean of the task scores present at that length.

    The result is ordered by length. A task missing at some length simply does not take
    part in that length's mean (so such means are over different task sets).
    """
    if not isinstance(task_scores, Mapping):
        raise RulerUsageError(
            "task_scores", task_scores, "pass a mapping {task: {length: score}}."
        )
    by_length: dict[int, list[float]] = {}
    for task, per_length in task_scores.items():
        if not isinstance(per_length, Mapping):
            raise RulerUsageError(
                f"task_scores[{task!r}]", per_length, "pass a mapping {length: score}."
            )
        for length, score in per_length.items():
            key = _check_length(length, f"task_scores[{task!r}] length")
            by_length.setdefault(key, []).append(
                _check_score(score, f"task_scores[{task!r}][{length!r}]")
            )
    return {
        length: min(max(math.fsum(s) / len(s), min(s)), max(s))
        for length, s in sorted(by_length.items())
    }


def avg(per_length: Mapping[int, float]) -> float:
    """The plain mean of the per-length scores (the paper's Avg.)."""
    scores = _sorted_scores(per_length)
    return _weighted_mean(scores, [1] * len(scores))


def wavg_inc(per_length: Mapping[int, float]) -> float:
    """Weights 1..n, shortest length first, over n(n+1)/2 (the paper's wAvg. (inc))."""
    scores = _sorted_scores(per_length)
    return _weighted_mean(scores, list(range(1, len(scores) + 1)))


def wavg_dec(per_length: Mapping[int, float]) -> float:
    """Weights n..1, shortest length first, over n(n+1)/2 (the paper's wAvg. (dec))."""
    scores = _sorted_scores(per_length)
    return _weighted_mean(scores, list(range(len(scores), 0, -1)))


def effective_length(
    per_length: Mapping[int, float], threshold: float = DEFAULT_THRESHOLD
) -> int | None:
    """The longest tested length whose score is strictly above ``threshold``, else ``None``.

    A failure at a shorter length does not stop a longer length from counting (this is
    what the paper's tables do; see the module docstring).
    """
    limit = _check_threshold(threshold)
    _sorted_scores(per_length)  # validation only
    passing = [length for length, score in per_length.items() if passes(score, limit)]
    return max(passing) if passing else None


@dataclass(frozen=True)
class LengthSummary:
    """One run's scores over lengths, as the paper reports them."""

    per_length: dict[int, float]
    avg: float
    wavg_inc: float
    wavg_dec: float
    effective_length: int | None
    per_task_effective_length: dict[str, int | None] = field(default_factory=dict)
    threshold: float = DEFAULT_THRESHOLD

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready shape; ``per_length`` keys become strings (``"4096"``)."""
        return {
            "per_length": {str(length): score for length, score in self.per_length.items()},
            "avg": self.avg,
            "wavg_inc": self.wavg_inc,
            "wavg_dec": self.wavg_dec,
            "effective_length": self.effective_length,
            "per_task_effective_length": dict(self.per_task_effective_length),
            "threshold": self.threshold,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> LengthSummary:
        """Inverse of :meth:`to_dict` (e.g. to compare against a saved baseline)."""
        try:
            per_length = {int(k): float(v) for k, v in data["per_length"].items()}
            return cls(
                per_length=per_length,
                avg=float(data["avg"]),
                wavg_inc=float(data["wavg_inc"]),
                wavg_dec=float(data["wavg_dec"]),
                effective_length=(
                    None if data["effective_length"] is None else int(data["effective_length"])
                ),
                per_task_effective_length={
                    str(k): None if v is None else int(v)
                    for k, v in data.get("per_task_effective_length", {}).items()
                },
                threshold=float(data.get("threshold", DEFAULT_THRESHOLD)),
            )
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise RulerUsageError(
                "summary", data, f"not a LengthSummary.to_dict() shape ({exc})."
            ) from None


def summarize(
    task_scores: Mapping[str, Mapping[int, float]],
    threshold: float = DEFAULT_THRESHOLD,
    task_thresholds: Mapping[str, float] | None = None,
) -> LengthSummary:
    """Per-length means over tasks, the three averages, and effective lengths.

    ``per_task_effective_length`` applies each task's own mark (``task_thresholds``,
    else ``threshold``) to that task on its own (ordered by task name); the overall
    effective length applies ``threshold`` to the mean over tasks. The paper's 85.6 is
    calibrated on the 13-task mean; its per-category tables use each category's own
    Llama-2-7B 4K score instead, which is what per-task marks are for.
    """
    limit = _check_threshold(threshold)
    marks = {task: _check_threshold(v) for task, v in (task_thresholds or {}).items()}
    per_length = mean_over_tasks(task_scores)
    if not per_length:
        raise RulerUsageError(
            "task_scores", task_scores, "at least one task needs a score at one length."
        )
    return LengthSummary(
        per_length=per_length,
        avg=avg(per_length),
        wavg_inc=wavg_inc(per_length),
        wavg_dec=wavg_dec(per_length),
        effective_length=effective_length(per_length, limit),
        per_task_effective_length={
            task: (effective_length(scores, marks.get(task, limit)) if scores else None)
            for task, scores in sorted(task_scores.items(), key=lambda kv: str(kv[0]))
        },
        threshold=limit,
    )
