"""The one resolver of the context length (engines.context), the engine base class and the
registry entries: what the start-up check reads is what the engine runs with."""

from __future__ import annotations

import pytest

from pytest_ruler.engines import ContextLength, EngineBase, EngineConfig, entry, register_engine, resolve_context, unregister_engine
from pytest_ruler.errors import RulerUsageError


@pytest.mark.parametrize("max_model_len,reported,fallbacks,want", [
    (None, None, (), ContextLength(None)),
    (None, 4096, (("--ruler-engine-option max_context", 8192),), ContextLength(4096, "the report")),
    (2048, 4096, (("--ruler-engine-option max_context", 8192),), ContextLength(2048, "--ruler-max-model-len")),
    (None, None, (("--ruler-engine-option max_context", 8192),), ContextLength(8192, "--ruler-engine-option max_context")),
    (None, 10**30, (("tok", 512),), ContextLength(512, "tok")),  # transformers' "unknown" sentinel is no answer
    (None, 0, (), ContextLength(None)),
    (None, "4096", (), ContextLength(4096, "the report")),
])
def test_the_first_source_that_says_wins(max_model_len, reported, fallbacks, want):
    assert resolve_context(max_model_len, reported, reported_by="the report", fallbacks=fallbacks) == want


def test_a_value_that_is_no_number_is_refused_naming_its_source():
    with pytest.raises(RulerUsageError) as err:
        resolve_context(None, "lots", reported_by="the server's max_model_len")
    assert err.value.parameter == "the server's max_model_len" and err.value.value == "lots"


def _scripted(**kw) -> EngineConfig:
    return EngineConfig(model="smollm2-135m", backend="scripted", **kw)


@pytest.mark.parametrize("config", [_scripted(), _scripted(options={"max_context": 3000}), _scripted(max_model_len=1500),
                                    _scripted(max_model_len=1500, options={"max_context": 3000})],
                         ids=["default", "option", "max-model-len", "both"])
def test_the_start_up_check_and_the_engine_agree(config):
    from pytest_ruler.engines.scripted import ScriptedEngine

    scripted = entry("scripted")
    at_start = scripted.context_length(config, scripted.preflight(config))
    assert at_start.tokens == ScriptedEngine(config).max_context
    assert at_start.source == ("--ruler-max-model-len" if config.max_model_len else
                               "--ruler-engine-option max_context" if config.options else "the scripted engine's default max_context")


class NeverBuilt(EngineBase):
    """A test engine (not a model) that knows its context without being built, and refuses to be built."""

    name = "never-built"

    @classmethod
    def preflight(cls, config):
        return 2048

    def __init__(self, config):
        raise AssertionError("the engine was built")

    def identity(self):  # the abstract members: never reached, the engine is never built
        raise AssertionError("the engine was built")

    def generate(self, requests, on_result=None):
        raise AssertionError("the engine was built")


@pytest.fixture
def never_built():
    yield register_engine("never-built", NeverBuilt)
    unregister_engine("never-built")


def test_map_reduce_windows_on_the_resolved_context_without_building_the_engine(never_built):
    from pytest_ruler.mapreduce import MapReduceConfig
    from pytest_ruler.run_config import RulerConfig
    from pytest_ruler.run.session import RulerSession

    session = RulerSession(RulerConfig(model="smollm2-135m", backend="never-built", tokenizer="smollm2-135m"), None)
    assert session.mapreduce_window(MapReduceConfig()) == 2048  # from the preflight: no engine was built
    assert session.mapreduce_window(MapReduceConfig(window=1024)) == 1024
    assert session.over_context(4096) and not session.over_context(2048)


def test_the_base_class_gives_every_member_a_default(never_built):
    assert EngineBase.describe(_scripted()) is None and EngineBase.preflight(_scripted()) is None
    assert never_built.describe(_scripted()) is None and never_built.preflight(_scripted()) == 2048
    assert never_built.context_length(_scripted(max_model_len=1000), 2048) == ContextLength(1000, "--ruler-max-model-len")
    assert never_built.context_length(_scripted(), 2048).source == "the never-built engine's model config"
    EngineBase.close(object.__new__(NeverBuilt))  # nothing to free: no error


def test_the_base_class_is_abstract_in_identity_and_generate():
    """An engine that forgets identity() or generate() is refused when built, naming what is missing,
    not at its first call in the middle of a run."""
    import inspect

    class OnlyIdentity(EngineBase):
        def identity(self):
            return {}

    assert inspect.isabstract(EngineBase) and EngineBase.__abstractmethods__ == {"identity", "generate"}
    with pytest.raises(TypeError, match="generate"):
        OnlyIdentity()
    assert not inspect.isabstract(NeverBuilt)


def test_a_duck_typed_factory_keeps_its_own_members_and_gets_defaults_for_the_rest():
    class Described:
        @staticmethod
        def describe(config):
            return {"engine": "described"}

    def plain(config):  # pragma: no cover - never built here
        raise AssertionError

    try:
        described, bare = register_engine("t-described", Described), register_engine("t-plain", plain)
        assert described.describe(_scripted()) == {"engine": "described"} and described.preflight(_scripted()) is None
        assert bare.describe(_scripted()) is None
        assert bare.context_length(_scripted(max_model_len=512), None) == ContextLength(512, "--ruler-max-model-len")
        assert bare.context_length(_scripted(), None) == ContextLength(None)
    finally:
        unregister_engine("t-described")
        unregister_engine("t-plain")
