"""Haystacks: the text that needles hide in.

Three kinds, as in the RULER paper:

- ``noise``: one fixed line (``NOISE_LINE``) repeated, lines joined by ``\\n``;
- ``needle``: the haystack is itself distractor needles (built by the niah family);
- ``essay``: long natural prose split into sentences (:class:`EssayCorpus`), data of the
  kind ``essays`` (``data.registry``); its reader and the offline default live in
  ``data.essay_corpus`` and are re-exported here.

Public names: ``NOISE_LINE``, and from ``data.essay_corpus``: ``DEFAULT_ESSAY_COMPARISON``,
``DEFAULT_ESSAY_LABEL``, ``EssayCorpus``, ``load_essays``, ``split_sentences``.
"""

from __future__ import annotations

from ..data.essay_corpus import DEFAULT_ESSAY_COMPARISON, DEFAULT_ESSAY_LABEL, EssayCorpus, load_essays, split_sentences

__all__ = [
    "DEFAULT_ESSAY_COMPARISON",
    "DEFAULT_ESSAY_LABEL",
    "NOISE_LINE",
    "EssayCorpus",
    "load_essays",
    "split_sentences",
]

NOISE_LINE = "The grass is green. The sky is blue. The sun is yellow. Here we go. There and back again."
