"""HotpotQA for RULERv2's qa tasks: the train set's paragraphs (the haystack) and the dev questions (the needles).

The reference (NeMo-Skills ``ruler2/prepare_qa.py``) reads Hugging Face's ``hotpotqa/hotpot_qa``
``distractor`` configuration: every paragraph of the ``train`` split, ``title\\n`` followed by
its sentences joined, is the haystack; each ``validation`` question brings its supporting
paragraphs (those whose title is in ``supporting_facts``) and its other paragraphs (the
distractors) as they appear in its context.

Files: ``--ruler-hotpotqa-train`` (``hotpot_train_v1.1.json``) and ``--ruler-hotpotqa``
(``hotpot_dev_distractor_v1.json``, the file RULER's qa_2 already reads), in HotpotQA's own
JSON (a list of records; ``context`` as ``[[title, [sentences]]]``, ``supporting_facts`` as
``[[title, sentence index]]``) or as Hugging Face records (``context`` as ``{"title": [...],
"sentences": [[...]]}``, ``supporting_facts`` as ``{"title": [...], "sent_id": [...]}``), one
JSON list or JSON lines.

Ours: the haystack's paragraphs are deduplicated and *sorted* (the reference's
``list(set(...))`` makes their order, and then every sample, depend on the process's hash
seed); a question whose answer is empty is left out (an empty reference matches anything).

Public names: ``HotpotNeedle``, ``load_hotpot_haystack``, ``load_hotpot_needles``, ``TRAIN_OPTION``; the data
registry's readers ``read_haystack`` (kind ``hotpotqa-train``) and ``read_needles`` (another reading of ``hotpotqa``).
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .registry import DataProblem, read_data

__all__ = ["TRAIN_OPTION", "HotpotHaystack", "HotpotNeedle", "load_hotpot_haystack", "load_hotpot_needles", "read_haystack", "read_needles"]

TRAIN_OPTION = "--ruler-hotpotqa-train"
DEV_OPTION = "--ruler-hotpotqa"


@dataclass(frozen=True)
class HotpotNeedle:
    question: str
    answer: str
    supporting: tuple[str, ...]  # paragraphs, in context order
    distractors: tuple[str, ...]


@dataclass(frozen=True)
class HotpotHaystack:
    docs: tuple[str, ...]  # sorted, distinct
    sha256: str

    @property
    def label(self) -> str:
        return f"hotpotqa train ({len(self.docs)} paragraphs; sha256 {self.sha256[:12]})"


def _records(raw: bytes) -> list[Any]:
    text = raw.decode("utf-8")
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        try:
            data = [json.loads(line) for line in text.splitlines() if line.strip()]
        except json.JSONDecodeError as exc:
            raise DataProblem(f"it is neither JSON nor JSON lines ({exc.msg} at line {exc.lineno})") from None
    if not isinstance(data, list):
        raise DataProblem(f"its top level is a {type(data).__name__}, not a list of records")
    return data


def _paragraphs(record: Any, where: str) -> list[tuple[str, str]]:
    """(title, paragraph text) of a record's context, in order, in either shape."""
    if not isinstance(record, dict) or "context" not in record:
        raise DataProblem(f"{where} has no 'context'")
    ctx = record["context"]
    pairs: list[tuple[Any, Any]]
    if isinstance(ctx, dict):
        pairs = list(zip(ctx.get("title") or [], ctx.get("sentences") or []))
    elif isinstance(ctx, list):
        pairs = [tuple(e) if isinstance(e, list) and len(e) == 2 else (None, None) for e in ctx]
    else:
        raise DataProblem(f"{where} has a 'context' that is neither a list nor an object")
    out = []
    for title, sentences in pairs:
        if not isinstance(title, str) or not isinstance(sentences, list) or not all(isinstance(s, str) for s in sentences):
            raise DataProblem(f"{where} has a context entry that is not a title with its sentences")
        out.append((title, f"{title}\n{''.join(sentences)}"))
    return out


def _supporting_titles(record: dict, where: str) -> set[str]:
    facts = record.get("supporting_facts")
    if isinstance(facts, dict):
        return set(facts.get("title") or [])
    if isinstance(facts, list):
        return {f[0] for f in facts if isinstance(f, list) and f and isinstance(f[0], str)}
    raise DataProblem(f"{where} has no 'supporting_facts'")


def load_hotpot_haystack(path: str | os.PathLike[str]) -> HotpotHaystack:
    """Every distinct paragraph of the train file, sorted (parsed once per process and file state,
    ``data.registry.read_data``; raises RulerDataError naming --ruler-hotpotqa-train)."""
    return read_data("hotpotqa-train", path)


def load_hotpot_needles(path: str | os.PathLike[str]) -> tuple[HotpotNeedle, ...]:
    """The dev file's questions with their supporting and distractor paragraphs, in file order
    (the ``hotpotqa`` kind's file, read by :func:`read_needles`)."""
    return read_data("hotpotqa", path, reader=read_needles)


def read_haystack(path: Path) -> HotpotHaystack:
    """The data registry's reader of ``hotpotqa-train`` (raises DataProblem)."""
    raw = path.read_bytes()
    docs: set[str] = set()
    for r, record in enumerate(_records(raw)):
        docs.update(text for _, text in _paragraphs(record, f"record {r}"))
    if not docs:
        raise DataProblem("it has no paragraphs")
    return HotpotHaystack(tuple(sorted(docs)), hashlib.sha256(raw).hexdigest())


def read_needles(path: Path) -> tuple[HotpotNeedle, ...]:
    """RULERv2's reading of the ``hotpotqa`` file: its questions (raises DataProblem)."""
    out = []
    for r, record in enumerate(_records(path.read_bytes())):
        where = f"record {r}"
        paragraphs = _paragraphs(record, where)
        titles = _supporting_titles(record, where)
        question, answer = record.get("question"), record.get("answer")
        if not isinstance(question, str) or not isinstance(answer, str):
            raise DataProblem(f"{where} has no question and answer text")
        supporting = tuple(t for title, t in paragraphs if title in titles)
        if not answer.strip() or not supporting:
            continue
        out.append(HotpotNeedle(question, answer, supporting, tuple(t for title, t in paragraphs if title not in titles)))
    if not out:
        raise DataProblem("it has no question with an answer and a supporting paragraph")
    return tuple(out)
