"""Options of the ``hf`` engine (import-light: no torch or transformers is imported).

``OPTIONS`` declares what :class:`~pytest_ruler.engines.hf.HFEngine` reads from
``EngineConfig.options``; :mod:`.options` coerces the values once. The ``batch_size``
default, 4 on CPU, is measured: an item's prompts have nearly equal lengths, so padding
is small (0.88x the one-by-one time at 1K with identical answers, see bench/engine_overhead.py).

``dtype_choice(config, device)``: the dtype the engine loads in and why (``--ruler-dtype``
wins; ``auto`` is bfloat16 on CUDA and float32 on CPU, whatever the processor), in the
shape the vllm engine's choice has, for the run header.

``threads``: torch's CPU threads. Unset, an xdist worker takes its share of this process's
CPUs (:func:`~.gpus.worker_threads`), and its finished peers' cores before its next batch
(:mod:`.core_share`), unless ``OMP_NUM_THREADS``/``MKL_NUM_THREADS`` say otherwise; a single process keeps torch's default (every core). The thread count is not part
of the engine's identity (the cache key): it sets the speed, not the model or its dtype, so a
rerun with another ``-n`` or ``threads`` reuses the cached answers. (Another split of a sum
over threads can round differently, as another batch composition can; neither is keyed.)

Public names: ``OPTIONS``, ``dtype_choice``.
"""

from __future__ import annotations

from .base import EngineConfig
from .declaration import EngineOption
from .processor import DtypeChoice

__all__ = ["OPTIONS", "dtype_choice"]

OPTIONS: tuple[EngineOption, ...] = (
    EngineOption("batch_size", "int", None, "requests per forward pass (--ruler-batch-size wins); default 4 on CPU, 8 on CUDA", minimum=1),
    EngineOption("threads", "int", None, "torch CPU threads (default: torch's; an xdist worker's share of the CPUs under "
                 "-n N, unless OMP_NUM_THREADS or MKL_NUM_THREADS is set)", minimum=1),
    EngineOption("revision", "str", None, "model revision of a Hugging Face id (branch, tag or commit); default main"),
    EngineOption("hf_overrides", "json", None, "JSON object of Hugging Face config overrides applied to the model's config "
                 "before loading (a dict value is merged into the config's dict, e.g. {\"rope_parameters\": {\"rope_theta\": 1000}}); "
                 "part of the cache identity", mapping=True),
)


def dtype_choice(config: EngineConfig, device: str) -> DtypeChoice:
    """The dtype the hf engine loads in on ``device`` (``cpu``, ``cuda``, ``cuda:N``), and why."""
    if config.dtype and config.dtype != "auto":
        return DtypeChoice(config.dtype, f"--ruler-dtype={config.dtype}")
    if device.startswith("cuda"):
        return DtypeChoice("bfloat16", "auto: bfloat16 on CUDA; --ruler-dtype=float32 to force float32")
    return DtypeChoice("float32", "auto: the hf engine computes in float32 on CPU; --ruler-dtype=bfloat16 to force")
