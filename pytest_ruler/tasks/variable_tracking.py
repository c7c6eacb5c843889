"""Variable tracking (vt): follow chains of assignments through a noise haystack.

Arguments: ``num_chains`` (1), ``num_hops`` (4), ``example_tokens`` (500: the
token budget the one-shot example's prompt is sized to, as the reference
sizes it), ``example_name_length`` (3: the example's names are shorter than
the real ones, as in the reference, so the two never clash), ``depth`` (None =
random positions; a fraction = the first statement's depth; a list = swept
over samples).

A chain is ``VAR AAAAA = 12345`` followed by ``VAR BBBBB = VAR AAAAA `` … for
``num_hops`` links (names: 5 random upper-case letters, unique in the sample;
value: 5 digits in [10000, 99998], the reference's range). Each statement is
its own line among the noise lines, in chain order, before a distinct
existing line (never two in one slot, never after the last line; each chain
is placed among the lines as they are after the chains before it). The answer
is every variable of the first chain, in chain order.

The one-shot example, as the reference builds it: a solved instance of at most
``min(num_hops, 10)`` hops whose prompt (template + answer prefix, before its
answer) fills ``example_tokens`` tokens, then one space and its answer, then a
blank line before the task::

    ... they are:  EMD QAK XYZ ABC DEF\n\nMemorize and track ...

(two spaces: the answer prefix ends in one). Its layout — how many noise lines
and where its statements sit — is drawn once per run, i.e. per (task, length,
seed) here, where the reference draws one per generator run; its names and
value are redrawn per sample, as the reference renames them. Unlike the
reference's renaming by string replacement, the new names are distinct and
never ``VAR``, so the example is always a well-formed chain.
"""

from __future__ import annotations

import random
import re
import string
from typing import Any, Mapping

from ..errors import RulerUsageError
from .base import (
    GenerationContext, Rendered, check_depths, check_positive_int, depth_fraction, distinct_slots, insert_before,
    run_memo, sample_rng, with_defaults,
)
from .haystack import NOISE_LINE

__all__ = ["ANSWER_PREFIX", "TEMPLATE", "VariableTrackingFamily", "parse_question"]

TEMPLATE = (
    "Memorize and track the chain(s) of variable assignment hidden in the following text.\n\n"
    "{context}\nQuestion: Find all variables that are assigned the value {query} in the text above."
)
ANSWER_PREFIX = (
    " Answer: According to the chain(s) of variable assignment in the text above, "
    "{num_v} variables are assigned the value {query}, they are: "
)
EXAMPLE_MAX_HOPS = 10
VALUE_RANGE = (10000, 99998)  # the reference's numpy randint(10000, 99999): 99999 excluded


_QUESTION = re.compile(r"Find all variables that are assigned the value (\S+?) in the text above\.")


def parse_question(question: str) -> dict[str, str] | None:
    """``{"query": value}``: the value a vt question asks about, read from its text (None if none)."""
    found = _QUESTION.findall(question)
    return {"query": found[-1]} if found else None


def _names(rng: random.Random, count: int, length: int, taken: set[str]) -> list[str]:
    out: list[str] = []
    while len(out) < count:
        name = "".join(rng.choices(string.ascii_uppercase, k=length))
        if name not in taken:
            taken.add(name)
            out.append(name)
    return out


def _statements(names: list[str], value: str) -> list[str]:
    return [f"VAR {names[0]} = {value}"] + [f"VAR {names[j + 1]} = VAR {names[j]} " for j in range(len(names) - 1)]


def _value(rng: random.Random) -> str:
    return str(rng.randint(*VALUE_RANGE))


def _place(n: int, chains: list[list[str]], rng: random.Random, fixed: float | None) -> tuple[list[str], list[int]]:
    """n noise lines with each chain's statements inserted, chain by chain; returns
    the lines and the first chain's slots (line indices among the n noise lines)."""
    lines = [NOISE_LINE] * n
    first_slots: list[int] = []
    for c, stmts in enumerate(chains):
        m = len(lines)
        slots = distinct_slots(rng, m, len(stmts), None if fixed is None else int(fixed * m))
        if c == 0:
            first_slots = slots
        lines = insert_before(lines, stmts, slots)
    return lines, first_slots


def _example_prompt(lines: int, slots: list[int], names: list[str], value: str) -> str:
    """The example's prompt before its answer: template + answer prefix."""
    context = "\n".join(insert_before([NOISE_LINE] * lines, _statements(names, value), slots))
    return TEMPLATE.format(context=context, query=value) + ANSWER_PREFIX.format(num_v=len(names), query=value)


