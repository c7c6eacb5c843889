"""The typed report (results.report.Report): computed once per mode, read by every renderer, and
round-tripping every report committed under bench/results/ (real runs of earlier versions)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_ruler.report.build import build_report
from pytest_ruler.report.markdown import markdown
from pytest_ruler.results import ItemResult
from pytest_ruler.results.item import SCHEMA
from pytest_ruler.results.report import Report, as_report
from pytest_ruler.results.saved import read_report

ROOT = Path(__file__).resolve().parents[2]
def _schema_of(path: Path) -> object:
    data = json.loads(path.read_text(encoding="utf-8"))  # a bench file may hold a list (github-action-benchmark)
    return data.get("schema") if isinstance(data, dict) else None


COMMITTED = sorted(p for p in (ROOT / "bench" / "results").rglob("*.json") if _schema_of(p) == SCHEMA)


def test_the_committed_reports_are_found():
    assert len(COMMITTED) >= 8, COMMITTED


@pytest.mark.parametrize("path", COMMITTED, ids=lambda p: str(p.relative_to(ROOT / "bench" / "results")))
def test_every_committed_report_round_trips(path):
    data = json.loads(path.read_text(encoding="utf-8"))
    report = read_report(path)  # checked: types, and a stored summary its items give
    assert len(report.items) == len(data["items"])
    again = report.to_dict()
    assert list(again) == list(data)  # the same entries in the same order
    assert Report.from_dict(again).to_dict() == again  # what it writes, it reads back unchanged
    for stored, written, read in zip(sorted(data["items"], key=_key), again["items"], Report.from_dict(again).items):
        assert {k: v for k, v in stored.items() if k in written and k not in ("stderr", "ci95", "failures")} == \
               {k: written[k] for k in stored if k in written and k not in ("stderr", "ci95", "failures")}
        assert list(read.failures) == stored.get("failures", [])  # written once (results.item), read back whole
    for mode in ("native", "mapreduce"):
        stored, computed = data["summary"].get(mode), again["summary"][mode]
        assert (stored is None) == (computed is None)
        if stored:
            assert computed["effective_length"] == stored["effective_length"]
            assert computed["per_task_effective_length"] == stored["per_task_effective_length"]
    markdown(report)  # and it renders


def _key(item):
    return (item.get("mode", "native"), item["length"], item["task"], item.get("seed", 0))


def _results():
    return [ItemResult(task=t, length=L, seed=0, mode="native", samples=2, score=s, threshold=85.6, passed=s > 85.6,
                       nulls=0, seconds=0.1) for t, L, s in (("vt", 1024, 100.0), ("vt", 2048, 50.0), ("cwe", 1024, 90.0), ("cwe", 2048, 0.0))]


def test_cells_and_table_3_are_computed_once(monkeypatch):
    import pytest_ruler.results.report as model
    import pytest_ruler.results.table as table

    calls = {"summary": 0, "table": 0}
    real_summary, real_table = model.summarize_results, table.build_table

    def count(name, real):
        def wrapped(*args, **kwargs):
            calls[name] += 1
            return real(*args, **kwargs)
        return wrapped

    monkeypatch.setattr(model, "summarize_results", count("summary", real_summary))
    monkeypatch.setattr(table, "build_table", count("table", real_table))
    report = Report.of_results(_results(), threshold=85.6, model="m", backend="b", tokenizer="t", haystack_corpus="c")
    from pytest_ruler.report.github import step_summary

    step_summary(report, [("gate PASSED: effective length 1K (required 1K)", "green")])
    markdown(report)
    assert calls == {"summary": 1, "table": 1}  # native only: the map-reduce mode has no items, no table


def test_a_report_dict_is_read_as_its_items_say():
    data = build_report(model="m", backend="b", tokenizer="t", haystack_corpus="c", threshold=85.6, results=_results())
    report = as_report(data)
    assert report.to_dict() == data
    assert report.mode("native").effective_length == 1024 and report.mode("native").effective == "1K"
    assert report.mode("mapreduce").summary is None and report.mode("mapreduce").effective == "-"
    assert as_report(report) is report
