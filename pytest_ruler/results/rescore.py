"""A saved report's items re-derived from their samples: a score its samples do not give is refused.

    Report.items ──items_disagreement(items)──► None, or "item TASK[LEN-seedS]: what disagrees"
        (results.saved.check_report turns it into one RulerUsageError naming the file)

Each item (task, length, seed, mode) is checked as far as its fields go, in this order:

1. ``score`` against ``sample_scores``: every metric of RULER and RULERv2 (``results.scoring``:
   ``all``, ``part``, the soft matches, ``multichoice``) scores an item 100 × the mean of its
   per-sample scores in [0, 1], native items and map-reduce twins alike, depth sweeps too
   (the sweep spreads the samples over depths; the item's score is still their mean). The run
   stores the score and each sample score rounded to 4 digits (``runner.item_result``,
   ``runner._sample_scores``), so the two may differ by the score's rounding plus 100 × a sample
   score's: ``MEAN_TOLERANCE`` (0.00505 points), and by no more.
2. each of ``predictions`` (``{index, prediction, answers, score, ...}``) re-scored: its prediction
   against its answers with the task's own per-sample metric (``scoring.sample_scorer(spec.metric)``,
   the spec found by the item's task name in the task registry, ``tasks.registry.get_task``);
   ``sample_scores[i]`` and the record's own ``score`` must be that score as the run stored it
   (rounded to 4 digits: within ``SAMPLE_TOLERANCE``). The predictions are as many as the sample
   scores. A prediction that holds ``<secret>`` (``secrets.SECRET_MARK``: the API key was masked
   when the record was written, after it was scored) is not re-scored: its text is not the one scored.
3. ``score`` against the re-scored predictions, unrounded: within the score's own rounding
   (``SCORE_TOLERANCE``); not when a prediction was masked (then 1 is the check).
4. a depth sweep's ``depth_scores`` (``{depth: score}``): sample ``i`` ran at the sweep's depth
   ``i mod k`` in the order ``--ruler-depths`` gave them, an order the report does not keep; so
   each stored depth score must be the mean of one of those k groups, each group used once
   (the per-sample scores re-scored where they were, else as stored, with the tolerances above).

What a report lacks is not checked: reports written before ``sample_scores`` or ``predictions``
existed (README: they still load everywhere), an errored or over-length item with no samples.
An item whose task this process does not know (a custom task registered by a conftest's
``pytest_ruler_register`` hook, read by the ``pytest-ruler`` command, which loads no conftest) is
checked by 1 and 4, and its records' ``score`` against ``sample_scores``; its predictions are
not re-scored (the metric is the task's, unknown here). A record's answers are taken as stored:
they are checked for shape, not against the task's samples (that would mean generating them again).

Public names: ``MEAN_TOLERANCE``, ``SAMPLE_TOLERANCE``, ``SCORE_TOLERANCE``, ``item_disagreement``,
``item_label``, ``items_disagreement``, ``metric_of``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from ..errors import RulerUsageError
from ..secrets import SECRET_MARK
from .item import ItemResult
from .scoring import sample_scorer

__all__ = ["MEAN_TOLERANCE", "SAMPLE_TOLERANCE", "SCORE_TOLERANCE", "item_disagreement", "item_label",
           "items_disagreement", "metric_of"]

_HALF = 0.5e-4  # half a unit of the 4th digit: what round(x, 4) may move a number
_FLOAT = 1e-9  # float arithmetic over a few thousand terms
SAMPLE_TOLERANCE = _HALF + _FLOAT  # a stored sample score against its re-scored prediction
SCORE_TOLERANCE = _HALF + _FLOAT  # a stored score against the mean of unrounded sample scores
MEAN_TOLERANCE = 100 * _HALF + _HALF + _FLOAT  # a stored score against the mean of stored (rounded) sample scores


def item_label(r: ItemResult) -> str:
    """How the run names an item: ``vt[4096-seed0]``, ``vt[4096-seed0-mapreduce]``."""
    return f"{r.task}[{r.length}-seed{r.seed}{'-mapreduce' if r.mode == 'mapreduce' else ''}]"


def metric_of(task: str) -> str | None:
    """The metric of the task registered under ``task`` in this process, None when none is."""
    from ..tasks.registry import get_task

    try:
        return get_task(task).metric
    except RulerUsageError:
        return None


def items_disagreement(items: Iterable[ItemResult], metric: Callable[[str], str | None] = metric_of) -> str | None:
    """The first item whose fields disagree (see the module docstring), as ``item LABEL: what``, or None."""
    metrics: dict[str, str | None] = {}
    for r in items:
        if r.task not in metrics:
            metrics[r.task] = metric(r.task)
        problem = item_disagreement(r, metrics[r.task])
        if problem:
            return f"item {item_label(r)}: {problem}"
    return None


def _show(value: Any, width: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= width else text[:width - 3] + "..."


def _num(x: float) -> str:
    return repr(round(float(x), 4))


def item_disagreement(r: ItemResult, metric: str | None) -> str | None:
    """What in item ``r`` its samples do not give, or None; ``metric``: its task's metric (None: unknown)."""
    stored = [float(s) for s in r.sample_scores]
    if stored:
        mean = math.fsum(stored) / len(stored) * 100.0
        if abs(r.score - mean) > MEAN_TOLERANCE:
            return f"score {_num(r.score)} but its sample_scores give {_num(mean)} (100 × the mean of {len(stored)})"
    rescored: list[float] | None = None
    if r.predictions:
        problem, rescored = _predictions(r.predictions, stored, metric)
        if problem:
            return problem
        if rescored is not None:
            exact = math.fsum(rescored) / len(rescored) * 100.0
            if abs(r.score - exact) > SCORE_TOLERANCE:
                return f"score {_num(r.score)} but its {len(rescored)} predictions, re-scored by the metric {metric!r}, give {_num(exact)}"
    if r.depth_scores:
        per_sample = rescored or stored
        if per_sample:
            indices = [p.get("index") for p in r.predictions] if len(r.predictions) == len(per_sample) else []
            if not all(type(i) is int and i >= 0 for i in indices) or not indices:
                indices = list(range(len(per_sample)))
            return _depth_problem(r.depth_scores, per_sample, indices, SCORE_TOLERANCE if rescored else MEAN_TOLERANCE)
    return None


