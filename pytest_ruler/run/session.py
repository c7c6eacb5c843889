"""The run's state and the work of one item, without pytest types.

Data flow of an item (task × length × seed)::

    iter_samples, SAMPLES_PER_CALL at a time ──► GenerationRequest (the verified token ids)
        ──► PredictionCache.get_many ──hits──────────────────────┐
        └─misses─► Engine.generate(on_result: cache.put, progress)┴─► scoring ──► ItemResult

Samples are generated lazily, in the batches the engine consumes: the cache
fills from the first batch and memory stays flat in the sample count (only
each sample's prediction and reference answers are kept for grading).

The engine is built lazily, on the first cache miss: a rerun served entirely
from the cache never loads the model. The cache key needs the engine's
identity, which engines that can describe themselves give without loading.
An engine that fails to load fails once: the first item says why, every later
item fails at once with one line pointing at it (no reload per item).

Errors are results: an item whose engine raised, or one of whose samples the
engine could not answer (``finish_reason == "error"``), is an *errored* item
(``ItemResult.error``): it fails, and the summary and the gate treat its cell
as missing evidence, never as a score.

Public names: ``ItemResult``, ``RulerSession``, ``EngineUnavailable``,
``SAMPLES_PER_CALL``.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from .cache import PredictionCache, prediction_key
from ..options import RulerConfig
from ..engines import Engine, EngineConfig, GenerationRequest, describe_engine, load_engine, resolve_backend
from ..engines.base import Completion
from .progress import Progress
from ..results import ItemResult
from ..results.scoring import count_nulls, get_metric, sample_scorer

__all__ = ["SAMPLES_PER_CALL", "EngineUnavailable", "ItemResult", "RulerSession", "one_line"]

log = logging.getLogger("pytest_ruler")

# samples generated and sent to the engine per call: large enough for an engine's own
# batching (hf: 4 on CPU, 8 on CUDA; openai: 8 in flight), small enough that a 128K
# item keeps about 64 prompts in memory however many samples it has
SAMPLES_PER_CALL = 64


class EngineUnavailable(RuntimeError):
    """The engine failed to load earlier in this process; raised instead of reloading."""


def one_line(exc: BaseException, limit: int = 300) -> str:
    """An exception as one line: the RULER message for usage errors, else ``Type: message``."""
    from ..errors import RulerUsageError

    text = str(exc) if isinstance(exc, (RulerUsageError, EngineUnavailable)) else f"{type(exc).__name__}: {exc}"
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


@dataclass(frozen=True)
class _Ref:
    """What grading keeps of a sample: its index and reference answers (never the prompt)."""

    index: int
    outputs: tuple[str, ...]


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
    _engine_error: str | None = field(default=None, repr=False)
    _cache_off: bool = field(default=False, repr=False)
    warnings: list[str] = field(default_factory=list, repr=False)
    context_limit: int | None = field(default=None, repr=False)  # the engine's context, when known without loading it
    _context_checked: bool = field(default=False, repr=False)
    notify: Any = field(default=None, repr=False)  # callable(line) set by the plugin

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
            from ..tasks.tokenizer import load_tokenizer

            self._tokenizer = load_tokenizer(self.config.tokenizer or self.config.model, trust_remote_code=self.config.trust_remote_code)
        return self._tokenizer

    @property
    def frame(self):
        if self._frame is None:
            from ..tasks.chat import frame_for

            self._frame = frame_for(self.config.chat_template, self.tokenizer)
        return self._frame

    @property
    def generation_context(self):
        if self._gen_ctx is None:
            from ..tasks import GenerationContext

            c = self.config
            self._gen_ctx = GenerationContext(self.tokenizer, frame=self.frame, essays=c.essays, squad=c.squad, hotpotqa=c.hotpotqa)
        return self._gen_ctx

    @property
    def engine(self) -> Engine:
        if self._engine is None:
            if self._engine_error is not None:
                raise EngineUnavailable(f"the {self.backend} engine failed to load earlier in this run; its reason is on the first errored item")
            started = time.perf_counter()
            try:
                engine = load_engine(self.engine_config)
            except Exception as exc:
                self._engine_error = one_line(exc)
                raise
            self._engine = engine
            if hasattr(engine, "on_wait"):  # engines that wait on a server say what they wait for
                engine.on_wait = self.say
            self.engine_load_seconds = time.perf_counter() - started
            log.info("loaded %s engine for %s in %.1fs", engine.name, self.config.model, self.engine_load_seconds)
        return self._engine

    @property
    def identity(self) -> Mapping[str, Any]:
        if self._identity is None:
            described = describe_engine(self.engine_config)
            self._identity = described if described is not None else self.engine.identity()
        return self._identity

    @property
    def cache(self) -> PredictionCache | None:
        if self._cache is None and not self._cache_off and not self.config.no_cache and self.cache_dir is not None:
            from .cache import CacheUnavailable

            try:
                self._cache = PredictionCache(self.cache_dir)
            except CacheUnavailable as exc:
                self._cache_off = True
                self.warn(str(exc))
                return None
            for notice in self._cache.notices:
                self.warn(notice)
            self._cache.on_fault = self.warn
        return self._cache

    def warn(self, message: str) -> None:
        """A warning for the user, shown once (header or terminal) and kept for the report."""
        if message not in self.warnings:
            self.warnings.append(message)
            self.say(f"ruler: warning: {message}")

    def say(self, line: str) -> None:
        """One line for the user now (the plugin wires this to the terminal)."""
        if self.notify is not None:
            self.notify(line)
        else:
            log.warning(line)

    def data_missing(self, task: str) -> str | None:
        """Why a task cannot run here (missing QA data), or None."""
        from ..tasks import get_task

        spec = get_task(task)
        if spec.family == "qa" and not getattr(self.generation_context, spec.args["dataset"]):
            name = spec.args["dataset"]
            return f"{task} needs the {name} data file: run `pytest-ruler download {name}` (when online) or pass --ruler-{name}=PATH"
        return None

    def haystack_label(self, task: str) -> str:
        from ..tasks import haystack_label

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

    def _spec(self, task: Any) -> tuple[Any, tuple[float, ...] | None]:
        """The task's spec, with the depth sweep of --ruler-depths applied where it has a depth."""
        from ..tasks import get_task

        spec = get_task(task)
        depths = self.config.depths if "depth" in spec.args else None
        if depths:
            spec = spec.with_args(spec.name, depth=list(depths))  # swept over the item's samples
        return spec, depths

    def _request(self, spec: Any, sample: Any) -> GenerationRequest:
        ids = tuple(sample.prompt_ids) if sample.prompt_ids else tuple(self.tokenizer.encode(sample.prompt))
        return GenerationRequest(sample.prompt, ids, spec.tokens_to_generate)

    def _item_inputs(self, task: Any, length: int, seed: int, samples: int | None = None):
        """Every sample of an item at once (map-reduce twins and cross-item batching)."""
        from ..tasks import generate_samples

        spec, depths = self._spec(task)
        generated = generate_samples(spec, length, samples=samples or self.config.samples, seed=seed, ctx=self.generation_context)
        return spec, depths, generated, [self._request(spec, s) for s in generated]

    def _sample_batches(self, spec: Any, length: int, seed: int, samples: int):
        """An item's samples, generated lazily, SAMPLES_PER_CALL at a time, with their requests."""
        from ..tasks import iter_samples

        batch: list[Any] = []
        for sample in iter_samples(spec, length, samples=samples, seed=seed, ctx=self.generation_context):
            batch.append(sample)
            if len(batch) == SAMPLES_PER_CALL:
                yield batch, [self._request(spec, s) for s in batch]
                batch = []
        if batch:
            yield batch, [self._request(spec, s) for s in batch]

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
        spec, depths = (prepared[0], prepared[1]) if prepared else self._spec(task)
        task = spec.name
        if self.context_limit is None and not self._context_checked:  # an xdist worker: the controller checked, not us
            self._context_checked = True
            try:
                from .preflight import _engine_context

                self.context_limit = _engine_context(self)[0]
            except Exception:  # unknown: the engine refuses over-length prompts itself
                self.context_limit = None
        if self.context_limit is not None and length > self.context_limit and not prepared:
            return self._over_length_result(spec, length, seed, samples or self.config.samples, threshold, started)
        label = f"{task}[{length}-seed{seed}]"
        upcoming = self._upcoming(task, length, seed)
        for item in upcoming:  # generated once: kept until that item runs
            self._prepared[item] = self._item_inputs(*item)
        extra = [r for item in upcoming for r in self._prepared[item][3]]
        if prepared or upcoming:  # cross-item batching: this item's samples in one call with the next items'
            _, _, generated, requests = prepared or self._item_inputs(spec, length, seed, samples)
            batches: Any = [(generated, requests)]
        else:
            batches = self._sample_batches(spec, length, seed, samples or self.config.samples)
        refs: list[_Ref] = []
        completions: list[Completion] = []
        cached = prompt_tokens = 0
        for generated, requests in batches:
            got, from_cache = self.complete(requests + extra, label=f"{label} + {len(upcoming)} more items" if extra else label)
            for r, c, hit in zip(extra, got[len(requests):], from_cache[len(requests):]):
                if c.ok and not hit:
                    self._fetched[prediction_key(self.identity, r)] = c
            extra = []
            completions += got[: len(requests)]
            cached += sum(from_cache[: len(requests)])
            prompt_tokens += sum(len(r.prompt_ids) for r in requests)
            refs += [_Ref(s.index, tuple(s.outputs)) for s in generated]
        preds = [c.text for c in completions]
        score, failures = _grade(spec, refs, preds, [c.text if c.ok else f"<{c.finish_reason}: {c.error}>" for c in completions])
        per_sample = sample_scorer(spec.metric)
        threshold = self.config.threshold_for(task) if threshold is None else threshold
        reasons = sorted({c.error for c in completions if c.error})
        failed = [c for c in completions if c.finish_reason == "error"]
        error = f"{len(failed)} of {len(completions)} samples got no answer from the engine: {failed[0].error}" if failed else None
        depth_scores: dict[str, float] = {}
        if depths:
            per_depth: dict[float, list[float]] = {}
            for ref, c in zip(refs, completions):
                per_depth.setdefault(depths[ref.index % len(depths)], []).append(per_sample(c.text, list(ref.outputs)))
            depth_scores = {f"{d:g}": round(100 * sum(v) / len(v), 4) for d, v in sorted(per_depth.items())}
        return ItemResult(
            task=task,
            length=length,
            seed=seed,
            mode="native",
            samples=len(completions),
            score=round(score, 4),
            threshold=threshold,
            passed=score >= threshold and error is None,
            nulls=count_nulls(preds),
            seconds=round(time.perf_counter() - started, 3),
            over_length=sum(c.finish_reason == "over_length" for c in completions),
            errors=len(failed),
            cached=cached,
            engine_calls=len(completions) - cached,
            prompt_tokens=prompt_tokens,
            failures=tuple(failures),
            reasons=tuple(reasons[:3]),
            depth_scores=depth_scores,
            error=error,
        )

    def _over_length_result(self, spec: Any, length: int, seed: int, samples: int, threshold: float | None, started: float) -> ItemResult:
        """An item whose every prompt would exceed the context: failed, and no prompt is built for it."""
        reason = f"exceeds model context ({length} > {self.context_limit}): no prompt built"
        return ItemResult(task=spec.name, length=length, seed=seed, mode="native", samples=samples, score=0.0,
                          threshold=self.config.threshold_for(spec.name) if threshold is None else threshold, passed=False,
                          nulls=samples, seconds=round(time.perf_counter() - started, 3), over_length=samples, reasons=(reason,))

    def errored_result(self, task: Any, length: int, seed: int, mode: str, error: str, seconds: float = 0.0, *,
                       samples: int | None = None, threshold: float | None = None) -> ItemResult:
        """The result of an item that produced no trustworthy score: it fails, with its reason."""
        name = getattr(task, "name", task)
        if threshold is None:
            threshold = self.config.threshold_for(name)
        n = samples or self.config.samples
        return ItemResult(task=name, length=length, seed=seed, mode=mode, samples=n, score=0.0, threshold=threshold,
                          passed=False, nulls=0, seconds=round(seconds, 3), error=error)

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
        from ..mapreduce import MapReduceConfig, MapReducer, document_for, grounding_mode
        from ..mapreduce.pipeline import compliance_total

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
        failed = [c for c in calls if c["finish_reason"] == "error"]
        error = f"{len(failed)} of {len(calls)} map-reduce engine calls got no answer: {failed[0]['output']}" if failed else None
        return ItemResult(
            task=task,
            length=length,
            seed=seed,
            mode="mapreduce",
            samples=len(generated),
            score=round(score, 4),
            threshold=threshold,
            passed=score >= threshold and error is None,
            nulls=count_nulls(preds),
            seconds=round(time.perf_counter() - started, 3),
            over_length=sum(c["finish_reason"] == "over_length" for c in calls),
            errors=len(failed),
            error=error,
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
                "grounding": grounding_mode(mr_config.verify),  # what code did to the records: mapreduce.grounding_label
                "compliance": compliance_total(outcomes),  # the structured protocol, per stage
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
