"""Variable tracking (vt): follow chains of assignments through a noise haystack.

Arguments: ``num_chains`` (1), ``num_hops`` (4), ``example_lines`` (noise lines
in the one-shot example, 10), ``example_name_length`` (3: the example's names
are shorter than the real ones, as in the reference, so the two never clash),
``depth`` (None = random positions; a fraction = the first statement's depth;
a list = swept over samples).

A chain is ``VAR AAAAA = 12345`` followed by ``VAR BBBBB = VAR AAAAA `` … for
``num_hops`` links (names: 5 random upper-case letters, unique in the sample;
value: 5 digits). Each statement is its own line among the noise lines, in
chain order. The prompt starts with a one-shot solved example (same template
and answer prefix, its answer appended, then a newline) re-randomised per
sample. The answer is every variable of the first chain, in chain order.
"""

from __future__ import annotations

import random
import re
import string
from typing import Any, Mapping

from .base import GenerationContext, Rendered, check_depths, check_positive_int, depth_fraction, with_defaults
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


def _chains(rng: random.Random, num_chains: int, num_hops: int, name_length: int, taken: set[str]):
    chains, names = [], []
    for _ in range(num_chains):
        vs = _names(rng, num_hops + 1, name_length, taken)
        value = str(rng.randint(10000, 99999))
        stmts = [f"VAR {vs[0]} = {value}"] + [f"VAR {vs[j + 1]} = VAR {vs[j]} " for j in range(num_hops)]
        chains.append((value, stmts))
        names.append(vs)
    return chains, names


def _place(lines: list[str], chains, fractions: list[list[float]]) -> tuple[list[str], list[list[int]]]:
    """Insert each chain's statements (in order) at fractional line positions."""
    n = len(lines)
    inserts: list[tuple[int, int, int, str]] = []  # (position, chain, order, statement)
    positions: list[list[int]] = []
    for c, ((_, stmts), fr) in enumerate(zip(chains, fractions)):
        pos = [min(n, int(f * (n + 1))) for f in fr]
        positions.append(pos)
        inserts += [(p, c, j, s) for j, (p, s) in enumerate(zip(pos, stmts))]
    inserts.sort()
    out: list[str] = []
    k = 0
    for i in range(n + 1):
        while k < len(inserts) and inserts[k][0] == i:
            out.append(inserts[k][3])
            k += 1
        if i < n:
            out.append(lines[i])
    return out, positions


class VariableTrackingFamily:
    name = "variable_tracking"
    defaults: Mapping[str, Any] = {
        "num_chains": 1,
        "num_hops": 4,
        "example_lines": 10,
        "example_name_length": 3,
        "depth": None,
    }

    def validate(self, args: Mapping[str, Any]) -> dict[str, Any]:
        a = with_defaults("variable_tracking", args, self.defaults)
        check_positive_int("num_chains", a["num_chains"])
        check_positive_int("num_hops", a["num_hops"])
        check_positive_int("example_lines", a["example_lines"], minimum=0)
        check_positive_int("example_name_length", a["example_name_length"], minimum=2)
        d = check_depths(a["depth"])
        a["depth"] = list(d) if d is not None else None
        return a

    def data_label(self, args: Mapping[str, Any], ctx: GenerationContext) -> str:
        return "noise"

    def draft(self, args: Mapping[str, Any], ctx: GenerationContext, rng: random.Random, index: int, **_: Any) -> "VTDraft":
        return VTDraft(args, ctx, rng, index)

    def mapreduce_strategy(self, question: str) -> tuple[Any, dict[str, Any]]:
        """``chain``: the model lists every assignment per chunk; code follows the links
        from the query value parsed from the question."""
        from ..errors import RulerUsageError
        from ..mapreduce.strategies import STRATEGIES

        q = parse_question(question)
        if q is None:
            raise RulerUsageError("--ruler-mapreduce", question.strip()[:80], "no query value found in this question; keep the variable-tracking template")
        return STRATEGIES["chain"], dict(q)


def _fractions(rng: random.Random, count: int, fixed: float | None) -> list[float]:
    if fixed is None:
        return sorted(rng.random() for _ in range(count))
    # the chain starts at the fixed depth; its later links follow in order after it
    tail = sorted(fixed + (1 - fixed) * rng.random() for _ in range(count - 1))
    return [fixed] + tail


class VTDraft:
    def __init__(self, a: Mapping[str, Any], ctx: GenerationContext, rng: random.Random, index: int):
        hops, nch = a["num_hops"], a["num_chains"]
        taken: set[str] = set()
        self.chains, self.names = _chains(rng, nch, hops, 5, taken)
        fixed = a["depth"][index % len(a["depth"])] if a["depth"] is not None else None
        self.fractions = [_fractions(rng, hops + 1, fixed) for _ in range(nch)]
        # the one-shot example: its own chain, short names, a few noise lines
        ex_hops = min(10, hops)
        ex_chains, ex_names = _chains(rng, 1, ex_hops, a["example_name_length"], taken)
        ex_lines, _ = _place([NOISE_LINE] * a["example_lines"], ex_chains, [_fractions(rng, ex_hops + 1, None)])
        ex_value = ex_chains[0][0]
        self.example = (
            TEMPLATE.format(context="\n".join(ex_lines), query=ex_value)
            + ANSWER_PREFIX.format(num_v=ex_hops + 1, query=ex_value)
            + " ".join(ex_names[0])
            + "\n"
        )
        self.example_names = ex_names[0]
        self.query = self.chains[0][0]
        self.outputs = tuple(self.names[0])
        self.prefix = ANSWER_PREFIX.format(num_v=hops + 1, query=self.query)
        self.min_units = 0
        self.max_units = None
        tok = ctx.tokenizer
        self._line = tok.count_piece("\n" + NOISE_LINE)
        empty = self.render(0)
        self._base = tok.count(empty.input + empty.answer_prefix)

    def estimate(self, n: int) -> int:
        return self._base + n * self._line

    def render(self, n: int) -> Rendered:
        lines, positions = _place([NOISE_LINE] * n, self.chains, self.fractions)
        context = "\n".join(lines)
        text = self.example + TEMPLATE.format(context=context, query=self.query)
        meta = {
            "haystack": "noise",
            "haystack_units": n,
            "chains": [list(v) for v in self.names],
            "depth": [depth_fraction(p, n) for p in positions[0]],
            "example_chain": list(self.example_names),
        }
        return Rendered(text, self.prefix, self.outputs, meta, context)
