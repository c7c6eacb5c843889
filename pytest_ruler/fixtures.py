"""Fixtures and the marker for users' own RULER tests.

    @pytest.mark.ruler(task="niah_single_1", lengths=["4k", "8k"], samples=20, threshold=90)
    def test_retrieval_holds_at_8k(ruler):
        ruler.check()                       # every length of the marker must pass

    def test_custom(ruler):
        result = ruler.run(make_task(...), "16k", samples=10)
        assert result.score >= 70, result.failure_message()

``ruler`` is a :class:`RulerRunner` over the session's engine (built once per
process, shared with the standard suite and its cache). Its results join the
run's summary and JSON report. Without ``--ruler-model`` these tests skip
with a message saying how to run them.

Public names: ``RulerRunner``, ``ruler``, ``ruler_session`` (fixtures).
"""

from __future__ import annotations

from typing import Any, Iterable

import pytest

from .items import SESSION_KEY, record_result
from .lengths import parse_length
from .session import ItemResult, RulerSession

__all__ = ["RulerRunner", "ruler", "ruler_session"]


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

    def run(self, task: Any = None, length: Any = None, *, samples: int | None = None, seed: int | None = None, threshold: float | None = None) -> ItemResult:
        d = self.defaults
        task = task if task is not None else d.get("task")
        if task is None:
            raise pytest.UsageError("ruler.run() needs a task (argument or @pytest.mark.ruler(task=...))")
        if length is None:
            lengths = d.get("lengths") or [d.get("length")]
            if len(lengths) != 1 or lengths[0] is None:
                raise pytest.UsageError("ruler.run() needs one length; use ruler.check() for several")
            length = lengths[0]
        result = self.session.run_item(
            task,
            parse_length(length, "length"),
            d.get("seed", 0) if seed is None else seed,
            samples=samples if samples is not None else d.get("samples"),
            threshold=threshold if threshold is not None else d.get("threshold"),
        )
        record_result(self.item, result)
        return result

    def check(self, task: Any = None, lengths: Iterable[Any] | None = None, **kw: Any) -> list[ItemResult]:
        """Run each length and fail the test with the item messages of those below threshold."""
        if lengths is None:
            lengths = self.defaults.get("lengths") or [self.defaults.get("length")]
        results = [self.run(task, length, **kw) for length in lengths]
        failed = [r for r in results if not r.passed]
        if failed:
            pytest.fail("\n".join(r.failure_message() for r in failed), pytrace=False)
        return results


@pytest.fixture(scope="session")
def ruler_session(request: Any) -> RulerSession:
    """The run's RulerSession (engine, tokenizer, cache); skips without --ruler-model."""
    rs = request.config.stash.get(SESSION_KEY, None)
    if rs is None:
        pytest.skip("RULER tests need a model: pass --ruler-model=NAME (e.g. --ruler-model=smollm2-135m)")
    return rs


@pytest.fixture
def ruler(request: Any, ruler_session: RulerSession) -> RulerRunner:
    """Run RULER items from a test; defaults come from @pytest.mark.ruler(...)."""
    return RulerRunner(ruler_session, request.node)
