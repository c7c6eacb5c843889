"""RULERv2's MMLU tasks (mk_niah easy/medium/hard, mv_niah easy/medium/hard): the family ``ruler2_mmlu``.

The haystack is MMLU questions (the auxiliary train set), each shown as ``Question <id>:
<text>`` with a 7-digit id; one MMLU test question is hidden among them. The task
copies it, copies every question sharing its id, copies the k-th of them, or solves it
(A-D, the letter in ``\\boxed{}``), as the reference's ``prepare_mmlu.py`` (instruct prompts)
sets it:

- ``task_type``: ``retrieve`` (copy one question), ``niah`` (copy every question with the
  id), ``solve`` (answer it, A-D);
- ``algo_type``: ``single`` (one step) or ``2steps`` (copy first, then answer / copy);
- ``fewshot``: worked examples from the haystack's own questions (5 for the solve tasks);
- ``num_order``: 0, every question has its own id; 4, ids come in groups of 4 (the
  real question shares its id with up to 3 others, and ``retrieve`` asks for the
  ``k``-th, "2nd (1 indexed) ", by order in the context, as inflect writes ordinals).

The prompt templates are the reference's text, reproduced exactly (they are the benchmark).

Ours, against the reference: every draw is the sample's own RNG (``base.sample_rng``) and
per-size choices are a pure function of (sample, haystack size); ids are distinct (by
group with ``num_order``), where the reference's may collide by chance; a haystack
question drawn twice is two entries (the reference shares one dict between them, so
their ids and orders overwrite each other); sample ``i`` of a seed hides test question
``perm[i]`` of a permutation fixed per (task, seed), so every length asks the same
questions; the budget counts the chat template and ``tokens_to_generate``.
"""

from __future__ import annotations

import functools
import math
import random
from typing import Any, Mapping

from ...errors import RulerUsageError
from ..base import GenerationContext, PrefixCounter, Rendered, with_defaults

__all__ = ["Ruler2MMLUFamily", "ordinal"]

TOTAL = "{context}\n\n{example}{problem}"
NEEDLE = "Question {i}: {question}"
CONTEXT = {
    "retrieve": "Below are some questions. I will ask you to copy one of them. Please copy and paste the question you find.\n\n{needles}",
    "niah": "Below are some questions. I will ask you to copy some of them. Please copy and paste the questions you find.\n\n{needles}",
    "solve": ("Below are some questions. I will ask you to solve one of them. Please solve the question you find and make sure "
              "to put the answer (and only answer) inside \\boxed\\{{\\}}.\n\n{needles}"),  # shows as \boxed\{\}
}
PROBLEM = {
    ("retrieve", "single"): "Please copy the {order}Question {i} from the context.",
    ("retrieve", "2steps"): "Please first copy all the Question {i} from the context and then copy the {order}Question {i} at the end.",
    ("niah", "single"): "Please find and copy all the Question {i} from the context.",
    ("solve", "single"): "Please solve the Question {i} from the context with an answer from A, B, C, D.",
    ("solve", "2steps"): "Please copy the Question {i} from the context and then solve it with an answer from A, B, C, D.",
}
EXAMPLES_HEAD = "Here are some examples to help you understand the task:\n\n"
EXAMPLES_TAIL = "\n\nHere is the actual task you need to solve:\n\n"


def ordinal(n: int) -> str:
    """What the reference's ``inflect.engine().ordinal(n)`` writes for an int: 1st, 2nd, 3rd, 4th, 11th, 22nd."""
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


@functools.lru_cache(maxsize=64)
def _needle_order(task: str, seed: int, n: int) -> tuple[int, ...]:
    """The test questions of (task, seed) in sample order: a permutation fixed per task and seed."""
    order = list(range(n))
    random.Random(f"ruler2_mmlu|{task}|{seed}").shuffle(order)
    return tuple(order)


class Ruler2MMLUFamily:
    name = "ruler2_mmlu"
    defaults: Mapping[str, Any] = {"task_type": "retrieve", "algo_type": "single", "fewshot": 0, "num_order": 0}

    def validate(self, args: Mapping[str, Any]) -> dict[str, Any]:
        a = with_defaults("ruler2_mmlu", args, self.defaults)
        if (a["task_type"], a["algo_type"]) not in PROBLEM:
            raise RulerUsageError("task_type/algo_type", f"{a['task_type']}/{a['algo_type']}",
                                  f"choose one of {', '.join('/'.join(k) for k in PROBLEM)}")
        for k in ("fewshot", "num_order"):
            if isinstance(a[k], bool) or not isinstance(a[k], int) or a[k] < 0:
                raise RulerUsageError(k, a[k], "must be an integer >= 0")
        if a["fewshot"] and a["task_type"] == "niah":
            raise RulerUsageError("fewshot", a["fewshot"], "the niah task type has no worked examples (as in the reference)")
        return a

    def data_needs(self, args: Mapping[str, Any]) -> tuple[str, ...]:
        return ("mmlu",)

    def data_label(self, args: Mapping[str, Any], ctx: GenerationContext) -> str:
        return ctx.read("mmlu").label

    def draft(self, args: Mapping[str, Any], ctx: GenerationContext, rng: random.Random, index: int, *,
              task: str, seed: int, **_: Any) -> "_Draft":
        return _Draft(args, ctx, rng, index, task, seed)


