"""The terminal's summary stays quiet (issue 34): one short legend of the symbols its tables
show, and the haystack by name (its details stay in the report's ``haystack_corpus``)."""

from __future__ import annotations

import pytest

from pytest_ruler.report.lines import haystack_names, lines
from pytest_ruler.results.item import ItemResult
from pytest_ruler.results.report import Report
from pytest_ruler.results.table import NOTATION, legend, mode_table

PYDOC = ("pydoc_data (CPython 3.11 pydoc topics, offline default; not the paper's Paul Graham essays, vs those: "
         "top-1000-word overlap 319, vocabulary Jaccard 0.15, type-token ratio 0.048 vs 0.107, 1.35 vs 1.24 SmolLM2 "
         "tokens per word)")  # the offline default's label (tasks.haystack), as a run's report records it


def _item(task, length, score, mode="native", **kw):
    return ItemResult(task=task, length=length, seed=0, mode=mode, samples=2, score=score, threshold=85.6,
                      passed=score > 85.6, nulls=0, seconds=1.0, **kw)


def _report(items, corpus="noise"):
    return Report.of_results(items, threshold=85.6, model="m", backend="scripted", tokenizer="t", haystack_corpus=corpus)


def _texts(report, **kw):
    return [line.text for line in lines(report, **kw)]


def _legends(texts):
    return [t for t in texts if t.startswith("legend: ")]


def test_plain_scores_and_lengths_get_no_legend():
    # every cell a score, every effective length a tested length: nothing to explain
    report = _report([_item(t, L, 100.0 if L == 1024 else 0.0) for t in ("niah_single_1", "vt") for L in (1024, 2048)])
    texts = _texts(report)
    assert report.mode("native").effective == "1K"
    assert _legends(texts) == [] and NOTATION not in texts


def test_the_legend_explains_only_the_symbols_the_table_shows():
    report = _report([_item("niah_single_1", L, 100.0) for L in (1024, 2048)] + [_item("vt", L, 0.0) for L in (1024, 2048)])
    [key] = _legends(_texts(report))
    assert key == "legend: <1K below the threshold at every tested length; ≥2K above the threshold up to the longest tested length"
    for absent in ("ERR", "n/a", "- not tested", "§", "Eff.LB", "+a/-b"):
        assert absent not in key


def test_errored_and_untested_cells_are_explained_when_they_are_there():
    items = [_item("niah_single_1", 1024, 100.0), _item("niah_single_1", 2048, 0.0, error="engine died"),
             _item("vt", 1024, 100.0)]  # vt not tested at 2K
    [key] = _legends(_texts(_report(items)))
    assert key.startswith("legend: - not tested; ERR an item errored (no score); n/a not established (a length errored)")
    assert len(key) < 200 < len(NOTATION)


def test_the_legend_is_printed_once_under_both_tables():
    items = [_item(t, L, 100.0, mode=m) for m in ("native", "mapreduce") for t in ("niah_single_1", "vt") for L in (1024, 2048)]
    texts = _texts(_report(items))
    assert "native:" in texts and sum(t.startswith("Total") for t in texts) == 2  # two tables
    keys = _legends(texts)
    assert keys == ["legend: ≥2K above the threshold up to the longest tested length"]
    assert texts.index(keys[0]) > max(i for i, t in enumerate(texts) if t.startswith("Total"))  # under the last table


def test_intervals_and_the_bound_are_explained_with_per_sample_scores():
    items = [_item(t, L, 100.0, sample_scores=(1.0, 1.0)) for t in ("niah_single_1", "vt") for L in (1024, 2048)]
    report = _report(items)
    [plain] = _legends(_texts(report))
    [with_ci] = _legends(_texts(report, ci=True))
    assert "Eff.LB 95% lower bound of Effective" in plain and "95% interval" not in plain
    assert "s+a/-b 95% interval [s-b, s+a]" in with_ci
    assert legend([mode_table(report.mode("native"), ci=True)]) == with_ci


@pytest.mark.parametrize("corpus, named", [
    (PYDOC, "pydoc_data (not the paper's essays)"),
    (f"{PYDOC}; noise; wonderwords 2.2.0 word list", "pydoc_data (not the paper's essays), noise, wonderwords 2.2.0 word list"),
    ("essays:PaulGrahamEssays.json; squad:0123456789ab; hotpotqa:ba9876543210", "essays, squad, hotpotqa"),
    ("needle; mmlu (40 test, 300 auxiliary_train; sha256 973a3e011f3f); hotpotqa train (600 paragraphs; sha256 2ead549636e0)",
     "needle, mmlu, hotpotqa train"),
    ("", "not recorded"),
])
def test_the_haystack_is_named_and_its_details_stay_in_the_report(corpus, named):
    assert haystack_names(corpus) == named
    report = _report([_item("niah_single_1", 1024, 100.0)], corpus=f"{corpus}")
    [line] = [t for t in _texts(report) if t.startswith("model ")]
    assert line == f"model m (scripted); haystack: {named}"
    assert len(line) <= 120  # 280 characters before (issue 34)
    assert report.haystack_corpus == corpus  # the JSON keeps every detail
