"""The work of one item, native or map-reduce, as plain functions over a session.

Data flow of a native item (task × length × seed)::

    session.item_samples (generated; with --ruler-record also saved; with --ruler-replay read back:
        run.replay), SAMPLES_PER_CALL at a time ──► GenerationRequest (the verified token ids; ``affinity``
        the item's ``task/length/seed``, which keeps its samples on one endpoint of several)
        ──► session.complete: cache hits | Engine.generate (each answer cached as it arrives)
        ──► grade (the task's RULER metric) ──► item_result ──► ItemResult
            (with ``prediction_records``: every sample's prediction, answers, score, prompt hash;
            ``endpoints``: per endpoint that answered, results.endpoints.tally)

Samples are generated lazily, in the batches the engine consumes (``session.generating`` says
how far generation is when it is the slow part): the cache
fills from the first batch and memory stays flat in the sample count (only
each sample's prediction and reference answers are kept for grading). A native
item's state while its batches are in flight is a ``NativeWork``; the session's
``queue`` (``run.queue.EngineQueue``) sends its batches together with those of
the items after it (``native_work`` / ``upcoming_work`` make them). A run with
map-reduce twins keeps a native item's samples and leaves them in
``session.shared`` for its twin.

A map-reduce twin::

    the native twin's samples (or generated) ──► mapreduce.document_for(sample, spec, the
        task's family) (context, question, answer prefix: nothing else) ──► MapReducer.run
        ──► grade ──► item_result (``endpoints``: each call's, CallRecord.served, tallied)

Thinking models: ``session.complete`` gives each answer after its thinking (``run.reasoning``);
``results.budgets.item_thinking`` counts each sample's outcome (each map, collapse and reduce call's,
for a twin) into ``ItemResult.thinking``, and a sample's record carries its outcome and tokens.

Errors are results: an item whose engine could not answer a sample
(``finish_reason == "error"``) or a map-reduce call gets ``ItemResult.error``;
``errored_result`` is the result of an item that raised. Every result is built
by ``item_result``.

Public names: ``SAMPLES_PER_CALL``, ``ItemInputs``, ``NativeWork``, ``native_work``, ``upcoming_work``, ``run_native``,
``run_mapreduce``, ``errored_result``, ``item_result``, ``grade``, ``prediction_records``.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any, Sequence

from ..engines import GenerationRequest
from ..results import ItemResult
from ..results.item import item_passes
from ..results.budgets import item_thinking
from ..results.cost import item_cost
from ..results.endpoints import count_prefix_cache, prefix_cache_record, tally
from ..results.scoring import count_nulls, get_metric, sample_scorer
from .seams import ItemSession

__all__ = ["SAMPLES_PER_CALL", "ItemInputs", "NativeWork", "native_work", "upcoming_work", "errored_result", "grade", "item_result", "prediction_records", "run_mapreduce", "run_native"]

# samples generated and sent to the engine per call: large enough for an engine's own
# batching (hf: 4 on CPU, 8 on CUDA; openai: 8 in flight), small enough that a 128K
# item keeps about 64 prompts in memory however many samples it has
SAMPLES_PER_CALL = 64


@dataclass(frozen=True)
class ItemInputs:
    """An item's samples, generated at once, with their requests."""

    spec: Any
    depths: tuple[float, ...] | None
    samples: list
    requests: list


@dataclass(frozen=True)
class _Ref:
    """What grading keeps of a sample: its index, reference answers and prompt hash (never the prompt)."""

    index: int
    outputs: tuple[str, ...]
    digest: str = ""


def prompt_hash(sample: Any) -> str:
    """A short hash of a sample's prompt: equal in two runs exactly when they asked the same question."""
    return hashlib.sha256(f"{sample.input}\x00{sample.answer_prefix}".encode()).hexdigest()[:16]


def _ref(sample: Any) -> _Ref:
    return _Ref(sample.index, tuple(sample.outputs), prompt_hash(sample))


