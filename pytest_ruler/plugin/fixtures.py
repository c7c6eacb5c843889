"""The runners behind the fixtures and the marker of users' own RULER tests.

    @pytest.mark.ruler(task="niah_single_1", lengths=["4k", "8k"], samples=20, threshold=90)
    def test_retrieval_holds_at_8k(ruler):
        ruler.check()                       # every length of the marker must pass

    def test_custom(ruler):
        result = ruler.run(make_task(...), "16k", samples=10)
        assert result.score > 70, result.failure_message(70)

The fixture ``ruler`` is a :class:`RulerRunner` over the session's engine (built once per
process, shared with the standard suite and its cache). Its results join the
run's summary and JSON report. Without ``--ruler-model`` these tests skip
with a message saying how to run them. The fixtures themselves are defined in the
plugin's entry module (``pytest_ruler.plugin``), so pytest finds them without
importing this module; they import it when a test uses them with a model.

``ruler_mapreduce`` is the same over LLM×MapReduce chunked inference, with
the chunk size, overlap, parallelism and collapse bound as keywords::

    def test_chunked_inference_rescues_16k(ruler_mapreduce):
        native, chunked = ruler_mapreduce.check_rescue("niah_single_1", "16k", samples=3, chunk_tokens=2048)

Public names: ``RulerRunner``, ``MapReduceRunner``.
"""

from __future__ import annotations

from typing import Any, Iterable

import pytest

from .items import record_result
from ..lengths import parse_length
from ..run.session import ItemResult, RulerSession

__all__ = ["MapReduceRunner", "RulerRunner"]


class RulerRunner:
    def __init__(self, session: RulerSession, item: Any):
        self.session = session
        self.item = item
        marker = item.get_closest_marker("ruler")
        self.defaults = dict(marker.kwargs) if marker is not None else {}
        if marker is not None and marker.args:
            self.defaults.setdefault("task", marker.args[0])

    @property
    def engine(self):
        return self.session.engine

    def _args(self, task: Any, length: Any, samples: int | None, seed: int | None, threshold: float | None) -> dict[str, Any]:
        d = self.defaults
        task = task if task is not None else d.get("task")
        if task is None:
            raise pytest.UsageError("ruler.run() needs a task (argument or @pytest.mark.ruler(task=...))")
        if length is None:
            lengths = d.get("lengths") or [d.get("length")]
            if len(lengths) != 1 or lengths[0] is None:
                raise pytest.UsageError("ruler.run() needs one length; use ruler.check() for several")
            length = lengths[0]
        return dict(
            task=task,
            length=parse_length(length, "length"),
            seed=d.get("seed", 0) if seed is None else seed,
            samples=samples if samples is not None else d.get("samples"),
            threshold=threshold if threshold is not None else d.get("threshold"),
        )

    def run(self, task: Any = None, length: Any = None, *, samples: int | None = None, seed: int | None = None, threshold: float | None = None) -> ItemResult:
        """One native item; its result joins the run's summary."""
        result = self.session.run_item(**self._args(task, length, samples, seed, threshold))
        record_result(self.item, result)
        return result

    def check(self, task: Any = None, lengths: Iterable[Any] | None = None, **kw: Any) -> list[ItemResult]:
        """Run each length and fail the test with the item messages of those below threshold."""
        if lengths is None:
            lengths = self.defaults.get("lengths") or [self.defaults.get("length")]
        results = [self.run(task, length, **kw) for length in lengths]
        failed = [r for r in results if not r.passed]
        if failed:
            pytest.fail("\n".join(r.failure_message(r.threshold) for r in failed), pytrace=False)
        return results


class MapReduceRunner(RulerRunner):
    """``ruler`` for chunked inference: ``run`` answers by map → collapse → reduce.

    Keywords (else the run's ``--ruler-mapreduce-*`` options): ``chunk_tokens``,
    ``overlap``, ``window``, ``max_rounds`` (the collapse bound), ``parallel``
    (requests per engine call), ``verify`` (grounding: True = ``literal`` hallucination
    filter, False = ``none``), ``calibration``, ``record_tokens``, ``layout`` (map prompt
    layout, one of ``mapreduce.pipeline.MAP_LAYOUTS``, or ``auto``: few-shot for base prompts).
    """

    def _config(self, options: dict[str, Any]) -> Any:
        from dataclasses import replace

        from ..mapreduce import MapReduceConfig

        base = self.session.config.mapreduce_config or MapReduceConfig()
        if "chunk_tokens" in options:
            options["chunk_tokens"] = parse_length(options["chunk_tokens"], "chunk_tokens")
        if options.get("window") is not None:
            options["window"] = parse_length(options["window"], "window")
        try:
            return replace(base, **options).validate()
        except TypeError:
            known = ", ".join(MapReduceConfig.__dataclass_fields__)
            raise pytest.UsageError(f"ruler_mapreduce options {sorted(options)}: unknown option; use {known}") from None

    def run(self, task: Any = None, length: Any = None, *, samples: int | None = None, seed: int | None = None,
            threshold: float | None = None, **options: Any) -> ItemResult:
        """One map-reduce item (mode "mapreduce"); its result joins the run's summary."""
        result = self.session.run_mapreduce_item(**self._args(task, length, samples, seed, threshold), config=self._config(options))
        record_result(self.item, result)
        return result

    def native(self, task: Any = None, length: Any = None, **kw: Any) -> ItemResult:
        return RulerRunner.run(self, task, length, **kw)

    def check_rescue(self, task: Any = None, length: Any = None, *, samples: int | None = None, seed: int | None = None,
                     threshold: float | None = None, **options: Any) -> tuple[ItemResult, ItemResult]:
        """Fail the test unless map-reduce passes where native context fails; returns (native, mapreduce).

        What code did to the model's records is part of the result: the grounding label
        (``mapreduce.grounding_label``: the grounding mode and the protocol compliance) is
        in every failure message and, on a pass, in the test's ``user_properties`` as
        ``ruler_mapreduce_grounding`` (junit XML shows it) and its captured output.
        """
        from ..mapreduce import grounding_label

        native = self.native(task, length, samples=samples, seed=seed, threshold=threshold)
        chunked = self.run(task, length, samples=samples, seed=seed, threshold=threshold, **options)
        label = grounding_label(chunked.mapreduce)
        problems = []
        if native.passed:
            problems.append(f"native context passes ({native.score:.1f} > {native.threshold:.1f}): nothing to rescue at this length")
        if not chunked.passed:
            problems.append(chunked.failure_message(chunked.threshold))
        if problems:
            pytest.fail("\n".join(problems + [f"map-reduce {label}"]), pytrace=False)
        self.item.user_properties.append(("ruler_mapreduce_grounding", label))
        print(f"map-reduce passes where native fails ({chunked.task} at {chunked.length}); {label}")
        return native, chunked
