"""pytest_ruler.results.cells: a saved report's cells are cell_scores of its items (what the
run showed), for Markdown, plots and snapshots."""

from __future__ import annotations

import json

import pytest

from pytest_ruler.errors import RulerUsageError
from pytest_ruler.report.build import build_report
from pytest_ruler.report.snapshot import ruler_snapshot_data
from pytest_ruler.results import ItemResult, cell_scores
from pytest_ruler.results.cells import depth_cells, mode_items, ordered_tasks, report_cells


def _item(task, length, seed, score, mode="native", **kw):
    return ItemResult(task=task, length=length, seed=seed, mode=mode, samples=10, score=score,
                      threshold=85.6, passed=score > 85.6, nulls=0, seconds=0.1, **kw)


RESULTS = [
    _item("vt", 1024, 0, 90.0), _item("vt", 1024, 1, 80.0),
    _item("vt", 2048, 0, 70.0), _item("vt", 2048, 1, 0.0, error="engine died"),  # a half-errored cell
    _item("niah_single_1", 1024, 0, 100.0, depth_scores={"0": 100.0, "0.5": 80.0}),
    _item("niah_single_1", 1024, 1, 100.0, depth_scores={"0": 90.0, "0.5": 70.0}),
    _item("niah_single_1", 2048, 0, 50.0, mode="mapreduce"),
]


def _report():
    report = build_report(model="m", backend="scripted", tokenizer="t", haystack_corpus="c", threshold=85.6, results=RESULTS)
    return json.loads(json.dumps(report))  # as saved: string keys, plain lists


@pytest.mark.parametrize("mode", ["native", "mapreduce"])
def test_a_saved_reports_cells_are_the_runs(mode):
    assert report_cells(_report(), mode) == cell_scores(RESULTS, mode)


def test_an_errored_item_leaves_its_cell_without_a_score():
    means, errored = report_cells(_report())
    assert means == {"vt": {1024: 85.0}, "niah_single_1": {1024: 100.0}}
    assert errored == {"vt": {2048}}
    assert ruler_snapshot_data(_report())["native"]["tasks"]["vt"] == {"1024": 85.0, "2048": "ERR"}


def test_depth_cells_average_over_seeds():
    assert depth_cells(_report(), "native") == {"niah_single_1": ([0.0, 0.5], [1024], {(0.0, 1024): 95.0, (0.5, 1024): 75.0})}
    assert depth_cells(_report(), "mapreduce") == {}


def test_modes_and_order():
    assert [it["task"] for it in mode_items(_report(), "mapreduce")] == ["niah_single_1"]
    assert ordered_tasks(["mine", "vt", "niah_single_1", "vt"]) == ["niah_single_1", "vt", "mine"]


def test_an_item_without_a_score_is_a_usage_error():
    with pytest.raises(RulerUsageError, match="'task', 'length' and 'score'"):
        report_cells({"items": [{"task": "vt", "length": 1024}]})
    assert report_cells({"items": [{"task": "vt", "length": 1024, "error": "x"}, "not an item"]}) == ({}, {"vt": {1024}})
