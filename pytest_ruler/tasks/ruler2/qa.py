"""RULERv2's HotpotQA tasks (qa_basic, qa_easy, qa_medium, qa_hard): the family ``ruler2_qa``.

The haystack is HotpotQA train paragraphs, each shown as ``Document <id>:\\n<title>\\n<text>``
with a 7-digit id; one dev question's supporting paragraphs and its distractor paragraphs
are shuffled in among them. The reference's ``prepare_qa.py`` (instruct prompts, no
examples) sets the four tasks:

- ``retrieve`` / ``query_type=doc`` (qa_basic): the query is a supporting paragraph's text;
  the answer is its id;
- ``retrieve`` / ``query_type=question`` (qa_easy): the query is the question; any
  supporting paragraph's id is right (``part``);
- ``solve`` / ``algo_type=2steps`` (qa_medium): copy the relevant paragraphs, then answer;
- ``solve`` / ``algo_type=single`` (qa_hard): answer the question.

The templates are the reference's text, reproduced exactly.

Ours: the haystack is sorted and drawn from the sample's own RNG (deterministic in any
process, whatever its hash seed: the reference's is not); a haystack paragraph equal to
one of the question's own is not drawn (so the paragraph to find appears once; once every
other paragraph is drawn, they are drawn again; a train file of only the question's own is
a usage error naming ``--ruler-hotpotqa-train``); ids are
distinct; sample ``i`` asks dev question ``i`` (as the reference does) whatever the seed;
the budget counts the chat template and ``tokens_to_generate``.
"""

from __future__ import annotations

import random
from typing import Any, Mapping

from ...data.ruler2_qa import read_needles
from ...errors import RulerUsageError
from ..base import GenerationContext, PrefixCounter, Rendered, with_defaults

__all__ = ["Ruler2QAFamily"]

TOTAL = "{context}\n\n{example}{problem}"
NEEDLE = "Document {i}:\n{text}"
CONTEXT = {
    "doc": ("Below are some documents. I will give you a text at the end. Please find the document index of the text. "
            "Only give me the index without any document contents.\n\n{needles}"),
    "question": ("Below are some documents. I will give you a question at the end. Please find the index of the most relevant "
                 "document that can help answer the question. Only give me the index without any document contents.\n\n{needles}"),
    "solve": "Below are some documents. I will ask you to answer a question based on the documents. Please answer the question.\n\n{needles}",
}
PROBLEM = {
    "doc": "Text: {text}\nMost relevant document index:",
    "question": "Question: {question}\nIndex of the most relevant document that can help answer the question:",
    "single": "Please answer the following question based on the documents.\n\nQuestion: {question}",
    "2steps": ("Please first find and copy paste the documents relevant to the following question and then answer it "
               "based on the documents you find.\n\nQuestion: {question}"),
}


class Ruler2QAFamily:
    name = "ruler2_qa"
    defaults: Mapping[str, Any] = {"task_type": "retrieve", "query_type": "doc", "algo_type": "single"}

    def validate(self, args: Mapping[str, Any]) -> dict[str, Any]:
        a = with_defaults("ruler2_qa", args, self.defaults)
        if a["task_type"] not in ("retrieve", "solve"):
            raise RulerUsageError("task_type", a["task_type"], "choose retrieve or solve")
        if a["task_type"] == "retrieve" and a["query_type"] not in ("doc", "question"):
            raise RulerUsageError("query_type", a["query_type"], "choose doc or question")
        if a["task_type"] == "solve" and a["algo_type"] not in ("single", "2steps"):
            raise RulerUsageError("algo_type", a["algo_type"], "choose single or 2steps")
        return a

    def data_needs(self, args: Mapping[str, Any]) -> tuple[str, ...]:
        return ("hotpotqa-train", "hotpotqa")  # the haystack; the questions (read by read_needles)

    def data_label(self, args: Mapping[str, Any], ctx: GenerationContext) -> str:
        return ctx.read("hotpotqa-train").label

    def draft(self, args: Mapping[str, Any], ctx: GenerationContext, rng: random.Random, index: int, **_: Any) -> "_Draft":
        return _Draft(args, ctx, rng, index)


class _Draft:
    def __init__(self, a: Mapping[str, Any], ctx: GenerationContext, rng: random.Random, index: int):
        self.a = a
        needles = ctx.read("hotpotqa", read_needles)
        self.needle = needles[index % len(needles)]
        self.docs = ctx.read("hotpotqa-train").docs
        self._own = set(self.needle.supporting) | set(self.needle.distractors)
        self._pool = sum(d not in self._own for d in self.docs)  # the paragraphs a haystack may draw
        if self._pool == 0:
            raise RulerUsageError("--ruler-hotpotqa-train", ctx.path("hotpotqa-train"),
                                  "every train paragraph is one of the question's own (supporting or distractor): "
                                  "pass a HotpotQA train file with other paragraphs (`pytest-ruler download hotpotqa-train`)")
        self._seed = rng.getrandbits(64)
        self._stream_rng = random.Random(rng.getrandbits(64))
        self._stream: list[int] = []
        self._seen: set[int] = set()
        self.min_units = 1  # the distractors join from the first haystack paragraph on, as in the reference
        self.max_units = None
        tok = ctx.tokenizer
        self.counter = PrefixCounter(tok, lambda i: "\n\n" + NEEDLE.format(i="1000000", text=self._doc(i)))
        smallest = self.render(self.min_units)
        self._base = tok.count(smallest.input) - self.counter.total(self.min_units)

    def _doc(self, i: int) -> str:
        while len(self._stream) <= i:
            if len(self._seen) >= self._pool:  # every drawable paragraph drawn: draw them again
                self._seen.clear()
            j = self._stream_rng.randrange(len(self.docs))
            if j not in self._seen and self.docs[j] not in self._own:
                self._seen.add(j)
                self._stream.append(j)
        return self.docs[self._stream[i]]

    def estimate(self, n: int) -> int:
        return self._base + self.counter.total(n)

    def render(self, n: int) -> Rendered:
        a, needle = self.a, self.needle
        place = random.Random(f"{self._seed}|{n}")
        texts = [self._doc(i) for i in range(n)] + list(needle.supporting) + (list(needle.distractors) if n > 0 else [])
        ids: list[str] = []
        while len(ids) < len(texts):
            v = str(place.randint(1_000_000, 9_999_999))
            if v not in ids:
                ids.append(v)
        docs = list(zip(ids, texts))
        support_ids = ids[n:n + len(needle.supporting)]
        place.shuffle(docs)
        needles = "\n\n".join(NEEDLE.format(i=i, text=t) for i, t in docs)
        if a["task_type"] == "retrieve":
            kind = a["query_type"]
            problem = PROBLEM[kind].format(text=needle.supporting[0], question=needle.question)
            outputs = (support_ids[0],) if kind == "doc" else tuple(support_ids)
            context = CONTEXT[kind].format(needles=needles)
        else:
            problem = PROBLEM[a["algo_type"]].format(question=needle.question)
            outputs = (needle.answer,)
            context = CONTEXT["solve"].format(needles=needles)
        text = TOTAL.format(context=context, example="", problem=problem)
        where = [k for k, (i, _) in enumerate(docs) if i in support_ids]
        meta = {"haystack": "hotpotqa", "haystack_units": n, "supporting_ids": list(support_ids),
                "depth": [round(k / len(docs), 4) for k in where]}
        return Rendered(text, "", outputs, meta, needles)
