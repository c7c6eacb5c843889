"""RULERv2 as a task pack: the 12 tasks of NeMo-Skills' ``ruler2``, by their reference names.

RULERv2 goes from retrieval to retrieval-then-solve: ``{mk_niah, mv_niah, qa} ×
{basic, easy, medium, hard}``. Select them with ``--ruler-tasks=ruler2`` (all 12) or
``ruler2:<glob>`` (``ruler2:mk_*``), or by name; the group score (the plain mean of the
tasks per length, as the reference's ``compute_score``) is the ``ruler2`` row of Table 3.

Modules: ``pack`` (the 12 tasks: family, arguments, metric, tokens to generate),
``niah`` (the synthetic basic tasks, family ``ruler2_niah``), ``mmlu`` (the MMLU
tasks, family ``ruler2_mmlu``), ``qa`` (the HotpotQA tasks, family ``ruler2_qa``).
The families register through the task registry like RULER's own (``tasks.registry``).
"""

from .mmlu import Ruler2MMLUFamily
from .niah import Ruler2NiahFamily
from .pack import PACK, PACK_TASKS, pack_task_names
from .qa import Ruler2QAFamily

__all__ = ["PACK", "PACK_TASKS", "Ruler2MMLUFamily", "Ruler2NiahFamily", "Ruler2QAFamily", "pack_task_names"]
