"""The run's state and the work of one item, without pytest types.

Data flow of an item (task × length × seed)::

    generate_samples ──► GenerationRequest (the verified token ids)
        ──► PredictionCache.get_many ──hits──────────────────────┐
        └─misses─► Engine.generate(on_result: cache.put, progress)┴─► scoring ──► ItemResult

The engine is built lazily, on the first cache miss: a rerun served entirely
from the cache never loads the model. The cache key needs the engine's
identity, which engines that can describe themselves give without loading.

Public names: ``ItemResult``, ``RulerSession``.
"""

from __future__ import annotations

import logging
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from .cache import PredictionCache, prediction_key
from .config import RulerConfig
from .engines import Engine, EngineConfig, GenerationRequest, describe_engine, load_engine, resolve_backend
from .engines.base import Completion
from .progress import Progress
from .scoring import count_nulls, get_metric, sample_scorer

__all__ = ["ItemResult", "RulerSession"]

log = logging.getLogger("pytest_ruler")


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

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["failures"] = [dict(f) for f in self.failures]
        d["reasons"] = list(self.reasons)
        d["depth_scores"] = dict(self.depth_scores)
        d["calls"] = [dict(c) for c in self.calls]
        d["mapreduce"] = dict(self.mapreduce)
        if self.mode == "native":  # keep native items as they were
            del d["calls"], d["mapreduce"]
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "ItemResult":
        d = dict(d)
        d["failures"] = tuple(d.get("failures", ()))
        d["reasons"] = tuple(d.get("reasons", ()))
        d["depth_scores"] = dict(d.get("depth_scores") or {})
        d["calls"] = tuple(d.get("calls") or ())
        d["mapreduce"] = dict(d.get("mapreduce") or {})
        return cls(**d)

    def failure_message(self) -> str:
        lines = [
            f"{self.task} at {self.length} tokens (seed {self.seed}{', map-reduce' if self.mode == 'mapreduce' else ''}): score {self.score:.2f} < threshold {self.threshold:.2f} "
            f"over {self.samples} samples ({self.nulls} empty predictions)"
        ]
        for reason in self.reasons:
            lines.append(f"  {reason}")
        for f in self.failures:
            pred = f["pred"] if len(f["pred"]) <= 160 else f["pred"][:157] + "..."
            lines.append(f"  sample {f['index']}: predicted {pred!r}, expected {list(f['outputs'])!r}")
        return "\n".join(lines)


def _grade(spec: Any, samples: Sequence[Any], preds: list[str], shown: list[str]) -> tuple[float, list[dict[str, Any]]]:
    """The item's RULER score and up to three failing samples (``shown``: what to print for each)."""
    score = get_metric(spec.metric)(preds, [list(s.outputs) for s in samples])
    per_sample = sample_scorer(spec.metric)
    failures = []
    for s, pred, text in zip(samples, preds, shown):
        if per_sample(pred, list(s.outputs)) < 1.0 and len(failures) < 3:
            failures.append({"index": s.index, "pred": text, "outputs": list(s.outputs)})
    return score, failures


