"""GPU slots for xdist workers: one engine per slot of ``tensor_parallel_size`` GPUs.

``-n auto`` means one worker per slot (visible GPUs // tp). Each worker pins
itself in ``pytest_configure``, before anything imports CUDA, by narrowing
``CUDA_VISIBLE_DEVICES`` to its slot — chosen from the devices the caller
already made visible (indexing into that list, never raw ordinals).

Public names: ``visible_gpus``, ``gpu_slots``, ``worker_devices``, ``pin_worker``.
"""

from __future__ import annotations

import os
import re
import subprocess
from typing import Mapping, MutableMapping

__all__ = ["gpu_slots", "pin_worker", "visible_gpus", "worker_devices"]


def visible_gpus(env: Mapping[str, str] | None = None) -> list[str]:
    """Device ids this process may use: ``CUDA_VISIBLE_DEVICES`` if set, else what nvidia-smi lists."""
    env = os.environ if env is None else env
    raw = env.get("CUDA_VISIBLE_DEVICES")
    if raw is not None:
        return [d.strip() for d in raw.split(",") if d.strip() and d.strip() != "-1"]
    try:
        out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=20).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    return [str(i) for i, line in enumerate(l for l in out.splitlines() if l.startswith("GPU "))]


def gpu_slots(n_gpus: int, tensor_parallel_size: int = 1) -> int:
    return n_gpus // max(1, tensor_parallel_size)


def worker_devices(worker_id: str, visible: list[str], tensor_parallel_size: int = 1) -> list[str] | None:
    """The devices of worker ``gwN``'s slot, or None when there are no full slots."""
    m = re.fullmatch(r"gw(\d+)", worker_id or "")
    slots = gpu_slots(len(visible), tensor_parallel_size)
    if not m or slots == 0:
        return None
    slot = int(m.group(1)) % slots
    tp = max(1, tensor_parallel_size)
    return visible[slot * tp:(slot + 1) * tp]


def pin_worker(tensor_parallel_size: int = 1, env: MutableMapping[str, str] | None = None) -> list[str] | None:
    """Narrow CUDA_VISIBLE_DEVICES for this xdist worker; returns the devices or None."""
    env = os.environ if env is None else env
    worker = env.get("PYTEST_XDIST_WORKER")
    if not worker:
        return None
    devices = worker_devices(worker, visible_gpus(env), tensor_parallel_size)
    if devices:
        env["CUDA_VISIBLE_DEVICES"] = ",".join(devices)
    return devices
