"""Chunking for map-reduce: coverage, boundaries, budgets (pure functions + hypothesis)."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_ruler.mapreduce import chunk_text, pack, split_units


def words(pieces):
    """A toy tokenizer count: one token per whitespace-separated word (at least 1)."""
    return [max(1, len(p.split())) for p in pieces]


_text = st.lists(
    st.one_of(
        st.sampled_from(["The grass is green.", "The sky is blue.", "Here we go.", "VAR ABCDE = 12345", "1. apple", ""]),
        st.text(alphabet="abc XYZ.!?", min_size=0, max_size=30),
    ),
    max_size=60,
).map(lambda parts: "".join(p + sep for p, sep in zip(parts, ["\n", " ", "\n\n", " "] * 20)))


@settings(max_examples=150, deadline=None)
@given(_text, st.integers(min_value=1, max_value=40))
def test_units_concatenate_to_the_text(text, budget):
    assert "".join(split_units(text, budget, words)) == text


@settings(max_examples=150, deadline=None)
@given(_text, st.integers(min_value=1, max_value=40))
def test_chunks_without_overlap_cover_the_text_exactly_once(text, budget):
    chunks = chunk_text(text, budget, words)
    assert "".join(c.text for c in chunks) == text
    for c in chunks:
        assert text[c.start_char:c.end_char] == c.text
    assert [c.index for c in chunks] == list(range(len(chunks)))


@settings(max_examples=150, deadline=None)
@given(_text, st.integers(min_value=1, max_value=40))
def test_every_chunk_fits_unless_one_unit_alone_does_not(text, budget):
    units = split_units(text, budget, words)
    counts = words(units)
    for c in pack(units, counts, budget):
        assert c.tokens <= budget or c.last - c.first == 1


@settings(max_examples=150, deadline=None)
@given(_text, st.integers(min_value=4, max_value=40), st.integers(min_value=0, max_value=20))
def test_overlap_repeats_units_and_still_covers_and_progresses(text, budget, overlap):
    units = split_units(text, budget, words)
    counts = words(units)
    chunks = pack(units, counts, budget, overlap)
    covered = set()
    for prev, nxt in zip(chunks, chunks[1:]):
        assert nxt.first > prev.first  # progress: no endless repetition
        assert nxt.first <= prev.last  # no gap
        assert sum(counts[nxt.first:prev.last]) <= max(0, min(overlap, budget // 2))
    for c in chunks:
        covered.update(range(c.first, c.last))
    assert covered == set(range(len(units)))


def test_a_needle_sentence_on_a_boundary_is_never_cut():
    noise = "The grass is green. The sky is blue. The sun is yellow. Here we go. There and back again. "
    needle = "One of the special magic numbers for calm-river is: 4562140. "
    # the needle sits exactly where a 10-word budget would cut it in half
    text = noise * 3 + needle + noise * 3
    for budget in range(10, 40):  # from the needle's own size (10 words) up
        chunks = chunk_text(text, budget, words)
        holding = [c for c in chunks if "4562140" in c.text]
        assert len(holding) == 1
        assert needle.strip() in holding[0].text


def test_lines_stay_whole_and_essays_split_at_sentences():
    vt = "\n".join(["The grass is green. The sky is blue."] * 5 + ["VAR QWERT = 40213"] + ["The grass is green. The sky is blue."] * 5)
    for c in chunk_text(vt, 9, words):
        for line in c.text.splitlines():
            assert line in ("", "VAR QWERT = 40213", "The grass is green. The sky is blue.", "The grass is green. ", "The sky is blue.") or line.startswith("The ")
    essay = "A first sentence here. A second one follows! Does a third? " * 20  # one long paragraph
    units = split_units(essay, 8, words)
    assert all(re.fullmatch(r"[^.!?]*[.!?] ?", u) for u in units)


def test_a_paragraph_that_fits_stays_one_unit():
    text = "Document 1:\nAlpha beta.\n\nDocument 2:\nGamma delta."
    assert split_units(text, 100, words) == ["Document 1:\nAlpha beta.\n\n", "Document 2:\nGamma delta."]
    assert split_units(text, 3, words) == ["Document 1:\n", "Alpha beta.\n", "\n", "Document 2:\n", "Gamma delta."]
