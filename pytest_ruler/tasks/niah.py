"""Needle in a haystack (niah): single, multi-key, multi-value, multi-query.

Arguments (all settable):

- ``type_haystack``: ``noise`` | ``essay`` | ``needle``
- ``type_needle_k`` / ``type_needle_v``: ``words`` | ``numbers`` | ``uuids``
- ``num_needle_k`` (K), ``num_needle_v`` (V), ``num_needle_q`` (Q); K becomes max(K, Q)
- ``depth``: None (random: essay depths from 40 evenly spaced ones without
  replacement; for noise/needle haystacks distinct existing lines, each needle
  before its own line, never two in one slot and never after the last line, as
  the reference places them),
  a fraction in [0, 1] for every needle, or a list swept over the samples
  (sample i uses ``depth[i % len(depth)]``).

Kept ours for the essay haystack: the reference cuts the essay at a word
count, so its context (and the sentence a needle follows) can end mid-sentence;
here the context is whole sentences, so a needle always sits between two sentences
and the fill stops at a sentence boundary, within a sentence of the budget.

What a sample holds: K keys, V values each, K·V needle sentences in random
order at their depths; Q of the keys are queried and the answers are all their
values, in query order. Distractor needles (``needle`` haystack) never reuse a
real key or an answer value, so the queried needle appears exactly once.
Metadata: every needle's depth (fraction of the context's units), the queried
needles' depths, the haystack and its size.
"""

from __future__ import annotations

import random
import re
from typing import Any, Mapping

from ..errors import RulerUsageError
from .base import (
    GenerationContext, PrefixCounter, Rendered, check_depths, check_positive_int, depth_fraction, distinct_slots,
    insert_before, with_defaults,
)
from .haystack import NOISE_LINE
from .words import NEEDLE_KINDS, WONDERWORDS_VERSION, needle_maker, random_needle

__all__ = ["ANSWER_PREFIX", "NEEDLE", "TEMPLATE", "NiahFamily", "parse_question", "render_template"]

TEMPLATE = (
    "Some special magic {type_needle_v} are hidden within the following text. Make sure to memorize it. "
    "I will quiz you about the {type_needle_v} afterwards.\n{context}\n"
    "What are all the special magic {type_needle_v} for {query} mentioned in the provided text?"
)
ANSWER_PREFIX = " The special magic {type_needle_v} for {query} mentioned in the provided text are"
NEEDLE = "One of the special magic {type_needle_v} for {key} is: {value}."

# The paper's 40 evenly spaced essay depths, in percent.
ESSAY_DEPTHS = tuple(round(i * 100 / 39) for i in range(40))
HAYSTACKS = ("noise", "essay", "needle")


def singularize(text: str) -> str:
    """The template's singular form for Q×V == 1: plain replacements, in this order."""
    for old, new in (("Some", "A"), ("are all", "is"), ("are", "is"), ("answers", "answer")):
        text = text.replace(old, new)
    return text


def render_template(type_needle_v: str, singular: bool) -> tuple[str, str, str]:
    """(template, answer prefix, value word) with the singular rule applied when asked."""
    template, prefix = TEMPLATE, ANSWER_PREFIX
    if singular:
        template, prefix = singularize(template), singularize(prefix)
        type_needle_v = type_needle_v[:-1]
    return template, prefix, type_needle_v


def join_queries(keys: list[str]) -> str:
    return keys[0] if len(keys) == 1 else ", ".join(keys[:-1]) + ", and " + keys[-1]


# the question of TEMPLATE (plural or singularized), as a reader of the prompt sees it
_QUESTION = re.compile(
    r"What (?P<verb>are all|is) the special magic (?P<kind>\w+?)s? for (?P<query>.+?) mentioned in the provided text\?"
)


def parse_question(question: str) -> dict[str, Any] | None:
    """What a niah question asks, read from its text (the inverse of ``join_queries``).

    ``{"kind": "numbers", "keys": [...], "plural": bool}``: the needle kind (plural
    form), the queried keys in order, and whether more than one value is asked for
    (the plural question). None when the text is not a niah question.
    """
    m = None
    for m in _QUESTION.finditer(question):
        pass  # the last question in the text is the one asked
    if m is None:
        return None
    query = m.group("query")
    keys = [k.strip() for k in re.split(r",? and |, ", query) if k.strip()] if ", " in query or " and " in query else [query.strip()]
    return {"kind": m.group("kind") + "s", "keys": keys, "plural": m.group("verb") == "are all"}


