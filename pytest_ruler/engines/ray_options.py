"""Options of the ``ray`` engine (import-light; the engine is :mod:`.ray_data`).

The ``ray`` engine runs vLLM inside Ray Data (``ray.data.llm``), so it reads the ``vllm``
engine's options (the model's load: dtype, context, KV cache, engine_args, ...; without their
top-level flags, which are the vllm engine's) and adds Ray's own: where the cluster is, how
many vLLM replicas serve an engine call and how many prompts go to a replica at a time.

Public names: ``OPTIONS``, ``RAY_OPTIONS``.
"""

from __future__ import annotations

import dataclasses

from . import vllm_options
from .declaration import EngineOption

__all__ = ["OPTIONS", "RAY_OPTIONS"]

RAY_OPTIONS: tuple[EngineOption, ...] = (
    EngineOption("address", "str", None, "Ray cluster to join (ray.init(address=...), e.g. auto or ray://head:10001); "
                 "default: RAY_ADDRESS, else a local Ray started for the run"),
    EngineOption("concurrency", "int", 1, "vLLM replicas (Ray actors) that share an engine call's prompts", minimum=1),
    EngineOption("ray_batch_size", "int", 16, "prompts handed to a replica at a time (Ray Data's batch_size)", minimum=1),
    EngineOption("replica_cpus", "int", 1, "CPUs each replica reserves where it runs on CPU (vLLM's CPU build)", minimum=1),
)

#: the vllm engine's options (the load of the model), without their top-level flags, then Ray's
OPTIONS: tuple[EngineOption, ...] = tuple(dataclasses.replace(o, cli=None) for o in vllm_options.OPTIONS) + RAY_OPTIONS
