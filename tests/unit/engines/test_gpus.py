"""GPU slots for xdist workers (pure logic; no GPU needed)."""

from __future__ import annotations

import pytest

from pytest_ruler.engines.gpus import gpu_slots, pin_worker, tensor_parallel_size, visible_gpus, worker_cpus, worker_devices


def test_visible_gpus_follow_the_callers_cuda_visible_devices():
    assert visible_gpus({"CUDA_VISIBLE_DEVICES": "4,5,6,7"}) == ["4", "5", "6", "7"]
    assert visible_gpus({"CUDA_VISIBLE_DEVICES": ""}) == []
    assert visible_gpus({"CUDA_VISIBLE_DEVICES": "-1"}) == []
    assert visible_gpus({"CUDA_VISIBLE_DEVICES": "GPU-aa, GPU-bb"}) == ["GPU-aa", "GPU-bb"]


@pytest.mark.parametrize(
    ("worker", "visible", "tp", "expected"),
    [
        ("gw0", ["0", "1", "2", "3"], 1, ["0"]),
        ("gw3", ["0", "1", "2", "3"], 1, ["3"]),
        ("gw1", ["4", "5", "6", "7"], 2, ["6", "7"]),  # indexes into the caller's list, not raw ordinals
        ("gw2", ["0", "1", "2", "3"], 2, ["0", "1"]),  # more workers than slots wrap around
        ("gw0", ["0"], 2, None),  # no full slot
        ("master", ["0", "1"], 1, None),
    ],
)
def test_worker_devices(worker, visible, tp, expected):
    assert worker_devices(worker, visible, tp) == expected


def test_slots():
    assert gpu_slots(8, 1) == 8 and gpu_slots(8, 2) == 4 and gpu_slots(3, 2) == 1 and gpu_slots(0, 1) == 0


def test_pin_worker_narrows_the_environment():
    env = {"PYTEST_XDIST_WORKER": "gw1", "CUDA_VISIBLE_DEVICES": "2,3,4,5"}
    assert pin_worker(2, env) == ["4", "5"] and env["CUDA_VISIBLE_DEVICES"] == "4,5"
    cpu = {"PYTEST_XDIST_WORKER": "gw1", "CUDA_VISIBLE_DEVICES": ""}
    assert pin_worker(1, cpu) is None and cpu["CUDA_VISIBLE_DEVICES"] == ""
    assert pin_worker(1, {"CUDA_VISIBLE_DEVICES": "0,1"}) is None  # not a worker


# --------------------------------------------------------------------------- CPU shares for vLLM's CPU build


@pytest.mark.parametrize(
    ("worker", "workers", "cpus", "expected"),
    [
        ("gw0", 2, [0, 1], [0]),
        ("gw1", 2, [0, 1], [1]),
        ("gw1", 2, [4, 5, 6, 7, 8], [6, 7]),  # the process's own CPUs, equal contiguous shares
        ("gw3", 8, [0, 1], [1]),  # more workers than CPUs: they share, round robin
        ("master", 2, [0, 1], None),
        ("gw0", 0, [0, 1], None),
    ],
)
def test_worker_cpus(worker, workers, cpus, expected):
    assert worker_cpus(worker, workers, cpus) == expected


def test_a_cpu_worker_binds_vllm_to_its_share_unless_told():
    env = {"PYTEST_XDIST_WORKER": "gw1", "PYTEST_XDIST_WORKER_COUNT": "2", "CUDA_VISIBLE_DEVICES": ""}
    assert pin_worker(1, env, cpus=[0, 1]) is None
    assert env["VLLM_CPU_OMP_THREADS_BIND"] == "1"
    mine = {"PYTEST_XDIST_WORKER": "gw1", "PYTEST_XDIST_WORKER_COUNT": "2", "CUDA_VISIBLE_DEVICES": "", "VLLM_CPU_OMP_THREADS_BIND": "0-1"}
    pin_worker(1, mine, cpus=[0, 1])
    assert mine["VLLM_CPU_OMP_THREADS_BIND"] == "0-1"
    gpu = {"PYTEST_XDIST_WORKER": "gw1", "PYTEST_XDIST_WORKER_COUNT": "2", "CUDA_VISIBLE_DEVICES": "0,1"}
    pin_worker(1, gpu, cpus=[0, 1])
    assert gpu["CUDA_VISIBLE_DEVICES"] == "1" and "VLLM_CPU_OMP_THREADS_BIND" not in gpu


