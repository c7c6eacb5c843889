"""The vllm engine: pure mappings, errors, and the batch logic against a fake ``vllm``.

Everything here runs without vLLM or a GPU except ``test_real_niah_single_1``,
which is marked ``gpu`` and skips (with the reason) unless vllm is installed,
a CUDA GPU is visible and ``RULER_VLLM_TEST_MODEL`` names a local model.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import os
import subprocess
import sys
import types

import pytest

from pytest_ruler.engines import EngineConfig, GenerationRequest
from pytest_ruler.engines import vllm as vmod
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
    kw = vmod.llm_kwargs(cfg(max_model_len=32768, options={"max_model_len": 8192}))
    assert kw["max_model_len"] == 8192


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
    ("options", "parameter"),
    [
        ({"tensor_parallel_size": 0}, "vllm option tensor_parallel_size"),
        ({"tensor_parallel_size": "two"}, "vllm option tensor_parallel_size"),
        ({"tensor_parallel_size": 1.5}, "vllm option tensor_parallel_size"),
        ({"gpu_memory_utilization": 1.5}, "vllm option gpu_memory_utilization"),
        ({"gpu_memory_utilization": 0}, "vllm option gpu_memory_utilization"),
        ({"enforce_eager": "maybe"}, "vllm option enforce_eager"),
        ({"rope_scaling": "{not json"}, "vllm option rope_scaling"),
        ({"rope_scaling": "[1, 2]"}, "vllm option rope_scaling"),
        ({"tensor_paralel_size": 2}, "vllm option tensor_paralel_size"),
        ({"engine_args": {"dtype": "half"}}, "vllm option engine_args"),
    ],
)
def test_bad_options_are_usage_errors_naming_the_option(options, parameter):
    with pytest.raises(RulerUsageError) as info:
        vmod.llm_kwargs(cfg(options=options))
    assert info.value.parameter == parameter


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
    assert vmod._cuda_device_count() == 0
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "-1")
    assert vmod._cuda_device_count() == 0


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
            outs.append(types.SimpleNamespace(prompt_token_ids=list(ids), outputs=[choice]))
        return outs


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
    monkeypatch.setattr(vmod, "_cuda_device_count", lambda: 1)
    loaded = []
    monkeypatch.setattr(vmod, "load_tokenizer", lambda name, trust_remote_code=False: loaded.append(name) or StubTokenizer())
    monkeypatch.delenv("VLLM_ALLOW_LONG_MAX_MODEL_LEN", raising=False)
    monkeypatch.delenv("VLLM_BATCH_INVARIANT", raising=False)
    FakeLLM.instances, FakeLLM.fail, FakeLLM.reject_len, FakeLLM.finish = [], None, None, "stop"
    module.loaded_tokenizers = loaded
    return module


def test_no_gpu_is_a_clear_usage_error(fake_vllm, monkeypatch):
    monkeypatch.setattr(vmod, "_cuda_device_count", lambda: 0)
    with pytest.raises(RulerUsageError) as info:
        vmod.VLLMEngine(cfg())
    assert "no CUDA GPU" in info.value.fix
    assert "--ruler-backend=hf" in info.value.fix and "--ruler-backend=openai" in info.value.fix
    assert FakeLLM.instances == []


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


def test_the_budget_tokenizer_is_the_one_vllm_uses(fake_vllm, tmp_path):
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    vmod.VLLMEngine(cfg(model=str(gguf), tokenizer="org/base"))
    assert fake_vllm.loaded_tokenizers == ["org/base"]
    assert FakeLLM.instances[0].kwargs["tokenizer"] == "org/base"


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
    assert ident["engine"] == "vllm" and ident["model"] == "org/model" and ident["revision"] == "r1"
    assert ident["vllm_version"] == "0.0.fake"
    assert ident["dtype"] == "bfloat16" and ident["max_model_len"] == 1000
    assert ident["tensor_parallel_size"] == 1
    assert ident["batch_invariant"] == "1"
    assert list(ident["hf_overrides"]) in (["rope_parameters"], ["rope_scaling"])
    assert ident["engine_args"] == {"kv_cache_dtype": "fp8"}
    json.dumps(ident)  # JSON-serialisable for the cache key


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


def _real_vllm_model() -> str:
    if importlib.util.find_spec("vllm") is None:
        pytest.skip(f"vllm is not installed ({INSTALL} on a machine with a CUDA GPU)")
    if vmod._cuda_device_count() < 1:
        pytest.skip("no CUDA GPU is visible (vLLM runs on GPUs only)")
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
    from pytest_ruler.chat import frame_for
    from pytest_ruler.scoring import string_match_all
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
