"""results.budgets: every outcome counted per item and cell, the § mark on cells a budget failed,
and the table, JSON and gate naming the budget and the option that fixes it."""

from __future__ import annotations

from types import SimpleNamespace

from pytest_ruler.engines.thinking import OUTCOMES
from pytest_ruler.results import ItemResult
from pytest_ruler.results.budgets import MARK, budget_cause, item_thinking, limited_cells, outcome_notes
from pytest_ruler.results.gate import gate
from pytest_ruler.results.report import Report
from pytest_ruler.results.table import format_text, mode_table


def _report(items):
    return Report.of_results(items, threshold=50.0, model="m", backend="scripted", tokenizer="t", haystack_corpus="noise",
                             complete=True)


def _c(outcome, thinking=10, tokens=12):
    return SimpleNamespace(outcome=outcome, thinking_tokens=thinking, completion_tokens=tokens)


def _item(task, length, outcomes, scores, budget=None, passed=None):
    thinking = item_thinking([_c(o) for o in outcomes], scores, budget)
    score = 100 * sum(scores) / len(scores)
    return ItemResult(task=task, length=length, seed=0, mode="native", samples=len(scores), score=score, threshold=50.0,
                      passed=score > 50 if passed is None else passed, nulls=0, seconds=0.0,
                      sample_scores=tuple(scores), thinking=thinking)


def test_every_outcome_is_counted():
    t = item_thinking([_c(o) for o in OUTCOMES], [1.0, 0.0, 0.0, 0.0, 0.0], None)
    assert t["outcomes"] == {o: 1 for o in OUTCOMES}
    assert t["thinking_tokens"] == 50 and t["answer_tokens"] == 10
    assert t["budget_failures"] == 1 and not t["budget_limited"]  # 1 of 4 failures was the budget's


def test_nothing_to_say_for_a_plain_model_without_a_budget():
    assert item_thinking([_c("answered", 0), _c("empty_answer", 0)], [1.0, 0.0], None) == {}
    assert item_thinking([_c(None, 0)], [0.0], None) == {}  # an errored sample has no outcome
    assert item_thinking([_c("answered", 0)], [1.0], 64)["think_budget"] == 64  # a budget applies: counts are kept
    assert item_thinking([_c("answer_truncated", 0)], [1.0], None)["outcomes"]["answer_truncated"] == 1  # never silent


def test_a_cell_is_budget_limited_when_most_failures_ran_out_inside_thinking():
    cut = _item("niah_single_1", 1024, ["thinking_truncated"] * 3 + ["answered"], [0, 0, 0, 1.0])
    model = _item("vt", 1024, ["answered"] * 3 + ["thinking_truncated"], [0, 0, 0, 0])
    assert cut.thinking["budget_limited"] and not model.thinking["budget_limited"]
    assert limited_cells([cut, model]) == {("niah_single_1", 1024)}
    passed = _item("niah_single_2", 1024, ["thinking_truncated"] + ["answered"] * 3, [0, 1.0, 1.0, 1.0])
    assert limited_cells([passed]) == set()  # a passing cell is never marked


def test_the_table_marks_the_cell_and_the_notes_and_gate_name_the_option():
    items = [_item("niah_single_1", 1024, ["thinking_truncated"] * 2, [0, 0]),
             _item("niah_single_1", 2048, ["thinking_truncated"] * 2, [0, 0])]
    report = _report(items)
    text = "\n".join(format_text(mode_table(report.mode("native"))))
    assert f"0.0{MARK}" in text
    notes = outcome_notes(report.mode("native").items)
    assert notes[1].startswith("  niah_single_1@1K: 0/2/0/0/0") and notes[1].endswith(MARK)
    assert "--ruler-think-budget=N" in notes[-1] and "not set" in notes[-1]
    verdict = gate(report, required=1024)
    assert not verdict.passed and "ran out of tokens inside their thinking" in verdict.failures[0]
    assert "--ruler-think-budget" in verdict.failures[0]
    saved = report.to_dict()
    assert saved["items"][0]["thinking"]["outcomes"]["thinking_truncated"] == 2
    assert saved["summary"]["native"]["outcomes"]["niah_single_1"]["2048"]["budget_limited"] is True
    again = Report.from_dict(saved)
    assert limited_cells(again.mode("native").items) == {("niah_single_1", 1024), ("niah_single_1", 2048)}


def test_with_a_budget_the_cause_says_raise_it():
    items = [_item("vt", 1024, ["thinking_truncated"], [0], budget=128)]
    assert "raise --ruler-think-budget (now 128)" in budget_cause(items)


def test_a_failing_item_message_names_the_budget():
    item = _item("vt", 1024, ["thinking_truncated"], [0])
    assert "--ruler-think-budget" in item.failure_message(50.0)
    assert "--ruler-think-budget" not in _item("vt", 1024, ["answered"], [0]).failure_message(50.0)


def test_reports_without_thinking_are_unchanged():
    items = [ItemResult(task="vt", length=1024, seed=0, mode="native", samples=1, score=100.0, threshold=50.0,
                        passed=True, nulls=0, seconds=0.0, sample_scores=(1.0,))]
    saved = _report(items).to_dict()
    assert "thinking" not in saved["items"][0] and "outcomes" not in saved["summary"]["native"]
    assert outcome_notes(items) == []


def test_errored_samples_count_as_failing_and_errored_items_are_never_the_budgets():
    # 8 errored samples (no outcome) and 1 thinking cut: 1 of 9 failures was the budget's
    t = item_thinking([_c(None, 0)] * 8 + [_c("thinking_truncated")], [0.0] * 9, 64)
    assert t["budget_failures"] == 1 and not t["budget_limited"]
    # an item whose error is set failed on its error: no mark, no budget clause
    import dataclasses

    cut = _item("niah_single_1", 1024, ["thinking_truncated"] * 3 + ["answered"], [0, 0, 0, 1.0], budget=64)
    assert cut.thinking["budget_limited"]  # the premise: scored alone, a budget's failure
    errored = dataclasses.replace(cut, error="the server went away")
    assert limited_cells([errored]) == set() and budget_cause([errored]) is None
    assert limited_cells([cut]) == {("niah_single_1", 1024)}
