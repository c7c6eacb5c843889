"""Pytest items: one per (task × length × seed), under a ``ruler`` collector.

Ids look like ``ruler::niah_single_1[4096-seed0]``: the collector is a
file-system node at ``<rootdir>/ruler`` (nothing is read from there), so the
node id has a real root like any test file's, and ``-k niah_single_1``,
``-k 4096``, ``--lf``, ``--sw``, ``--deselect ruler::vt[4096-seed0]`` and
JUnit XML work as users expect; the progress line reads ``ruler ..F.``. With ``--ruler-mapreduce`` each item
has a twin ``ruler::niah_single_1[4096-seed0-mapreduce]`` that answers the same
samples by chunked inference (``-k mapreduce`` selects the twins). With ``--ruler-arm`` (run.arms) every
item has one per arm, side by side, the arm last in its id: ``ruler::niah_single_1[4096-seed0-arm=cand]``
(``-k cand`` selects an arm's items); each runs on its arm's session (``RulerSession.for_arm``). Items are ordered length-major, so an
xdist worker's consecutive items share a prompt length; with ``--ruler-stop-when-decided`` the lengths
come in the order that decides the gate soonest, and an item the verdict no longer needs is skipped
as "not measured (decided without it)" (run.decided; ``DECIDER_KEY`` holds what it has seen). With
``--ruler-replay`` the items are the recorded ones among the selection (run.replay).

What an item's outcome means: without a gate, a baseline or a relative mark, an item asserts
its mark (it fails below it). With one (``RulerConfig.gated``) the exit code is the run's verdict
(results.verdict) and items are its measurements: an item below its mark is xfailed with its
score and mark as the reason (pytest's word for "falls short, and that alone fails nothing"; JUnit
keeps the reason), so a length above the required one never turns pytest's last line red while
the verdict passes; an errored item still fails (it fails the verdict too). ``-x`` stops at an
error, not at a measurement; ``--lf`` reruns errored items (and, after a failed verdict, the
selection: plugin.verdict_report).

Public names: ``DECIDER_KEY``, ``RulerItem``, ``RulerSuite``, ``make_items``, ``native_cells``, ``parse_item_arm``, ``parse_item_name``,
``record_result`` (and, from :mod:`.keys`, ``SESSION_KEY`` and ``RESULT_ATTR``).
"""

from __future__ import annotations

import dataclasses
import re
import time
import traceback
from typing import Any

import pytest

from ..outside_text import escaped
from ..run.session import ItemResult, RulerSession, one_line
from ..run.decided import Decider, make_plan
from .keys import RESULT_ATTR, SESSION_KEY

DECIDER_KEY = pytest.StashKey["Decider"]()  # --ruler-stop-when-decided: what the verdict still needs (run.decided)

__all__ = ["DECIDER_KEY", "RESULT_ATTR", "SESSION_KEY", "RulerItem", "RulerItemFailure", "RulerSuite", "make_items", "native_cells",
           "parse_item_arm", "parse_item_name", "record_result"]

SUITE_NAME = "ruler"


def record_result(item: Any, result: ItemResult) -> None:
    """Attach a result to a test item; its report carries it to the summary."""
    results = getattr(item, RESULT_ATTR, None)
    if results is None:
        results = []
        setattr(item, RESULT_ATTR, results)
    results.append(result)


_ITEM_NAME = re.compile(r"(?:^|::)(?P<task>[^:\[\]]+)\[(?P<length>\d+)-seed(?P<seed>\d+)(?P<mapreduce>-mapreduce)?"
                        r"(?:-arm=(?P<arm>[A-Za-z0-9_.]+))?\]$")


def parse_item_name(nodeid: str) -> tuple[str, int, int, str] | None:
    """(task, length, seed, mode) of a standard-suite item's node id, else None.

    The xdist controller has no items of its own: a worker that crashed leaves
    only the node id of the item it was running, and this turns it back into a cell.
    """
    m = _ITEM_NAME.search(nodeid)
    if m is None or not nodeid.startswith(f"{SUITE_NAME}::"):
        return None
    return m["task"], int(m["length"]), int(m["seed"]), "mapreduce" if m["mapreduce"] else "native"


def parse_item_arm(nodeid: str) -> str | None:
    """The arm of a standard-suite item's node id (``...-arm=NAME]``), else None."""
    m = _ITEM_NAME.search(nodeid)
    return None if m is None else m["arm"]


def native_cells(items: Any) -> list[tuple[str, int, int]]:
    """The (task, length, seed) cells of the native suite items among ``items``."""
    return [(i.task, i.length, i.seed) for i in items if isinstance(i, RulerItem) and i.mode == "native"]


def measured(result: ItemResult) -> str:
    """Why an item below its mark is xfailed when a gate, a baseline or a relative mark decides the run."""
    return (f"scored {result.score:.1f} <= its mark {result.threshold:.1f}: measured for the run's verdict, "
            "which decides (see `ruler verdict:`)")


class RulerItemFailure(Exception):
    def __init__(self, result: ItemResult):
        super().__init__(result.failure_message(result.threshold))
        self.result = result


class RulerSuite(pytest.File):
    """The parent of the standard suite's items: a virtual file ``ruler`` under the rootdir
    (its items are made from the options, not collected from a file)."""

    def collect(self) -> list[Any]:  # pragma: no cover - items are attached directly
        return []


