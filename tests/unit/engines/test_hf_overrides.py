"""The hf engine's ``hf_overrides`` (what --ruler-arm=NAME:hf_overrides={...} changes): merged into the
model's config before loading, refused for a key the config lacks, and part of the cache identity."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from pytest_ruler.engines.base import EngineConfig
from pytest_ruler.engines.hf import HFEngine, _overridden
from pytest_ruler.errors import RulerUsageError


class _Config:
    def __init__(self):
        self.rope_parameters = {"rope_theta": 100000.0, "rope_type": "default"}
        self.max_position_embeddings = 8192

    def to_dict(self):
        return dict(vars(self))


def _transformers():
    return SimpleNamespace(AutoConfig=SimpleNamespace(from_pretrained=lambda *a, **k: _Config()))


def test_a_dict_override_is_merged_and_a_plain_one_set():
    cfg = _overridden(_transformers(), "folder", {"rope_parameters": {"rope_theta": 10000}, "max_position_embeddings": 4096}, False, None)
    assert cfg.rope_parameters == {"rope_theta": 10000, "rope_type": "default"} and cfg.max_position_embeddings == 4096


def test_a_key_the_config_lacks_is_refused():
    with pytest.raises(RulerUsageError, match="rope_thetaa"):
        _overridden(_transformers(), "folder", {"rope_thetaa": 1}, False, None)


def test_the_overrides_are_in_the_identity_only_when_given():
    plain = HFEngine.describe(EngineConfig(model="smollm2-135m", backend="hf"))
    changed = HFEngine.describe(EngineConfig(model="smollm2-135m", backend="hf", options={"hf_overrides": {"rope_parameters": {"rope_theta": 10000}}}))
    assert "hf_overrides" not in plain and changed["hf_overrides"] == {"rope_parameters": {"rope_theta": 10000}}
    assert {k: v for k, v in changed.items() if k != "hf_overrides"} == plain
