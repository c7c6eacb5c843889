"""MRCR's grade: hand-worked cases, and parity with a separate statement of the data set's published grade."""

from __future__ import annotations

import difflib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_ruler.errors import RulerUsageError
from pytest_ruler.results.mrcr_grade import grade, sample_score_mrcr
from pytest_ruler.results.scoring import get_metric, sample_scorer


@pytest.mark.parametrize(("response", "answer", "prefix", "expected"), [
    ("PFXabcd", "PFXabcd", "PFX", 1.0),            # the answer itself
    ("PFXabcd", "PFXabce", "PFX", 6 / 8),          # 'abc' matches of 'abcd' / 'abce': 2·3 / (4 + 4)
    ("PFXab", "PFXabcd", "PFX", 4 / 6),            # 'ab' of 'ab' / 'abcd': 2·2 / (2 + 4)
    ("PFX", "PFXabc", "PFX", 0.0),                 # the prefix alone: nothing matches 'abc'
    ("abcd", "PFXabcd", "PFX", 0.0),               # no prefix: 0 however close the rest
    (" PFXabcd", "PFXabcd", "PFX", 0.0),           # a leading space: no prefix (the response is not stripped)
    ("pfxabcd", "PFXabcd", "PFX", 0.0),            # the prefix is case-sensitive
    ("PFXPFXabc", "PFXabc", "PFX", 6 / 9),         # the prefix is removed once: 'PFXabc' against 'abc'
    ("PFXxyz", "PFXabc", "PFX", 0.0),              # prefix right, text all wrong
])
def test_hand_worked_cases(response, answer, prefix, expected):
    assert grade(response, answer, prefix) == pytest.approx(expected)
    assert sample_score_mrcr(response, [answer, prefix]) == pytest.approx(expected)


def test_the_item_score_is_the_mean_times_100():
    preds = ["PFXabcd", "PFXabce", "nothing"]
    refs = [["PFXabcd", "PFX"]] * 3
    assert get_metric("mrcr")(preds, refs) == pytest.approx((1 + 0.75 + 0) / 3 * 100)
    assert sample_scorer("mrcr") is sample_score_mrcr


def test_references_are_the_answer_and_the_prefix():
    with pytest.raises(RulerUsageError, match="answer, random_string_to_prepend"):
        sample_score_mrcr("PFXa", ["PFXa"])


def published_grade(response: str, answer: str, random_string: str) -> float:
    """The data set's README grade, stated again here apart from the package's code: a response without
    the random string in front gets nothing; otherwise that string comes off the front of the response
    and of the answer (where it is there), and difflib's ratio of the two is the grade."""
    n = len(random_string)
    if response[:n] != random_string:
        return 0.0
    ours, theirs = response[n:], (answer[n:] if answer[:n] == random_string else answer)
    return difflib.SequenceMatcher(a=ours, b=theirs).ratio()


text = st.text(alphabet="abcXY \n", max_size=40)


@settings(max_examples=300, deadline=None)
@given(prefix=st.text(alphabet="XYZ01", min_size=1, max_size=4), body=text, response=text, keep=st.booleans(), lead=st.booleans())
def test_parity_with_the_published_grade(prefix, body, response, keep, lead):
    answer = prefix + body
    said = (prefix + response) if keep else response
    said = (" " + said) if lead else said
    assert grade(said, answer, prefix) == published_grade(said, answer, prefix)


def test_parity_on_long_texts():
    """Past 200 characters difflib's autojunk heuristic applies (a character in more than 1 % of a long
    answer is junk): both keep SequenceMatcher's default, so they agree, also where it makes a close
    copy of repetitive text score low (0.079 here)."""
    answer = "K3y" + ("the tapir walks by the river at dawn. " * 12)
    response = "K3y" + ("the tapir walks by the river at dusk. " * 10)
    assert grade(response, answer, "K3y") == published_grade(response, answer, "K3y") == pytest.approx(0.0789, abs=1e-4)
    varied = "K3y" + " ".join(f"line {i} of the tapir poem" for i in range(30))
    assert grade(varied[:-10], varied, "K3y") == published_grade(varied[:-10], varied, "K3y") > 0.9
