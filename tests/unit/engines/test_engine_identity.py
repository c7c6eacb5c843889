"""The cache identity of an engine (engines.registry.engine_identity): its registered name and
class come first, so a subclass that inherits its parent's identity() gets other cache keys."""

from __future__ import annotations

import pytest

from pytest_ruler.engines import EngineConfig, register_engine, unregister_engine
from pytest_ruler.engines.base import GenerationRequest
from pytest_ruler.engines.registry import engine_identity
from pytest_ruler.engines.scripted import ScriptedEngine
from pytest_ruler.run.cache import prediction_key


class ScriptedChild(ScriptedEngine):
    """A scripted engine (test engine, not a model) that inherits everything."""


def _built_child(config):
    return ScriptedChild(config)


@pytest.fixture
def registered():
    register_engine("scripted-child", ScriptedChild)
    register_engine("scripted-built", _built_child)
    yield
    unregister_engine("scripted-child")
    unregister_engine("scripted-built")


def test_name_and_class_are_part_of_the_identity_and_so_of_the_key(registered):
    parent = engine_identity(EngineConfig("smollm2-135m", backend="scripted"))
    child = engine_identity(EngineConfig("smollm2-135m", backend="scripted-child"))
    assert parent == {"backend": "scripted", "class": "pytest_ruler.engines.scripted.ScriptedEngine",
                      "engine": {"engine": "scripted (test engine, not a model)", "mode": "oracle", "tokenizer": "smollm2-135m"}}
    assert child["engine"] == parent["engine"]  # what the engine says of itself is inherited ...
    assert child["class"] == f"{__name__}.ScriptedChild" and child["backend"] == "scripted-child"
    request = GenerationRequest("p", (1, 2, 3), 8)
    assert prediction_key(child, request) != prediction_key(parent, request)  # ... its answers are not


def test_a_factory_function_is_named_by_its_qualname(registered):
    assert engine_identity(EngineConfig("smollm2-135m", backend="scripted-built"))["class"] == f"{__name__}._built_child"


def test_an_engine_that_cannot_describe_itself_is_asked_once_built(registered):
    class Undescribed(ScriptedEngine):
        @staticmethod
        def describe(config):
            return None

        def identity(self):
            return {"built": True}

    register_engine("scripted-undescribed", Undescribed)
    try:
        config = EngineConfig("smollm2-135m", backend="scripted-undescribed")
        assert engine_identity(config)["engine"] is None  # nothing loaded
        assert engine_identity(config, lambda: Undescribed(config))["engine"] == {"built": True}
    finally:
        unregister_engine("scripted-undescribed")
