"""The structured information protocol: lenient parsing and task-aware checks."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_ruler.mapreduce import NO_INFORMATION, STRATEGIES, format_record, parse_record
from pytest_ruler.mapreduce.strategies import assignments_of, counts_of, values_of


def test_a_well_formed_record_parses_every_field():
    r = parse_record(" The code is 42.\nRationale: stated.\nAnswer: 42\nConfidence Score: 5")
    assert (r.extracted, r.rationale, r.answer, r.confidence, r.problems) == ("The code is 42.", "stated.", "42", 5.0, ())


def test_markdown_labels_and_scales_are_read():
    r = parse_record(" x\n**Rationale**: because\n**Answer:** 42\n- Confidence: 8/10")
    assert r.answer == "42" and r.confidence == 4.0 and r.ok
    r = parse_record(" x\nThe Rationale is: y\nThe Answer is: 7\nThe Confidence Score is: 3")
    assert (r.answer, r.confidence) == ("7", 3.0)


def test_missing_fields_are_counted_and_the_raw_text_kept():
    r = parse_record(" The special magic number for x mentioned in the provided text is 11.")
    assert "missing Answer" in r.problems and "missing Confidence Score" in r.problems
    assert not r.ok and r.raw.endswith("is 11.")
    assert r.answer == "The special magic number for x mentioned in the provided text is 11."


def test_an_unreadable_confidence_is_a_problem_not_a_crash():
    r = parse_record(" a\nRationale: b\nAnswer: c\nConfidence Score: high")
    assert r.confidence is None and "unreadable Confidence Score" in r.problems


def test_no_information_is_recognised():
    assert parse_record(" none\nRationale: -\nAnswer: NO INFORMATION\nConfidence Score: 0").no_information
    assert parse_record(" none\nRationale: -\nAnswer: No relevant information.\nConfidence Score: 0").no_information


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=400))
def test_garbage_never_raises_and_round_trips_through_format(text):
    r = parse_record(text)
    assert r.raw == text
    again = parse_record(format_record(r)[len("Extracted Information:"):])
    # every field comes back; only an unknown confidence stays unreadable
    assert again.ok or (r.confidence is None and again.problems == ("unreadable Confidence Score",))
    assert again.no_information == r.no_information or not r.answer.strip()


def test_values_claims_and_the_support_check():
    check = STRATEGIES["retrieve"].check
    chunk = "The grass is green.\nOne of the special magic numbers for calm-river is: 4562140.\nThe sky is blue."
    hints = {"kind": "numbers"}
    good = parse_record(" One of the special magic numbers for calm-river is: 4562140.\nRationale: -\nAnswer: 4562140\nConfidence Score: 5")
    assert check(good, chunk, hints, True).answer == "4562140"
    invented = parse_record(" The number is 2817465.\nRationale: -\nAnswer: 2817465\nConfidence Score: 5")
    checked = check(invented, chunk, hints, True)
    assert checked.answer == NO_INFORMATION and checked.dropped == ("2817465",)
    assert check(invented, chunk, hints, False).answer == "2817465"  # verify off: kept as claimed
    # a substring of a longer number in the chunk is not support
    assert check(parse_record(" x\nAnswer: 456214\nConfidence Score: 5"), chunk, hints, True).answer == NO_INFORMATION
    # the answer field says something else: the value in Extracted Information counts
    wordy = parse_record(" ... calm-river is 4562140.\nAnswer: The grass is green.\nConfidence Score: 5")
    assert check(wordy, chunk, hints, True).answer == "4562140"


def test_claim_readers():
    assert values_of("calm-river: 12, 34\nbold-sun: 56", "numbers") == ["12", "34", "56"]
    assert values_of("4c1f7a02-93be-4d7e-b5a8-0e6f2d9c3a11", "uuids") == ["4c1f7a02-93be-4d7e-b5a8-0e6f2d9c3a11"]
    assert assignments_of("VAR QWERT = 40213; VAR ZXCVB = VAR QWERT") == [("QWERT", "40213"), ("ZXCVB", "QWERT")]
    assert counts_of("apple: 7; river: 5\nConfidence: 4") == {"apple": 7, "river": 5}


def test_mechanical_reducers_union_chain_and_sum():
    def rec(answer, extracted=""):
        return parse_record(f" {extracted or answer}\nRationale: -\nAnswer: {answer}\nConfidence Score: 5")

    union = STRATEGIES["union"].combine
    assert union([rec("11, 22"), rec("NO INFORMATION"), rec("22, 33")], {"kind": "numbers"}) == "11, 22, 33"
    chain = STRATEGIES["chain"].combine
    recs = [rec("VAR AAAAA = 12345"), rec("VAR BBBBB = VAR AAAAA"), rec("VAR CCCCC = VAR BBBBB; VAR DDDDD = 999")]
    assert chain(recs, {"query": "12345"}) == "AAAAA BBBBB CCCCC"
    count = STRATEGIES["count"].combine
    recs = [rec("apple: 3; pear: 2"), rec("pear: 2; plum: 1"), rec("apple: 1")]
    assert count(recs, {"top": 2}) == "1. apple 2. pear"


def test_which_key_a_value_belongs_to_is_the_models_call_not_codes():
    """Grounding is a hallucination filter only: a value of another key that is in the
    chunk is kept (the model chose it; its confidence and the reduce judge it)."""
    check = STRATEGIES["retrieve"].check
    chunk = ("The grass is green. One of the special magic numbers for bold-sun is: 1898736. The sky is blue.\n"
             "One of the special magic numbers for calm-river is: 4735521.")
    record = parse_record(" One of the special magic numbers for bold-sun is: 1898736.\nAnswer: 1898736\nConfidence Score: 5")
    kept = check(record, chunk, {"kind": "numbers", "keys": ["calm-river"]}, True)
    assert kept.answer == "1898736" and kept.dropped == () and kept.confidence == 5
    right = parse_record(" ...\nAnswer: 4735521\nConfidence Score: 5")
    assert check(right, chunk, {"kind": "numbers", "keys": ["calm-river"]}, True).answer == "4735521"


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(1000000, 9999999), min_size=1, max_size=30, unique=True), st.data())
def test_literal_grounding_keeps_exactly_the_claims_found_in_the_chunk(values, data):
    in_chunk = data.draw(st.lists(st.sampled_from(values), unique=True))
    chunk = "\n".join(f"One of the special magic numbers for key-{i} is: {v}." for i, v in enumerate(in_chunk)) or "The grass is green."
    record = parse_record(f" -\nRationale: -\nAnswer: {', '.join(map(str, values))}\nConfidence Score: 4")
    checked = STRATEGIES["retrieve"].check(record, chunk, {"kind": "numbers", "keys": ["key-0"]}, True)
    kept = [str(v) for v in values if v in in_chunk]
    assert checked.answer == (", ".join(kept) or NO_INFORMATION)
    assert set(checked.dropped) == {str(v) for v in values if v not in in_chunk}


def test_a_key_repeated_as_its_own_value_is_not_a_value():
    # measured on niah_multikey_3 (uuid keys): "The special magic uuid for K is: K"
    check = STRATEGIES["retrieve"].check
    key = "28bff080-944d-4573-b3b9-4e4041078a15"
    chunk = f"One of the special magic uuids for {key} is: c961390d-926e-4fd8-a27d-961bdf739572."
    echo = parse_record(f"\nThe special magic uuid for {key} is: {key}")
    assert check(echo, chunk, {"kind": "uuids", "keys": [key]}, True).answer == NO_INFORMATION
    assert check(echo, chunk, {"kind": "uuids", "keys": [key]}, False).answer == NO_INFORMATION
