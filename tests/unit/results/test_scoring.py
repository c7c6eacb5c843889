"""Unit tests for pytest_ruler.results.scoring: RULER's post-processing and its two metrics."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_ruler.errors import RulerUsageError
from pytest_ruler.results.scoring import (
    METRICS,
    count_nulls,
    get_metric,
    postprocess,
    sample_score_all,
    sample_score_part,
    sample_scorer,
    string_match_all,
    string_match_part,
)

# --- postprocess --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("  answer  ", "answer"),
        ("\n\nanswer\n", "answer"),
        ("a\tb", "a\nb"),
        ("a\x00b", "a\nb"),
        ("a\rb", "a\nb"),
        ("a\x1fb", "a\nb"),
        ("a\nb", "a\nb"),
        ("\x00answer\x00", "answer"),  # control chars at the ends become "\n", then stripped
        ("\x07", ""),
        ("", ""),
        ("a\x7fb", "a\x7fb"),  # DEL is outside [\x00-\x1f]
        ("a b", "a b"),
    ],
)
def test_postprocess(raw: str, expected: str) -> None:
    assert postprocess(raw) == expected


def test_postprocess_rejects_non_str() -> None:
    with pytest.raises(RulerUsageError) as info:
        postprocess(None)  # type: ignore[arg-type]
    assert info.value.parameter == "pred"


# --- per-sample scores -------------------------------------------------------------


@pytest.mark.parametrize(
    ("pred", "refs", "score_all", "score_part"),
    [
        ("The special magic number is 1234567.", ["1234567"], 1.0, 1.0),
        ("the answer is PARIS", ["Paris"], 1.0, 1.0),  # case-insensitive both ways
        ("Answer: paris", ["PARIS"], 1.0, 1.0),
        ("1234567", ["7654321"], 0.0, 0.0),
        ("VAR_A VAR_B", ["var_a", "var_b", "var_c"], 2 / 3, 1.0),
        ("apple banana", ["apple", "banana", "cherry", "date"], 0.5, 1.0),
        ("nothing here", ["apple", "banana"], 0.0, 0.0),
        ("x 12 y", ["1", "2"], 1.0, 1.0),  # substrings, not whole words
        ("first\x00second", ["first", "second"], 1.0, 1.0),
        ("first\tsecond", ["first\nsecond"], 1.0, 1.0),  # tab becomes a newline
        ("first\tsecond", ["first second"], 0.0, 0.0),  # ...not a space
        ("a\nb", ["a\nb"], 1.0, 1.0),
    ],
)
def test_sample_scores(pred: str, refs: list[str], score_all: float, score_part: float) -> None:
    assert sample_score_all(pred, refs) == pytest.approx(score_all)
    assert sample_score_part(pred, refs) == score_part


def test_reference_with_a_tab_never_matches() -> None:
    # Faithful to RULER: only the prediction is post-processed, so "\t" in a reference
    # can never be found (the prediction's tabs have become newlines).
    assert sample_score_all("a\tb", ["a\tb"]) == 0.0
    assert sample_score_part("a\tb", ["a\tb", "a"]) == 1.0


def test_part_and_all_differ_on_partial_recall() -> None:
    pred = "The values are 11 and 22."
    refs = ["11", "22", "33"]
    assert sample_score_all(pred, refs) == pytest.approx(2 / 3)
    assert sample_score_part(pred, refs) == 1.0


def test_duplicate_references_count_twice_in_all() -> None:
    assert sample_score_all("a", ["a", "a", "b"]) == pytest.approx(2 / 3)


@pytest.mark.parametrize("scorer", [sample_score_all, sample_score_part])
@pytest.mark.parametrize(
    ("refs", "parameter"),
    [([], "refs"), ("abc", "refs"), ([""], "refs"), (["a", 3], "refs")],
)
def test_sample_scores_reject_bad_refs(scorer, refs, parameter: str) -> None:
    with pytest.raises(RulerUsageError) as info:
        scorer("abc", refs)
    assert info.value.parameter == parameter


# --- corpus metrics ---------------------------------------------------------------


def test_string_match_all_hand_computed() -> None:
    preds = ["alpha beta", "ALPHA", "none", "x\x00gamma"]
    refs = [["alpha", "beta"], ["alpha", "beta", "gamma"], ["delta"], ["gamma"]]
    # per sample: 1, 1/3, 0, 1 -> 100 * (7/3) / 4 = 58.333...
    assert string_match_all(preds, refs) == pytest.approx(58.33, abs=0.005)
    assert round(string_match_all(preds, refs), 2) == 58.33


def test_string_match_part_hand_computed() -> None:
    preds = ["alpha beta", "ALPHA", "none", "x\x00gamma"]
    refs = [["alpha", "beta"], ["alpha", "beta", "gamma"], ["delta"], ["gamma"]]
    # per sample: 1, 1, 0, 1 -> 75.0
    assert string_match_part(preds, refs) == 75.0


def test_string_match_returns_unrounded() -> None:
    preds = ["a", "b", "c"]
    refs = [["a"], ["x"], ["x"]]
    assert string_match_all(preds, refs) == pytest.approx(100 / 3, rel=1e-12)
    assert string_match_all(preds, refs) != round(100 / 3, 2)


def test_qa_style_part_accepts_any_alias() -> None:
    preds = ["It was in 1905.", "Albert Einstein", "no idea"]
    refs = [["1905", "nineteen oh five"], ["einstein", "A. Einstein"], ["Bern"]]
    assert round(string_match_part(preds, refs), 2) == 66.67
    assert round(string_match_all(preds, refs), 2) == 33.33


@pytest.mark.parametrize("metric", [string_match_all, string_match_part])
def test_corpus_errors(metric) -> None:
    with pytest.raises(RulerUsageError) as info:
        metric([], [])
    assert info.value.parameter == "preds"
    with pytest.raises(RulerUsageError) as info:
        metric(["a", "b"], [["a"]])
    assert info.value.parameter == "refs"
    with pytest.raises(RulerUsageError) as info:
        metric(["a"], [[]])
    assert info.value.parameter == "refs[0]"
    with pytest.raises(RulerUsageError) as info:
        metric("abc", [["a"], ["b"], ["c"]])
    assert info.value.parameter == "preds"
    with pytest.raises(RulerUsageError) as info:
        metric(["a"], ["a"])  # refs[0] is a str, not a list of str
    assert info.value.parameter == "refs[0]"


# --- registry ---------------------------------------------------------------------


def test_metrics_registry() -> None:
    assert set(METRICS) == {"all", "part", "ruler2_all", "ruler2_part", "ruler2_2steps", "multichoice", "mrcr"}
    assert METRICS["all"] is string_match_all
    assert get_metric("part") is string_match_part
    assert sample_scorer("all") is sample_score_all
    assert sample_scorer("part") is sample_score_part
    with pytest.raises(TypeError):
        METRICS["other"] = string_match_all  # type: ignore[index]


@pytest.mark.parametrize("lookup", [get_metric, sample_scorer])
def test_unknown_metric_lists_valid_names(lookup) -> None:
    with pytest.raises(RulerUsageError) as info:
        lookup("string_match_any")
    assert info.value.parameter == "metric"
    assert "'all'" in str(info.value) and "'part'" in str(info.value)


# --- nulls ------------------------------------------------------------------------


def test_count_nulls() -> None:
    assert count_nulls(["", "  ", "\x00\t\n", "a", " b "]) == 3
    assert count_nulls([]) == 0


# --- properties -------------------------------------------------------------------

# References as RULER's tasks make them: non-empty, no surrounding whitespace.
_word = st.text(alphabet="abcXYZ019 ", min_size=1, max_size=8).filter(
    lambda s: s == s.strip() != ""
)
_pred = st.text(alphabet="abcXYZ019 \t\x00\n", max_size=30)
_samples = st.lists(
    st.tuples(_pred, st.lists(_word, min_size=1, max_size=4)), min_size=1, max_size=12
)


# the metrics that take any list of references (MRCR's takes [answer, random string]: tests/unit/results/test_mrcr_grade.py)
LIST_METRICS = [m for name, m in METRICS.items() if name != "mrcr"]


@given(_samples)
def test_scores_are_percentages(samples) -> None:
    preds = [p for p, _ in samples]
    refs = [r for _, r in samples]
    for metric in LIST_METRICS:
        assert 0.0 <= metric(preds, refs) <= 100.0
    assert string_match_all(preds, refs) <= string_match_part(preds, refs) + 1e-9


@given(_samples)
def test_pred_containing_all_refs_scores_100(samples) -> None:
    refs = [r for _, r in samples]
    # Upper-case the prediction to exercise case-insensitivity as well.
    preds = [" | ".join(r).upper() for r in refs]
    assert string_match_all(preds, refs) == 100.0
    assert string_match_part(preds, refs) == 100.0


@given(_samples, st.randoms(use_true_random=False))
def test_permutation_invariance(samples, rnd) -> None:
    shuffled = list(samples)
    rnd.shuffle(shuffled)
    for metric in LIST_METRICS:
        assert metric([p for p, _ in samples], [r for _, r in samples]) == metric(
            [p for p, _ in shuffled], [r for _, r in shuffled]
        )


@given(st.text(max_size=30), st.lists(_word, min_size=1, max_size=4))
def test_reference_order_does_not_matter(pred, refs) -> None:
    assert sample_score_all(pred, refs) == sample_score_all(pred, list(reversed(refs)))
    assert sample_score_part(pred, refs) == sample_score_part(pred, list(reversed(refs)))


@given(st.text(max_size=40))
def test_postprocess_is_idempotent_and_has_no_control_chars_but_newline(raw) -> None:
    once = postprocess(raw)
    assert postprocess(once) == once
    assert all(c == "\n" or ord(c) > 0x1F for c in once)
