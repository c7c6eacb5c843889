"""Readers for the two QA datasets RULER draws its qa_1 and qa_2 tasks from.

RULER's QA tasks hide a question's gold paragraph(s) among distractor paragraphs
from the same dataset. The datasets cannot be generated, so the user supplies the
files (``--ruler-squad``, ``--ruler-hotpotqa``) or fetches them with
``pytest-ruler download squad|hotpotqa``. This module turns either file into one
immutable shape: a pool of unique documents plus questions that point into it.

Public names:

- :class:`QAItem` — one question, its reference answers, and indices of its gold
  and related documents.
- :class:`QADataset` — the document pool, the questions, and where they came from
  (path and sha256 of the file bytes, for reports).
- :func:`load_squad` — SQuAD v2.0 dev JSON (answerable questions only).
- :func:`load_hotpotqa` — HotpotQA dev, distractor setting, JSON.
- :func:`load_qa` — dispatch by dataset name (``"squad"`` or ``"hotpotqa"``).
- :func:`clear_qa_cache` — forget the parsed datasets kept in this process.
- ``QA_DATASETS``, ``QA_OPTIONS`` — the dataset names and the option that
  supplies each file.

Choices, kept close to the reference generator so prompts draw from the same pool:

- Documents are deduplicated and sorted, so a document's index depends only on
  the file, never on reading order.
- SQuAD answers keep every annotator's text in file order, duplicates included
  (RULER does the same; the ``part`` metric takes the best match, so duplicates
  cannot change a score, and keeping them keeps our ``outputs`` equal to RULER's).
- A SQuAD question without ``is_impossible`` counts as answerable (v1.1 files).
- HotpotQA's gold documents are all ten paragraphs of the distractor setting, as
  in RULER, not only the two with supporting facts.
- Kept ours: an answerable question with no answer text is refused with a
  message naming it. The reference keeps it and then fails at scoring:
  string_match_part (RULER's QA metric, results/scoring.py) takes a maximum over the references, which an
  empty list does not have, so such a question can never be scored.

Every problem with a file raises one :class:`~pytest_ruler.errors.RulerDataError`
that names the option, the path, what is wrong, and how to get a good file.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_ruler.errors import RulerUsageError

from .registry import DataProblem, clear_data_cache, read_data

__all__ = [
    "QA_DATASETS",
    "QA_OPTIONS",
    "QAItem",
    "QADataset",
    "clear_qa_cache",
    "load_hotpotqa",
    "load_qa",
    "load_squad",
]

QA_DATASETS: tuple[str, ...] = ("squad", "hotpotqa")

#: The command-line option that supplies each dataset's file (the data registry's).
QA_OPTIONS: Mapping[str, str] = {
    "squad": "--ruler-squad",
    "hotpotqa": "--ruler-hotpotqa",
}


@dataclass(frozen=True)
class QAItem:
    """One question with its references and the documents that hold the answer.

    ``gold_docs`` and ``related_docs`` index into :attr:`QADataset.docs`.
    ``related_docs`` are SQuAD's other paragraphs of the same article: the first
    choice of distractors because they are on-topic. HotpotQA has none.
    """

    question: str
    answers: tuple[str, ...]
    gold_docs: tuple[int, ...]
    related_docs: tuple[int, ...] = ()
    qid: str = ""


@dataclass(frozen=True)
class QADataset:
    """A QA dataset reduced to what RULER's qa family needs."""

    name: str
    docs: tuple[str, ...]
    items: tuple[QAItem, ...]
    source: str
    sha256: str

    def __len__(self) -> int:
        return len(self.items)


def load_qa(
    name: str, path: str | os.PathLike[str], *, cache: bool = True
) -> QADataset:
    """Load dataset ``name`` ("squad" or "hotpotqa") from ``path``.

    Parsed datasets are cached in-process per (resolved path, mtime, size) by the data
    registry (``data.registry.read_data``), so repeated calls (one per test item) parse the
    40–50 MB file once; editing or replacing the file invalidates the entry. ``cache=False``
    parses afresh and keeps nothing (the download command uses it to check a file before
    keeping it).
    """
    if name not in QA_OPTIONS:
        raise RulerUsageError(
            "dataset", name, f"choose one of: {', '.join(QA_DATASETS)}"
        )
    return read_data(name, path, cache=cache)


def load_squad(path: str | os.PathLike[str]) -> QADataset:
    """Load SQuAD v2.0 dev JSON; only answerable questions become items."""
    return load_qa("squad", path)


def load_hotpotqa(path: str | os.PathLike[str]) -> QADataset:
    """Load HotpotQA dev (distractor setting) JSON."""
    return load_qa("hotpotqa", path)


def clear_qa_cache() -> None:
    """Drop every parsed data set held by this process (``data.registry.clear_data_cache``)."""
    clear_data_cache()


def read_squad(path: Path) -> QADataset:
    """The data registry's reader of ``squad`` (raises DataProblem)."""
    return _read("squad", path)


def read_hotpotqa(path: Path) -> QADataset:
    """The data registry's reader of ``hotpotqa`` for qa_2 (raises DataProblem)."""
    return _read("hotpotqa", path)


def _read(name: str, path: Path) -> QADataset:
    raw = path.read_bytes()
    docs, items = _parse_bytes(name, raw)
    return QADataset(name=name, docs=docs, items=items, source=str(path), sha256=hashlib.sha256(raw).hexdigest())


