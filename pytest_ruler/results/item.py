"""ItemResult: what one item (task × length × seed, native or map-reduce) produced.

A frozen record, serialised into the test report (``report.ruler``, set in
``plugin.pytest_runtest_makereport``: so xdist workers hand it to the controller)
and into the JSON report's ``items``. ``predictions`` keeps every sample's
prediction next to its answers and score (``failures`` only the first three
failing ones, for the failure message). Long texts are stored once: a stored
failure names its sample by ``index`` and carries ``pred`` and ``outputs`` only
where they differ from that sample's ``predictions`` record (an engine error's
``<error: ...>``); ``from_dict`` fills them back. An item with ``error``
set has no trustworthy score: it fails, and aggregation treats its cell as
missing evidence.

The one judging rule (``item_passes``, ``judged``): an item passes its mark when it has no
error and its score is strictly above the mark (``aggregate.passes``, the rule of Table 3's
cells). Over-length samples (a prompt or a map-reduce call the model's context could not take)
score 0 like any failing sample and do not fail the item by themselves: the score decides. The
run (``run.runner``), the relative mark (``results.relative``), a saved report read back
(``results.report``) and ``pytest-ruler gate`` all judge through it.

Public names: ``ItemResult``, ``SCHEMA`` (of the JSON report that carries them), ``item_passes``, ``judged``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import asdict, dataclass, field
from typing import Any, Mapping

from .aggregate import passes
from .budgets import budget_cause

__all__ = ["SCHEMA", "ItemResult", "item_passes", "judged"]

SCHEMA = "pytest-ruler/1"  # the JSON report's schema: items are ItemResult.to_dict()


@dataclass(frozen=True)
class ItemResult:
    """The outcome of one item; serialised into the test report and the JSON report."""

    task: str
    length: int
    seed: int
    mode: str  # "native" | "mapreduce"
    samples: int
    score: float
    threshold: float
    passed: bool
    nulls: int
    seconds: float
    over_length: int = 0
    errors: int = 0
    cached: int = 0
    engine_calls: int = 0
    prompt_tokens: int = 0
    failures: tuple[Mapping[str, Any], ...] = ()
    reasons: tuple[str, ...] = ()
    depth_scores: Mapping[str, float] = field(default_factory=dict)  # depth sweep: {"0.25": score}
    # map-reduce items: one record per engine call (sample, stage, prompt tokens, parse, confidence, seconds)
    calls: tuple[Mapping[str, Any], ...] = ()
    mapreduce: Mapping[str, Any] = field(default_factory=dict)  # chunks, rounds, malformed records, options
    error: str | None = None  # why the item has no trustworthy score (engine, data, worker crash); it fails
    # per sample, in sample order: the metric's score in [0, 1] (error bars, paired tests) and a hash of
    # the prompt (the same question in another run: same task, length, seed, index, tokenizer, template)
    sample_scores: tuple[float, ...] = ()
    sample_hashes: tuple[str, ...] = ()
    stopped: str | None = None  # --ruler-sequential: why the item stopped before its last sample
    # per sample, in sample order (lm-eval's samples log): {index, prediction, answers, score, prompt_hash};
    # predictions are model output, scrubbed of secrets when built (runner.prediction_records)
    predictions: tuple[Mapping[str, Any], ...] = ()
    # the engine's prefix cache on this item's engine calls, where the engine reports it:
    # {"prompt_tokens": of the answers that reported, "cached_tokens": served from the cache}; {} otherwise
    prefix_cache: Mapping[str, int] = field(default_factory=dict)
    # a thinking model's counts (results.budgets.item_thinking): outcomes, thinking and answer tokens,
    # the think budget, failing samples cut inside their thinking; {} when there is nothing to say
    thinking: Mapping[str, Any] = field(default_factory=dict)
    # per endpoint that answered this item's engine calls (results.endpoints.tally): {url: {"requests",
    # "seconds", "prompt_tokens", "cached_tokens" (where reported), "moved_off"}}; {} for engines without endpoints
    endpoints: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    # what it cost (results.cost): {"prompt_tokens", "completion_tokens", "engine_seconds"}; {} when unknown
    cost: Mapping[str, Any] = field(default_factory=dict)
    arm: str | None = None  # --ruler-arm: the arm that answered (run.arms); None without arms (not written)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["failures"] = _failures_out(self.failures, self.predictions)
        d["reasons"] = list(self.reasons)
        d["depth_scores"] = dict(self.depth_scores)
        d["calls"] = [dict(c) for c in self.calls]
        d["mapreduce"] = dict(self.mapreduce)
        d["sample_scores"] = list(self.sample_scores)
        d["sample_hashes"] = list(self.sample_hashes)
        d["predictions"] = [dict(p) for p in self.predictions]
        d["prefix_cache"] = dict(self.prefix_cache)
        d["thinking"] = dict(self.thinking)
        d["endpoints"] = {url: dict(rec) for url, rec in self.endpoints.items()}
        d["cost"] = dict(self.cost)
        if self.arm is None:  # a run without arms writes its items as before
            del d["arm"]
        if self.mode == "native":  # keep native items as they were
            del d["calls"], d["mapreduce"]
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "ItemResult":
        d = dict(d)
        d["failures"] = _failures_in(d.get("failures", ()), d.get("predictions") or ())
        d["reasons"] = tuple(d.get("reasons", ()))
        d["depth_scores"] = dict(d.get("depth_scores") or {})
        d["calls"] = tuple(d.get("calls") or ())
        d["mapreduce"] = dict(d.get("mapreduce") or {})
        d["sample_scores"] = tuple(d.get("sample_scores") or ())
        d["sample_hashes"] = tuple(d.get("sample_hashes") or ())
        d["predictions"] = tuple(d.get("predictions") or ())  # absent from reports before it existed
        d["prefix_cache"] = dict(d.get("prefix_cache") or {})
        d["thinking"] = dict(d.get("thinking") or {})
        d["endpoints"] = {str(url): dict(rec) for url, rec in (d.get("endpoints") or {}).items()}
        d["cost"] = dict(d.get("cost") or {})
        return cls(**d)

    def failure_message(self, threshold: float | None = None) -> str:
        """The item's score, sample count, reasons and a few failing predictions.

        ``threshold`` is the mark the caller judges the score by: the plugin's items and
        ``ruler.check()`` pass the item's own; a user test that asserts its own mark
        passes that mark, or nothing (then no mark is quoted, so a message under
        ``assert result.score > 70`` never cites the run's global threshold).
        """
        where = (f"{self.task} at {self.length} tokens (seed {self.seed}{', map-reduce' if self.mode == 'mapreduce' else ''}"
                 f"{f', arm {self.arm}' if self.arm is not None else ''})")
        if self.error is not None:
            return f"{where}: ERROR: {self.error}"
        mark = ""
        if threshold is not None:
            mark = f" {'>' if passes(self.score, threshold) else '<='} threshold {threshold:.2f}"
        lines = [f"{where}: score {self.score:.2f}{mark} over {self.samples} samples ({self.nulls} empty predictions)"]
        if self.thinking.get("budget_limited") and not self.passed:
            lines.append(f"  {budget_cause([self])}")
        for reason in self.reasons:
            lines.append(f"  {reason}")
        for f in self.failures:
            pred = f["pred"] if len(f["pred"]) <= 160 else f["pred"][:157] + "..."
            lines.append(f"  sample {f['index']}: predicted {pred!r}, expected {list(f['outputs'])!r}")
        return "\n".join(lines)


def _failures_out(failures: Any, predictions: Any) -> list[dict[str, Any]]:
    """The failing samples as stored: ``pred`` and ``outputs`` only where they differ from the sample's
    ``predictions`` record (its ``prediction`` and ``answers``), so a long answer is stored once."""
    records = {p.get("index"): p for p in predictions if isinstance(p, Mapping)}
    out = []
    for f in failures:
        f, rec = dict(f), records.get(f.get("index"))
        if rec is not None:
            if "pred" in f and f["pred"] == rec.get("prediction"):
                del f["pred"]
            if "outputs" in f and list(f["outputs"]) == list(rec.get("answers") or ()):
                del f["outputs"]
        out.append(f)
    return out


def _failures_in(failures: Any, predictions: Any) -> tuple[dict[str, Any], ...]:
    """The failing samples with ``pred`` and ``outputs`` filled back from their ``predictions`` records."""
    records = {p.get("index"): p for p in predictions if isinstance(p, Mapping)}
    out = []
    for f in failures or ():
        rec = records.get(f.get("index")) if isinstance(f, Mapping) else None
        if rec is None:
            out.append(f)
            continue
        out.append({"index": f["index"], "pred": f.get("pred", rec.get("prediction", "")),
                    "outputs": f.get("outputs", list(rec.get("answers") or ())),
                    **{k: v for k, v in f.items() if k not in ("index", "pred", "outputs")}})
    return tuple(out)


def item_passes(score: float, mark: float, error: str | None) -> bool:
    """The one rule that judges an item against a mark (see the module docstring)."""
    return error is None and passes(score, mark)


def judged(r: ItemResult, mark: float) -> ItemResult:
    """``r`` judged against ``mark``: its ``threshold`` and ``passed`` set by the one rule."""
    return dataclasses.replace(r, threshold=round(float(mark), 4), passed=item_passes(r.score, mark, r.error))