class NiahFamily:
    name = "niah"
    defaults: Mapping[str, Any] = {
        "type_haystack": "essay",
        "type_needle_k": "words",
        "type_needle_v": "numbers",
        "num_needle_k": 1,
        "num_needle_v": 1,
        "num_needle_q": 1,
        "depth": None,
    }

    def validate(self, args: Mapping[str, Any]) -> dict[str, Any]:
        a = with_defaults("niah", args, self.defaults)
        if a["type_haystack"] not in HAYSTACKS:
            raise RulerUsageError("type_haystack", a["type_haystack"], f"choose one of {', '.join(HAYSTACKS)}")
        for k in ("type_needle_k", "type_needle_v"):
            if a[k] not in NEEDLE_KINDS:
                raise RulerUsageError(k, a[k], f"choose one of {', '.join(NEEDLE_KINDS)}")
        for k in ("num_needle_k", "num_needle_v", "num_needle_q"):
            check_positive_int(k, a[k])
        a["num_needle_k"] = max(a["num_needle_k"], a["num_needle_q"])
        if a["type_haystack"] == "essay" and a["depth"] is None and a["num_needle_k"] * a["num_needle_v"] > len(ESSAY_DEPTHS):
            raise RulerUsageError("num_needle_k×num_needle_v", a["num_needle_k"] * a["num_needle_v"], f"random essay depths are drawn without replacement from {len(ESSAY_DEPTHS)}; use at most that many needles or set depth")
        d = check_depths(a["depth"])
        a["depth"] = list(d) if d is not None else None
        return a

    def data_needs(self, args: Mapping[str, Any]) -> tuple[str, ...]:
        return ("essays",) if args["type_haystack"] == "essay" else ()  # the kind has an offline default

    def data_label(self, args: Mapping[str, Any], ctx: GenerationContext) -> str:
        if args["type_haystack"] == "essay":
            return ctx.read("essays").label
        return args["type_haystack"]

    def draft(self, args: Mapping[str, Any], ctx: GenerationContext, rng: random.Random, index: int, **_: Any) -> "NiahDraft":
        return NiahDraft(args, ctx, rng, index)

    def mapreduce_strategy(self, question: str) -> tuple[str, dict[str, Any]]:
        """Map-reduce strategy for a niah question (parsed from its text): ``retrieve`` when
        one value is asked for (the model reduces), ``union`` when several are; the hints
        are the needle kind and the queried keys."""
        q = parse_question(question)
        if q is None:
            raise RulerUsageError("--ruler-mapreduce", question.strip()[:80], "not a niah question; keep the niah template")
        return "union" if q["plural"] else "retrieve", {"kind": q["kind"], "keys": list(q["keys"])}


