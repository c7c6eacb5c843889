"""RULERv2 scoring, against cases worked by hand from NeMo-Skills' ``eval_ruler2`` and ``eval_mcq``.

Each expected value below was worked on paper from the reference's code (its
``post_process_preds``, ``wer`` with ``editdistance`` over ``str.split()`` words, the
``Document \\d+:`` regex, the last-blank-line cut, and ``extract_answer`` + the letter
regexes), not computed by the code under test.
"""

from __future__ import annotations

import pytest
from hypothesis import given, strategies as st

from pytest_ruler.results.scoring import get_metric, sample_scorer
from pytest_ruler.results.soft_match import extract_letter, soft_match, word_error_rate


def test_substring_scores_one_case_insensitively():
    assert sample_scorer("ruler2_all")("The number is 1234567890.", ["1234567890"]) == 1.0
    assert sample_scorer("ruler2_all")("QUESTION 5: WHAT IS X?", ["question 5: what is x?"]) == 1.0


def test_wer_gives_partial_credit():
    # reference 7 words, prediction misses "city": one insertion -> WER 1/7 -> 6/7
    score = sample_scorer("ruler2_all")("what is the capital of france", ["What is the capital city of France"])
    assert score == pytest.approx(6 / 7)
    # one substitution in 4 words -> 3/4
    assert word_error_rate("a b c d", "a b x d") == pytest.approx(0.25)
    assert soft_match("a b c d", "a b x d") == pytest.approx(0.75)


def test_wer_above_one_scores_zero_not_negative():
    # 4 hypothesis words against 1 reference word: 3 deletions + 1 substitution -> WER 4
    assert word_error_rate("I do not know", "Paris") == 4.0
    assert soft_match("I do not know", "Paris") == 0.0


def test_all_is_the_mean_over_references():
    # one reference found (1), the other at WER 1/2 ("alpha beta" vs "alpha gamma")
    score = sample_scorer("ruler2_all")("alpha gamma", ["gamma", "alpha beta"])
    assert score == pytest.approx((1 + 0.5) / 2)


def test_part_strips_copied_documents_then_takes_the_best_reference():
    pred = "Document 1234567:\nParis is in France\n\nI do not know"
    # the copied document holds "Paris", but its block is removed first
    assert sample_scorer("ruler2_part")(pred, ["Paris"]) == 0.0
    assert sample_scorer("ruler2_all")(pred, ["Paris"]) == 1.0  # all keeps the document
    # the best of several references
    assert sample_scorer("ruler2_part")("Document 1:\nx\n\nParis", ["London", "Paris"]) == 1.0


def test_part_removes_each_block_up_to_its_first_blank_line():
    pred = "Document 11:\nA\nB\n\nDocument 22:\nC\n\nyes"
    assert sample_scorer("ruler2_part")(pred, ["A"]) == 0.0
    assert sample_scorer("ruler2_part")(pred, ["yes"]) == 1.0


def test_two_steps_scores_only_the_text_after_the_last_blank_line():
    pred = "Question 123: foo bar\n\nQuestion 123: baz qux"
    # last chunk "Question 123: baz qux" vs "foo bar": 2 substitutions + 2 deletions -> WER 2 -> 0
    assert sample_scorer("ruler2_2steps")(pred, ["foo bar"]) == 0.0
    assert sample_scorer("ruler2_2steps")(pred, ["baz qux"]) == 1.0
    assert sample_scorer("ruler2_all")(pred, ["foo bar"]) == 1.0


def test_think_and_answer_cuts():
    assert sample_scorer("ruler2_all")("<think>12 maybe</think>The number is 99", ["99"]) == 1.0
    assert sample_scorer("ruler2_all")("<think>12 maybe</think>The number is 99", ["12"]) == 0.0
    assert sample_scorer("ruler2_all")("I copy 4455. Answer: 7788", ["4455"]) == 0.0
    assert sample_scorer("ruler2_all")("I copy 4455. Answer: 7788", ["7788"]) == 1.0


@pytest.mark.parametrize(("pred", "letter"), [
    ("so the answer is \\boxed{C}", "C"),
    ("\\boxed{A} first, then \\boxed{C. Paris}", "C"),  # the last box; longer content: its last standalone letter
    ("\\boxed{\\text{B}}", "B"),
    ("no box. Answer: D", "D"),
    ("**Answer:** b", "b"),  # the fallback regex is case-insensitive; the comparison is not
    ("\\boxed {A}", None),  # "\boxed" not followed by "{": the reference reads no box
    ("I cannot tell", None),
])
def test_extract_letter(pred, letter):
    assert extract_letter(pred) == letter


def test_multichoice_compares_the_letter_exactly():
    score = sample_scorer("multichoice")
    assert score("so \\boxed{C}", ["C"]) == 1.0
    assert score("so \\boxed{B}", ["C"]) == 0.0
    assert score("Answer: c", ["C"]) == 0.0
    assert score("nothing", ["A"]) == 0.0


def test_corpus_metric_is_100_times_the_mean():
    preds = ["what is the capital of france", "\\boxed{x}"]
    assert get_metric("ruler2_all")(preds, [["What is the capital city of France"], ["zzz"]]) == pytest.approx(100 * (6 / 7) / 2)


words = st.lists(st.sampled_from(["a", "b", "c", "dd"]), max_size=8).map(" ".join)


@given(words, words.filter(lambda s: s.strip()))
def test_soft_match_is_within_unit_interval_and_one_on_containment(pred, ref):
    s = soft_match(pred, ref)
    assert 0.0 <= s <= 1.0
    assert soft_match(f"x {ref} y", ref) == 1.0
    assert (s == 1.0) == (ref.lower() in pred.lower() or word_error_rate(pred.lower(), ref.lower()) == 0.0)