def prediction_records(refs: Sequence[_Ref], preds: Sequence[str], scores: Sequence[float],
                       completions: Sequence[Any] = ()) -> tuple[dict[str, Any], ...]:
    """One record per sample for the report (``ItemResult.predictions``): index, prediction
    (model output, scrubbed of secrets), reference answers, the sample's score, prompt hash;
    where a sample has an outcome (``completions``, see ``engines.thinking``), also the outcome,
    its finish reason and its thinking and answer tokens; where our code cut the answer
    (``Completion.cut``: far longer than its max_tokens allows), ``cut`` says how."""
    from ..secrets import scrub

    records = [{"index": r.index, "prediction": scrub(p), "answers": list(r.outputs), "score": s, "prompt_hash": r.digest}
               for r, p, s in zip(refs, preds, scores)]
    for rec, c in zip(records, completions):
        if getattr(c, "cut", None):  # what our code did to the answer, where the answer is shown
            rec["cut"] = c.cut
        if getattr(c, "outcome", None) is not None and (c.outcome != "answered" or c.thinking_tokens):
            rec.update(outcome=c.outcome, finish_reason=c.finish_reason, thinking_tokens=c.thinking_tokens,
                       answer_tokens=max(0, c.completion_tokens - c.thinking_tokens))
    return tuple(records)


def _cut_reason(completions: Sequence[Any]) -> tuple[str, ...]:
    """The item's line for answers our code cut (``Completion.cut``; their records say how), if any."""
    cut = [c for c in completions if getattr(c, "cut", None)]
    if not cut:
        return ()
    return (f"{len(cut)} of {len(completions)} answers were cut by pytest-ruler, far longer than their max_tokens allows "
            f"(see each prediction's 'cut'); the first: {cut[0].cut}",)


def _sample_scores(spec: Any, refs: Sequence[Any], preds: Sequence[str]) -> tuple[float, ...]:
    per_sample = sample_scorer(spec.metric)
    return tuple(round(per_sample(p, list(r.outputs)), 4) for r, p in zip(refs, preds))


def task_spec(session: ItemSession, task: Any) -> tuple[Any, tuple[float, ...] | None]:
    """The task's spec, with the depth sweep of --ruler-depths applied where it has a depth."""
    from ..tasks import get_task

    spec = get_task(task)
    depths = session.config.depths if "depth" in spec.args else None
    if depths:
        spec = spec.with_args(spec.name, depth=list(depths))  # swept over the item's samples
    return spec, depths


def _request(session: ItemSession, spec: Any, sample: Any, length: int, seed: int) -> GenerationRequest:
    ids = tuple(sample.prompt_ids) if sample.prompt_ids else tuple(session.tokenizer.encode(sample.prompt))
    # the item's samples share their haystack's opening: one endpoint's prefix cache serves them
    return GenerationRequest(sample.prompt, ids, spec.tokens_to_generate, answer_prefix=sample.answer_prefix,
                             affinity=f"{spec.name}/{length}/{seed}", messages=getattr(sample, "messages", None))


def item_inputs(session: ItemSession, task: Any, length: int, seed: int, samples: int | None = None) -> ItemInputs:
    """Every sample of an item at once, with its request."""
    spec, depths = task_spec(session, task)
    n = samples or session.config.samples
    generated = list(session.generating(session.item_samples(spec, length, seed, n), f"{spec.name}[{length}-seed{seed}]", n))
    return ItemInputs(spec, depths, generated, [_request(session, spec, s, length, seed) for s in generated])


def _sample_batches(session: ItemSession, spec: Any, length: int, seed: int, samples: int, size: int | None = None):
    """An item's samples, generated lazily, ``size`` (SAMPLES_PER_CALL) at a time, with their requests."""
    size = size or SAMPLES_PER_CALL
    batch: list[Any] = []
    generated = session.item_samples(spec, length, seed, samples)  # generated (and recorded), or replayed (run.replay)
    for sample in session.generating(generated, f"{spec.name}[{length}-seed{seed}]", samples):
        batch.append(sample)
        if len(batch) == size:
            yield batch, [_request(session, spec, s, length, seed) for s in batch]
            batch = []
    if batch:
        yield batch, [_request(session, spec, s, length, seed) for s in batch]


def _share_key(spec: Any, length: int, seed: int, samples: int) -> tuple:
    return spec.name, repr(sorted(spec.args.items())), length, seed, samples


def grade(spec: Any, refs: Sequence[Any], preds: list[str], shown: list[str]) -> tuple[float, list[dict[str, Any]]]:
    """The item's RULER score and up to three failing samples (``shown``: what to print for each)."""
    score = get_metric(spec.metric)(preds, [list(s.outputs) for s in refs])
    per_sample = sample_scorer(spec.metric)
    failures = []
    for s, pred, text in zip(refs, preds, shown):
        if per_sample(pred, list(s.outputs)) < 1.0 and len(failures) < 3:
            failures.append({"index": s.index, "pred": text, "outputs": list(s.outputs)})
    return score, failures


