"""Question answering (qa_1: SQuAD v2 dev, qa_2: HotpotQA dev distractor).

Arguments: ``dataset`` (``squad`` | ``hotpotqa``), ``depth`` (None = the gold
documents' positions drawn per sample; a fraction = every gold document at that
depth; a list = swept over samples).

Sample i asks the dataset's i-th question in file order (SQuAD: the i-th
answerable one), as the reference does, at every length and seed; past the
last question it wraps around (the reference stops with an IndexError). Its
gold documents come with distractors: the other paragraphs of the same article
first (SQuAD), then random documents of the dataset, as many as fit. When
every document is in, further ones repeat the whole pool (gold documents
included) in the same order, as the reference repeats its documents. Documents
are rendered ``Document {i}:\\n{text}`` (1-based) joined by blank lines.

Kept ours: the reference's fixed shuffle puts the
gold document in the same slot for every sample of a size; here the gold
position is drawn per sample and recorded (``gold_positions``, 1-based, and
``depth``), and each sample is filled to its own budget rather than to one
document count per run.
"""

from __future__ import annotations

import random
from typing import Any, Mapping

from ..errors import RulerUsageError
from .base import GenerationContext, PrefixCounter, Rendered, check_depths, depth_fraction, with_defaults

__all__ = ["ANSWER_PREFIX", "DOCUMENT", "QAFamily", "TEMPLATE", "parse_question"]

TEMPLATE = (
    "Answer the question based on the given documents. Only give me the answer and do not output any other words.\n\n"
    "The following are given documents.\n\n{context}\n\n"
    "Answer the question based on the given documents. Only give me the answer and do not output any other words.\n\n"
    "Question: {query}"
)
ANSWER_PREFIX = " Answer:"
DOCUMENT = "Document {i}:\n{document}"
DATASETS = ("squad", "hotpotqa")


def parse_question(question: str) -> dict[str, str] | None:
    """``{"question": ...}``: the question a qa prompt asks, read from its text."""
    at = question.rfind("Question: ")
    return {"question": question[at + len("Question: "):].strip()} if at >= 0 else None


class QAFamily:
    name = "qa"
    defaults: Mapping[str, Any] = {"dataset": "squad", "depth": None}

    def validate(self, args: Mapping[str, Any]) -> dict[str, Any]:
        a = with_defaults("qa", args, self.defaults)
        if a["dataset"] not in DATASETS:
            raise RulerUsageError("dataset", a["dataset"], f"choose one of {', '.join(DATASETS)}")
        d = check_depths(a["depth"])
        a["depth"] = list(d) if d is not None else None
        return a

    def data_needs(self, args: Mapping[str, Any]) -> tuple[str, ...]:
        return (args["dataset"],)  # a data kind of the same name (data.registry)

    def data_label(self, args: Mapping[str, Any], ctx: GenerationContext) -> str:
        ds = ctx.read(args["dataset"])
        return f"{ds.name}:{ds.sha256[:12]}"

    def draft(self, args: Mapping[str, Any], ctx: GenerationContext, rng: random.Random, index: int, **_: Any) -> "QADraft":
        return QADraft(args, ctx, rng, index)

    def mapreduce_strategy(self, question: str) -> tuple[str, dict[str, Any]]:
        """``facts``: each chunk's facts about the question's entities; the model reduces."""
        return "facts", {}


class QADraft:
    def __init__(self, a: Mapping[str, Any], ctx: GenerationContext, rng: random.Random, index: int):
        ds = ctx.read(a["dataset"])
        item = ds.items[index % len(ds.items)]
        self.ds, self.item = ds, item
        gold = list(item.gold_docs)
        related = [d for d in item.related_docs if d not in gold]
        rng.shuffle(related)
        taken = set(gold) | set(related)
        others_rng = random.Random(rng.getrandbits(64))
        self._others_rng = others_rng
        self._taken = taken
        self.distractors: list[int] = related
        self.gold = gold
        if a["depth"] is not None:
            d = a["depth"][index % len(a["depth"])]
            self.fractions = [d] * len(gold)
        else:
            self.fractions = [rng.random() for _ in gold]
        self.min_units = 0
        self.max_units = None
        self._fresh = len(ds.docs) - len(gold)  # distractors before the pool repeats
        tok = ctx.tokenizer
        # a document costs about its header plus its text; seams are corrected by fill()
        self.counter = PrefixCounter(tok, lambda i: "\n\nDocument 1:\n" + ds.docs[self._distractor(i)], memo=True)
        empty = self.render(0)
        self._base = tok.count(empty.input + empty.answer_prefix)

    def _distractor(self, i: int) -> int:
        size = len(self.ds.docs)
        if i >= self._fresh:
            # the pool is used up: repeat it whole (distractors, then the gold documents)
            if self._fresh:
                self._distractor(self._fresh - 1)
            pool = self.distractors[: self._fresh] + self.gold
            return pool[(i - self._fresh) % len(pool)]
        while len(self.distractors) <= i:
            d = self._others_rng.randrange(size)
            if d not in self._taken:
                self._taken.add(d)
                self.distractors.append(d)
        return self.distractors[i]

    def estimate(self, n: int) -> int:
        return self._base + self.counter.total(n)

    def render(self, n: int) -> Rendered:
        docs = [self._distractor(i) for i in range(n)]
        slots = sorted((min(n, int(f * (n + 1))), j) for j, f in enumerate(self.fractions))
        gold_positions = [0] * len(self.gold)
        for offset, (pos, j) in enumerate(slots):
            docs.insert(pos + offset, self.gold[j])
            gold_positions[j] = pos + offset + 1  # the inserted copy, not a repeat of the pool
        context = "\n\n".join(DOCUMENT.format(i=i + 1, document=self.ds.docs[d]) for i, d in enumerate(docs))
        text = TEMPLATE.format(context=context, query=self.item.question)
        total = len(docs)
        meta = {
            "haystack": f"{self.ds.name} documents",
            "haystack_units": total,
            "gold_positions": gold_positions,
            "depth": [depth_fraction(p - 1, max(1, total - 1)) for p in gold_positions],
            "question": self.item.question,
        }
        return Rendered(text, ANSWER_PREFIX, tuple(self.item.answers), meta, context)
