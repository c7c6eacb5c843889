"""RULER tasks: families, the 13 standard tasks, and sample generation.

Public names are re-exported here; see each module for its design notes:
``base`` (Sample, TaskSpec, GenerationContext), ``budget`` (filling a
length budget), ``niah``, ``variable_tracking``, ``aggregation`` (cwe, fwe),
``qa``, ``haystack``, ``words``, ``registry``, ``generate``; and what prompts
are measured in: ``tokenizer`` (the model's tokenizer, the embedded model) and
``chat`` (the chat template frame around a task prompt).
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