def item_result(config: Any, task: str, length: int, seed: int, mode: str, *, threshold: float | None, started: float,
                samples: int, score: float = 0.0, preds: Sequence[str] = (), error: str | None = None,
                failed: bool = False, **fields: Any) -> ItemResult:
    """The one place an ItemResult is built: threshold, passed, nulls, seconds and rounding are decided here.

    An item passes by the one judging rule (``results.item.item_passes``: no error, the score
    strictly above the threshold); an item over the model's context (``failed``) scores 0.
    """
    threshold = config_threshold(config, task, threshold)
    fields.setdefault("nulls", count_nulls(list(preds)))
    score = 0.0 if failed else score
    return ItemResult(task=task, length=length, seed=seed, mode=mode, samples=samples, score=round(score, 4),
                      threshold=threshold, passed=item_passes(round(score, 4), threshold, error),
                      seconds=round(time.perf_counter() - started, 3), error=error, **fields)


def config_threshold(config: Any, task: str, threshold: float | None) -> float:
    """The item's pass mark: the caller's, else the task's (ini ruler_task_thresholds), else --ruler-threshold."""
    return config.threshold_for(task) if threshold is None else threshold


def errored_result(config: Any, task: Any, length: int, seed: int, mode: str, error: str, seconds: float = 0.0, *,
                   samples: int | None = None, threshold: float | None = None) -> ItemResult:
    """The result of an item that produced no trustworthy score: it fails, with its reason."""
    return item_result(config, getattr(task, "name", task), length, seed, mode, threshold=threshold,
                       started=time.perf_counter() - seconds, samples=samples or config.samples, error=error)


def _over_length_result(session: ItemSession, spec: Any, length: int, seed: int, samples: int, threshold: float | None, started: float) -> ItemResult:
    """An item whose every prompt would exceed the context: failed, and no prompt is built for it."""
    reason = f"exceeds model context ({length} > {session.context_limit}): no prompt built"
    return item_result(session.config, spec.name, length, seed, "native", threshold=threshold, started=started,
                       samples=samples, nulls=samples, over_length=samples, reasons=(reason,), failed=True)


def _depth_scores(spec: Any, depths: Sequence[float], refs: Sequence[_Ref], texts: Sequence[str]) -> dict[str, float]:
    per_sample = sample_scorer(spec.metric)
    per_depth: dict[float, list[float]] = {}
    for ref, text in zip(refs, texts):
        per_depth.setdefault(depths[ref.index % len(depths)], []).append(per_sample(text, list(ref.outputs)))
    return {f"{d:g}": round(100 * sum(v) / len(v), 4) for d, v in sorted(per_depth.items())}


