"""Engine options: one typed declaration per engine, coerced once (pure; no engine is built)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from pytest_ruler.engines import EngineConfig, register_engine
from pytest_ruler.engines.options import EngineOption, cli_options, coerce_engine_options, declared_options, engine_options
from pytest_ruler.errors import RulerUsageError


def _error(backend: str, raw: dict) -> RulerUsageError:
    with pytest.raises(RulerUsageError) as info:
        coerce_engine_options(backend, raw)
    return info.value


# --------------------------------------------------------------------------- kinds


@pytest.mark.parametrize(
    ("backend", "key", "raw", "typed"),
    [
        ("vllm", "tensor_parallel_size", "4", 4),
        ("vllm", "tensor_parallel_size", " 2 ", 2),
        ("vllm", "tensor_parallel_size", 2.0, 2),
        ("vllm", "gpu_memory_utilization", "0.5", 0.5),
        ("vllm", "gpu_memory_utilization", 1, 1.0),
        ("vllm", "enforce_eager", "true", True),
        ("vllm", "enforce_eager", "1", True),
        ("vllm", "enforce_eager", "off", False),
        ("vllm", "enforce_eager", 0, False),
        ("vllm", "allow_long_max_model_len", "auto", None),
        ("vllm", "dtype", " bfloat16 ", "bfloat16"),
        ("vllm", "quantization", "", None),
        ("vllm", "rope_scaling", '{"rope_type": "yarn", "factor": 4.0}', {"rope_type": "yarn", "factor": 4.0}),
        ("vllm", "hf_overrides", {"sliding_window": None}, {"sliding_window": None}),
        ("vllm", "engine_args", "", None),
        ("openai", "endpoint", "chat", "chat"),
        ("openai", "timeout", "2.5", 2.5),
        ("openai", "max_retries", "0", 0),
        ("openai", "extra_body", '{"repeat_penalty": 1.0}', {"repeat_penalty": 1.0}),
        ("hf", "batch_size", "3", 3),
        ("hf", "revision", "abc123", "abc123"),
        ("scripted", "mode", "echo", "echo"),
        ("scripted", "delay", "0.1", 0.1),
        ("scripted", "crash_after", 4, 4),
    ],
)
def test_values_become_their_declared_kind(backend, key, raw, typed):
    out = coerce_engine_options(backend, {key: raw})
    assert out == {key: typed}
    assert type(out[key]) is type(typed)


def test_a_json_list_is_accepted_where_lists_are():
    option = EngineOption("stops", "json")
    assert option.coerce('["a", "b"]') == ["a", "b"]
    assert option.coerce(("a",)) == ["a"]
    with pytest.raises(RulerUsageError):
        EngineOption("body", "json", mapping=True).coerce("[1, 2]")


def test_json_values_are_copied_so_callers_may_change_them():
    given = {"rope_type": "yarn", "nested": {"factor": 2}}
    out = coerce_engine_options("vllm", {"rope_scaling": given})["rope_scaling"]
    out["nested"]["factor"] = 8
    assert given == {"rope_type": "yarn", "nested": {"factor": 2}}


def test_a_declaration_refuses_an_unknown_kind():
    with pytest.raises(ValueError):
        EngineOption("x", "list")
    with pytest.raises(ValueError):
        EngineOption("x", "choice")


# --------------------------------------------------------------------------- errors: parameter, value, fix


@pytest.mark.parametrize(
    ("backend", "key", "raw", "fix"),
    [
        ("vllm", "tensor_parallel_size", 0, "tensor_parallel_size must be an integer >= 1"),
        ("vllm", "tensor_parallel_size", "two", "tensor_parallel_size must be an integer >= 1"),
        ("vllm", "tensor_parallel_size", 1.5, "tensor_parallel_size must be an integer >= 1"),
        ("vllm", "tensor_parallel_size", True, "tensor_parallel_size must be an integer >= 1"),
        ("vllm", "gpu_memory_utilization", 1.5, "gpu_memory_utilization must be a number > 0 and <= 1"),
        ("vllm", "gpu_memory_utilization", "0", "gpu_memory_utilization must be a number > 0 and <= 1"),
        ("vllm", "kv_cache_gib", "lots", "kv_cache_gib must be a number > 0"),
        ("vllm", "seed", -1, "seed must be an integer >= 0"),
        ("vllm", "enforce_eager", "maybe", "enforce_eager must be true or false"),
        ("vllm", "rope_scaling", "{not json", "rope_scaling must be a JSON object"),
        ("vllm", "rope_scaling", "[1, 2]", "rope_scaling must be a JSON object"),
        ("openai", "endpoint", "grpc", "endpoint choose one of auto, completions, chat"),
        ("openai", "concurrency", 0, "concurrency must be an integer >= 1"),
        ("openai", "timeout", "0", "timeout must be a number >= 0.001"),
        ("openai", "extra_body", "[1]", "extra_body must be a JSON object"),
        ("scripted", "mode", "psychic", "mode choose one of oracle, know_nothing, empty, echo, error"),
        ("hf", "threads", "many", "threads must be an integer >= 1"),
        ("vllm", "dtype", "float8", "dtype choose one of auto, float32, bfloat16, float16, float, half"),  # at start, not at load
    ],
)
def test_a_bad_value_names_the_parameter_the_value_and_the_form(backend, key, raw, fix):
    err = _error(backend, {key: raw})
    assert err.parameter == "--ruler-engine-option"
    assert err.value == f"{key}={raw}"
    assert err.fix.startswith(fix)


def test_an_unknown_key_names_the_key_never_its_value_and_lists_the_known_keys():
    err = _error("vllm", {"tp": 2})  # the value may be a secret typed under a wrong name (issue 35)
    assert err.parameter == "--ruler-engine-option" and err.value == "tp" and "2" not in str(err)
    assert "vllm has no option 'tp' (its value is not shown)" in err.fix
    for key in ("tensor_parallel_size", "gpu_memory_utilization", "rope_scaling", "kv_cache_gib"):
        assert key in err.fix
    err = _error("openai", {"concurency": "4"})
    assert "concurrency" in err.fix and "extra_body" in err.fix


# --------------------------------------------------------------------------- idempotence, defaults


@pytest.mark.parametrize(
    ("backend", "raw"),
    [
        ("vllm", {"tensor_parallel_size": "2", "enforce_eager": "yes", "rope_scaling": '{"factor": 2}', "kv_cache_gib": "0.5"}),
        ("openai", {"concurrency": "1", "timeout": "30", "endpoint": "chat", "extra_body": '{"top_k": 1}'}),
        ("hf", {"batch_size": "2", "threads": 1}),
        ("scripted", {"mode": "empty", "max_context": "1500", "delay": "0"}),
    ],
)
def test_coercing_typed_values_again_changes_nothing(backend, raw):
    once = coerce_engine_options(backend, raw)
    assert coerce_engine_options(backend, once) == once
    assert coerce_engine_options(backend, coerce_engine_options(backend, once)) == once


def test_engine_options_fill_in_the_declared_defaults():
    opts = engine_options(EngineConfig(model="m", backend="openai", options={"concurrency": "2"}), "openai")
    assert opts["concurrency"] == 2 and opts["max_retries"] == 5 and opts["retry_backoff"] == 1.0
    assert opts["endpoint"] == "auto" and opts["timeout"] is None
    vllm = engine_options(EngineConfig(model="m", backend="vllm"), "vllm")
    assert vllm["tensor_parallel_size"] == 1 and vllm["gpu_memory_utilization"] == 0.9 and vllm["skip_special_tokens"] is True


def test_with_backend_auto_options_for_another_engine_are_dropped():
    config = EngineConfig(model="m", backend="auto", options={"batch_size": "2", "enforce_eager": "true"})
    assert engine_options(config, "vllm")["enforce_eager"] is True
    assert "batch_size" not in engine_options(config, "vllm")
    assert engine_options(config, "hf")["batch_size"] == 2
    with pytest.raises(RulerUsageError):  # named explicitly: every key must be this engine's
        engine_options(EngineConfig(model="m", backend="hf", options={"enforce_eager": "true"}), "hf")
    assert coerce_engine_options("vllm", {"batch_size": 2}, drop_unknown=True) == {}


# --------------------------------------------------------------------------- declarations


def test_every_builtin_engine_declares_its_options():
    assert set(declared_options("vllm")) >= {"tensor_parallel_size", "rope_scaling", "engine_args", "kv_cache_gib", "skip_special_tokens"}
    assert set(declared_options("openai")) == {"concurrency", "timeout", "max_retries", "retry_backoff", "endpoint", "prompt_format", "max_context", "extra_body", "affinity"}
    assert set(declared_options("hf")) == {"batch_size", "threads", "revision", "hf_overrides"}
    assert set(declared_options("scripted")) == {"mode", "max_context", "crash_after", "delay", "think_tokens", "blind_above", "fail_load"}
    for backend in ("vllm", "openai", "hf", "scripted"):
        for option in declared_options(backend).values():
            assert option.help, (backend, option.key)


def test_cli_options_are_the_engines_top_level_flags():
    assert {o.cli: o.key for o in cli_options()} == {
        "tensor-parallel-size": "tensor_parallel_size",
        "gpu-memory-utilization": "gpu_memory_utilization",
        "hf-overrides": "hf_overrides",
        "max-concurrency": "concurrency",  # the openai engine's, per endpoint
    }


def test_reading_the_declarations_imports_no_engine_library():
    code = (
        "import sys\n"
        "from pytest_ruler.engines.options import declared_options, cli_options\n"
        "[declared_options(b) for b in ('hf', 'vllm', 'openai', 'scripted')]; cli_options()\n"
        "print(sorted(m for m in ('torch', 'vllm', 'transformers', 'httpx', 'urllib.request', 'http.client') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[]"


# --------------------------------------------------------------------------- third-party engines


@pytest.fixture(autouse=True)
def _registry():
    """Engines registered here are forgotten afterwards."""
    from pytest_ruler.engines import engine_names, unregister_engine

    before = set(engine_names())
    yield
    for name in set(engine_names()) - before:
        unregister_engine(name)


def test_a_third_party_engine_without_a_declaration_passes_its_options_through():
    def factory(config):  # pragma: no cover - never built here
        raise AssertionError

    register_engine("test-undeclared", factory)
    assert declared_options("test-undeclared") is None
    raw = {"anything": "goes", "n": "3"}
    assert coerce_engine_options("test-undeclared", raw) == raw


def test_a_third_party_engine_declares_options_on_its_factory():
    class Declared:
        options = (
            EngineOption("temperature_scale", "float", 1.0, "a made-up knob", minimum=0.0),
            EngineOption("style", "choice", "plain", "how to answer", choices=("plain", "fancy")),
        )

    register_engine("test-declared", Declared)
    assert set(declared_options("test-declared")) == {"temperature_scale", "style"}
    assert coerce_engine_options("test-declared", {"temperature_scale": "0.5", "style": "fancy"}) == {"temperature_scale": 0.5, "style": "fancy"}
    err = _error("test-declared", {"colour": "red"})
    assert err.value == "colour" and "=red" not in str(err) and "temperature_scale" in err.fix and "style" in err.fix
    assert engine_options(EngineConfig(model="m", backend="test-declared"), "test-declared") == {"temperature_scale": 1.0, "style": "plain"}

    class Wrong:
        options = ({"key": "x"},)

    register_engine("test-wrong", Wrong)
    with pytest.raises(RulerUsageError, match="EngineOption"):
        declared_options("test-wrong")


def test_another_engines_top_level_flags_do_not_trouble_an_engine():
    """--ruler-tensor-parallel-size and friends are vllm's; with another back end they are ignored."""
    config = EngineConfig(model="m", backend="scripted", options={"mode": "echo", "tensor_parallel_size": 1, "gpu_memory_utilization": 0.5, "hf_overrides": {}})
    assert engine_options(config, "scripted")["mode"] == "echo"
    assert "tensor_parallel_size" not in engine_options(config, "scripted")
