"""The run's seams as types: what each consumer of the run's session uses of it.

One ``RulerSession`` (``run.session``) serves them all; each consumer names, with one of these
Protocols, the part it reads, so a change to the session shows which seam it crosses and a test
can hand a consumer a small stand-in (a ``SimpleNamespace``) that meets just its seam::

    RunView          config, say, warn                          every consumer
      Prompting      + tokenizer, frame, generation_context,     what a prompt is measured in
                       backend, data_missing(task)
        ItemSession  + queue, shared, generating, complete,      run.runner: the work of one item
                       context_limit, over_context, mapreduce_window
        StartSession + data_given, engine_config, cache,         run.preflight: the start-up check
                       use_context
      ClockSession   + cache_dir, workers, engine_load_seconds,  run.eta: the estimate and the ETA
                       known_identity(), queue
    RecordSession    Prompting + ClockSession + position (set),  run.outcome: the run's record
                     warnings, engine_record, haystack_label,   (it hands itself to its RunClock)
                     errored_result
    EngineHandle     engine, identity, known_identity,          what the engine side of the
                     adopt_identity, engine_record, cache,      session owns (see below)
                     context_limit, over_context, close

The plugin builds the one ``RulerSession`` and hands it on (``plugin.keys.SESSION_KEY``); pytest's
own ``pytest.Session`` is another thing, named ``session`` in pytest's hooks.

Next step (not done here, so that the features landing in ``run/session.py`` now merge
cleanly): split ``RulerSession`` along ``EngineHandle``. The handle owns the engine (loaded
lazily, failing once), its identity, the prediction cache, the resolved context and ``close``;
the session keeps the run state (the queue, the shared samples, progress and ``say``,
warnings, data paths) and holds one handle. ``complete_raw`` then becomes the handle's call
with the session's progress passed in. Every consumer above already names only its seam, so
the split changes no consumer's signature.

Nothing is imported at run time but ``typing``: the types named here are for readers and type
checkers (``TYPE_CHECKING``), and importing this module loads none of the run.

Public names: ``RunView``, ``Prompting``, ``ItemSession``, ``StartSession``, ``RecordSession``,
``ClockSession``, ``EngineHandle``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable, Iterator, Mapping, Protocol, Sequence

if TYPE_CHECKING:
    from pathlib import Path

    from ..engines import ContextLength, Engine, EngineConfig, GenerationRequest
    from ..engines.base import Completion
    from ..results import ItemResult
    from ..run_config import RulerConfig
    from ..tasks.base import Frame, GenerationContext
    from ..tasks.tokenizer import Tokenizer
    from .batching import SharedSamples
    from .cache import PredictionCache
    from .queue import EngineQueue

__all__ = ["ClockSession", "EngineHandle", "ItemSession", "Prompting", "RecordSession", "RunView", "StartSession"]


class RunView(Protocol):
    """What every consumer reads: the run's configuration, and lines for the user."""

    @property
    def config(self) -> RulerConfig: ...

    def say(self, line: str) -> None:
        """One line for the user now."""

    def warn(self, message: str) -> None:
        """A warning, shown once and kept for the report."""


class Prompting(RunView, Protocol):
    """What a prompt is measured in and made of (built lazily by the session)."""

    @property
    def tokenizer(self) -> Tokenizer: ...

    @property
    def frame(self) -> Frame: ...

    @property
    def generation_context(self) -> GenerationContext: ...

    @property
    def backend(self) -> str: ...

    def data_missing(self, task: str) -> str | None:
        """Why a task cannot run here (a kind of data its family needs has no path), or None."""


class ItemSession(Prompting, Protocol):
    """What the work of one item (``run.runner``) uses."""

    @property
    def queue(self) -> EngineQueue: ...

    @property
    def shared(self) -> SharedSamples: ...

    @property
    def context_limit(self) -> int | None: ...

    def generating(self, samples: Iterable[Any], label: str, total: int) -> Iterator[Any]: ...

    def complete(self, requests: Sequence[GenerationRequest], label: str = "") -> tuple[list[Completion], list[bool]]: ...

    def over_context(self, length: int) -> bool: ...

    def mapreduce_window(self, config: Any) -> int: ...

    def item_samples(self, spec: Any, length: int, seed: int, n: int) -> Iterator[Any]: ...

    def item_done(self, cell: tuple[str, int, int]) -> None: ...


class StartSession(Prompting, Protocol):
    """What the start-up check (``run.preflight``) uses."""

    @property
    def data_given(self) -> Mapping[str, str | None] | None: ...

    @property
    def engine_config(self) -> EngineConfig: ...

    @property
    def cache(self) -> PredictionCache | None: ...

    def use_context(self, context: ContextLength) -> None: ...


class ClockSession(RunView, Protocol):
    """What the estimate and the ETA (``run.eta.RunClock``) use."""

    @property
    def cache_dir(self) -> Path | None: ...

    @property
    def workers(self) -> int: ...

    @property
    def engine_load_seconds(self) -> float: ...

    @property
    def queue(self) -> EngineQueue: ...

    def known_identity(self) -> Mapping[str, Any]: ...


class RecordSession(Prompting, ClockSession, Protocol):
    """What the run's record (``run.outcome.RunRecord``) uses; it sets ``position``."""

    position: str
    warnings: list[str]
    arm: str | None  # --ruler-arm: this session's arm (run.arms)
    arms: Mapping[str, Any]  # on the reference arm's session: the other arms' sessions

    def engine_record(self) -> dict[str, Any] | None: ...

    def haystack_label(self, task: str) -> str: ...

    def errored_result(self, task: Any, length: int, seed: int, mode: str, error: str, seconds: float = 0.0, *,
                       samples: int | None = None, threshold: float | None = None) -> ItemResult: ...


class EngineHandle(Protocol):
    """The engine side of the session: what the split (see the module docstring) moves out."""

    @property
    def engine(self) -> Engine: ...

    @property
    def identity(self) -> Mapping[str, Any]: ...

    @property
    def cache(self) -> PredictionCache | None: ...

    @property
    def context_limit(self) -> int | None: ...

    def known_identity(self) -> Mapping[str, Any]: ...

    def adopt_identity(self, identity: Mapping[str, Any]) -> None: ...

    def engine_record(self) -> dict[str, Any] | None: ...

    def over_context(self, length: int) -> bool: ...

    def close(self) -> None: ...