class NativeWork:
    """One native item's samples in flight (an ``EngineQueue`` work): its lazy batches, the
    answers received so far and, with ``--ruler-sequential``, the betting test that may decide
    it early. ``result`` grades what it received into the item's ItemResult."""

    def __init__(self, session: ItemSession, spec: Any, depths: tuple[float, ...] | None, length: int, seed: int, n: int,
                 threshold: float | None, *, keep_samples: bool = False):
        self.cell = (spec.name, length, seed)
        self.spec, self.depths, self.length, self.seed, self.n, self.threshold = spec, depths, length, seed, n, threshold
        self.sequential = None
        size = None
        if session.config.sequential:  # in small batches, until the verdict is clear
            from .sequential import SequentialTest, batch_size

            self.sequential = SequentialTest(config_threshold(session.config, spec.name, threshold) / 100)
            size = batch_size(n)
        self._parts = _sample_batches(session, spec, length, seed, n, size)
        self._pending: list = []  # [(samples, requests)] of the batch sent, waiting for its answers
        self.kept: list = []  # every sample, when a map-reduce twin needs them (keep_samples)
        self.keep_samples = keep_samples
        self.refs: list[_Ref] = []
        self.completions: list[Any] = []
        self.cached = self.prompt_tokens = 0
        self.prefix_cache = {"prompt_tokens": 0, "cached_tokens": 0}  # of engine answers that reported it
        self.endpoints: dict = {}  # per endpoint that answered (results.endpoints.tally)
        self.done = False

    def next_requests(self) -> list | None:
        """The next batch's requests (its samples are generated now); None: nothing more to send."""
        if self.done or self._pending:
            return None
        generated, requests = next(self._parts, (None, None))
        if generated is None:
            self.done = True
            return None
        self._pending = [(generated, requests)]
        if self.keep_samples:
            self.kept.append((generated, requests))
        return requests

    def receive(self, completions: Sequence[Any], from_cache: Sequence[bool]) -> None:
        """The answers to the batch sent, in its order."""
        (generated, requests), = self._pending
        self._pending = []
        self.completions += completions
        self.cached += sum(from_cache)
        self.prompt_tokens += sum(len(r.prompt_ids) for r in requests)
        for c, hit in zip(completions, from_cache):
            if not hit:
                count_prefix_cache(self.prefix_cache, c)  # a count that cannot be true is left out (results.endpoints)
                tally(self.endpoints, c)
        self.refs += [_ref(s) for s in generated]
        if self.sequential is not None and self.sequential.update(_sample_scores(self.spec, self.refs[-len(generated):], [c.text for c in completions])):
            self.done = True  # decided: the remaining samples are never generated

    def inputs(self) -> ItemInputs:
        """Every sample generated, with its request (``keep_samples``: for the map-reduce twin)."""
        return ItemInputs(self.spec, self.depths, [s for g, _ in self.kept for s in g], [r for _, rs in self.kept for r in rs])

    def result(self, session: ItemSession, started: float) -> ItemResult:
        spec, completions, refs, n = self.spec, self.completions, self.refs, self.n
        preds = [c.text for c in completions]
        scores = _sample_scores(spec, refs, preds)
        score, failures = grade(spec, refs, preds, [c.text if c.ok else f"<{c.finish_reason}: {c.error}>" for c in completions])
        failed = [c for c in completions if c.finish_reason == "error"]
        sequential = self.sequential
        return item_result(
            session.config, spec.name, self.length, self.seed, "native", threshold=self.threshold, started=started,
            samples=len(completions), score=score, preds=preds,
            error=f"{len(failed)} of {len(completions)} samples got no answer from the engine: {failed[0].error}" if failed else None,
            over_length=sum(c.finish_reason == "over_length" for c in completions), errors=len(failed), cached=self.cached,
            engine_calls=len(completions) - self.cached, prompt_tokens=self.prompt_tokens, failures=tuple(failures),
            reasons=tuple(sorted({c.error for c in completions if c.error})[:3]) + _cut_reason(completions),
            depth_scores=_depth_scores(spec, self.depths, refs, preds) if self.depths else {},
            sample_scores=scores, sample_hashes=tuple(r.digest for r in refs), predictions=prediction_records(refs, preds, scores, completions),
            thinking=item_thinking(completions, scores, session.config.think_budget),
            stopped=sequential.reason(n, len(completions)) if sequential is not None and sequential.decision and len(completions) < n else None,
            prefix_cache=prefix_cache_record(self.prefix_cache),
            endpoints=self.endpoints, cost=item_cost(self.prompt_tokens, completions),
        )


def native_work(session: ItemSession, task: Any, length: int, seed: int = 0, *, samples: int | None = None,
                threshold: float | None = None) -> NativeWork | None:
    """The work of a native item, None when it sends nothing (over the context: no prompt is built)."""
    spec, depths = task_spec(session, task)
    if session.over_context(length):
        return None
    n = samples or session.config.samples
    # the map-reduce twin answers the same samples (a sequential item's twin generates all of its own)
    keep = bool(session.config.mapreduce) and not session.config.sequential
    return NativeWork(session, spec, depths, length, seed, n, threshold, keep_samples=keep)


def upcoming_work(session: ItemSession, cell: Any) -> NativeWork | None:
    """The work of a planned item, started ahead of it (None: not one to start ahead)."""
    task, length, seed = cell
    if session.data_missing(task) is not None:
        return None
    return native_work(session, task, length, seed)


