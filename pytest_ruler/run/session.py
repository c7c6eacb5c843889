"""The run's state, without pytest types: what an item needs, built lazily.

``RulerSession`` holds the configuration and builds, on first use, the tokenizer, the chat frame, the
generation context, the engine and the prediction cache. ``complete(requests)`` answers requests with
the answer after any thinking (``run.reasoning``: the split, the outcome, --ruler-think-budget's two
calls) over ``complete_raw``, which answers from the cache where it can and from the engine otherwise,
storing each answer as it arrives; an engine call shows its ``progress`` (a bar on a terminal, else a
line through ``say`` at least every ``progress_interval`` seconds; ``generating`` does the same while
an item's samples are generated), headed by ``position`` (where the run is, set by the plugin); the
engine's ``on_progress`` gets ``Progress.working`` for the call, its ``on_wait`` the session's ``say``.
The work of an item (generate, complete, grade, build the result) is in ``runner``; ``run_item`` and
``run_mapreduce_item`` hand off to it. Work shared between items sits in two named fields: ``queue``
(``run.queue.EngineQueue``: an item's engine calls carry the batches of the items after it, up to
``--ruler-batch-items`` items) and ``shared`` (samples a native item leaves for its map-reduce twin,
``batching``). An item's samples come from ``item_samples``: generated (with --ruler-record, written
by ``recorder``; ``item_done`` puts an item's file in place), or read back from ``recording`` with
--ruler-replay (``run.replay``). With ``--ruler-arm`` (``run.arms``) the reference arm's session is the
run's, ``arm`` names it, and ``arms`` holds each other arm's own session (its engine, its cache
identity); ``for_arm(name)`` picks one.

The engine is built lazily, on the first cache miss: a rerun served entirely from the cache never
loads the model. The cache key needs the engine's identity (``identity``: ``engines.registry.engine_identity``, its back end's name and class
included), which engines that can describe themselves give without loading.
``known_identity()`` is what this process knows of it without loading the engine (an xdist
controller adopts a worker's with ``adopt_identity``); ``engine_record()`` is the report's
top-level ``engine`` built from it (``results.identity.engine_record``, with the library
versions of ``report.provenance``).
An engine that fails to load fails once: the first item says why, every later
item fails at once with one line pointing at it (no reload per item).

An engine's error text is outside text (an exception quoting a model name, a path, a server's body):
``one_line`` and every ``Completion.error`` that ``complete`` hands on go through
:func:`~pytest_ruler.outside_text.shown` (controls escaped, the key scrubbed).

Its consumers name the part of it they use (``run.seams``: the runner's ``ItemSession``, the
preflight's ``StartSession``, the record's ``RecordSession``, the clock's ``ClockSession``); the
next step, splitting off the engine handle (``seams.EngineHandle``), is described there.

Public names: ``ItemResult``, ``RulerSession``, ``EngineUnavailable``,
``SAMPLES_PER_CALL``, ``one_line``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping, Sequence

from .cache import PredictionCache, prediction_key
from ..run_config import RulerConfig
from ..engines import ContextLength, Engine, EngineConfig, GenerationRequest, load_engine, resolve_backend
from ..engines.registry import engine_identity
from ..engines.base import Completion
from ..outside_text import shown
from . import replay, runner
from .batching import SharedSamples
from .queue import EngineQueue
from .recording import Recorder, Recording
from .progress import Progress, generation_lines, terminal_stream
from .runner import SAMPLES_PER_CALL
from ..results import ItemResult

__all__ = ["SAMPLES_PER_CALL", "EngineUnavailable", "ItemResult", "RulerSession", "one_line"]

log = logging.getLogger("pytest_ruler")


class EngineUnavailable(RuntimeError):
    """The engine failed to load earlier in this process; raised instead of reloading."""


def one_line(exc: BaseException, limit: int = 300) -> str:
    """An exception as one safe line (:func:`shown`): the RULER message for usage errors, else ``Type: message``."""
    from ..errors import RulerUsageError

    text = str(exc) if isinstance(exc, (RulerUsageError, EngineUnavailable)) else f"{type(exc).__name__}: {exc}"
    return shown(text, limit)


def _error_shown(c: Completion) -> Completion:
    """``c`` with its error text made safe to show (an engine may quote anything in it)."""
    if c.error is None:
        return c
    safe = shown(c.error, limit=None)
    return c if safe == c.error else dataclasses.replace(c, error=safe)


@dataclass
class RulerSession:
    """State of a run (one per process; xdist workers each have their own)."""

    config: RulerConfig
    cache_dir: Path | None
    _tokenizer: Any = field(default=None, repr=False)
    _frame: Any = field(default=None, repr=False)
    _gen_ctx: Any = field(default=None, repr=False)
    workers: int = 1  # the processes running items (-n), set by the plugin: part of run.throughput's key
    _engine: Engine | None = field(default=None, repr=False)
    _identity: Mapping[str, Any] | None = field(default=None, repr=False)
    _cache: PredictionCache | None = field(default=None, repr=False)
    engine_load_seconds: float = 0.0
    _queue: EngineQueue | None = field(default=None, repr=False)  # built on first use (see ``queue``)
    shared: SharedSamples = field(default_factory=SharedSamples, repr=False)  # native samples for the map-reduce twin
    _engine_error: str | None = field(default=None, repr=False)
    _cache_off: bool = field(default=False, repr=False)
    warnings: list[str] = field(default_factory=list, repr=False)
    # the engine's context resolved without loading it (the start-up check's); None: not asked in this process yet
    context: ContextLength | None = field(default=None, repr=False)
    notify: Any = field(default=None, repr=False)  # callable(line) set by the plugin
    position: str = ""  # where the run is, e.g. "item 3/10": set by the plugin, shown by the progress bar and lines
    progress_interval: float = field(default=30.0, repr=False)  # the most seconds without a line (no terminal)
    _terminal: Any = field(default=None, repr=False)  # the progress bar's stream, or None (see progress.terminal_stream)
    _progress: Progress | None = field(default=None, repr=False)  # the engine call's progress, while it runs
    _said_at: float = field(default_factory=time.perf_counter, repr=False)  # when say last wrote a line
    # each data kind's path as given (data.registry.given_paths; the plugin adds registered kinds' own options)
    data_given: Mapping[str, str | None] | None = field(default=None, repr=False)
    _data_paths: Mapping[str, str | None] | None = field(default=None, repr=False)
    _recorder: Any = field(default=None, repr=False)  # --ruler-record: run.recording.Recorder, built on first use
    _recording: Any = field(default=None, repr=False)  # --ruler-replay: run.recording.Recording, read on first use
    replay_checked: int | None = None  # samples the start-up check re-tokenized (run.replay)
    # --ruler-arm (run.arms): this session's arm (None: no arms), and on the reference arm's session the other arms' sessions
    arm: str | None = None
    arms: dict[str, "RulerSession"] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self._terminal = terminal_stream()  # now, before pytest captures stderr
        if self.data_given is None:
            from ..data.registry import given_paths

            self.data_given = given_paths(self.config)

    def for_arm(self, name: str | None) -> "RulerSession":
        """The session of arm ``name`` (this one for the reference arm, or when there are no arms)."""
        if name is None or name == self.arm:
            return self
        return self.arms[name]

    # ---- lazily built parts -------------------------------------------------
    @property
    def queue(self) -> EngineQueue:
        """The engine's queue across items (--ruler-batch-items of them; the plugin sets what comes next)."""
        if self._queue is None:
            self._queue = EngineQueue(self.config.batch_items, lambda cell: runner.upcoming_work(self, cell), self.complete)
        return self._queue

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

            self._frame = frame_for(self.config.chat_template, self.tokenizer, self.config.chat_template_kwargs)
        return self._frame

    @property
    def generation_context(self):
        if self._gen_ctx is None:
            from ..tasks import GenerationContext

            self._gen_ctx = GenerationContext(self.tokenizer, frame=self.frame, data=self.data_paths)
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
            engine.on_wait = self.say  # an engine that waits on something says what (EngineBase.on_wait)
            self.engine_load_seconds = time.perf_counter() - started
            log.info("loaded %s engine for %s in %.1fs", engine.name, self.config.model, self.engine_load_seconds)
        return self._engine

    @property
    def identity(self) -> Mapping[str, Any]:
        """The cache identity (``engines.registry.engine_identity``); loads the engine only when it cannot describe itself."""
        if self._identity is None:
            self._identity = engine_identity(self.engine_config, lambda: self.engine)
        return self._identity

    def known_identity(self) -> Mapping[str, Any]:
        """The identity as far as it is known without loading the engine: this process's (or an
        xdist worker's, :meth:`adopt_identity`), else the described one, whose own part is None
        when only a loaded engine can tell."""
        if self._identity is not None:
            return self._identity
        known = engine_identity(self.engine_config)
        if known["engine"] is not None:
            self._identity = known
        return known

    def adopt_identity(self, identity: Mapping[str, Any]) -> None:
        """The identity an xdist worker used (the controller loads no engine to learn it)."""
        if self._identity is None and isinstance(identity, Mapping) and identity.get("engine") is not None:
            self._identity = identity

    def engine_record(self) -> dict[str, Any] | None:
        """The report's top-level ``engine``: :meth:`known_identity` with the engine options and the
        library versions (``results.identity.engine_record``; secrets scrubbed)."""
        from ..report.provenance import engine_versions
        from ..results.identity import engine_record

        return engine_record(self.known_identity(), options=self.config.engine_options, versions=engine_versions())

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
        with self._progress.hidden() if self._progress is not None else contextlib.nullcontext():
            if self.notify is not None:
                self.notify(line)
            else:
                log.warning(line)
        self._said_at = time.perf_counter()

    @property
    def data_paths(self) -> Mapping[str, str | None]:
        """Each data kind's path: as given (``data_given``: the config's own options, and the plugin's
        reading of a registered kind's option), else what
        ``pytest-ruler download`` left in the data folder (``data.registry``)."""
        if self._data_paths is None:
            from ..data.registry import default_paths

            self._data_paths = default_paths(self.data_given or {})
        return self._data_paths

    def data_missing(self, task: str) -> str | None:
        """Why a task cannot run here (a kind of data its family needs has no path), or None (always with
        --ruler-replay: nothing is generated)."""
        if self.config.replay is not None:
            return None
        from ..data.registry import missing_data, missing_message
        from ..tasks import data_needs, get_task

        lacking = missing_data(data_needs(get_task(task)), self.data_paths)
        return missing_message(task, lacking[0]) if lacking else None

    def haystack_label(self, task: str) -> str:
        from ..tasks import haystack_label

        if self.config.replay is not None:  # the recorded samples say what their haystack was
            return replay.recorded_haystack(self, task)
        return haystack_label(task, self.generation_context)

    # ---- where samples come from: generated (and recorded), or replayed (run.replay) -------------
    @property
    def recorder(self) -> Any:
        """--ruler-record's writer (``run.recording.Recorder``)."""
        if self._recorder is None:
            self._recorder = Recorder(self.config.record)
        return self._recorder

    @property
    def recording(self) -> Any:
        """--ruler-replay's recording (``run.recording.Recording``), read once."""
        if self._recording is None:
            self._recording = Recording.open(self.config.replay)
        return self._recording

    def item_samples(self, spec: Any, length: int, seed: int, n: int) -> Iterator[Any]:
        """An item's ``n`` samples: generated (recorded with --ruler-record), or read back (--ruler-replay)."""
        return replay.item_samples(self, spec, length, seed, n)

    def item_done(self, cell: tuple[str, int, int]) -> None:
        """An item finished: with --ruler-record, its samples' file is put in place (it may have stopped early)."""
        if self._recorder is not None:
            self._recorder.finish(cell)

    # ---- the work of one item ---------------------------------------------
    def generating(self, samples: Iterable[Any], label: str, total: int) -> Iterator[Any]:
        """An item's ``samples`` as they are generated, with a line whenever nothing was said for
        ``progress_interval`` seconds (``progress.generation_lines``)."""
        return generation_lines(samples, label=label, total=total, say=self.say, interval=self.progress_interval,
                                last_said=lambda: self._said_at, position=self.position)

    @property
    def thinking(self) -> Any:
        """The thinking settings (``run.reasoning.ThinkingSettings``): --ruler-think-budget and the markers."""
        from ..engines.thinking import Markers
        from .reasoning import ThinkingSettings

        c = self.config
        return ThinkingSettings(c.think_budget, Markers(c.think_start, c.think_end))

    def complete(self, requests: Sequence[GenerationRequest], label: str = "") -> tuple[list[Completion], list[bool]]:
        """Completions for requests, each ``text`` the answer after any thinking, with its outcome
        (``run.reasoning``: with --ruler-think-budget, a thinking call and an answer call each);
        per request, whether it came from the cache."""
        from . import reasoning

        tok = self.tokenizer
        return reasoning.complete(self.complete_raw, requests, label, self.thinking, tok.encode, tok.count)

    def complete_raw(self, requests: Sequence[GenerationRequest], label: str = "") -> tuple[list[Completion], list[bool]]:
        """The engine's completions for requests, as it gave them: from the cache where possible,
        else from the engine.

        Returns the completions and, per request, whether it came from the
        cache. Each engine result is stored as soon as it arrives.
        """
        keys = [prediction_key(self.identity, r) for r in requests]
        cache = self.cache
        tag = cache.tag(self.config.model, self.backend, self.identity) if cache is not None else None
        hits = cache.get_many(keys) if cache is not None else {}
        from_cache = [k in hits for k in keys]
        results: list[Completion | None] = [hits.get(k) for k in keys]
        todo = [i for i, c in enumerate(results) if c is None]
        if todo:
            batch = [requests[i] for i in todo]
            # from before the engine loads (a first load can take a while) to the last answer
            progress = Progress(label or "ruler", total=len(batch), say=self.say, interval=self.progress_interval,
                                stream=self._terminal, position=self.position, since=self._said_at)

            def on_result(j: int, c: Completion) -> None:
                i = todo[j]
                c = _error_shown(c)
                results[i] = c
                if cache is not None:
                    cache.put(keys[i], c, tag)
                progress.advance(c.prompt_tokens + c.completion_tokens)

            self._progress = progress
            engine = None
            try:
                engine = self.engine
                engine.on_progress = progress.working  # an engine that can say how far a batch is does (hf: per step)
                out = engine.generate(batch, on_result=on_result)
            finally:
                if engine is not None:
                    engine.on_progress = None
                self._progress = None
                progress.close()
            for j, c in enumerate(out):  # engines that never called back still count
                if results[todo[j]] is None:
                    on_result(j, c)
        return [c for c in results if c is not None], from_cache

    def use_context(self, context: ContextLength) -> None:
        """The engine's context as the start-up check resolved it (``tokens`` None: unknown until it loads)."""
        self.context = context

    @property
    def context_limit(self) -> int | None:
        """The engine's context, when known without loading it: asked once per process."""
        if self.context is None:  # an xdist worker: the controller checked, not us
            from .preflight import engine_context

            try:
                self.context = engine_context(self)
            except Exception:  # unknown: the engine refuses over-length prompts itself
                self.context = ContextLength(None)
        return self.context.tokens

    def over_context(self, length: int) -> bool:
        """Whether an item of ``length`` tokens cannot fit the engine's context (known without loading it)."""
        limit = self.context_limit
        return limit is not None and length > limit

    def run_item(self, task: Any, length: int, seed: int = 0, *, samples: int | None = None, threshold: float | None = None) -> ItemResult:
        """Run one native item; ``task`` is a name or a TaskSpec (a user test's custom task)."""
        return runner.run_native(self, task, length, seed, samples=samples, threshold=threshold)

    def run_mapreduce_item(self, task: Any, length: int, seed: int = 0, *, samples: int | None = None,
                           threshold: float | None = None, config: Any = None) -> ItemResult:
        """The map-reduce twin of an item: the same samples, answered by chunked inference."""
        return runner.run_mapreduce(self, task, length, seed, samples=samples, threshold=threshold, config=config)

    def errored_result(self, task: Any, length: int, seed: int, mode: str, error: str, seconds: float = 0.0, *,
                       samples: int | None = None, threshold: float | None = None) -> ItemResult:
        """The result of an item that produced no trustworthy score: it fails, with its reason."""
        return runner.errored_result(self.config, task, length, seed, mode, error, seconds, samples=samples, threshold=threshold)

    def mapreduce_window(self, config: Any) -> int:
        """Tokens one map-reduce call may use: the option, else the engine's context as resolved
        without loading it (the same on every run, so the chunks and their cache keys are), else
        the loaded engine's."""
        if config.window:
            return config.window
        return self.context_limit or int(self.engine.max_context)

    def close(self) -> None:
        for other in self.arms.values():
            other.close()
        if self._engine is not None:
            try:
                self._engine.close()
            finally:
                self._engine = None
        if self._cache is not None:
            self._cache.close()
            self._cache = None
        if self._recorder is not None:  # items that never finished leave no file
            self._recorder.close()