@dataclass
class RulerSession:
    """State of a run (one per process; xdist workers each have their own)."""

    config: RulerConfig
    cache_dir: Path | None
    _tokenizer: Any = field(default=None, repr=False)
    _frame: Any = field(default=None, repr=False)
    _gen_ctx: Any = field(default=None, repr=False)
    _engine: Engine | None = field(default=None, repr=False)
    _identity: Mapping[str, Any] | None = field(default=None, repr=False)
    _cache: PredictionCache | None = field(default=None, repr=False)
    engine_load_seconds: float = 0.0
    # cross-item batching: the (task, length, seed) items this process runs, in order,
    # and answers fetched for upcoming items in an earlier item's engine call
    plan: list[tuple[str, int, int]] = field(default_factory=list, repr=False)
    _fetched: dict[str, Completion] = field(default_factory=dict, repr=False)
    _prepared: dict[tuple[str, int, int], Any] = field(default_factory=dict, repr=False)
    _planned_done: set = field(default_factory=set, repr=False)

    # ---- lazily built parts -------------------------------------------------
    @property
    def engine_config(self) -> EngineConfig:
        c = self.config
        return EngineConfig(
            model=c.model,
            backend=c.backend,
            tokenizer=c.tokenizer,
            dtype=c.dtype,
            device=c.device,
            max_model_len=c.max_model_len,
            trust_remote_code=c.trust_remote_code,
            base_url=c.base_url,
            batch_size=c.batch_size,
            options=dict(c.engine_options),
        )

    @property
    def backend(self) -> str:
        return resolve_backend(self.config.backend)

    @property
    def tokenizer(self):
        if self._tokenizer is None:
            from .tokenizer import load_tokenizer

            self._tokenizer = load_tokenizer(self.config.tokenizer or self.config.model, trust_remote_code=self.config.trust_remote_code)
        return self._tokenizer

    @property
    def frame(self):
        if self._frame is None:
            from .chat import frame_for

            self._frame = frame_for(self.config.chat_template, self.tokenizer)
        return self._frame

    @property
    def generation_context(self):
        if self._gen_ctx is None:
            from .tasks import GenerationContext

            c = self.config
            self._gen_ctx = GenerationContext(self.tokenizer, frame=self.frame, essays=c.essays, squad=c.squad, hotpotqa=c.hotpotqa)
        return self._gen_ctx

    @property
    def engine(self) -> Engine:
        if self._engine is None:
            started = time.perf_counter()
            self._engine = load_engine(self.engine_config)
            self.engine_load_seconds = time.perf_counter() - started
            log.info("loaded %s engine for %s in %.1fs", self._engine.name, self.config.model, self.engine_load_seconds)
        return self._engine

    @property
    def identity(self) -> Mapping[str, Any]:
        if self._identity is None:
            described = describe_engine(self.engine_config)
            self._identity = described if described is not None else self.engine.identity()
        return self._identity

    @property
    def cache(self) -> PredictionCache | None:
        if self._cache is None and not self.config.no_cache and self.cache_dir is not None:
            self._cache = PredictionCache(self.cache_dir)
        return self._cache

    def data_missing(self, task: str) -> str | None:
        """Why a task cannot run here (missing QA data), or None."""
        from .tasks import get_task

        spec = get_task(task)
        if spec.family == "qa" and not getattr(self.generation_context, spec.args["dataset"]):
            name = spec.args["dataset"]
            return f"{task} needs the {name} data file: run `pytest-ruler download {name}` (when online) or pass --ruler-{name}=PATH"
        return None

    def haystack_label(self, task: str) -> str:
        from .tasks import haystack_label

        return haystack_label(task, self.generation_context)

    # ---- the work of one item ---------------------------------------------
    def complete(self, requests: Sequence[GenerationRequest], label: str = "") -> tuple[list[Completion], list[bool]]:
        """Completions for requests: from the cache where possible, else from the engine.

        Returns the completions and, per request, whether it came from the
        cache. Each engine result is stored as soon as it arrives.
        """
        keys = [prediction_key(self.identity, r) for r in requests]
        cache = self.cache
        # answered in an earlier item's batch: an engine call of this run, not a cache hit
        results: list[Completion | None] = [self._fetched.pop(k, None) for k in keys]
        hits = cache.get_many([k for k, c in zip(keys, results) if c is None]) if cache is not None else {}
        from_cache = [c is None and k in hits for k, c in zip(keys, results)]
        results = [c if c is not None else hits.get(k) for k, c in zip(keys, results)]
        todo = [i for i, c in enumerate(results) if c is None]
        if todo:
            engine = self.engine
            batch = [requests[i] for i in todo]
            progress = Progress(label or "ruler", total=len(batch))

            def on_result(j: int, c: Completion) -> None:
                i = todo[j]
                results[i] = c
                if cache is not None:
                    cache.put(keys[i], c)
                progress.advance(c.prompt_tokens + c.completion_tokens)

            try:
                out = engine.generate(batch, on_result=on_result)
            finally:
                progress.close()
            for j, c in enumerate(out):  # engines that never called back still count
                if results[todo[j]] is None:
                    on_result(j, c)
        return [c for c in results if c is not None], from_cache

    def _item_inputs(self, task: Any, length: int, seed: int, samples: int | None = None):
        from .tasks import generate_samples, get_task

        spec = get_task(task)
        depths = self.config.depths if "depth" in spec.args else None
        if depths:
            spec = spec.with_args(spec.name, depth=list(depths))  # swept over the item's samples
        generated = generate_samples(spec, length, samples=samples or self.config.samples, seed=seed, ctx=self.generation_context)
        requests = [
            GenerationRequest(s.prompt, tuple(s.prompt_ids) if s.prompt_ids else tuple(self.tokenizer.encode(s.prompt)), spec.tokens_to_generate)
            for s in generated
        ]
        return spec, depths, generated, requests

    def _upcoming(self, task: str, length: int, seed: int) -> list[tuple[str, int, int]]:
        """The next items of the plan with the same length, for one shared engine call."""
        me = (task, length, seed)
        self._planned_done.add(me)
        if self.config.batch_items <= 1 or me not in self.plan:
            return []
        start = self.plan.index(me) + 1
        group = []
        for nxt in self.plan[start:]:
            if len(group) >= self.config.batch_items - 1 or nxt[1] != length:
                break
            if nxt not in self._planned_done and self.data_missing(nxt[0]) is None:
                group.append(nxt)
        return group

    def run_item(self, task: Any, length: int, seed: int = 0, *, samples: int | None = None, threshold: float | None = None) -> ItemResult:
        """Run one item; ``task`` is a name or a TaskSpec (a user test's custom task)."""
        started = time.perf_counter()
        prepared = self._prepared.pop((task, length, seed), None) if isinstance(task, str) and samples is None else None
        spec, depths, samples, requests = prepared or self._item_inputs(task, length, seed, samples)
        task = spec.name
        label = f"{task}[{length}-seed{seed}]"
        upcoming = self._upcoming(task, length, seed)
        for item in upcoming:  # generated once: kept until that item runs
            self._prepared[item] = self._item_inputs(*item)
        extra = [r for item in upcoming for r in self._prepared[item][3]]
        completions, from_cache = self.complete(requests + extra, label=f"{label} + {len(upcoming)} more items" if upcoming else label)
        for r, c, hit in zip(extra, completions[len(requests):], from_cache[len(requests):]):
            if c.ok and not hit:
                self._fetched[prediction_key(self.identity, r)] = c
        completions = completions[: len(requests)]
        cached = sum(from_cache[: len(requests)])
        preds = [c.text for c in completions]
        score, failures = _grade(spec, samples, preds, [c.text if c.ok else f"<{c.finish_reason}: {c.error}>" for c in completions])
        per_sample = sample_scorer(spec.metric)
        threshold = self.config.threshold_for(task) if threshold is None else threshold
        reasons = sorted({c.error for c in completions if c.error})
        depth_scores: dict[str, float] = {}
        if depths:
            per_depth: dict[float, list[float]] = {}
            for s, c in zip(samples, completions):
                per_depth.setdefault(depths[s.index % len(depths)], []).append(per_sample(c.text, list(s.outputs)))
            depth_scores = {f"{d:g}": round(100 * sum(v) / len(v), 4) for d, v in sorted(per_depth.items())}
        return ItemResult(
            task=task,
            length=length,
            seed=seed,
            mode="native",
            samples=len(samples),
            score=round(score, 4),
            threshold=threshold,
            passed=score >= threshold,
            nulls=count_nulls(preds),
            seconds=round(time.perf_counter() - started, 3),
            over_length=sum(c.finish_reason == "over_length" for c in completions),
            errors=sum(c.finish_reason == "error" for c in completions),
            cached=cached,
            engine_calls=len(requests) - cached,
            prompt_tokens=sum(len(r.prompt_ids) for r in requests),
            failures=tuple(failures),
            reasons=tuple(reasons[:3]),
            depth_scores=depth_scores,
        )

    def mapreduce_window(self, config: Any) -> int:
        """Tokens one map-reduce call may use: the option, else the engine's context."""
        if config.window:
            return config.window
        return int(self.engine.max_context)

    def run_mapreduce_item(
        self,
        task: Any,
        length: int,
        seed: int = 0,
        *,
        samples: int | None = None,
        threshold: float | None = None,
        config: Any = None,
    ) -> ItemResult:
        """The map-reduce twin of an item: the same samples, answered by chunked inference."""
        from .mapreduce import MapReduceConfig, MapReducer, document_for

        started = time.perf_counter()
        mr_config = (config or self.config.mapreduce_config or MapReduceConfig()).validate()
        spec, _, generated, _ = self._item_inputs(task, length, seed, samples)
        task = spec.name
        docs = [document_for(s, spec) for s in generated]
        reducer = MapReducer(self.complete, self.tokenizer, self.frame, mr_config, self.mapreduce_window(mr_config))
        outcomes = reducer.run(docs, label=f"{task}[{length}-seed{seed}-mapreduce]")
        preds = [o.prediction for o in outcomes]
        score, failures = _grade(spec, generated, preds, [o.prediction if o.error is None else f"<{o.error}>" for o in outcomes])
        threshold = self.config.threshold_for(task) if threshold is None else threshold
        calls = [{"sample": generated[c.doc].index, **{k: v for k, v in c.to_dict().items() if k != "doc"}} for o in outcomes for c in o.calls]
        reasons = sorted({n for o in outcomes for n in o.notes} | {o.error for o in outcomes if o.error})
        stages: dict[str, int] = {}
        for c in calls:
            stages[c["stage"]] = stages.get(c["stage"], 0) + 1
        return ItemResult(
            task=task,
            length=length,
            seed=seed,
            mode="mapreduce",
            samples=len(generated),
            score=round(score, 4),
            threshold=threshold,
            passed=score >= threshold,
            nulls=count_nulls(preds),
            seconds=round(time.perf_counter() - started, 3),
            over_length=sum(c["finish_reason"] == "over_length" for c in calls),
            errors=sum(c["finish_reason"] == "error" for c in calls),
            cached=sum(all(c.cached for c in o.calls) and bool(o.calls) for o in outcomes),
            engine_calls=sum(not c["cached"] for c in calls),
            prompt_tokens=sum(c["prompt_tokens"] for c in calls),
            failures=tuple(failures),
            reasons=tuple(reasons[:3]),
            calls=tuple(calls),
            mapreduce={
                "chunks": [o.chunks for o in outcomes],
                "rounds": max((o.rounds for o in outcomes), default=0),
                "calls_per_stage": stages,
                "malformed": sum(o.malformed for o in outcomes),
                "completion_tokens": sum(c["completion_tokens"] for c in calls),
                "window": reducer.window,
                "strategy": docs[0].strategy.name if docs else None,
                "config": mr_config.to_dict(),
            },
        )

    def close(self) -> None:
        if self._engine is not None:
            try:
                self._engine.close()
            finally:
                self._engine = None
        if self._cache is not None:
            self._cache.close()
            self._cache = None
