"""RULER tasks: families, the 13 standard tasks, and sample generation.

Public names are re-exported here; see each module for its design notes:
``base`` (Sample, budget filler), ``niah``, ``variable_tracking``,
``aggregation`` (cwe, fwe), ``qa``, ``haystack``, ``words``, ``registry``,
``generate``.
"""

from .base import BASE_FRAME, Frame, GenerationContext, Sample, TaskSpec
from .generate import generate_samples, haystack_label, iter_samples
from .registry import FAMILIES, STANDARD_TASKS, get_task, make_task, register_task, resolve_tasks, task_names

__all__ = [
    "BASE_FRAME",
    "FAMILIES",
    "Frame",
    "GenerationContext",
    "STANDARD_TASKS",
    "Sample",
    "TaskSpec",
    "generate_samples",
    "get_task",
    "haystack_label",
    "iter_samples",
    "make_task",
    "register_task",
    "resolve_tasks",
    "task_names",
]