class RulerItem(pytest.Item):
    def __init__(self, *, task: str, length: int, seed: int, mode: str = "native", arm: str | None = None, **kwargs: Any):
        super().__init__(**kwargs)
        self.task, self.length, self.seed, self.mode, self.arm = task, length, seed, mode, arm
        self.add_marker(pytest.mark.ruler)

    def runtest(self) -> None:
        session = self.config.stash[SESSION_KEY].for_arm(self.arm)  # --ruler-arm: the arm's own session and engine
        decider = self.config.stash.get(DECIDER_KEY, None) if self.mode == "native" else None
        cell = (self.task, self.length, self.seed)
        if decider is not None:  # --ruler-stop-when-decided (run.decided): skipped when the verdict needs it not
            decider.expect(native_cells(self.session.items))
            why = decider.needed(cell)
            if why is not True:
                decider.finished(cell)
                pytest.skip(str(why))
        missing = session.data_missing(self.task)
        if missing:
            if decider is not None:
                decider.finished(cell)
            pytest.skip(missing)
        started = time.perf_counter()
        try:
            if self.mode == "mapreduce":
                result = session.run_mapreduce_item(self.task, self.length, self.seed)
            else:
                result = session.run_item(self.task, self.length, self.seed)
        except Exception as exc:  # an errored item is a failing item, with its one-line reason
            self._traceback = traceback.format_exc()
            result = session.errored_result(self.task, self.length, self.seed, self.mode, one_line(exc), time.perf_counter() - started)
        if self.arm is not None:
            result = dataclasses.replace(result, arm=self.arm)
        record_result(self, result)
        if decider is not None:
            decider.finished(cell, result)
        self.user_properties += [
            ("ruler_task", self.task),
            ("ruler_length", self.length),
            ("ruler_seed", self.seed),
            ("ruler_mode", self.mode),
            *((("ruler_arm", self.arm),) if self.arm is not None else ()),
            ("ruler_score", result.score),
            ("ruler_threshold", result.threshold),
        ]
        if result.error is not None:
            self.user_properties.append(("ruler_error", result.error))
        if not result.passed:
            if result.error is None and session.config.gated:  # a measurement for the verdict, not a gate of its own
                pytest.xfail(measured(result))
            raise RulerItemFailure(result)

    def repr_failure(self, excinfo: Any, style: Any = None) -> Any:
        if isinstance(excinfo.value, RulerItemFailure):
            message = str(excinfo.value)
            trace = getattr(self, "_traceback", None)
            if trace and (self.config.getoption("tbstyle", "auto") in ("long", "native") or self.config.getoption("fulltrace", False)):
                # asked for: --tb=long / --full-trace; its lines quote the engine's messages: escaped
                message += "\n\n" + "\n".join(escaped(line) for line in trace.splitlines())
            elif trace:
                message += "\n  (the engine's traceback: rerun with --tb=long)"
            return message
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Any, int | None, str]:
        return self.path, None, f"ruler: {self.name}"


def _structured_id(suite: Any, task: str, params: str) -> dict[str, Any]:
    """pytest >= 9 keeps a node id's ``[params]`` apart (``NodeId``), as parametrized tests have
    them: ``--lf`` and ``--sw`` compare ids in that form. Older pytest builds the string itself."""
    node_id = getattr(suite, "id", None)
    if node_id is None or not hasattr(node_id, "with_params"):
        return {}
    return {"nodeid": node_id.child(task).with_params(params)}


def make_items(session: pytest.Session, rs: RulerSession) -> list[RulerItem]:
    # a virtual file under the rootdir: node ids "ruler::<task>[<length>-seed<seed>]"
    suite = RulerSuite.from_parent(session, path=session.config.rootpath / SUITE_NAME)
    c = rs.config
    plan, _ = make_plan(c)
    if plan is not None:  # measured in the order that decides the gate soonest
        session.config.stash[DECIDER_KEY] = Decider(plan, dynamic=not hasattr(session.config, "workerinput"))
    items = []
    recorded = rs.recording.items if c.replay is not None else None  # --ruler-replay: the recorded items only
    arms: tuple[str | None, ...] = tuple(a.name for a in c.arms) if c.arms else (None,)
    for length in c.lengths:
        for task in c.tasks:
            for seed in c.seeds:
                if recorded is not None and (task, length, seed) not in recorded:
                    continue
                for mode, suffix in (("native", ""), ("mapreduce", "-mapreduce"))[: 2 if c.mapreduce else 1]:
                    for arm in arms:  # --ruler-arm: one item per arm, next to each other (interleaved item by item)
                        params = f"{length}-seed{seed}{suffix}" + (f"-arm={arm}" if arm is not None else "")
                        items.append(RulerItem.from_parent(suite, name=f"{task}[{params}]", task=task, length=length, seed=seed,
                                                           mode=mode, arm=arm, **_structured_id(suite, task, params)))
    if plan is not None:
        items.sort(key=lambda i: (plan.order(i.length), i.length))  # stable: tasks, seeds and modes keep their order
    # announce them as collected, as a file's collector would (the "collected N items" line)
    session.ihook.pytest_collectreport(report=pytest.CollectReport(suite.nodeid, "passed", None, items))
    return items
