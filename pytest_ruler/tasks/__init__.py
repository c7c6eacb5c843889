"""RULER tasks: families, the 13 standard tasks, and sample generation.

Public names are re-exported here; see each module for its design notes:
``base`` (Sample, GenerationContext: what every family shares), ``family`` (the contract a
task family meets), ``registry`` (TaskSpec, families and tasks by name, the packs; it imports
the families, never the other way), ``budget`` (filling a
length budget), ``niah``, ``variable_tracking``, ``aggregation`` (cwe, fwe),
``qa``, ``haystack``, ``words``, ``generate``; ``ruler2`` (RULERv2's
12 tasks as the pack ``ruler2``); and what prompts
are measured in: ``tokenizer`` (the model's tokenizer, the embedded model) and
``chat`` (the chat template frame around a task prompt).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import exports_getattr

if TYPE_CHECKING:
    from .base import BASE_FRAME, Frame, GenerationContext, Sample
    from .family import ChunkableFamily, Family, check_family
    from .generate import generate_samples, haystack_label, iter_samples
    from .registry import (
        FAMILIES, STANDARD_TASKS, TaskSpec, data_needs, family_names, get_family, get_task, make_task, register_family, register_task,
        resolve_tasks, task_names,
    )

# name -> the module that defines it. Loaded on first use (PEP 562), so importing one
# module of this part (``tasks.tokenizer``: loading a tokenizer) does not import every
# family and the RULERv2 pack through the registry.
_EXPORTS = {
    **dict.fromkeys(("BASE_FRAME", "Frame", "GenerationContext", "Sample"), "base"),
    **dict.fromkeys(("ChunkableFamily", "Family", "check_family"), "family"),
    **dict.fromkeys(("generate_samples", "haystack_label", "iter_samples"), "generate"),
    **dict.fromkeys(("FAMILIES", "STANDARD_TASKS", "TaskSpec", "data_needs", "family_names", "get_family", "get_task", "make_task",
                     "register_family", "register_task", "resolve_tasks", "task_names"), "registry"),
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


__getattr__ = exports_getattr(__name__, _EXPORTS)