def _predictions(records: Sequence[Mapping[str, Any]], stored: list[float],
                 metric: str | None) -> tuple[str | None, list[float] | None]:
    """Each record re-scored (None: the metric is unknown, or a record was masked), or what disagrees."""
    if stored and len(records) != len(stored):
        return f"it has {len(records)} predictions but {len(stored)} sample_scores (one of each per sample)", None
    scorer = None
    if metric is not None:
        scorer = sample_scorer(metric)
    rescored: list[float] | None = [] if scorer is not None else None
    masked = False
    for i, rec in enumerate(records):
        pred, answers, own = rec.get("prediction"), rec.get("answers"), rec.get("score")
        if not isinstance(pred, str):
            return f"predictions[{i}] has no 'prediction' string (found {_show(pred)})", None
        if not isinstance(answers, list) or not answers or not all(isinstance(a, str) for a in answers):
            return f"predictions[{i}] has no 'answers' list of strings (found {_show(answers)})", None
        if own is not None and (type(own) is bool or not isinstance(own, (int, float)) or not math.isfinite(own)):
            return f"predictions[{i}].score is not a number (found {_show(own)})", None
        if stored and own is not None and abs(float(own) - stored[i]) > SAMPLE_TOLERANCE:
            return f"predictions[{i}].score is {_num(own)} but sample_scores[{i}] is {_num(stored[i])}", None
        if scorer is None:
            continue
        if SECRET_MARK in pred:
            masked = True  # masked after it was scored: the text scored is not here
            continue
        try:
            score = float(scorer(pred, answers))  # type: ignore[misc]
        except (RulerUsageError, ValueError, TypeError, IndexError) as exc:
            return f"predictions[{i}] cannot be scored by the metric {metric!r} ({exc})", None
        given = stored[i] if stored else (float(own) if own is not None else None)
        if given is not None and abs(given - score) > SAMPLE_TOLERANCE:
            field = f"sample_scores[{i}]" if stored else f"predictions[{i}].score"
            return (f"{field} is {_num(given)} but its prediction {_show(pred, 40)} scores {_num(score)} against its "
                    f"answers {_show(answers, 40)} by the task's metric {metric!r}"), None
        rescored.append(score)  # type: ignore[union-attr]
    return None, None if masked else rescored


def _depth_problem(depth_scores: Mapping[str, float], per_sample: Sequence[float], indices: Sequence[int],
                   tolerance: float) -> str | None:
    """None when each stored depth score is the mean of one group ``index mod k``, each group once."""
    depths = list(depth_scores)
    for d in depths:
        v = depth_scores[d]
        if type(v) is bool or not isinstance(v, (int, float)) or not math.isfinite(v):
            return f"depth_scores[{d!r}] is not a number (found {_show(v)})"
    k = len(depths)
    groups: list[list[float]] = [[] for _ in range(k)]
    for i, s in zip(indices, per_sample):
        groups[i % k].append(s)
    means = [math.fsum(g) / len(g) * 100.0 if g else None for g in groups]
    fits = [[p for p, m in enumerate(means) if m is not None and abs(float(depth_scores[d]) - m) <= tolerance] for d in depths]
    owner: dict[int, int] = {}  # group -> depth: a matching of depths to groups (augmenting paths; k is small)

    def place(d: int, seen: set[int]) -> bool:
        for p in fits[d]:
            if p not in seen:
                seen.add(p)
                if p not in owner or place(owner[p], seen):
                    owner[p] = d
                    return True
        return False

    if all(place(d, set()) for d in range(k)):
        return None
    shown = {d: round(float(v), 4) for d, v in depth_scores.items()}
    return (f"depth_scores is {_show(shown)} but its samples, at depth i mod {k}, give "
            f"{_show([None if m is None else round(m, 4) for m in means])} (no depth matches one of them each)")
