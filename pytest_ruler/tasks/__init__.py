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

from .base import BASE_FRAME, Frame, GenerationContext, Sample, TaskSpec
from .family import ChunkableFamily, Family, check_family, data_needs
from .generate import generate_samples, haystack_label, iter_samples
from .registry import (
    FAMILIES, STANDARD_TASKS, family_names, get_family, get_task, make_task, register_family, register_task, resolve_tasks, task_names,
)

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
