"""--ruler-stop-when-decided (run.decided): the planned run's verdict is the full run's.

The property tests simulate a run: the items in the plan's order, each measured only when
``needed`` says so (a measurement is the score table's cell), then both reports go through the
one gate (results.gate) and must give the same status."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_ruler.parsers import RelativeMark
from pytest_ruler.results import ItemResult, gate
from pytest_ruler.results.report import Report
from pytest_ruler.results.verdict import NOT_MEASURED
from pytest_ruler.run.decided import BOUND, POINT, Decider, GatePlan, make_plan, needed

K = 1024
LENGTHS = (1 * K, 2 * K, 4 * K, 8 * K, 16 * K)
N = 60  # samples per item (enough for a cell of all ones to be shown above 85.6 at 95 %)


def _config(**kw):
    base = dict(stop_when_decided=True, lengths=(1 * K, 2 * K, 4 * K), required_effective_length=2 * K, gate_confidence=None,
                baseline=None, mapreduce=False, required_mapreduce_effective_length=None, threshold=85.6, shard=None)
    base.update(kw)
    return SimpleNamespace(**base)


def _item(task, length, seed, ones, error=None):
    scores = tuple([1.0] * ones + [0.0] * (N - ones))
    score = 100.0 * ones / N
    return ItemResult(task=task, length=length, seed=seed, mode="native", samples=N, score=score, threshold=85.6,
                      passed=error is None and score > 85.6, nulls=0, seconds=0.0, sample_scores=scores, error=error)


def _simulate(config, table, tasks, seeds):
    """(planned results, skipped entries, full results) of the grid ``table[(task, length, seed)] = ones``."""
    plan, _ = make_plan(config)
    cells = [(t, L, s) for L in config.lengths for t in tasks for s in seeds]  # make_items' order ...
    cells.sort(key=lambda c: (plan.order(c[1]), c[1]))  # ... then the plan's (a stable sort, as make_items)
    full = [_item(t, L, s, table[t, L, s]) for t, L, s in cells]
    decider, skipped = Decider(plan), []
    decider.expect(cells)
    for cell in cells:
        why = decider.needed(cell)
        if why is True:
            decider.finished(cell, _item(*cell, table[cell]))
        else:
            assert why.startswith(NOT_MEASURED)
            decider.finished(cell)
            skipped.append({"item": f"ruler::{cell[0]}[{cell[1]}-seed{cell[2]}]", "task": cell[0], "length": cell[1],
                            "seed": cell[2], "mode": "native", "reason": why})
    return decider.results, skipped, full


def _verdict(results, config, skipped=()):
    report = Report.of_results(results, threshold=85.6, model="m", backend="scripted", tokenizer="t", haystack_corpus="noise",
                               skipped=list(skipped))
    return gate(report, required=config.required_effective_length, confidence=config.gate_confidence)


@st.composite
def grids(draw):
    lengths = tuple(sorted(draw(st.sets(st.sampled_from(LENGTHS), min_size=1, max_size=5))))
    tasks = [f"t{i}" for i in range(draw(st.integers(1, 3)))]
    seeds = list(range(draw(st.integers(1, 2))))
    # each cell clearly above or below the mark: all samples right, or at most half of them. Each task
    # declines past a length of its own (as models do), and a few cells go against that
    cutoff = {t: draw(st.sampled_from((0,) + lengths)) for t in tasks}
    table = {(t, L, s): N if L <= cutoff[t] else draw(st.sampled_from((0, N // 4, N // 2)))
             for L in lengths for t in tasks for s in seeds}
    for key in draw(st.sets(st.sampled_from(sorted(table)), max_size=2)):
        table[key] = draw(st.sampled_from((0, N // 4, N // 2, N)))
    required = draw(st.sampled_from([L for L in LENGTHS if L <= max(lengths)] + [max(lengths) - 1]))
    return lengths, tasks, seeds, table, required


@settings(max_examples=150, deadline=None)
@given(grids(), st.sampled_from([None, 0.95]))
def test_the_planned_verdict_is_the_full_runs(grid, confidence):
    lengths, tasks, seeds, table, required = grid
    config = _config(lengths=lengths, required_effective_length=required, gate_confidence=confidence)
    planned, skipped, full = _simulate(config, table, tasks, seeds)
    want, got = _verdict(full, config), _verdict(planned, config, skipped)
    assert got.status == want.status and got.exit_status == want.exit_status
    assert len(planned) + len(skipped) == len(full)
    if skipped:  # the verdict says the run was planned; a note never decides
        assert any(r.kind == "planned" and r.status == "note" for r in got.reasons)


def test_point_gate_measures_from_the_required_length_up_and_stops_at_the_first_pass():
    config = _config(lengths=(1 * K, 2 * K, 4 * K, 8 * K))
    table = {("a", L, 0): (N if L <= 2 * K else 0) for L in config.lengths}  # perfect to 2K, blind beyond
    planned, skipped, _ = _simulate(config, table, ["a"], [0])
    assert [r.length for r in planned] == [2 * K]
    assert sorted(s["length"] for s in skipped) == [1 * K, 4 * K, 8 * K]
    why = {s["length"]: s["reason"] for s in skipped}
    assert "reads only the lengths at and above it" in why[1 * K]
    assert "the gate passed at 2K" in why[4 * K]
    assert _verdict(planned, config, skipped).status == "passed"


def test_point_gate_that_fails_measures_every_length_from_the_required_one():
    config = _config(lengths=(1 * K, 2 * K, 4 * K, 8 * K), required_effective_length=4 * K)
    table = {("a", L, 0): (N if L <= 2 * K else 0) for L in config.lengths}
    planned, skipped, _ = _simulate(config, table, ["a"], [0])
    assert [r.length for r in planned] == [4 * K, 8 * K] and len(skipped) == 2
    assert _verdict(planned, config, skipped).status == "failed"


def test_bound_gate_stops_at_the_first_length_not_shown_above_the_mark():
    config = _config(lengths=(1 * K, 2 * K, 4 * K, 8 * K), required_effective_length=4 * K, gate_confidence=0.95)
    table = {("a", L, 0): (N if L <= 1 * K else 0) for L in config.lengths}
    planned, skipped, _ = _simulate(config, table, ["a"], [0])
    assert [r.length for r in planned] == [1 * K, 2 * K]  # 2K is shown below: the bound is 1K < 4K
    assert {s["length"] for s in skipped} == {4 * K, 8 * K}
    assert _verdict(planned, config, skipped).status == "failed"


def test_a_length_is_judged_only_once_all_its_items_finished():
    plan = GatePlan(POINT, 2 * K, (2 * K, 4 * K), 85.6)
    expected = [("a", 2 * K, 0), ("b", 2 * K, 0), ("a", 4 * K, 0), ("b", 4 * K, 0)]
    first = _item("a", 2 * K, 0, N)
    assert needed(plan, expected, {("a", 2 * K, 0)}, [first], ("a", 4 * K, 0)) is True  # b @ 2K not in yet
    done = {("a", 2 * K, 0), ("b", 2 * K, 0)}
    assert needed(plan, expected, done, [first, _item("b", 2 * K, 0, N)], ("a", 4 * K, 0)).startswith(NOT_MEASURED)
    assert needed(plan, expected, done, [first, _item("b", 2 * K, 0, 0)], ("a", 4 * K, 0)) is True  # Total 50: not yet


def test_an_errored_item_decides_the_verdict_and_the_rest_is_not_needed():
    plan = GatePlan(BOUND, 4 * K, (1 * K, 2 * K, 4 * K), 85.6, 0.95)
    bad = _item("a", 1 * K, 0, N, error="engine down")
    why = needed(plan, [("a", 1 * K, 0), ("a", 2 * K, 0)], {("a", 1 * K, 0)}, [bad], ("a", 2 * K, 0))
    assert "errored" in why and why.startswith(NOT_MEASURED)


def test_under_xdist_only_the_lengths_the_gate_never_reads_are_left_out():
    plan = GatePlan(POINT, 2 * K, (2 * K, 4 * K), 85.6)
    decider = Decider(plan, dynamic=False)
    decider.expect([("a", 2 * K, 0), ("a", 4 * K, 0)])
    decider.finished(("a", 2 * K, 0), _item("a", 2 * K, 0, N))
    assert decider.needed(("a", 4 * K, 0)) is True  # a worker cannot know the other workers' results
    assert decider.needed(("a", 1 * K, 0)).startswith(NOT_MEASURED)


def test_before_the_first_item_nothing_is_decided():
    decider = Decider(GatePlan(POINT, 2 * K, (2 * K, 4 * K), 85.6))
    assert decider.needed(("a", 4 * K, 0)) is True  # no expected items yet: never "every length is below"


@pytest.mark.parametrize("change, why", [
    (dict(baseline="old.json"), "baseline"),
    (dict(mapreduce=True), "map-reduce"),
    (dict(threshold=RelativeMark(0.85)), "resolved at the run's end"),
    (dict(shard=object()), "shard"),
    (dict(required_effective_length=None), "nothing to decide"),
    (dict(required_effective_length=64 * K), "no tested length reaches"),
])
def test_what_the_plan_does_not_cover_runs_the_full_set_and_says_so(change, why):
    plan, line = make_plan(_config(**change))
    assert plan is None and "every item runs" in line and why in line


def test_the_option_off_plans_nothing():
    assert make_plan(_config(stop_when_decided=False)) == (None, None)
