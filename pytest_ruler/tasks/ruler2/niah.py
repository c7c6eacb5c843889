"""RULERv2's synthetic basic tasks (``mk_niah_basic``, ``mv_niah_basic``): the family ``ruler2_niah``.

The haystack is made of distractor needles, one per line: "One of the special magic
numbers for {key} is: {value}." with keys adjective-noun words (wonderwords' lists)
and values 10-digit numbers. One key is real; its V needles (V = 1 for
``mk_niah_basic``, 4 for ``mv_niah_basic``) are hidden at distinct lines. With V > 1
the distractors come in groups of V lines sharing a key (then shuffled), so every
key in the haystack has V values and only the queried one is right. The question is
the reference's template, with no separate answer prefix (the instruct prompt ends
the sentence for the model): singular for V = 1, plural otherwise.

Arguments: ``num_needle_v`` (V, default 1), ``num_digits_v`` (default 10).

Ours, against the reference (``nemo_skills/dataset/ruler2/prepare_niah.py``):

- deterministic by construction: every draw comes from the sample's own RNG
  (``base.sample_rng``), never the process's global ``random``;
- distractors never reuse the real key or a real value (the reference may, by chance);
- the length budget counts the chat template and ``tokens_to_generate``, like every
  task here (the reference fits the raw question alone to the length).

Metadata: the needles' depths (fraction of the haystack lines before them), the key.
"""

from __future__ import annotations

import random
from typing import Any, Mapping

from ...errors import RulerUsageError
from ..base import GenerationContext, PrefixCounter, Rendered, check_positive_int, depth_fraction, distinct_slots, insert_before, with_defaults
from ..words import WONDERWORDS_VERSION, needle_maker

__all__ = ["NEEDLE", "TEMPLATE_MULTIPLE", "TEMPLATE_SINGLE", "Ruler2NiahFamily"]

TEMPLATE_SINGLE = (
    "A special magic {type_needle_v} is hidden within the following text. Make sure to memorize it. "
    "I will quiz you about the {type_needle_v} afterwards.\n{context}\n"
    "What is the special magic {type_needle_v} for {query} mentioned in the provided text? "
    "The special magic {type_needle_v} for {query} mentioned in the provided text is"
)
TEMPLATE_MULTIPLE = (
    "Some special magic {type_needle_v} are hidden within the following text. Make sure to memorize them. "
    "I will quiz you about the {type_needle_v} afterwards.\n{context}\n"
    "What are all the special magic {type_needle_v} for {query} mentioned in the provided text? "
    "The special magic {type_needle_v} for {query} mentioned in the provided text are"
)
NEEDLE = "One of the special magic numbers for {key} is: {value}."


class Ruler2NiahFamily:
    name = "ruler2_niah"
    defaults: Mapping[str, Any] = {"num_needle_v": 1, "num_digits_v": 10}

    def validate(self, args: Mapping[str, Any]) -> dict[str, Any]:
        a = with_defaults("ruler2_niah", args, self.defaults)
        check_positive_int("num_needle_v", a["num_needle_v"])
        check_positive_int("num_digits_v", a["num_digits_v"])
        if a["num_digits_v"] > 30:
            raise RulerUsageError("num_digits_v", a["num_digits_v"], "use at most 30 digits")
        return a

    def data_needs(self, args: Mapping[str, Any]) -> tuple[str, ...]:
        return ()

    def data_label(self, args: Mapping[str, Any], ctx: GenerationContext) -> str:
        return "needle"

    def draft(self, args: Mapping[str, Any], ctx: GenerationContext, rng: random.Random, index: int, **_: Any) -> "_Draft":
        return _Draft(args, ctx, rng)


class _Draft:
    def __init__(self, a: Mapping[str, Any], ctx: GenerationContext, rng: random.Random):
        V, digits = a["num_needle_v"], a["num_digits_v"]
        low, high = 10 ** (digits - 1), 10 ** digits - 1
        self.V = V
        make_key = needle_maker(rng, "words")
        self.key = make_key()
        values: list[str] = []
        while len(values) < V:
            v = str(rng.randint(low, high))
            if v not in values:
                values.append(v)
        self.outputs = tuple(values)
        self.needles = [NEEDLE.format(key=self.key, value=v) for v in values]
        rng.shuffle(self.needles)
        self.template = TEMPLATE_SINGLE if V == 1 else TEMPLATE_MULTIPLE
        self.value_word = "number" if V == 1 else "numbers"
        self._seed = rng.getrandbits(64)
        hay = random.Random(rng.getrandbits(64))
        self._make_key = needle_maker(hay, "words")
        self._value = lambda: str(hay.randint(low, high))
        self._lines: list[str] = []
        self._group_key = ""
        self._tok = ctx.tokenizer
        head = NEEDLE.split("{key}")[0]
        self._fixed = ctx.tokenizer.count_piece("\n" + head.rstrip())
        self._cut = len(head) - 1
        self.counter = PrefixCounter(ctx.tokenizer, count_unit=self._count)
        self._counts: list[int] = []
        self.min_units = V
        self.max_units = None
        empty = self.render(0)
        self._base = ctx.tokenizer.count(empty.input)

    def _line(self, i: int) -> str:
        """Distractor line i of the stream: groups of V lines share a key, never the real one."""
        while len(self._lines) <= i:
            if len(self._lines) % self.V == 0:
                key = self._make_key()
                while key == self.key:
                    key = self._make_key()
                self._group_key = key
            value = self._value()
            while value in self.outputs:
                value = self._value()
            line = NEEDLE.format(key=self._group_key, value=value)
            self._lines.append(line)
            self._counts.append(self._fixed + self._tok.estimate_count(line[self._cut:]))
        return self._lines[i]

    def _count(self, i: int) -> int:
        self._line(i)
        return self._counts[i]

    def estimate(self, n: int) -> int:
        return self._base + self.counter.total(n)

    def render(self, n: int) -> Rendered:
        if n:
            self._line(n - 1)
        units = list(self._lines[:n])
        place = random.Random(f"{self._seed}|{n}")
        if self.V > 1:
            place.shuffle(units)  # the groups' lines spread over the haystack, as the reference shuffles them
        slots = distinct_slots(place, n, len(self.needles))
        context = "\n".join(insert_before(units, self.needles, slots))
        text = self.template.format(type_needle_v=self.value_word, context=context, query=self.key)
        meta = {
            "haystack": "needle",
            "haystack_units": n,
            "needles": [{"key": self.key, "value": s.rsplit(" ", 1)[1][:-1], "depth": depth_fraction(p, n)}
                        for s, p in zip(self.needles, slots)],
            "query_keys": [self.key],
            "wonderwords": WONDERWORDS_VERSION,
        }
        return Rendered(text, "", self.outputs, meta, context)
