"""``--ruler-shard=i/N``: this run keeps the collected items of shard i and deselects the rest.

    pytest_collection_modifyitems (trylast: after the suite's items were added, after -k / -m)
        ──Shard.selects(item.nodeid)──► the items this shard runs; the others go through pytest's own
        ``pytest_deselected`` hook, so the terminal says "N deselected" and JUnit XML, --lf and
        xdist see the same selection
    pytest_sessionfinish ──► a shard that holds none of the suite's items exits 0, not pytest's
        "no tests collected" (5): its empty report merges like any other
    pytest_report_header ──► one line: the shard and where its report goes next (``pytest-ruler merge``)

Every collected item is sharded, the user's own tests too (each runs in exactly one shard, so
the merged report has each result once). The selection is ``shard.shard_of`` of the node id:
the same on every xdist worker, whatever the collection order. The run's report carries a
``shard`` entry (run.outcome), and its gate says NOT DECIDED until the shards are merged.

Registered by ``plugin.pytest_configure`` only when the suite is active and ``--ruler-shard`` is given.

Public names: ``ShardPlugin``.
"""

from __future__ import annotations

from typing import Any

import pytest

from ..shard import Shard

__all__ = ["ShardPlugin"]


class ShardPlugin:
    def __init__(self, shard: Shard, no_suite: bool = False):
        self.shard = shard
        self.no_suite = no_suite

    def pytest_report_header(self, config: Any) -> list[str]:
        return [f"ruler: shard {self.shard} (--ruler-shard): only the items whose node id hashes to it run; "
                "merge every shard's --ruler-report with `pytest-ruler merge`"]

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, session: pytest.Session, config: Any, items: list) -> None:
        kept, dropped = [], []
        for item in items:
            (kept if self.shard.selects(item.nodeid) else dropped).append(item)
        if dropped:
            items[:] = kept
            config.hook.pytest_deselected(items=dropped)

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: Any) -> None:
        # a shard that holds none of the suite's items (more shards than items) has run its share:
        # its report (no items) merges, and its matrix job does not fail for "no tests ran"
        if session.exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED and not self.no_suite:
            session.exitstatus = pytest.ExitCode.OK
