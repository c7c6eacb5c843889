"""Options of the ``hf`` engine (import-light: no torch or transformers is imported).

``OPTIONS`` declares what :class:`~pytest_ruler.engines.hf.HFEngine` reads from
``EngineConfig.options``; :mod:`.options` coerces the values once. The ``batch_size``
default, 4 on CPU, is measured: an item's prompts have nearly equal lengths, so padding
is small (0.88x the one-by-one time at 1K with identical answers, see bench/engine_overhead.py).

Public names: ``OPTIONS``.
"""

from __future__ import annotations

from .options import EngineOption

__all__ = ["OPTIONS"]

OPTIONS: tuple[EngineOption, ...] = (
    EngineOption("batch_size", "int", None, "requests per forward pass (--ruler-batch-size wins); default 4 on CPU, 8 on CUDA", minimum=1),
    EngineOption("threads", "int", None, "torch CPU threads (default: torch's)", minimum=1),
    EngineOption("revision", "str", None, "model revision of a Hugging Face id (branch, tag or commit); default main"),
)
