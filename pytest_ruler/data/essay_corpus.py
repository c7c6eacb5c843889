"""The essay haystack's text: a prose corpus split into sentences (``EssayCorpus``).

Read through the data registry (``data.registry``, kind ``essays``, option ``--ruler-essays``):

- a user file: plain ``.txt``, or RULER's ``{"text": ...}`` JSON;
- a user folder of ``.txt`` files (read in sorted order);
- no path: the offline default, CPython's own ``pydoc_data`` topics (the
  Python language reference, human-written English prose that ships with every
  CPython). It is *not* Paul Graham's essays; every sample records the corpus
  label and sha256 so that scores on different haystacks are never mistaken for
  comparable ones. ``pytest-ruler download essays`` fetches the paper's essays.

Sentences are split by a documented rule-based splitter (``split_sentences``)
because NLTK's punkt needs a run-time download.

How far the offline default is from the paper's essays (``DEFAULT_ESSAY_COMPARISON``,
shown in the default corpus label, hence in the run header and reports).
Measured against Kamradt's 49 Paul Graham essays (111,913 words), lower-cased
words ``[a-z]+('[a-z]+)?``, type-token ratio over the first 50,000 words of the
haystack (repeating the corpus as a haystack does), tokens per whitespace word
with the embedded SmolLM2 tokenizer:

=============================  ===========  =======  =========  ==========  ===========
corpus                         top-1,000    vocab.   type-token  tokens per  repeats at
                               overlap      Jaccard  ratio       word        128K tokens
=============================  ===========  =======  =========  ==========  ===========
Paul Graham (the paper's)      1,000        1        0.107      1.241       0.94
pydoc_data (this default)      319          0.152    0.048      1.345       2.63
essential-generators 1.0       410          0.238    0.217      1.631       0.67
markov-draftjs 2.0.0           444          0.249    0.100      1.340       0.62
=============================  ===========  =======  =========  ==========  ===========

The last two are the only registry packages found that ship English prose
offline (searched: Project Gutenberg and essay packages; the rest download
their texts at run time, ship BBC news, or ship nothing). Both are Markov-chain
*generated* text (Wikipedia; Gutenberg novels), not real prose, which the essay
haystack needs, so the default stays pydoc_data.
"""


from __future__ import annotations

import hashlib
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from .registry import DataProblem, read_data

__all__ = ["DEFAULT_ESSAY_COMPARISON", "DEFAULT_ESSAY_LABEL", "EssayCorpus", "load_essays", "offline_corpus", "read_essays",
           "split_sentences"]

DEFAULT_ESSAY_LABEL = "pydoc_data"
DEFAULT_ESSAY_COMPARISON = (
    "vs those: top-1000-word overlap 319, vocabulary Jaccard 0.15, type-token ratio 0.048 vs 0.107, "
    "1.35 vs 1.24 SmolLM2 tokens per word"
)

# Abbreviations after which a period does not end a sentence.
_ABBREVIATIONS = frozenset(
    """e.g i.e etc vs cf al approx dr mr mrs ms prof sr jr st no fig eq ca ibid
    jan feb mar apr jun jul aug sep sept oct nov dec inc ltd co corp""".split()
)
_BOUNDARY = re.compile(r"([.!?][\"')\]]*)\s+(?=[\"'(\[]?[A-Z0-9])")


def split_sentences(text: str) -> list[str]:
    """Split prose into sentences.

    Rule: a sentence ends at ``.``, ``!`` or ``?`` (plus closing quotes or
    brackets) followed by whitespace and an upper-case letter, a digit or an
    opening quote/bracket, unless the word before the period is a known
    abbreviation or a single letter (initials, ``e.g.``). Whitespace inside a
    sentence is collapsed to single spaces.
    """
    text = re.sub(r"\s+", " ", text).strip()
    if not text:
        return []
    sentences: list[str] = []
    start = 0
    for match in _BOUNDARY.finditer(text):
        end = match.end(1)
        before = text[start:match.start(1)]
        last_word = before.rsplit(" ", 1)[-1].rstrip(".").lower()
        if match.group(1).startswith(".") and (last_word in _ABBREVIATIONS or len(last_word) == 1):
            continue
        sentence = text[start:end].strip()
        if sentence:
            sentences.append(sentence)
        start = match.end()
    tail = text[start:].strip()
    if tail:
        sentences.append(tail)
    return sentences