def run_native(session: ItemSession, task: Any, length: int, seed: int = 0, *, samples: int | None = None,
               threshold: float | None = None) -> ItemResult:
    """Run one native item; ``task`` is a name or a TaskSpec (a user test's custom task).

    A standard item (a task name, the run's samples and threshold) goes through the session's
    queue: it may find its answers fetched already, and its engine calls carry the batches of
    the items after it. Any other call runs alone.
    """
    started = time.perf_counter()
    standard = isinstance(task, str) and samples is None and threshold is None
    work = session.queue.take((task, length, seed)) if standard else None
    if work is None:
        work = native_work(session, task, length, seed, samples=samples, threshold=threshold)
    if work is None:
        spec, _ = task_spec(session, task)
        return _over_length_result(session, spec, length, seed, samples or session.config.samples, threshold, started)
    session.queue.run(work, f"{work.spec.name}[{length}-seed{seed}]", ahead=standard)
    if work.keep_samples:
        session.shared.keep(_share_key(work.spec, length, seed, work.n), work.inputs())
    session.item_done(work.cell)  # --ruler-record: an item stopped early has its samples put in place too
    return work.result(session, started)


def run_mapreduce(session: ItemSession, task: Any, length: int, seed: int = 0, *, samples: int | None = None,
                  threshold: float | None = None, config: Any = None) -> ItemResult:
    """The map-reduce twin of an item: the same samples, answered by chunked inference."""
    from ..mapreduce import MapReduceConfig, MapReducer, document_for, grounding_mode
    from ..mapreduce.pipeline import compliance_total
    from ..tasks import get_family

    started = time.perf_counter()
    mr_config = config or session.config.mapreduce_config or MapReduceConfig()  # validated where it was built
    spec, _ = task_spec(session, task)
    n = samples or session.config.samples
    inputs = session.shared.take(_share_key(spec, length, seed, n)) or item_inputs(session, spec, length, seed, samples)
    generated = inputs.samples
    family = get_family(spec.family)  # handed in: map-reduce imports nothing of tasks
    docs = [document_for(s, spec, family) for s in generated]
    reducer = MapReducer(session.complete, session.tokenizer, session.frame, mr_config, session.mapreduce_window(mr_config))
    outcomes = reducer.run(docs, label=f"{spec.name}[{length}-seed{seed}-mapreduce]")
    preds = [o.prediction for o in outcomes]
    refs = [_ref(s) for s in generated]
    scores = _sample_scores(spec, refs, preds)
    score, failures = grade(spec, generated, preds, [o.prediction if o.error is None else f"<{o.error}>" for o in outcomes])
    calls = [{"sample": generated[c.doc].index, **{k: v for k, v in c.to_dict().items() if k != "doc"}} for o in outcomes for c in o.calls]
    stages: dict[str, int] = {}
    for c in calls:
        stages[c["stage"]] = stages.get(c["stage"], 0) + 1
    failed = [c for c in calls if c["finish_reason"] == "error"]
    by_index = {r.index: s for r, s in zip(refs, scores)}  # map, collapse and reduce calls count under their sample's score
    endpoints: dict = {}  # per endpoint that answered a map, collapse or reduce call (as a native item's)
    for served in (e for o in outcomes for c in o.calls for e in c.served):
        tally(endpoints, served)
    call_outcomes = [SimpleNamespace(outcome=c.get("outcome"), completion_tokens=c["completion_tokens"],
                                     thinking_tokens=c.get("thinking_tokens", 0)) for c in calls]
    return item_result(
        session.config, spec.name, length, seed, "mapreduce", threshold=threshold, started=started,
        samples=len(generated), score=score, preds=preds,
        error=f"{len(failed)} of {len(calls)} map-reduce engine calls got no answer: {failed[0]['output']}" if failed else None,
        over_length=sum(c["finish_reason"] == "over_length" for c in calls), errors=len(failed),
        cached=sum(all(c.cached for c in o.calls) and bool(o.calls) for o in outcomes),
        engine_calls=sum(not c["cached"] for c in calls), prompt_tokens=sum(c["prompt_tokens"] for c in calls),
        failures=tuple(failures),
        reasons=tuple(sorted({n for o in outcomes for n in o.notes} | {o.error for o in outcomes if o.error})[:3]),
        calls=tuple(calls), cost=item_cost(sum(c["prompt_tokens"] for c in calls), calls),
        thinking=item_thinking(call_outcomes, [by_index.get(c["sample"], 0.0) for c in calls], session.config.think_budget),
        sample_scores=scores, sample_hashes=tuple(r.digest for r in refs), predictions=prediction_records(refs, preds, scores),
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
            "config": reducer.config.to_dict(),  # with the layout that ran ("auto" resolved)
        },
        endpoints=endpoints,
    )