def _parse_bytes(name: str, raw: bytes) -> tuple[tuple[str, ...], tuple[QAItem, ...]]:
    try:
        data = json.loads(raw)
    except UnicodeDecodeError:
        raise DataProblem("it is not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise DataProblem(
            f"it is not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})"
        ) from None
    parse = _parse_squad if name == "squad" else _parse_hotpotqa
    docs, items = parse(data)
    if not items:
        what = "answerable questions" if name == "squad" else "questions"
        raise DataProblem(f"it contains no {what}")
    return docs, items


def _field(record: Mapping[str, Any], key: str, kind: type, where: str) -> Any:
    if key not in record:
        raise DataProblem(f"{where} has no {key!r}")
    value = record[key]
    if not isinstance(value, kind):
        raise DataProblem(
            f"{where} has {key!r} of type {type(value).__name__}, "
            f"expected {kind.__name__}"
        )
    return value


def _index(docs: Sequence[str]) -> tuple[tuple[str, ...], dict[str, int]]:
    unique = tuple(sorted(set(docs)))
    return unique, {doc: i for i, doc in enumerate(unique)}


def _unique(seq: Sequence[int]) -> tuple[int, ...]:
    return tuple(dict.fromkeys(seq))


def _parse_squad(data: Any) -> tuple[tuple[str, ...], tuple[QAItem, ...]]:
    if isinstance(data, list):
        raise DataProblem(
            "its top level is a list, as in a HotpotQA file; a SQuAD file is an "
            "object with a 'data' list"
        )
    if not isinstance(data, dict):
        raise DataProblem(f"its top level is a {type(data).__name__}, not an object")
    articles = _field(data, "data", list, "the top-level object")

    # First pass: validate the structure and collect every context.
    checked: list[list[tuple[str, list[Any], str]]] = []
    for a, article in enumerate(articles):
        where = f"data[{a}]"
        if not isinstance(article, dict):
            raise DataProblem(f"{where} is a {type(article).__name__}, not an object")
        paragraphs = _field(article, "paragraphs", list, where)
        rows = []
        for p, paragraph in enumerate(paragraphs):
            pwhere = f"{where}.paragraphs[{p}]"
            if not isinstance(paragraph, dict):
                raise DataProblem(f"{pwhere} is a {type(paragraph).__name__}, not an object")
            context = _field(paragraph, "context", str, pwhere)
            qas = _field(paragraph, "qas", list, pwhere)
            rows.append((context, qas, pwhere))
        checked.append(rows)

    docs, doc_index = _index([c for rows in checked for c, _, _ in rows])

    items: list[QAItem] = []
    for rows in checked:
        article_docs = _unique([doc_index[c] for c, _, _ in rows])
        for context, qas, pwhere in rows:
            gold = doc_index[context]
            related = tuple(i for i in article_docs if i != gold)
            for q, qa in enumerate(qas):
                qwhere = f"{pwhere}.qas[{q}]"
                if not isinstance(qa, dict):
                    raise DataProblem(f"{qwhere} is a {type(qa).__name__}, not an object")
                question = _field(qa, "question", str, qwhere)
                impossible = qa.get("is_impossible", False)
                if not isinstance(impossible, bool):
                    raise DataProblem(f"{qwhere} has a non-boolean 'is_impossible'")
                if impossible:
                    continue
                answers = _field(qa, "answers", list, qwhere)
                if not answers:
                    raise DataProblem(f"{qwhere} is answerable but has no answers")
                texts = []
                for n, answer in enumerate(answers):
                    if not isinstance(answer, dict):
                        raise DataProblem(f"{qwhere}.answers[{n}] is not an object")
                    texts.append(_field(answer, "text", str, f"{qwhere}.answers[{n}]"))
                qid = qa.get("id", "")
                items.append(
                    QAItem(
                        question=question,
                        answers=tuple(texts),
                        gold_docs=(gold,),
                        related_docs=related,
                        qid=qid if isinstance(qid, str) else str(qid),
                    )
                )
    return docs, tuple(items)


def _hotpot_doc(entry: Any, where: str) -> str:
    if (
        not isinstance(entry, list)
        or len(entry) != 2
        or not isinstance(entry[0], str)
        or not isinstance(entry[1], list)
        or not all(isinstance(s, str) for s in entry[1])
    ):
        raise DataProblem(f"{where} is not a [title, [sentences...]] pair")
    title, sentences = entry
    return f"{title}\n{''.join(sentences)}"


def _parse_hotpotqa(data: Any) -> tuple[tuple[str, ...], tuple[QAItem, ...]]:
    if isinstance(data, dict):
        hint = " (this looks like a SQuAD file)" if "data" in data else ""
        raise DataProblem(f"its top level is an object{hint}; a HotpotQA file is a list")
    if not isinstance(data, list):
        raise DataProblem(f"its top level is a {type(data).__name__}, not a list")

    rows: list[tuple[str, str, list[str], str]] = []
    for r, record in enumerate(data):
        where = f"record {r}"
        if not isinstance(record, dict):
            raise DataProblem(f"{where} is a {type(record).__name__}, not an object")
        if isinstance(record.get("_id"), str):
            where = f"record {r} (_id {record['_id']!r})"
        question = _field(record, "question", str, where)
        answer = _field(record, "answer", str, where)
        context = _field(record, "context", list, where)
        if not context:
            raise DataProblem(f"{where} has an empty 'context'")
        texts = [_hotpot_doc(e, f"{where} context[{i}]") for i, e in enumerate(context)]
        rows.append((question, answer, texts, str(record.get("_id", ""))))

    docs, doc_index = _index([t for _, _, texts, _ in rows for t in texts])
    items = tuple(
        QAItem(
            question=question,
            answers=(answer,),
            gold_docs=_unique([doc_index[t] for t in texts]),
            related_docs=(),
            qid=qid,
        )
        for question, answer, texts, qid in rows
    )
    return docs, items
