"""The MRCR pack's start-up checks: what its items need, refused at start by name (``run.preflight`` calls it).

    the run's MRCR tasks (family ``mrcr``; none: nothing to check)
        ─► --ruler-mapreduce: refused (MRCR's question is about the order of turns of one chat;
           chunks of it cannot answer it)
        ─► base prompts (no chat template): refused (the records are chats)
        ─► no data: refused, naming --ruler-mrcr and `pytest-ruler download mrcr`
        ─► each task × length that fits the context: its bin (``tasks.mrcr.select``: the
           records' chats counted with the run's tokenizer and template)
              empty: refused, naming the task, the bin and the lengths to choose
              fewer records than --ruler-samples: a warning (report and terminal); the item runs
                  the records it has
              its longest prompt + the answer budget over the context: refused, naming
                  --ruler-lengths and --ruler-max-model-len

Public names: ``check_mrcr``.
"""

from __future__ import annotations

from typing import Any

from ..errors import RulerUsageError
from ..lengths import format_length

__all__ = ["check_mrcr"]


def _mrcr_tasks(config: Any) -> list[Any]:
    from ..tasks import get_task

    return [spec for spec in map(get_task, config.tasks) if spec.family == "mrcr"]


def check_mrcr(session: Any, context: int | None) -> None:
    """Refuse what the MRCR items cannot run with (see the module docstring); warn of short bins."""
    config = session.config
    specs = [] if config.no_suite else _mrcr_tasks(config)
    if not specs:
        return
    names = ", ".join(s.name for s in specs)
    if config.mapreduce:
        raise RulerUsageError("--ruler-mapreduce", True, f"map-reduce is not defined for the MRCR tasks ({names}): their question "
                              "asks for the i-th of several identical requests in one chat, which no chunk of it can answer; "
                              "run them without --ruler-mapreduce, or leave them out with --ruler-tasks")
    if not session.frame.source:
        raise RulerUsageError("--ruler-chat-template", config.chat_template,
                              f"the MRCR tasks ({names}) are chats, for chat models only: base prompts (no chat template) are refused; "
                              "use a chat model with --ruler-chat-template=auto (its own template) or pass a Jinja chat template")
    for spec in specs:
        why = session.data_missing(spec.name)
        if why:
            raise RulerUsageError("--ruler-mrcr", None, f"{why}: the MRCR tasks read OpenAI's MRCR records")
    from ..tasks.mrcr import select

    ctx = session.generation_context
    data = ctx.read("mrcr")
    for spec in specs:
        for length in sorted(config.lengths):
            if context is not None and length > context:
                continue  # its items fail as over length, as every task's (run.preflight)
            binned = select(ctx, data, spec.args["n_needles"], length, config.samples)
            where = f"{spec.name} at {format_length(length)} (records whose chat has {length // 2 + 1} to {length} tokens)"
            if not binned.chosen:
                raise RulerUsageError("--ruler-lengths", format_length(length),
                                      f"no {spec.args['n_needles']}-needle record of {data.label} falls in the bin of {where}, "
                                      f"counted with {ctx.tokenizer.name} and the {ctx.frame.name} template; choose other lengths "
                                      "(the data set's records have 4K to 1M tokens) or pass other records with --ruler-mrcr")
            need = binned.largest + spec.tokens_to_generate
            if context is not None and need > context:
                raise RulerUsageError("--ruler-lengths", format_length(length),
                                      f"{where}: its longest prompt ({binned.largest} tokens) and the answer budget "
                                      f"({spec.tokens_to_generate} tokens) need {need} tokens, over the context of {context}; "
                                      "drop this length, or raise the limit with --ruler-max-model-len if the model supports longer inputs")
            if binned.short:
                session.warn(f"{where}: the bin holds {len(binned.chosen)} of the {config.samples} samples asked "
                             f"(--ruler-samples); its items run {len(binned.chosen)}")