# --------------------------------------------------------------------------- tensor parallel size: one reader


def _lookup(**values):
    return lambda name: values.get(name.replace("-", "_"))


def test_tensor_parallel_size_from_the_option():
    assert tensor_parallel_size(_lookup(tensor_parallel_size="2")) == 2
    # the dedicated option wins over the engine option
    assert tensor_parallel_size(_lookup(tensor_parallel_size="4", engine_option=["tensor_parallel_size=2"])) == 4


def test_tensor_parallel_size_from_engine_options():
    assert tensor_parallel_size(_lookup(engine_option=["enforce_eager=true,tensor_parallel_size=2"])) == 2
    assert tensor_parallel_size(_lookup(engine_option=["enforce_eager=true", "tensor_parallel_size=8"])) == 8
    assert tensor_parallel_size(_lookup(engine_option="tensor_parallel_size=2")) == 2  # an ini string
    assert tensor_parallel_size(_lookup(engine_option=["enforce_eager=true"])) is None
    assert tensor_parallel_size(_lookup()) is None


def test_a_bad_tensor_parallel_size_is_an_error_only_where_the_configuration_is_read():
    from pytest_ruler.errors import RulerUsageError

    for lookup in (_lookup(tensor_parallel_size="two"), _lookup(tensor_parallel_size="0"), _lookup(engine_option=["tensor_parallel_size=1.5"])):
        assert tensor_parallel_size(lookup) is None
        with pytest.raises(RulerUsageError):
            tensor_parallel_size(lookup, strict=True)


TP_SOURCES = {
    "argv option": (["--ruler-tensor-parallel-size=2"], ""),
    "argv option, two words": (["--ruler-tensor-parallel-size", "2"], ""),
    "argv engine option": (["--ruler-engine-option=enforce_eager=true,tensor_parallel_size=2"], ""),
    "ini key": ([], "ruler_tensor_parallel_size = 2\n"),
    "ini engine option": ([], "ruler_engine_option = tensor_parallel_size=2\n"),
}


@pytest.mark.parametrize("source", list(TP_SOURCES))
def test_every_tp_source_reaches_slots_pinning_and_the_engine(source, pytester, monkeypatch):
    """TP=2 given one way: -n auto counts 4 GPUs as 2 slots, worker gw1 pins GPUs 2,3 and
    the engine options say 2 — all from gpus.tensor_parallel_size."""
    args, ini = TP_SOURCES[source]
    pytester.makeini("[pytest]\n" + ini)
    pytester.makeconftest(
        """
import os, json
import pytest
from pytest_ruler import plugin
from pytest_ruler.plugin.config import build_config

def pytest_configure(config):
    found = {
        "slots": plugin.pytest_xdist_auto_num_workers(config),
        "pinned": os.environ.get("CUDA_VISIBLE_DEVICES"),
        "engine": build_config(config).engine_options.get("tensor_parallel_size"),
    }
    open("tp.json", "w").write(json.dumps(found))
    raise pytest.UsageError("stop here")
"""
    )
    import json

    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1,2,3")
    monkeypatch.delenv("PYTEST_XDIST_AUTO_NUM_WORKERS", raising=False)
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    # vllm declares both options (the conftest stops the run before any engine check)
    run = ("-p", "no:hypothesispytest", "--ruler-model=smollm2-135m", "--ruler-backend=vllm", *args)
    pytester.runpytest_subprocess(*run)  # the controller: counts slots
    controller = json.loads((pytester.path / "tp.json").read_text())
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw1")
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", "2")
    pytester.runpytest_subprocess(*run)  # a worker: pins itself before conftests load
    worker = json.loads((pytester.path / "tp.json").read_text())
    assert (controller["slots"], controller["engine"]) == (2, 2)
    assert (worker["pinned"], worker["engine"]) == ("2,3", 2)