class NiahDraft:
    def __init__(self, a: Mapping[str, Any], ctx: GenerationContext, rng: random.Random, index: int):
        self.a = a
        tok = ctx.tokenizer
        K, V, Q = a["num_needle_k"], a["num_needle_v"], a["num_needle_q"]
        keys: list[str] = []
        while len(keys) < K:
            key = random_needle(rng, a["type_needle_k"])
            if key not in keys:
                keys.append(key)
        values: list[list[str]] = []
        seen_values: set[str] = set()
        needles: list[tuple[str, str, str]] = []  # (sentence, key, value)
        for key in keys:
            vals: list[str] = []
            while len(vals) < V:
                v = random_needle(rng, a["type_needle_v"])
                if v not in seen_values:
                    seen_values.add(v)
                    vals.append(v)
                    needles.append((NEEDLE.format(type_needle_v=a["type_needle_v"], key=key, value=v), key, v))
            values.append(vals)
        rng.shuffle(needles)
        queried = rng.sample(range(K), Q)
        self.query_keys = [keys[i] for i in queried]
        self.outputs = tuple(v for i in queried for v in values[i])
        self.needles = needles
        self.template, self.prefix, self.value_word = render_template(a["type_needle_v"], Q * V == 1)
        self.query = join_queries(self.query_keys)
        n_needles = len(needles)
        if a["depth"] is not None:
            d = a["depth"][index % len(a["depth"])]
            self.fractions = [d] * n_needles
        elif a["type_haystack"] == "essay":
            self.fractions = [p / 100 for p in rng.sample(ESSAY_DEPTHS, n_needles)]
        else:
            self.fractions = None  # distinct lines, drawn per haystack size in render()
        self._place_seed = rng.getrandbits(64)
        self.haystack = a["type_haystack"]
        # random line placement needs a line per needle
        self.min_units = n_needles if self.fractions is None else 0
        self.max_units = None
        if self.haystack == "essay":
            corpus = ctx.read("essays")
            self.corpus = corpus
            self.counter = PrefixCounter(tok, lambda i: " " + corpus.sentence(i), memo=True)
        elif self.haystack == "noise":
            unit = tok.count_piece("\n" + NOISE_LINE)
            self.counter = None
            self._noise_tokens = unit
        else:
            self._hay_rng = random.Random(rng.getrandbits(64))
            self._distractors: list[str] = []
            self._distractor_tokens: list[int] = []
            self._avoid_keys = set(keys)
            self._avoid_values = seen_values
            self._tok = tok
            # a distractor line is fixed text plus a key and a value: count the
            # fixed text once and estimate only the random parts
            head = NEEDLE.split("{key}")[0].format(type_needle_v=a["type_needle_v"])
            self._fixed_tokens = tok.count_piece("\n" + head.rstrip())
            self._fixed_chars = len(head) - 1  # the line minus its head, with the space before the key
            self._make_key = needle_maker(self._hay_rng, a["type_needle_k"])
            self._make_value = needle_maker(self._hay_rng, a["type_needle_v"])
            self.counter = PrefixCounter(tok, count_unit=self._distractor_count)
        empty = self.render(0)
        self._base = tok.count(empty.input + empty.answer_prefix)

    def _distractor(self, i: int) -> str:
        make_key, make_value, plural = self._make_key, self._make_value, self.a["type_needle_v"]
        estimate, cut, fixed = self._tok.estimate_count, self._fixed_chars, self._fixed_tokens
        lines, counts = self._distractors, self._distractor_tokens
        while len(lines) <= i:
            key = make_key()
            value = make_value()
            if key in self._avoid_keys or value in self._avoid_values:
                continue
            line = NEEDLE.format(type_needle_v=plural, key=key, value=value)
            lines.append(line)
            counts.append(fixed + estimate(line[cut:]))
        return lines[i]

    def _distractor_count(self, i: int) -> int:
        self._distractor(i)
        return self._distractor_tokens[i]

    def estimate(self, n: int) -> int:
        if self.counter is None:
            return self._base + n * self._noise_tokens
        return self._base + self.counter.total(n)

    def render(self, n: int) -> Rendered:
        sentences = [s for s, _, _ in self.needles]
        if self.haystack == "essay":
            positions = [int(n * f) for f in self.fractions]
            units = [self.corpus.sentence(i) for i in range(n)]
            context = " ".join(insert_before(units, sentences, positions))
        else:
            if self.fractions is None:
                positions = distinct_slots(random.Random(f"{self._place_seed}|{n}"), n, len(sentences))
            else:
                positions = [round(n * f) for f in self.fractions]
            if self.haystack == "noise":
                units = [NOISE_LINE] * n
            else:
                if n:
                    self._distractor(n - 1)
                units = self._distractors[:n]
            context = "\n".join(insert_before(units, sentences, positions))
        depths = [depth_fraction(p, n) for p in positions]
        query_depths = [depths[j] for j, (_, k, _) in enumerate(self.needles) if k in self.query_keys]
        text = self.template.format(type_needle_v=self.value_word, context=context, query=self.query)
        prefix = self.prefix.format(type_needle_v=self.value_word, query=self.query)
        meta = {
            "haystack": self.haystack,
            "haystack_units": n,
            "needles": [{"key": k, "value": v, "depth": d} for (_, k, v), d in zip(self.needles, depths)],
            "depth": query_depths[0] if len(set(query_depths)) == 1 else query_depths,
            "query_keys": list(self.query_keys),
            "wonderwords": WONDERWORDS_VERSION,
        }
        return Rendered(text, prefix, self.outputs, meta, context)
