"""GPU slots for xdist workers (pure logic; no GPU needed)."""

from __future__ import annotations

import pytest

from pytest_ruler.gpus import gpu_slots, pin_worker, visible_gpus, worker_devices


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