# --------------------------------------------------------------------------- torch threads for the hf engine (issue 33)


@pytest.mark.parametrize(
    ("env", "cpus", "expected"),
    [
        ({"PYTEST_XDIST_WORKER": "gw0", "PYTEST_XDIST_WORKER_COUNT": "2"}, [0, 1], 1),  # -n 2 on 2 cores: one each
        ({"PYTEST_XDIST_WORKER": "gw1", "PYTEST_XDIST_WORKER_COUNT": "2"}, list(range(8)), 4),
        ({"PYTEST_XDIST_WORKER": "gw2", "PYTEST_XDIST_WORKER_COUNT": "3"}, list(range(8)), 2),  # 8 // 3
        ({"PYTEST_XDIST_WORKER": "gw5", "PYTEST_XDIST_WORKER_COUNT": "8"}, [0, 1], 1),  # never below one
        ({"PYTEST_XDIST_WORKER": "gw0", "PYTEST_XDIST_WORKER_COUNT": "1"}, [0, 1, 2], 3),
        ({}, [0, 1], None),  # not a worker: torch's default
        ({"PYTEST_XDIST_WORKER": "gw0"}, [0, 1], None),  # no count
        ({"PYTEST_XDIST_WORKER": "gw0", "PYTEST_XDIST_WORKER_COUNT": "2", "OMP_NUM_THREADS": "2"}, [0, 1], None),  # the user's
        ({"PYTEST_XDIST_WORKER": "gw0", "PYTEST_XDIST_WORKER_COUNT": "2", "MKL_NUM_THREADS": "4"}, [0, 1], None),
    ],
)
def test_worker_threads_is_the_size_of_the_workers_cpu_share(env, cpus, expected):
    from pytest_ruler.engines.gpus import worker_threads

    assert worker_threads(env, cpus) == expected
    if expected is not None:
        assert expected == len(worker_cpus(env["PYTEST_XDIST_WORKER"], int(env["PYTEST_XDIST_WORKER_COUNT"]), cpus))


def _hf_engine_threads(monkeypatch, tmp_path, options):
    """The thread count HFEngine gives torch (a fake torch; the load stops right after)."""
    import sys
    from types import ModuleType, SimpleNamespace

    from pytest_ruler.engines import EngineConfig, gpus, hf
    from pytest_ruler.errors import RulerUsageError

    calls = []

    class Dtype:
        pass

    torch = ModuleType("torch")
    torch.set_num_threads = calls.append
    torch.cuda = SimpleNamespace(is_available=lambda: False)
    torch.dtype, torch.float32 = Dtype, Dtype()
    transformers = ModuleType("transformers")

    def refuse(*args, **kwargs):
        raise RuntimeError("not loaded in this test")

    transformers.AutoModelForCausalLM = SimpleNamespace(from_pretrained=refuse)
    monkeypatch.setitem(sys.modules, "torch", torch)
    monkeypatch.setitem(sys.modules, "transformers", transformers)
    monkeypatch.setattr(hf, "load_tokenizer", lambda *a, **k: None)
    monkeypatch.setattr(gpus, "_allowed_cpus", lambda: [0, 1])
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(RulerUsageError, match="could not load"):
        hf.HFEngine(EngineConfig(model=str(tmp_path), backend="hf", options=options))
    return calls


def test_an_hf_worker_takes_its_share_of_the_cores(monkeypatch, tmp_path):
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw1")
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", "2")
    assert _hf_engine_threads(monkeypatch, tmp_path, {}) == [1]
    assert _hf_engine_threads(monkeypatch, tmp_path, {"threads": 2}) == [2]  # the engine option wins
    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    assert _hf_engine_threads(monkeypatch, tmp_path, {}) == []  # the user's environment stands
    monkeypatch.delenv("OMP_NUM_THREADS")
    monkeypatch.delenv("PYTEST_XDIST_WORKER")
    assert _hf_engine_threads(monkeypatch, tmp_path, {}) == []  # one process: torch's default
