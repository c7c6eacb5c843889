"""GPU slots for xdist workers: one engine per slot of ``tensor_parallel_size`` GPUs.

``-n auto`` means one worker per slot (visible GPUs // tp). Each worker pins
itself in ``pytest_load_initial_conftests``, before anything imports CUDA, by
narrowing ``CUDA_VISIBLE_DEVICES`` to its slot — chosen from the devices the
caller already made visible (indexing into that list, never raw ordinals).
Without GPUs a worker gets its share of this process's CPUs for vLLM's CPU
build (``VLLM_CPU_OMP_THREADS_BIND``), so two engines do not bind the same core.
The share is :func:`worker_cpus`, the one home of "this worker's cores": the hf
engine sets torch's thread count to its size (:func:`worker_threads`), unless the
user set threads (``OMP_NUM_THREADS``/``MKL_NUM_THREADS``, or the engine option),
since two workers each running every core oversubscribe the machine (``-n 2`` on
2 cores ran 3.1x slower than ``-n 0``, issue 33).

The tensor parallel size is read in one place, :func:`tensor_parallel_size`,
by slot counting (``-n auto``), pinning and the engine's options alike.

``vllm_device`` says where the installed vLLM runs (its CPU build, ``vllm-cpu``, imports as
``vllm``): read from package metadata, nothing imported, so the registry's ``auto`` asks it at
any time.

Public names: ``gpu_visible``, ``vllm_device``, ``visible_gpus``, ``gpu_slots``, ``worker_devices``, ``pin_worker``,
``worker_cpus``, ``worker_threads``, ``tensor_parallel_size``.
"""

from __future__ import annotations

import os
import re
import subprocess
from importlib.metadata import PackageNotFoundError, version
from typing import Any, Callable, Mapping, MutableMapping

__all__ = ["gpu_slots", "gpu_visible", "pin_worker", "tensor_parallel_size", "visible_gpus", "vllm_device", "worker_cpus", "worker_devices",
           "worker_threads", "allowed_cpu_count"]

CPU_BIND_ENV = "VLLM_CPU_OMP_THREADS_BIND"
# a thread count the user already chose for torch's CPU kernels (OpenMP, MKL)
THREAD_ENVS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS")


def gpu_visible() -> bool:
    """Whether this process can see an NVIDIA GPU, asked without importing torch or CUDA."""
    if os.environ.get("CUDA_VISIBLE_DEVICES", None) in ("", "-1"):
        return False
    return any(os.path.exists(p) for p in ("/dev/nvidia0", "/dev/nvidiactl"))


def vllm_device() -> str:
    """``cpu`` when the installed vLLM is the CPU build, else ``cuda``."""
    try:
        version("vllm")
        return "cuda"
    except PackageNotFoundError:
        pass
    try:
        version("vllm-cpu")
        return "cpu"
    except PackageNotFoundError:
        return "cuda"


def tensor_parallel_size(lookup: Callable[[str], Any], *, strict: bool = False) -> int | None:
    """GPUs per engine, from wherever the user said it; None when nobody did.

    ``lookup(name)`` returns the raw value of ``--ruler-<name>`` or, when the
    option is absent, of the ini key ``ruler_<name>`` (None if neither). The
    dedicated option ``tensor-parallel-size`` wins over ``tensor_parallel_size``
    inside ``engine-option`` (repeatable or comma-separated ``KEY=VALUE``).
    ``strict`` raises :class:`~pytest_ruler.errors.RulerUsageError` for a bad
    value (the configuration does); otherwise a bad value reads as None (slot
    counting and pinning run before the configuration reports it).
    """
    from ..parsers import parse_int as _int, parse_key_values as _engine_options
    from ..errors import RulerUsageError

    try:
        raw = lookup("tensor-parallel-size")
        if raw is not None:
            return _int("tensor-parallel-size", raw)
        engine = lookup("engine-option")
        if not engine:
            return None
        value = _engine_options(engine).get("tensor_parallel_size")
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, (int, str)):
            raise RulerUsageError("--ruler-engine-option", f"tensor_parallel_size={value}", "give an integer >= 1")
        try:
            return _int("tensor-parallel-size", value)
        except RulerUsageError:
            raise RulerUsageError("--ruler-engine-option", f"tensor_parallel_size={value}", "give an integer >= 1") from None
    except RulerUsageError:
        if strict:
            raise
        return None


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


def worker_cpus(worker_id: str, workers: int, cpus: list[int]) -> list[int] | None:
    """Worker ``gwN``'s share of ``cpus`` (contiguous, equal shares; wraps when workers > cpus)."""
    m = re.fullmatch(r"gw(\d+)", worker_id or "")
    if not m or not cpus or workers < 1:
        return None
    index = int(m.group(1))
    if workers >= len(cpus):
        return [cpus[index % len(cpus)]]
    share = len(cpus) // workers
    index %= workers
    return cpus[index * share:(index + 1) * share]


def _worker_count(env: Mapping[str, str]) -> int:
    try:
        return int(env.get("PYTEST_XDIST_WORKER_COUNT") or 0)
    except ValueError:
        return 0


def worker_threads(env: Mapping[str, str] | None = None, cpus: list[int] | None = None) -> int | None:
    """Torch threads for this xdist worker: the size of its :func:`worker_cpus` share
    (``max(1, cpus // workers)``), or None (not a worker, or the user set
    ``OMP_NUM_THREADS``/``MKL_NUM_THREADS``: theirs stands). ``cpus`` defaults to this process's."""
    env = os.environ if env is None else env
    if any(env.get(name) for name in THREAD_ENVS):
        return None
    share = worker_cpus(env.get("PYTEST_XDIST_WORKER") or "", _worker_count(env), _allowed_cpus() if cpus is None else cpus)
    return len(share) if share else None


def allowed_cpu_count() -> int:
    """The cores this process may run on."""
    return len(_allowed_cpus())


def _allowed_cpus() -> list[int]:
    try:
        return sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return list(range(os.cpu_count() or 1))


def pin_worker(
    tensor_parallel_size: int = 1,
    env: MutableMapping[str, str] | None = None,
    cpus: list[int] | None = None,
) -> list[str] | None:
    """Narrow CUDA_VISIBLE_DEVICES for this xdist worker; returns the devices or None.

    With no GPU slot, the worker's share of the CPUs goes into
    ``VLLM_CPU_OMP_THREADS_BIND`` (unless the caller set it): vLLM's CPU build
    otherwise binds every engine to the same cores.
    """
    env = os.environ if env is None else env
    worker = env.get("PYTEST_XDIST_WORKER")
    if not worker:
        return None
    devices = worker_devices(worker, visible_gpus(env), tensor_parallel_size)
    if devices:
        env["CUDA_VISIBLE_DEVICES"] = ",".join(devices)
    elif CPU_BIND_ENV not in env:
        share = worker_cpus(worker, _worker_count(env), _allowed_cpus() if cpus is None else cpus)
        if share:
            env[CPU_BIND_ENV] = ",".join(map(str, share))
    return devices
