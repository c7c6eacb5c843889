"""Pytest items: one per (task × length × seed), under a ``ruler`` collector.

Ids look like ``ruler::niah_single_1[4096-seed0]``, so ``-k niah_single_1``
and ``-k 4096`` select as users expect. With ``--ruler-mapreduce`` each item
has a twin ``ruler::niah_single_1[4096-seed0-mapreduce]`` that answers the same
samples by chunked inference (``-k mapreduce`` selects the twins). Items are ordered length-major, so an
xdist worker's consecutive items share a prompt length.

Public names: ``SESSION_KEY``, ``RulerItem``, ``RulerSuite``, ``make_items``.
"""

from __future__ import annotations

from typing import Any

import pytest

from .session import ItemResult, RulerSession

__all__ = ["RESULT_ATTR", "SESSION_KEY", "RulerItem", "RulerItemFailure", "RulerSuite", "make_items", "record_result"]

SESSION_KEY = pytest.StashKey[RulerSession]()
RESULT_ATTR = "ruler_result"


def record_result(item: Any, result: ItemResult) -> None:
    """Attach a result to a test item; its report carries it to the summary."""
    results = getattr(item, RESULT_ATTR, None)
    if results is None:
        results = []
        setattr(item, RESULT_ATTR, results)
    results.append(result)


class RulerItemFailure(Exception):
    def __init__(self, result: ItemResult):
        super().__init__(result.failure_message())
        self.result = result


class RulerSuite(pytest.Collector):
    """The parent of the standard suite's items (they are made, not collected from files)."""

    def collect(self) -> list[Any]:  # pragma: no cover - items are attached directly
        return []


class RulerItem(pytest.Item):
    def __init__(self, *, task: str, length: int, seed: int, mode: str = "native", **kwargs: Any):
        super().__init__(**kwargs)
        self.task, self.length, self.seed, self.mode = task, length, seed, mode
        self.add_marker(pytest.mark.ruler)

    def runtest(self) -> None:
        session = self.config.stash[SESSION_KEY]
        missing = session.data_missing(self.task)
        if missing:
            pytest.skip(missing)
        if self.mode == "mapreduce":
            result = session.run_mapreduce_item(self.task, self.length, self.seed)
        else:
            result = session.run_item(self.task, self.length, self.seed)
        record_result(self, result)
        self.user_properties += [
            ("ruler_task", self.task),
            ("ruler_length", self.length),
            ("ruler_seed", self.seed),
            ("ruler_mode", self.mode),
            ("ruler_score", result.score),
            ("ruler_threshold", result.threshold),
        ]
        if not result.passed:
            raise RulerItemFailure(result)

    def repr_failure(self, excinfo: Any, style: Any = None) -> Any:
        if isinstance(excinfo.value, RulerItemFailure):
            return str(excinfo.value)
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Any, int | None, str]:
        return self.path, None, f"ruler: {self.name}"


def make_items(session: pytest.Session, rs: RulerSession) -> list[RulerItem]:
    # a pseudo path, so progress lines read "ruler ....." and -k can match "ruler"
    suite = RulerSuite.from_parent(session, name="ruler", path=session.config.rootpath / "ruler")
    c = rs.config
    items = []
    for length in c.lengths:
        for task in c.tasks:
            for seed in c.seeds:
                items.append(RulerItem.from_parent(suite, name=f"{task}[{length}-seed{seed}]", task=task, length=length, seed=seed))
                if c.mapreduce:
                    items.append(RulerItem.from_parent(suite, name=f"{task}[{length}-seed{seed}-mapreduce]", task=task, length=length, seed=seed, mode="mapreduce"))
    # announce them as collected, as a file's collector would (the "collected N items" line)
    session.ihook.pytest_collectreport(report=pytest.CollectReport(suite.nodeid, "passed", None, items))
    return items
