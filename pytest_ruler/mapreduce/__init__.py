"""LLM×MapReduce: chunked inference, so a short-window model can answer over a long text.

Data flow of a map-reduce item (task × length × seed, mode "mapreduce")::

    generate_samples (the same samples as the native item)
      ──document_for(sample, spec, family)──► Document (instruction, context, question, answer
                                      prefix, task-aware Strategy + hints)
      ──MapReducer(session.complete, tokenizer, frame, config, window).run(documents)──►
         map (chunks) → collapse (bounded) → reduce     [pipeline.py]
      ──Outcome.prediction──► the task's own RULER metric ──► ItemResult(mode="mapreduce",
                                                               calls=[per-call records])

Modules, in the paper's words: ``chunking`` (split at text boundaries, verified
fit), ``protocol`` (the four-field structured information protocol, lenient
parsing), ``strategies`` (task-aware records and in-context confidence
calibration examples per RULER family), ``pipeline`` (map, collapse, reduce).

Public names: ``MapReduceConfig``, ``MapReducer``, ``Document``, ``Outcome``,
``CallRecord``, ``Record``, ``parse_record``, ``chunk_text``, ``Chunk``,
``strategy_for``, ``document_for``, ``grounding_label``, ``grounding_mode``, ``grounding_summary``, ``GROUNDING``, ``ANSWERED_BY``.

What code does to the model's records is named wherever a result is shown:
``grounding_label(item.mapreduce)`` (the item's ``mapreduce.grounding`` mode and its
protocol ``compliance``).
"""

from __future__ import annotations

from typing import Any

from ..errors import RulerUsageError
from .chunking import Chunk, chunk_text, pack, split_units
from .pipeline import CallRecord, Document, MapReduceConfig, MapReducer, Outcome
from .protocol import NO_INFORMATION, Record, format_record, parse_record
from .strategies import ANSWERED_BY, GROUNDING, STRATEGIES, Strategy, grounding_label, grounding_mode, grounding_summary, strategy_for

__all__ = [
    "CallRecord",
    "Chunk",
    "Document",
    "ANSWERED_BY",
    "GROUNDING",
    "MapReduceConfig",
    "MapReducer",
    "NO_INFORMATION",
    "Outcome",
    "Record",
    "STRATEGIES",
    "Strategy",
    "chunk_text",
    "document_for",
    "format_record",
    "grounding_label",
    "grounding_mode",
    "grounding_summary",
    "pack",
    "parse_record",
    "split_units",
    "strategy_for",
]

def document_for(sample: Any, spec: Any, family: Any) -> Document:
    """The map-reduce view of a RULER sample: what any task gives a model, nothing more.

    The context, the task text around it (instruction before, question after) and the
    answer prefix; the strategy and its hints come from the task's ``family`` (the caller
    passes it: ``tasks.get_family(spec.family)``), which reads them from the question text
    (``family.mapreduce_strategy(question)``). A sample's answers and generator metadata
    never reach the pipeline: code never sees the answers.
    """
    if not sample.context or not sample.around_context:
        raise RulerUsageError("--ruler-mapreduce", spec.name, f"family {spec.family!r} does not say where its context is (Rendered.context), so it cannot be chunked; run it natively")
    before, after = sample.around_context
    strategy, hints = strategy_for(family, after, spec.name)
    return Document(
        instruction=before,
        context=sample.context,
        question=after,
        answer_prefix=sample.answer_prefix,
        answer_tokens=sample.tokens_to_generate,
        strategy=strategy,
        hints=hints,
    )
