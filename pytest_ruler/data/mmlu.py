"""MMLU for RULERv2's mk_niah and mv_niah tasks (easy, medium, hard): its test questions and its auxiliary train set.

The reference (NeMo-Skills ``ruler2/prepare_mmlu.py``) reads Hugging Face's ``cais/mmlu``
``all`` configuration: the ``test`` split (14,042 questions) are the needles, the
``auxiliary_train`` split (99,842) the haystack. Each record is a question, four choices and
the answer's index; the reference writes it as ``question\\nA. c0\\nB. c1\\nC. c2\\nD. c3``
with every run of whitespace made one space, and the answer as its letter.

``--ruler-mmlu=PATH`` takes a folder in either of the two shapes that data comes in:

- MMLU's own release (``data.tar`` from the authors, what ``pytest-ruler download mmlu``
  unpacks): ``test/*.csv`` and ``auxiliary_train/*.csv``, rows ``question,A,B,C,D,letter``
  without a header, files read in name order (the order of Hugging Face's ``all``);
- Hugging Face records as JSON lines: ``test.jsonl`` and ``auxiliary_train.jsonl``, one
  ``{"question", "choices": [4], "answer": 0-3 or "A"-"D"}`` per line (``datasets``'
  ``to_json``; an auxiliary record nested as ``{"train": {...}}``, as older revisions
  of ``cais/mmlu`` have it, is unwrapped).

Public names: ``MMLUItem``, ``MMLUData``, ``load_mmlu``, ``read_mmlu`` (the data registry's reader), ``MMLU_OPTION``.

Every problem with the folder raises one :class:`~pytest_ruler.errors.RulerDataError`
naming the option, the path, what is wrong and how to get the data.
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .registry import DataProblem, read_data

__all__ = ["MMLU_OPTION", "MMLUData", "MMLUItem", "load_mmlu", "read_mmlu"]

MMLU_OPTION = "--ruler-mmlu"
LETTERS = ("A", "B", "C", "D")
SPLITS = ("test", "auxiliary_train")


@dataclass(frozen=True)
class MMLUItem:
    question: str  # the reference's one-line text: question, then "A. ..." to "D. ..."
    answer: str  # the letter


@dataclass(frozen=True)
class MMLUData:
    test: tuple[MMLUItem, ...]
    auxiliary_train: tuple[MMLUItem, ...]
    source: str
    sha256: str  # of the files read, in order

    @property
    def label(self) -> str:
        return f"mmlu ({len(self.test)} test, {len(self.auxiliary_train)} auxiliary_train; sha256 {self.sha256[:12]})"


def _item(question: Any, choices: Any, answer: Any, where: str) -> MMLUItem:
    if not isinstance(question, str) or not isinstance(choices, (list, tuple)) or len(choices) != 4 \
            or not all(isinstance(c, str) for c in choices):
        raise DataProblem(f"{where} is not a question with four choices")
    if isinstance(answer, str) and answer.strip() in LETTERS:
        letter = answer.strip()
    elif isinstance(answer, int) and not isinstance(answer, bool) and 0 <= answer < 4:
        letter = LETTERS[answer]
    else:
        raise DataProblem(f"{where} has answer {answer!r}, not 0-3 or A-D")
    text = question + "".join(f"\n{k}. {c}" for k, c in zip(LETTERS, choices))
    return MMLUItem(re.sub(r"\s+", " ", text), letter)


def _read_split(folder: Path, split: str, digest: Any) -> tuple[MMLUItem, ...]:
    jsonl = folder / f"{split}.jsonl"
    if jsonl.is_file():
        raw = jsonl.read_bytes()
        digest.update(raw)
        out = []
        for n, line in enumerate(raw.decode("utf-8").splitlines(), 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as exc:
                raise DataProblem(f"{jsonl.name} line {n} is not JSON ({exc.msg})") from None
            if isinstance(rec, dict) and isinstance(rec.get("train"), dict) and "question" not in rec:
                rec = rec["train"]
            if not isinstance(rec, dict):
                raise DataProblem(f"{jsonl.name} line {n} is not an object")
            out.append(_item(rec.get("question"), rec.get("choices"), rec.get("answer"), f"{jsonl.name} line {n}"))
        return tuple(out)
    sub = folder / split
    files = sorted(sub.glob("*.csv")) if sub.is_dir() else []
    if not files:
        raise DataProblem(f"it has neither {split}.jsonl nor {split}/*.csv")
    out = []
    for f in files:
        raw = f.read_bytes()
        digest.update(raw)
        for n, row in enumerate(csv.reader(raw.decode("utf-8").splitlines(keepends=True)), 1):
            if not row:
                continue
            if len(row) != 6:
                raise DataProblem(f"{split}/{f.name} row {n} has {len(row)} fields, not question,A,B,C,D,answer")
            out.append(_item(row[0], row[1:5], row[5], f"{split}/{f.name} row {n}"))
    return tuple(out)


def load_mmlu(path: str | os.PathLike[str]) -> MMLUData:
    """The MMLU folder at ``path`` (see the module docstring), parsed once per process and file
    state (``data.registry.read_data``); raises RulerDataError naming --ruler-mmlu."""
    return read_data("mmlu", path)


def read_mmlu(folder: Path) -> MMLUData:
    """The data registry's reader of ``mmlu`` (raises DataProblem)."""
    digest = hashlib.sha256()
    test = _read_split(folder, "test", digest)
    aux = _read_split(folder, "auxiliary_train", digest)
    if not test or not aux:
        raise DataProblem("its test or auxiliary_train split is empty")
    return MMLUData(test, aux, str(folder), digest.hexdigest())
