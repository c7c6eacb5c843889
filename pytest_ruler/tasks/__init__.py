"""RULER tasks: families, the 13 standard tasks, and sample generation.

Public names are re-exported here; see each module for its design notes:
``base`` (Sample, TaskSpec, GenerationContext), ``family`` (the contract a
task family meets, and how one is registered), ``budget`` (filling a
length budget), ``niah``, ``variable_tracking``, ``aggregation`` (cwe, fwe),
``qa``, ``haystack``, ``words``, ``registry``, ``generate``; ``ruler2`` (RULERv2's
12 tasks as the pack ``ruler2``); and what prompts
are measured in: ``tokenizer`` (the model's tokenizer, the embedded model) and
``chat`` (the chat template frame around a task prompt).
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .base import BASE_FRAME, Frame, GenerationContext, Sample, TaskSpec
    from .family import ChunkableFamily, Family, check_family, data_needs
    from .generate import generate_samples, haystack_label, iter_samples
    from .registry import (
        FAMILIES, STANDARD_TASKS, family_names, get_family, get_task, make_task, register_family, register_task, resolve_tasks, task_names,
    )

# name -> the module that defines it. Loaded on first use (PEP 562), so importing one
# module of this part (``tasks.tokenizer``: loading a tokenizer) does not import every
# family and the RULERv2 pack through the registry.
_EXPORTS = {
    **dict.fromkeys(("BASE_FRAME", "Frame", "GenerationContext", "Sample", "TaskSpec"), "base"),
    **dict.fromkeys(("ChunkableFamily", "Family", "check_family", "data_needs"), "family"),
    **dict.fromkeys(("generate_samples", "haystack_label", "iter_samples"), "generate"),
    **dict.fromkeys(("FAMILIES", "STANDARD_TASKS", "family_names", "get_family", "get_task", "make_task", "register_family",
                     "register_task", "resolve_tasks", "task_names"), "registry"),
}

__all__ = [
    "BASE_FRAME",
    "ChunkableFamily",
    "FAMILIES",
    "Family",
    "Frame",
    "GenerationContext",
    "STANDARD_TASKS",
    "Sample",
    "TaskSpec",
    "check_family",
    "data_needs",
    "family_names",
    "generate_samples",
    "get_family",
    "get_task",
    "haystack_label",
    "iter_samples",
    "make_task",
    "register_family",
    "register_task",
    "resolve_tasks",
    "task_names",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        if name.isidentifier() and not name.startswith("_"):
            try:  # a submodule, as the eager imports once made ``tasks.niah`` reachable
                return import_module(f"{__name__}.{name}")
            except ModuleNotFoundError as exc:
                if exc.name != f"{__name__}.{name}":
                    raise
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f"{__name__}.{module}"), name)
