"""Sentence splitting and essay corpora."""

from __future__ import annotations

import json

from hypothesis import given, strategies as st

from pytest_ruler.tasks.haystack import load_essays, split_sentences


def test_split_basic_and_abbreviations():
    text = "Dr. Smith went home. He said e.g. apples are fine! Is it 3.5 or 4? Yes. \"Quoted.\" Then (paren) more."
    assert split_sentences(text) == [
        "Dr. Smith went home.",
        "He said e.g. apples are fine!",
        "Is it 3.5 or 4?",
        "Yes.",
        "\"Quoted.\"",
        "Then (paren) more.",
    ]


def test_split_collapses_whitespace_and_keeps_initials():
    assert split_sentences("  J. R. R. Tolkien wrote\n\nbooks.   The end.  ") == ["J. R. R. Tolkien wrote books.", "The end."]
    assert split_sentences("") == []


@given(st.lists(st.text(alphabet=st.characters(categories=("L", "N", "P", "Zs")), min_size=1, max_size=40), max_size=8))
def test_split_keeps_every_word(parts):
    text = " ".join(parts)
    assert " ".join(split_sentences(text)).split() == text.split()


def test_default_corpus_is_labelled_and_large():
    corpus = load_essays(None)
    assert corpus.label.startswith("pydoc_data") and "not the paper's" in corpus.label
    # how far it is from the paper's essays, in the label the run header and reports show
    assert "top-1000-word overlap 319" in corpus.label and "tokens per word" in corpus.label
    assert ";" not in corpus.label.split("not the paper's", 1)[1]  # reports split labels at ';'

    assert corpus.words > 35_000 and len(corpus.sentences) > 1_500
    assert len(corpus.sha256) == 64
    assert corpus.sentence(len(corpus.sentences)) == corpus.sentence(0)  # wraps around


def test_user_corpus_file_folder_and_ruler_json(tmp_path):
    prose = " ".join(f"Sentence number {i} talks about gardens and rivers." for i in range(40))
    (tmp_path / "a.txt").write_text(prose)
    (tmp_path / "b.txt").write_text(prose.replace("gardens", "mountains"))
    (tmp_path / "essays.json").write_text(json.dumps({"text": prose}))
    folder = load_essays(tmp_path)
    single = load_essays(tmp_path / "a.txt")
    js = load_essays(tmp_path / "essays.json")
    assert len(folder.sentences) == 80 and len(single.sentences) == 40
    assert js.sentences == single.sentences and js.label == "essays:essays.json"
