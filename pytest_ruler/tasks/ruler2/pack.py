"""The 12 RULERv2 tasks as data: (name, family, tokens to generate, metric, arguments).

The arguments are the reference's ``prepare.py`` settings (seed 42 there; here the
run's seeds, each sample drawn from its own RNG). The metrics are the reference's
evaluator settings: ``multichoice`` for the two A-D tasks, ``2steps`` for
``mv_niah_medium``, ``part`` for the QA tasks, ``all`` for the rest
(:mod:`pytest_ruler.results.soft_match`). ``tokens_to_generate`` is ours: the reference
reserves no room for the answer; here it is counted in the length, sized to what each task
asks the model to write (an id, a number, a copied question or four, a copy then a letter).

Public names: ``PACK`` (the pack's name), ``PACK_TASKS``, ``pack_task_names``.
"""

from __future__ import annotations

from typing import Any

__all__ = ["PACK", "PACK_TASKS", "pack_task_names"]

PACK = "ruler2"

_MMLU = "ruler2_mmlu"
_QA = "ruler2_qa"

#: (name, family, tokens_to_generate, metric, arguments), in the reference's order
PACK_TASKS: tuple[tuple[str, str, int, str, dict[str, Any]], ...] = (
    ("mk_niah_basic", "ruler2_niah", 128, "ruler2_all", {"num_needle_v": 1}),
    ("mk_niah_easy", _MMLU, 512, "ruler2_all", {"task_type": "retrieve", "algo_type": "single", "fewshot": 0, "num_order": 0}),
    ("mk_niah_medium", _MMLU, 1024, "multichoice", {"task_type": "solve", "algo_type": "2steps", "fewshot": 5, "num_order": 0}),
    ("mk_niah_hard", _MMLU, 512, "multichoice", {"task_type": "solve", "algo_type": "single", "fewshot": 5, "num_order": 0}),
    ("mv_niah_basic", "ruler2_niah", 128, "ruler2_all", {"num_needle_v": 4}),
    ("mv_niah_easy", _MMLU, 1024, "ruler2_all", {"task_type": "niah", "algo_type": "single", "fewshot": 0, "num_order": 4}),
    ("mv_niah_medium", _MMLU, 1024, "ruler2_2steps", {"task_type": "retrieve", "algo_type": "2steps", "fewshot": 0, "num_order": 4}),
    ("mv_niah_hard", _MMLU, 512, "ruler2_all", {"task_type": "retrieve", "algo_type": "single", "fewshot": 0, "num_order": 4}),
    ("qa_basic", _QA, 64, "ruler2_part", {"task_type": "retrieve", "query_type": "doc"}),
    ("qa_easy", _QA, 64, "ruler2_part", {"task_type": "retrieve", "query_type": "question"}),
    ("qa_medium", _QA, 1024, "ruler2_part", {"task_type": "solve", "algo_type": "2steps"}),
    ("qa_hard", _QA, 256, "ruler2_part", {"task_type": "solve", "algo_type": "single"}),
)


def pack_task_names() -> list[str]:
    return [t[0] for t in PACK_TASKS]
