"""A custom task family for tests: one passphrase hidden among plain filler sentences.

It meets ``pytest_ruler.tasks.Family`` without subclassing anything. The needle and
the question use niah's sentence shapes, so the scripted test engine (``oracle``)
reads the answer out of the prompt, and map-reduce can answer it with the
``retrieve`` strategy (named, not imported: ``mapreduce_strategy``).
"""

from __future__ import annotations

from pytest_ruler.errors import RulerUsageError
from pytest_ruler.tasks.base import Rendered

FILLER = "The river bends twice before it reaches the old mill."
KEY = "the cellar door"


class PassphraseFamily:
    name = "passphrase"

    def validate(self, args):
        unknown = sorted(set(args) - {"digits"})
        if unknown:
            raise RulerUsageError(f"passphrase argument {unknown[0]}", args[unknown[0]], "passphrase takes digits")
        digits = args.get("digits", 7)
        if isinstance(digits, bool) or not isinstance(digits, int) or not 4 <= digits <= 9:
            raise RulerUsageError("digits", digits, "must be an integer in [4, 9]")
        return {"digits": digits}

    def data_needs(self, args):
        return ()

    def data_label(self, args, ctx):
        return "filler"

    def draft(self, args, ctx, rng, index, *, task, length, seed, tokens_to_generate):
        value = str(rng.randrange(10 ** (args["digits"] - 1), 10 ** args["digits"]))
        return PassphraseDraft(value, ctx)

    def mapreduce_strategy(self, question):
        return "retrieve", {"kind": "numbers", "keys": [KEY]}


class PassphraseDraft:
    min_units = 1
    max_units = None

    def __init__(self, value, ctx):
        self.value, self.ctx = value, ctx

    def render(self, n):
        lines = [FILLER] * n
        lines.insert(n // 2, f"One of the special magic numbers for {KEY} is: {self.value}.")
        context = "\n".join(lines)
        text = (f"A special magic number is hidden in the text below.\n{context}\n"
                f"What is the special magic number for {KEY} mentioned in the provided text?")
        return Rendered(text, f" The special magic number for {KEY} mentioned in the provided text is", (self.value,),
                        {"needle_index": n // 2}, context=context)

    def estimate(self, n):
        r = self.render(n)
        return self.ctx.tokenizer.count(r.input + r.answer_prefix)