@dataclass(frozen=True)
class EssayCorpus:
    """Sentences of a prose corpus, with a label and a content hash for reports."""

    label: str
    sentences: tuple[str, ...]
    sha256: str
    words: int

    def sentence(self, i: int) -> str:
        """The i-th sentence, wrapping around: text repeats when the corpus is short."""
        return self.sentences[i % len(self.sentences)]


def _looks_like_prose(text: str) -> bool:
    return (
        len(text) >= 80
        and ">>>" not in text
        and "::=" not in text
        and not re.search(r"[=*\-+|]{4,}", text)
        and bool(re.search(r"[a-z]{3,} [a-z]{3,} [a-z]{3,}", text))
        and text.rstrip().endswith((".", ":", "?", "!"))
    )


def _pydoc_prose() -> str:
    """Prose paragraphs of CPython's pydoc topics (code, grammar and tables dropped).

    Flush-left paragraphs are kept when they read as prose; indented ones
    (code samples, grammar, but also notes and list items) only when they are
    almost all letters, end with a period and call nothing, with bullet and
    footnote markers removed.
    """
    from pydoc_data import topics

    paragraphs: list[str] = []
    for key in sorted(topics.topics):
        for block in re.split(r"\n\s*\n", topics.topics[key]):
            lines = block.splitlines()
            if not lines:
                continue
            joined = " ".join(ln.strip() for ln in lines)
            if any(ln.startswith((" ", "\t")) for ln in lines):
                joined = re.sub(r"^(\*|\[\d+\]|\d+\.)\s+", "", joined)
                letters = sum(c.isalpha() or c == " " for c in joined) / max(1, len(joined))
                if letters < 0.9 or not joined.endswith(".") or re.search(r"\w\(", joined):
                    continue
            if _looks_like_prose(joined):
                paragraphs.append(joined)
    return "\n\n".join(paragraphs)


def _corpus_from_text(label: str, text: str) -> EssayCorpus:
    sentences = tuple(split_sentences(text))
    digest = hashlib.sha256("\n".join(sentences).encode("utf-8")).hexdigest()
    return EssayCorpus(label=label, sentences=sentences, sha256=digest, words=sum(len(s.split()) for s in sentences))


def _read_essay_file(path: Path) -> str:
    try:
        raw = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise DataProblem(f"cannot read {path.name} as UTF-8 text ({exc})") from exc
    if path.suffix.lower() == ".json":
        try:
            data = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise DataProblem(f"{path.name} is not valid JSON ({exc.msg} at line {exc.lineno}); RULER's essay file is {{\"text\": \"...\"}}") from exc
        if not isinstance(data, dict) or not isinstance(data.get("text"), str):
            raise DataProblem(f"{path.name} is not RULER's essay JSON: expected RULER's essay JSON {{\"text\": \"...\"}}")
        return data["text"]
    return raw


def offline_corpus() -> EssayCorpus:
    """The offline default: CPython's pydoc topics (see the module docstring)."""
    py = f"{sys.version_info.major}.{sys.version_info.minor}"
    label = f"{DEFAULT_ESSAY_LABEL} (CPython {py} pydoc topics, offline default; not the paper's Paul Graham essays, {DEFAULT_ESSAY_COMPARISON})"
    return _corpus_from_text(label, _pydoc_prose())


def read_essays(path: Path) -> EssayCorpus:
    """The registry's reader of the ``essays`` kind: a file or a folder of .txt files; raises DataProblem."""
    if path.is_dir():
        files = sorted(p for p in path.rglob("*.txt") if p.is_file())
        if not files:
            raise DataProblem("the folder holds no .txt files")
        text = "\n\n".join(_read_essay_file(p) for p in files)
    else:
        text = _read_essay_file(path)
    corpus = _corpus_from_text(f"essays:{path.name}", text)
    if len(corpus.sentences) < 2 or corpus.words < 100:
        raise DataProblem(f"only {corpus.words} words in {len(corpus.sentences)} sentences; an essay haystack needs real prose (at least 100 words)")
    return corpus


def load_essays(spec: str | Path | None = None) -> EssayCorpus:
    """An essay corpus (see the module docstring); ``None`` is the offline default. Parsed once per
    process and file state (``data.registry.read_data``); a bad path raises RulerDataError naming --ruler-essays."""
    return read_data("essays", None if spec is None else str(spec))
