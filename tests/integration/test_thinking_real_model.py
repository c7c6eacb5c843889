"""The think budget on the real embedded model (SmolLM2-135M on CPU, hf), which does not think:
its thinking call answers without a thinking block, so it is asked RULER's own prompt again
and scores exactly as it does without the option (that answer call comes from the cache). No
small thinking model installs offline from PyPI (the qwen3 packages download at import), so
the thinking path itself is shown with the scripted stand-in (test_thinking_plugin.py)."""

from __future__ import annotations

import json

import pytest

ARGS = ["-p", "no:hypothesispytest", "--ruler-model=smollm2-135m", "--ruler-backend=hf", "--ruler-tasks=niah_single_1",
        "--ruler-lengths=512", "--ruler-samples=2"]


@pytest.mark.slow
def test_a_model_that_does_not_think_scores_the_same_with_a_think_budget(pytester):
    plain = pytester.runpytest_subprocess(*ARGS, "--ruler-report=plain.json", timeout=900)
    budget = pytester.runpytest_subprocess(*ARGS, "--ruler-think-budget=32", "--ruler-report=budget.json", timeout=900)
    p = json.loads((pytester.path / "plain.json").read_text())["items"][0]
    b = json.loads((pytester.path / "budget.json").read_text())["items"][0]
    assert p["error"] is None and b["error"] is None, budget.stdout.str()
    assert [r["prediction"] for r in b["predictions"]] == [r["prediction"] for r in p["predictions"]]
    assert b["score"] == p["score"] and b["engine_calls"] == 2  # the thinking calls; the answers came from the cache
    assert b["thinking"]["thinking_tokens"] == 0 and b["thinking"]["think_budget"] == 32
    assert sum(b["thinking"]["outcomes"].values()) == 2 and b["thinking"]["outcomes"]["thinking_truncated"] == 0
