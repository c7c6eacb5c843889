"""Run a program with ``vllm.LLM.generate`` timed: the same stopwatch for every tool a bench compares.

    python bench/vllm_timing.py OUT.json pytest ARGS...       # pytest-ruler (pytest.main)
    python bench/vllm_timing.py OUT.json lm_eval ARGS...      # lm-evaluation-harness (its CLI)
    python bench/vllm_timing.py OUT.json plain PROMPTS.json   # one LLM.generate over saved prompts

Data flow: process start (``t0``) ──► import vllm, wrap ``LLM.generate``, ``LLM.enqueue`` and
``LLMEngine.step`` (class attributes, so every later ``from vllm import LLM`` gets them) ──► run the program ──►
at exit write OUT.json:

- ``wall_s``: process start to the program's end (interpreter start-up excluded for
  all tools alike);
- ``first_request_s``: process start to the first ``generate`` or ``enqueue`` call (start-up:
  imports, sample generation, engine start);
- ``generation_span_s``: that first call to the last request finished (the
  generation phase, gaps between calls included: a plugin that makes the engine wait
  pays for it here);
- ``inside_generate_s`` (inside blocking ``generate`` calls), ``generate_calls`` (``generate`` and
  ``enqueue`` calls), ``prompts`` (finished requests);
- ``prompt_tokens``: ``len(prompt_token_ids)`` summed over the finished outputs (what
  vLLM saw, counted by the model's own tokenizer for every tool);
- ``cached_prompt_tokens``: ``num_cached_tokens`` summed (vLLM's prefix-cache hits);
- ``completion_tokens``.

The ``plain`` program is the floor a plugin is measured against: a script that sends
prompts someone already made to vLLM in one ``LLM.generate`` call, start-up included.
PROMPTS.json: ``{"model": folder, "llm": {LLM kwargs}, "requests": [{"prompt_ids": [...],
"max_tokens": N}, ...]}``.
"""

from __future__ import annotations

import atexit
import json
import sys
import time

T0 = time.monotonic()
STATS = {"generate_calls": 0, "prompts": 0, "prompt_tokens": 0, "cached_prompt_tokens": 0,
         "completion_tokens": 0, "inside_generate_s": 0.0}
SPAN: list[float] = []


def _wrap_generate() -> None:
    """Time the three ways in: ``LLM.generate`` (lm-eval, the plain script), ``LLM.enqueue``
    (pytest-ruler's stepped engine) and the step loop both run on (``LLMEngine.step``), where
    finished requests are counted once whoever sent them."""
    import vllm
    from vllm.v1.engine.llm_engine import LLMEngine

    def entered() -> None:
        if not SPAN:
            SPAN.append(time.monotonic())

    for name in ("generate", "enqueue"):
        original = getattr(vllm.LLM, name, None)
        if original is None:
            continue

        def timed(self, *args, _original=original, _name=name, **kwargs):
            entered()
            start = time.monotonic()
            try:
                return _original(self, *args, **kwargs)
            finally:
                STATS["generate_calls"] += 1
                if _name == "generate":
                    STATS["inside_generate_s"] += time.monotonic() - start

        setattr(vllm.LLM, name, timed)

    original_step = LLMEngine.step

    def step(self, *args, **kwargs):
        outputs = original_step(self, *args, **kwargs)
        done = [o for o in outputs if getattr(o, "finished", False)]
        if done:
            SPAN[1:] = [time.monotonic()]
        for o in done:
            STATS["prompts"] += 1
            STATS["prompt_tokens"] += len(o.prompt_token_ids or ())
            STATS["cached_prompt_tokens"] += int(getattr(o, "num_cached_tokens", 0) or 0)
            STATS["completion_tokens"] += sum(len(c.token_ids) for c in o.outputs)
        return outputs

    LLMEngine.step = step


def _write(path: str) -> None:
    end = time.monotonic()
    out = dict(STATS, wall_s=end - T0)
    if SPAN:
        out["first_request_s"] = SPAN[0] - T0
        out["generation_span_s"] = SPAN[-1] - SPAN[0]
    with open(path, "w") as fh:
        json.dump(out, fh, indent=1)


def _plain(prompts_file: str) -> int:
    from vllm import LLM, SamplingParams
    from vllm.inputs import TokensPrompt

    spec = json.loads(open(prompts_file).read())
    llm = LLM(model=spec["model"], **spec["llm"])
    reqs = spec["requests"]
    llm.generate([TokensPrompt(prompt_token_ids=r["prompt_ids"]) for r in reqs],
                 [SamplingParams(temperature=0.0, max_tokens=r["max_tokens"]) for r in reqs], use_tqdm=False)
    return 0


def main(argv: list[str]) -> int:
    out, program, args = argv[0], argv[1], argv[2:]
    _wrap_generate()
    atexit.register(_write, out)
    if program == "pytest":
        import pytest

        return int(pytest.main(args))
    if program == "lm_eval":
        from lm_eval.__main__ import cli_evaluate

        sys.argv = ["lm_eval", *args]
        cli_evaluate()
        return 0
    if program == "plain":
        return _plain(args[0])
    raise SystemExit(f"unknown program {program!r}: pytest, lm_eval or plain")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