def _example_layout(ctx: GenerationContext, task: str, length: int, seed: int, hops: int, name_length: int, budget: int) -> tuple[int, tuple[int, ...]]:
    """(noise lines, statement slots) of the run's example: the most lines whose
    prompt, with the layout's own names and value, fits ``budget`` tokens."""
    rng = sample_rng(task, length, seed, 0, salt="vt-example")
    names = _names(rng, hops + 1, name_length, {"VAR"})
    value = _value(rng)
    layout_seed = rng.getrandbits(64)
    k = hops + 1

    def at(n: int) -> tuple[list[int], int]:
        slots = distinct_slots(random.Random(f"{layout_seed}|{n}"), n, k)
        return slots, ctx.tokenizer.count(_example_prompt(n, slots, names, value))

    line = ctx.tokenizer.count_piece("\n" + NOISE_LINE)
    n = max(k, k + (budget - at(k)[1]) // max(1, line))
    while n > k and at(n)[1] > budget:
        n -= 1
    while at(n + 1)[1] <= budget:
        n += 1
    return n, tuple(at(n)[0])


class VariableTrackingFamily:
    name = "variable_tracking"
    defaults: Mapping[str, Any] = {
        "num_chains": 1,
        "num_hops": 4,
        "example_tokens": 500,
        "example_name_length": 3,
        "depth": None,
    }

    def validate(self, args: Mapping[str, Any]) -> dict[str, Any]:
        a = with_defaults("variable_tracking", args, self.defaults)
        check_positive_int("num_chains", a["num_chains"])
        check_positive_int("num_hops", a["num_hops"])
        check_positive_int("example_tokens", a["example_tokens"])
        check_positive_int("example_name_length", a["example_name_length"], minimum=2)
        d = check_depths(a["depth"])
        a["depth"] = list(d) if d is not None else None
        return a

    def data_needs(self, args: Mapping[str, Any]) -> tuple[str, ...]:
        return ()

    def data_label(self, args: Mapping[str, Any], ctx: GenerationContext) -> str:
        return "noise"

    def draft(self, args: Mapping[str, Any], ctx: GenerationContext, rng: random.Random, index: int, *,
              task: str, length: int, seed: int, **_: Any) -> "VTDraft":
        ex_hops = min(EXAMPLE_MAX_HOPS, args["num_hops"])
        layout = run_memo(
            ctx, ("vt-example", task, length, seed, ex_hops, args["example_name_length"], args["example_tokens"]),
            lambda: _example_layout(ctx, task, length, seed, ex_hops, args["example_name_length"], args["example_tokens"]),
        )
        return VTDraft(args, ctx, rng, index, layout)

    def mapreduce_strategy(self, question: str) -> tuple[str, dict[str, Any]]:
        """``chain``: the model lists every assignment per chunk; code follows the links
        from the query value parsed from the question."""
        q = parse_question(question)
        if q is None:
            raise RulerUsageError("--ruler-mapreduce", question.strip()[:80], "no query value found in this question; keep the variable-tracking template")
        return "chain", dict(q)


class VTDraft:
    def __init__(self, a: Mapping[str, Any], ctx: GenerationContext, rng: random.Random, index: int, layout: tuple[int, tuple[int, ...]]):
        hops, nch = a["num_hops"], a["num_chains"]
        taken: set[str] = {"VAR"}
        self.names = [_names(rng, hops + 1, 5, taken) for _ in range(nch)]
        self.chains = [_statements(names, _value(rng)) for names in self.names]
        self.fixed = a["depth"][index % len(a["depth"])] if a["depth"] is not None else None
        # the example: the run's layout, this sample's names and value
        ex_lines, ex_slots = layout
        ex_names = _names(rng, len(ex_slots), a["example_name_length"], taken)
        ex_value = _value(rng)
        self._place_seed = rng.getrandbits(64)
        self.example = _example_prompt(ex_lines, list(ex_slots), ex_names, ex_value) + " " + " ".join(ex_names) + "\n\n"
        self.example_names = ex_names
        self.example_lines = ex_lines
        self.query = self.chains[0][0].rsplit(" = ", 1)[1]
        self.outputs = tuple(self.names[0])
        self.prefix = ANSWER_PREFIX.format(num_v=hops + 1, query=self.query)
        self.min_units = hops + 1  # the first chain's statements each need a line of their own
        self.max_units = None
        tok = ctx.tokenizer
        self._line = tok.count_piece("\n" + NOISE_LINE)
        empty = self.render(0)
        self._base = tok.count(empty.input + empty.answer_prefix)

    def estimate(self, n: int) -> int:
        return self._base + n * self._line

    def render(self, n: int) -> Rendered:
        lines, slots = _place(n, self.chains, random.Random(f"{self._place_seed}|{n}"), self.fixed)
        context = "\n".join(lines)
        text = self.example + TEMPLATE.format(context=context, query=self.query)
        meta = {
            "haystack": "noise",
            "haystack_units": n,
            "chains": [list(v) for v in self.names],
            "depth": [depth_fraction(p, n) for p in slots],
            "example_chain": list(self.example_names),
            "example_lines": self.example_lines,
        }
        return Rendered(text, self.prefix, self.outputs, meta, context)
