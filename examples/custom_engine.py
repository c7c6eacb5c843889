"""A custom engine: the engine base class in a dozen lines.

This one is a baseline, not a model: it answers with the last 7-digit number
in the prompt. Select it with --ruler-backend=echo-last-number (see conftest.py).

Its options are declared on the class (``options``): ``--ruler-engine-option
max_context=8192`` is then checked and converted at start-up, and a misspelt
key is refused with the known ones listed. Without ``options`` every
``--ruler-engine-option`` passes through unchecked. ``context_option`` names the
option that is its context: the start-up check reads it through the same resolver
as the engine (``--ruler-max-model-len`` first), so a length over it is refused
before any item runs. ``EngineBase`` gives the other members their defaults
(``preflight``, ``on_wait``, ``close``).

``identity()`` is everything that changes the engine's answers, as a JSON-able dict
(never a secret): the prediction cache keys every answer on it, together with the name
the engine is registered under and its class (``module.qualname``), and the report's
``engine`` records it. Bump ``version`` when the rule changes, or old answers come
back from the cache. ``describe(config)`` (a class or static method) returns the same
dict without building the engine, so a rerun served entirely from the cache never
loads it; the default, None, builds the engine and asks ``identity()``.
"""

import re

from pytest_ruler.engines import Completion, EngineBase, EngineOption, check_context
from pytest_ruler.tasks.tokenizer import load_tokenizer


class EchoLastNumberEngine(EngineBase):
    name = "echo-last-number"
    options = (EngineOption("max_context", "int", 131072, "the context it claims (--ruler-max-model-len wins)", minimum=1),)
    context_option = "max_context"

    def __init__(self, config):
        self.tokenizer = load_tokenizer(config.tokenizer or "smollm2-135m")
        self.max_context = self.context_length(config).tokens

    @staticmethod
    def describe(config):
        return {"rule": "last 7-digit number", "version": 1}

    def identity(self):
        return {"rule": "last 7-digit number", "version": 1}

    def generate(self, requests, on_result=None):
        run, refused = check_context(requests, self.max_context)
        out = []
        for i, r in enumerate(requests):
            numbers = re.findall(r"\b\d{7}\b", r.prompt)
            c = refused.get(i) or Completion(numbers[-1] if numbers else "", r.prompt_tokens, 1, "stop")
            out.append(c)
            if on_result:
                on_result(i, c)
        return out
