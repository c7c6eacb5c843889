"""The issue's end-to-end check on the real embedded model: a passkey item
passes, and the same command again is served from the cache."""

from __future__ import annotations

import json

import pytest

ARGS = ["-p", "no:hypothesispytest", "--ruler-model=smollm2-135m", "--ruler-backend=hf", "--ruler-tasks=niah_single_1", "--ruler-lengths=1k", "--ruler-samples=4"]


@pytest.mark.slow
def test_real_model_item_passes_then_reruns_from_cache(pytester):
    first = pytester.runpytest_subprocess(*ARGS, "--ruler-report=r1.json", timeout=900)
    first.assert_outcomes(passed=1)
    second = pytester.runpytest_subprocess(*ARGS, "--ruler-report=r2.json", timeout=900)
    second.assert_outcomes(passed=1)
    r1 = json.loads((pytester.path / "r1.json").read_text())
    r2 = json.loads((pytester.path / "r2.json").read_text())
    i1, i2 = r1["items"][0], r2["items"][0]
    assert r1["backend"] == "hf" and i1["engine_calls"] == 4 and i1["score"] >= 75.0
    assert i2["cached"] == 4 and i2["engine_calls"] == 0
    assert i1["score"] == i2["score"] and r1["summary"] == r2["summary"]
    assert "4 of 4 predictions from the cache" in second.stdout.str()


@pytest.mark.slow
def test_real_model_map_reduce_passes_where_its_window_fails(pytester):
    """The embedded model held to a 2K window: native 4K prompts are refused as
    over-length, while map-reduce over 1K chunks (each call verified to fit 2K)
    finds the passkey. The 16K/32K runs of the issue take minutes; see the README."""
    args = ["-p", "no:hypothesispytest", "--ruler-model=smollm2-135m", "--ruler-backend=hf", "--ruler-tasks=niah_single_1", "--ruler-lengths=4k",
            "--ruler-samples=2", "--ruler-max-model-len=2048", "--ruler-mapreduce", "--ruler-mapreduce-chunk=1k", "--ruler-report=r.json"]
    result = pytester.runpytest_subprocess(*args, timeout=900)
    result.assert_outcomes(passed=1, failed=1)
    data = json.loads((pytester.path / "r.json").read_text())
    native = next(i for i in data["items"] if i["mode"] == "native")
    twin = next(i for i in data["items"] if i["mode"] == "mapreduce")
    assert native["over_length"] == 2 and not native["passed"]
    assert twin["passed"] and twin["score"] == 100.0
    assert twin["mapreduce"]["window"] == 2048 and min(twin["mapreduce"]["chunks"]) >= 4
    assert all(c["prompt_tokens"] + 128 <= 2048 for c in twin["calls"] if c["stage"] == "map")
    assert data["mapreduce_vs_native"][0]["rescued"]
    assert "effective length: native <4K | map-reduce ≥4K" in result.stdout.str()
