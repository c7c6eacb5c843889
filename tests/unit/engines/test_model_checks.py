"""The hf engine's start-up checks that need no weights loaded (issue 23): the device exists,
and every safetensors file is exactly as long as its header says. A tiny model folder
(config.json plus a few tensors written with ``safetensors``) stands in for a real model:
nothing here loads it."""

from __future__ import annotations

import json
import os

import pytest

from pytest_ruler.engines import gpus
from pytest_ruler.engines.base import EngineConfig
from pytest_ruler.engines import hf
from pytest_ruler.engines.hf import HFEngine, check_model
from pytest_ruler.errors import RulerUsageError
from pytest_ruler.models import checks

safetensors_numpy = pytest.importorskip("safetensors.numpy")
np = pytest.importorskip("numpy")


def _folder(tmp_path, name="tiny"):
    folder = tmp_path / name
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"model_type": "llama", "max_position_embeddings": 2048}))
    safetensors_numpy.save_file({"embed": np.zeros((16, 8), dtype=np.float32), "norm": np.ones(8, dtype=np.float32)},
                                str(folder / "model.safetensors"))
    return folder


def _cut(path, by):
    size = path.stat().st_size
    with path.open("r+b") as fh:
        fh.truncate(size - by)


def test_an_intact_folder_passes_and_gives_its_context(tmp_path):
    folder = _folder(tmp_path)
    assert hf.safetensors_damage(folder / "model.safetensors") is None
    assert check_model(EngineConfig(model=str(folder), backend="hf")) == 2048


def test_weights_cut_after_an_intact_header_are_refused_at_start(tmp_path):
    folder = _folder(tmp_path)
    weights = folder / "model.safetensors"
    _cut(weights, 12)  # the header (and its size) untouched: only tensor bytes are gone
    header = int.from_bytes(weights.read_bytes()[:8], "little")
    json.loads(weights.read_bytes()[8:8 + header])  # still parses
    with pytest.raises(RulerUsageError) as err:
        HFEngine.preflight(EngineConfig(model=str(folder), backend="hf"))
    assert err.value.parameter == "--ruler-model"
    assert "model.safetensors is damaged or incomplete" in err.value.fix and "cut short" in err.value.fix
    assert "download or save the model again" in err.value.fix


def test_weights_with_bytes_beyond_the_header_are_refused(tmp_path):
    folder = _folder(tmp_path)
    with (folder / "model.safetensors").open("ab") as fh:
        fh.write(b"\0" * 4)
    assert "describes 544 bytes of tensor data, the file holds 548" in hf.safetensors_damage(folder / "model.safetensors")


def test_a_header_without_offsets_is_damage(tmp_path):
    path = tmp_path / "bad.safetensors"
    header = json.dumps({"w": {"dtype": "F32", "shape": [2]}}).encode()
    path.write_bytes(len(header).to_bytes(8, "little") + header + b"\0" * 8)
    assert "no valid data_offsets" in hf.safetensors_damage(path)


def test_a_damaged_converted_copy_says_how_to_convert_again(tmp_path, monkeypatch):
    """A GGUF's converted folder (the cache's) cut since: refused with the folder to delete."""
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    converted = _folder(tmp_path, "converted")
    _cut(converted / "model.safetensors", 4)
    monkeypatch.setattr(checks, "converted_gguf_folder", lambda path, name=None: (converted, "0" * 64))
    with pytest.raises(RulerUsageError) as err:
        check_model(EngineConfig(model=str(gguf), backend="hf"))
    assert f"delete {converted} and run again" in err.value.fix


# --------------------------------------------------------------------------- --ruler-device


def _gpus(monkeypatch, visible):
    monkeypatch.setattr(gpus, "gpu_visible", lambda: bool(visible))
    monkeypatch.setattr(gpus, "visible_gpus", lambda env=None: list(visible))


@pytest.mark.parametrize("device", ["cuda", "cuda:0", "cuda:7"])
def test_a_cuda_device_without_any_gpu_is_refused_before_the_model_is_read(tmp_path, monkeypatch, device):
    _gpus(monkeypatch, [])
    folder = _folder(tmp_path)
    os.remove(folder / "config.json")  # would be refused too: the device check comes first
    with pytest.raises(RulerUsageError) as err:
        HFEngine.preflight(EngineConfig(model=str(folder), backend="hf", device=device))
    assert err.value.parameter == "--ruler-device" and err.value.value == device
    assert "no CUDA device is visible" in err.value.fix and "--ruler-device=cpu or auto" in err.value.fix


def test_a_gpu_index_past_the_visible_ones_is_refused(tmp_path, monkeypatch):
    _gpus(monkeypatch, ["0"])
    folder = _folder(tmp_path)
    with pytest.raises(RulerUsageError) as err:
        HFEngine.preflight(EngineConfig(model=str(folder), backend="hf", device="cuda:7"))
    assert err.value.parameter == "--ruler-device" and err.value.value == "cuda:7"
    assert "sees 1 CUDA device (cuda:0)" in err.value.fix
    assert HFEngine.preflight(EngineConfig(model=str(folder), backend="hf", device="cuda:0")) == 2048


def test_cpu_and_auto_need_no_gpu(tmp_path, monkeypatch):
    _gpus(monkeypatch, [])
    folder = _folder(tmp_path)
    for device in ("cpu", "auto"):
        assert HFEngine.preflight(EngineConfig(model=str(folder), backend="hf", device=device)) == 2048
