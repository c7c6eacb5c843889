"""A custom engine: the Engine protocol in a dozen lines.

This one is a baseline, not a model: it answers with the last 7-digit number
in the prompt. Select it with --ruler-backend=echo-last-number (see conftest.py).
"""

import re

from pytest_ruler.engines import Completion, check_context
from pytest_ruler.tasks.tokenizer import load_tokenizer


class EchoLastNumberEngine:
    name = "echo-last-number"

    def __init__(self, config):
        self.tokenizer = load_tokenizer(config.tokenizer or "smollm2-135m")
        self.max_context = config.max_model_len or 131072

    def identity(self):
        return {"engine": self.name, "version": 1}

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

    def close(self):
        pass