class _Draft:
    def __init__(self, a: Mapping[str, Any], ctx: GenerationContext, rng: random.Random, index: int, task: str, seed: int):
        data = ctx.read("mmlu")
        self.a, self.data = a, data
        self.needle = data.test[_needle_order(task, seed, len(data.test))[index % len(data.test)]]
        self._seed = rng.getrandbits(64)
        self._stream_rng = random.Random(rng.getrandbits(64))
        self._stream: list[int] = []
        self._seen: set[int] = set()
        self.min_units = max(1, a["fewshot"])
        self.max_units = None
        tok = ctx.tokenizer
        self.counter = PrefixCounter(tok, lambda i: "\n\n" + NEEDLE.format(i="1000000", question=self._question(i).question))
        smallest = self.render(self.min_units)
        self._base = tok.count(smallest.input) - self.counter.total(self.min_units)

    def _question(self, i: int):
        """Haystack entry i: auxiliary_train questions, without repeats until the set runs out."""
        aux = self.data.auxiliary_train
        while len(self._stream) <= i:
            if len(self._seen) >= len(aux):
                self._seen.clear()
            j = self._stream_rng.randrange(len(aux))
            if j not in self._seen:
                self._seen.add(j)
                self._stream.append(j)
        return aux[self._stream[i]]

    def estimate(self, n: int) -> int:
        return self._base + self.counter.total(n)

    def render(self, n: int) -> Rendered:
        a = self.a
        place = random.Random(f"{self._seed}|{n}")
        entries = [{"q": self._question(i)} for i in range(n)]
        order = a["num_order"]
        count = n + 1
        ids: list[str] = []
        used: set[str] = set()
        groups = math.ceil(count / order) if order else count
        while len(ids) < groups:
            v = str(place.randint(1_000_000, 9_999_999))
            if v not in used:
                used.add(v)
                ids.append(v)
        if order:
            ids = ids * order
        place.shuffle(ids)
        ids = ids[:count]
        for e, i in zip(entries, ids):
            e["id"] = i
        place.shuffle(entries)
        examples = place.sample(entries, a["fewshot"]) if a["fewshot"] and len(entries) >= a["fewshot"] else []
        needle = {"q": self.needle, "id": ids[-1]}
        at = place.randint(0, len(entries))
        entries.insert(at, needle)
        seen: dict[str, int] = {}
        for e in entries:
            seen[e["id"]] = seen.get(e["id"], 0) + 1
            e["order"] = f"{ordinal(seen[e['id']])} (1 indexed) " if order else ""
        needles = "\n\n".join(NEEDLE.format(i=e["id"], question=e["q"].question) for e in entries)
        kind, algo = a["task_type"], a["algo_type"]
        template = PROBLEM[(kind, algo)]
        problem = template.format(i=needle["id"], order=needle["order"])
        example = ""
        if examples:
            if kind == "retrieve":
                shown = [template.format(i=e["id"], order=e["order"]) + f"\nQuestion {e['id']}: {e['q'].question}" for e in examples]
            elif algo == "single":
                shown = [template.format(i=e["id"], order="") + f"\nSolution: \\boxed{{{e['q'].answer}}}" for e in examples]
            else:
                shown = [template.format(i=e["id"], order="") + f"\nQuestion {e['id']}: {e['q'].question}\nSolution: \\boxed{{{e['q'].answer}}}"
                         for e in examples]
            example = EXAMPLES_HEAD + "\n\n".join(shown) + EXAMPLES_TAIL
        context = CONTEXT[kind].format(needles=needles)
        text = TOTAL.format(context=context, example=example, problem=problem)
        if kind == "retrieve":
            outputs: tuple[str, ...] = (self.needle.question,)
        elif kind == "niah":
            outputs = tuple(e["q"].question for e in entries if e["id"] == needle["id"])
        else:
            outputs = (self.needle.answer,)
        meta = {"haystack": "mmlu", "haystack_units": n, "depth": round(at / n, 4) if n else 0.0, "question_id": needle["id"],
                "order": needle["order"].strip(), "same_id": sum(1 for e in entries if e["id"] == needle["id"])}
        return Rendered(text, "", outputs, meta, needles)
