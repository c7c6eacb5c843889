"""The JSON Schema of the report format ``pytest-ruler/1``, what ``--ruler-report`` and ``pytest-ruler merge`` write.

    build_schema() ──► the schema (JSON Schema draft 2020-12): every field the report writer
        (``results.report.Report.to_dict``, ``run.outcome``, ``results.gate``, ``results.merge``) writes,
        with its type and description
    docs_gen ──► schema.json (package data, beside this module) and docs/reference/report.md;
        a test fails when either differs from what build_schema() gives now
    report_schema() ──► the shipped schema.json (``pytest-ruler schema`` prints it)
    validate_report(data, strict=) ──► the problems of a report, in words ([] when it validates);
        needs ``jsonschema`` (the ``test`` extra); strict: a field the schema does not describe is a problem
        too (the tests run fresh reports strictly, so a new field cannot go undocumented)

The schema is open (fields may be added within ``pytest-ruler/1``; readers ignore the ones they
do not know); its required fields are those every ``pytest-ruler/1`` report has had, so the
reports committed under bench/results/ validate too. Nothing here is used when a run writes a
report: the writer is the source, this is its description.

A feature's own part of the report is described in its own module (``report.schema_*``, with the blocks of
``report.schema_blocks``) and added to ``build_schema`` in one line.

Public names: ``build_schema``, ``report_schema``, ``schema_text``, ``strict_schema``, ``validate_report``.
"""

from __future__ import annotations

import copy
import json
import re
from importlib import resources
from typing import Any

from ..errors import RulerUsageError
from .schema_arms import arms_schema
from .schema_blocks import Node, arr, mapping, obj, opt, ref, t
from .schema_replay import replay_fields
from .schema_history import history_fields
from .schema_mrcr import mrcr_schema

__all__ = ["build_schema", "report_schema", "schema_text", "strict_schema", "validate_report"]


def build_schema() -> dict[str, Any]:
    """The report's JSON Schema, built from the descriptions below (see the module docstring)."""
    SCORE = {"type": "number", "minimum": 0, "maximum": 100}  # points
    LENGTH_KEY = "^[1-9][0-9]*$"  # a length in tokens as an object key

    def count(desc: str) -> Node:
        return t("integer", desc, minimum=0)

    def score(desc: str) -> Node:
        return t("number", desc, minimum=0, maximum=100)

    def ci95(desc: str) -> Node:
        return opt("array", desc, items={"type": "number"}, minItems=2, maxItems=2)

    cost = {"prompt_tokens": count("Prompt tokens."), "completion_tokens": count("Completion tokens."),
            "engine_seconds": t("number", "Engine seconds (engine work, not wall time; an answer from the cache counts when it was made).", minimum=0)}
    interval = obj("A mean's 95 % interval, in points.", {
        "score": t("number", "The mean, in points."),
        "n": count("Samples behind it (cells only)."),
        "stderr": t("number", "Its standard error, in points.", minimum=0),
        "ci95": ci95("Its 95 % interval [low, high], in points."),
    }, extra=False, nullable=True)

    summary = obj("One mode's Table 3 over its items: computed from the items, never read back (a reader recomputes it and "
                  "refuses a report whose stored summary differs).", {
        "per_length": mapping("The Total row: per tested length (tokens, as a string key), the mean score over the Total's tasks.",
                              score("Mean score at this length, in points."), keys=LENGTH_KEY),
        "avg": opt("number", "Avg: the mean of per_length; null when a length is not established (an errored item)."),
        "wavg_inc": opt("number", "wAvg(inc): per_length weighted by length, longer lengths weighing more (the paper's weights)."),
        "wavg_dec": opt("number", "wAvg(dec): per_length weighted against length, shorter lengths weighing more."),
        "effective_length": opt("integer", "Effective length: the longest tested length up to which the Total stays above the "
                                "threshold; null when even the shortest is not above it.", minimum=1),
        "per_task_effective_length": mapping("Each task's own effective length (null: below the threshold at its shortest length).",
                                             opt("integer", "Effective length in tokens.")),
        "intervals": obj("95 % intervals of the cells and of the Total row (null without per-sample scores).", {
            "level": t("number", "Confidence level (0.95)."),
            "cells": mapping("Per task, per length (string key): the cell's interval.",
                             mapping("Per length.", ref("interval"))),
            "per_length": mapping("Per length: the Total's interval.", ref("interval")),
            "avg": ref("interval", "Avg's interval."),
            "wavg_inc": ref("interval", "wAvg(inc)'s interval."),
            "wavg_dec": ref("interval", "wAvg(dec)'s interval."),
        }, nullable=True),
        "effective_length_bound": opt("integer", "The effective length's lower confidence bound at bound_confidence "
                                      "(--ruler-gate-confidence gates on it)."),
        "per_task_effective_length_bound": mapping("Each task's effective-length lower bound.", opt("integer", "Length in tokens.")),
        "bound_confidence": t("number", "Confidence level of the bounds."),
        "threshold": score("The pass mark the summary used."),
        "task_thresholds": mapping("Each task's pass mark.", dict(SCORE)),
        "total_tasks": arr("The tasks the Total row averages: those tested at every length.", {"type": "string"}),
        "partial_tasks": mapping("Tasks left out of the Total (not tested at every length): their tested lengths.",
                                 {"type": "array", "items": {"type": "integer"}}),
        "errors": count("Items of this mode that errored (no trustworthy score)."),
        "errored_lengths": arr("Lengths where an item errored: the Total is not established there.", {"type": "integer"}),
        "errored": arr("The errored items.", obj("An errored item.", {
            "task": t("string", "Task."), "length": t("integer", "Length in tokens."), "seed": t("integer", "Seed."),
            "error": t("string", "Why it errored.")})),
        "outcomes": mapping("Thinking models: per task, per length, what happened to the samples' tokens "
                            "(see items[].thinking).", mapping("Per length.", {"type": "object"})),
    }, required=("per_length", "avg", "wavg_inc", "wavg_dec", "effective_length"), nullable=True)

    failure = obj("A failing sample, shown in the failure message. pred and outputs are left out where they equal the "
                  "sample's predictions record.", {
        "index": count("The sample's index."),
        "pred": t("string", "The prediction (only where it differs from the predictions record, e.g. an engine error)."),
        "outputs": arr("The reference answers.", {"type": "string"}),
    }, required=("index",))

    prediction = obj("One sample: what the model answered and how it scored.", {
        "index": count("The sample's index within its item."),
        "prediction": t("string", "The model's answer (scrubbed of secrets)."),
        "answers": arr("The reference answers.", {"type": "string"}),
        "score": t("number", "The sample's score in [0, 1] by the task's metric.", minimum=0, maximum=1),
        "prompt_hash": t("string", "Hash of the prompt: the same question in another run has the same hash (paired baseline tests)."),
        "outcome": t("string", "Thinking models: answered, thinking_truncated, answer_truncated, empty_answer or end_missing."),
        "thinking_tokens": count("Thinking models: tokens spent thinking."),
        "answer_tokens": count("Thinking models: tokens of the answer."),
        "finish_reason": t("string", "Why the engine stopped (stop, length)."),
    }, required=("index", "prediction", "answers", "score"))

    call = obj("A map-reduce engine call.", {
        "sample": count("The sample it served."),
        "stage": t("string", "map, collapse or reduce."),
        "round": count("Collapse round (0 for map)."),
        "parts": t("string", "The chunks or records it read."),
        "prompt_tokens": count("Prompt tokens."),
        "completion_tokens": count("Completion tokens."),
        "finish_reason": t("string", "Why the engine stopped."),
        "seconds": t("number", "Seconds it took.", minimum=0),
        "cached": t("boolean", "Served from the prediction cache."),
        "parse": t("string", "How its structured output parsed (ok, or what was wrong)."),
        "answer": t("string", "The answer it extracted."),
        "confidence": opt("number", "The confidence it gave."),
        "dropped": arr("Claimed values dropped because its chunk does not contain them.", {"type": "string"}),
        "output": t("string", "The raw output."),
        "outcome": t("string", "Thinking models: what happened to its tokens."),
        "thinking_tokens": count("Thinking models: tokens spent thinking."),
    })

    stage_counts = obj("Protocol compliance of one stage's records.", {
        "records": count("Records."), "four_fields": count("Records with all four fields."),
        "confidence": count("Records with a confidence."), "parse_failures": count("Records that did not parse.")})

    mr = obj("A map-reduce item's chunked run: chunks, rounds, malformed records, its options.", {
        "chunks": arr("Chunks per sample.", {"type": "integer"}),
        "rounds": count("Collapse rounds."),
        "calls_per_stage": mapping("Engine calls per stage (map, collapse, reduce).", {"type": "integer"}),
        "malformed": count("Records that did not parse."),
        "completion_tokens": count("Completion tokens over its calls."),
        "window": t("integer", "Tokens one call could use."),
        "strategy": t("string", "How the reduce answered: the model chose (retrieve) or code followed the records (chain, count, ...)."),
        "grounding": t("string", "What code checked: literal (claimed values must be in their chunk's text) or none."),
        "compliance": obj("Protocol compliance counts per stage.", {"map": stage_counts, "collapse": stage_counts}),
        "config": obj("The map-reduce options (--ruler-mapreduce-*).", {
            "chunk_tokens": t("integer", "Document tokens per chunk."), "overlap": count("Tokens repeated between chunks."),
            "window": opt("integer", "Tokens one call may use (null: the engine's context)."),
            "max_rounds": count("Most collapse rounds."), "parallel": opt("integer", "Requests per engine call (null: all)."),
            "record_tokens": t("integer", "Tokens per map record."), "verify": t("boolean", "Values not in their chunk are dropped."),
            "calibration": t("boolean", "Confidences are calibrated."), "layout": t("string", "Map prompt layout."),
        }),
    })

    endpoint = obj("One server's share of the calls.", {
        "requests": count("Requests it answered."), "seconds": t("number", "Seconds spent.", minimum=0),
        "prompt_tokens": count("Prompt tokens."), "cached_tokens": count("Prompt tokens served from its prefix cache (where reported)."),
        "cached_untrusted": count("Answers whose cached count could not be true (left out)."),
        "cached_share": opt("number", "cached_tokens / prompt_tokens (top level only)."),
        "moved_off": count("Requests moved to another server after it failed."),
    })

    thinking = obj("A thinking model's counts for the item (--ruler-think-budget); absent for other models.", {
        "outcomes": mapping("Samples per outcome (answered, thinking_truncated, answer_truncated, empty_answer, end_missing).",
                            {"type": "integer"}),
        "thinking_tokens": count("Tokens spent thinking."), "answer_tokens": count("Tokens of the answers."),
        "think_budget": opt("integer", "The think budget."),
        "budget_failures": count("Failing samples cut inside their thinking."),
        "budget_limited": t("boolean", "The budget, not the model, failed most failing samples."),
    })

    item = obj("One item: a task at a length with a seed, native or map-reduce.", {
        "task": t("string", "Task name (niah_single_1, vt, ...)."),
        "length": t("integer", "Target length in tokens.", minimum=1),
        "seed": t("integer", "Seed.", minimum=0),
        "mode": t("string", "native (the whole prompt at once) or mapreduce (chunked inference).", enum=["native", "mapreduce"]),
        "arm": t("string", "--ruler-arm: the arm that answered (absent without arms; see arms)."),
        "samples": count("Samples asked for."),
        "score": score("The item's score: the task's RULER metric over its samples, in points."),
        "threshold": score("The item's pass mark."),
        "passed": t("boolean", "Score above its mark and no error."),
        "nulls": count("Empty predictions."),
        "seconds": t("number", "Wall time of the item.", minimum=0),
        "over_length": count("Samples whose prompt the model's context could not take (they score 0)."),
        "errors": count("Samples whose engine call failed."),
        "cached": count("Predictions read from the prediction cache."),
        "engine_calls": count("Engine calls made."),
        "prompt_tokens": count("Prompt tokens sent."),
        "failures": arr("Up to three failing samples.", ref("failure")),
        "reasons": arr("Why the item failed, in words.", {"type": "string"}),
        "depth_scores": {"type": ["object", "array"], "description": "Needle-depth sweep (--ruler-depths): {depth: score}; "
                         "older reports: a list.", "additionalProperties": {"type": "number"}},
        "error": opt("string", "Why the item has no trustworthy score (engine, data, worker crash); null when it has one."),
        "sample_scores": arr("Each sample's score in [0, 1], in sample order.", {"type": "number", "minimum": 0, "maximum": 1}),
        "sample_hashes": arr("Each sample's prompt hash, in sample order.", {"type": "string"}),
        "stopped": opt("string", "--ruler-sequential: why the item stopped before its last sample."),
        "predictions": arr("Every sample's prediction, answers and score.", ref("prediction")),
        "prefix_cache": obj("The engine's prefix cache over the item's calls, where the engine reports it.", {
            "prompt_tokens": count("Prompt tokens of the calls that reported."),
            "cached_tokens": count("Of those, served from the cache."),
            "untrusted": count("Answers whose count could not be true (left out)."),
        }),
        "endpoints": mapping("Per server URL (--ruler-base-url): its share of the item's calls.", ref("endpoint")),
        "cost": obj("What the item cost ({} when unknown: an errored item).", cost),
        "samples_used": count("Samples scored (fewer than samples when --ruler-sequential stopped early)."),
        "stderr": opt("number", "Standard error of the score, in points (null: errored or no per-sample scores).", minimum=0),
        "ci95": ci95("95 % interval of the score [low, high], in points."),
        "thinking": ref("thinking", "A thinking model's counts (--ruler-think-budget); absent for other models."),
        "mapreduce": ref("mapreduce", "Map-reduce items: the chunked run."),
        "calls": arr("Map-reduce items: one record per engine call.", ref("call")),
    }, required=("task", "length", "seed", "mode", "samples", "score", "threshold", "passed", "nulls", "seconds"))

    gate = obj("An effective-length gate (--ruler-require-effective-length).", {
        "required_effective_length": opt("integer", "The required length in tokens; null when no gate was asked."),
        "passed": opt("boolean", "true passed, false failed, null not decided (or no gate)."),
        "effective_length": opt("integer", "The effective length it judged."),
        "reason": opt("string", "Why it did not pass."),
        "threshold": t("string", "Under a relative mark (rel:F): the mark, in words."),
        "confidence": opt("number", "--ruler-gate-confidence: the level of the bound it gated on."),
        "effective_length_bound": opt("integer", "The lower confidence bound it gated on."),
    }, required=("required_effective_length", "passed"))

    comparison = obj("One cell (task, length, mode), baseline against this run.", {
        "task": t("string", "Task."), "length": t("integer", "Length."), "mode": t("string", "Mode."),
        "baseline_score": t("number", "Baseline score, points (pooled over seeds)."),
        "current_score": t("number", "This run's score, points."),
        "baseline_n": count("Baseline samples."), "current_n": count("This run's samples."),
        "delta": t("number", "current_score - baseline_score (negative: a drop)."),
        "p_value": t("number", "Adjusted p-value the decision used."),
        "significant": t("boolean", "A significant drop."),
        "test": t("string", "Test used (two-proportion-z, fisher, mcnemar, sign-flip, sign)."),
        "alpha": t("number", "Significance level."),
        "raw_p_value": t("number", "p-value before the multiple-comparison correction."),
        "correction": t("string", "Multiple-comparison correction (holm)."),
        "baseline_successes": count("Baseline passing samples."), "current_successes": count("This run's passing samples."),
        "min_drop": t("number", "Smallest drop that counts, points."),
        "exact_fallback": t("boolean", "The z-test fell back to Fisher's exact test."),
        "cells": count("Comparisons the correction was over."),
        "paired": count("Shared questions compared pairwise (0: unpaired)."),
        "lost": count("Paired questions that scored lower."), "gained": count("Paired questions that scored higher."),
        "effect": opt("number", "Paired: mean change per question, points."),
        "effect_ci": opt("array", "Paired: 95 % interval of effect.", items={"type": "number"}),
        "note": opt("string", "Why a cell was not paired."),
        "margin": opt("number", "--ruler-noninferiority-margin, points (null: the drop test)."),
        "noninferiority": opt("string", "With a margin: shown, refuted (it fails) or not shown."),
        "p_shown": opt("number", "With a margin: Holm-adjusted p-value of 'worse than the baseline by the margin or more'."),
        "p_refuted": opt("number", "With a margin: Holm-adjusted p-value of 'within the margin'."),
    })

    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "pytest-ruler report (pytest-ruler/1)",
        "description": "The JSON report pytest --ruler-report=PATH writes (and pytest-ruler merge). Fields may be added within "
                       "pytest-ruler/1; readers ignore the ones they do not know. Required fields are those every "
                       "pytest-ruler/1 report has had.",
        "type": "object",
        "properties": {
            "schema": t("string", "The report format: pytest-ruler/1.", const="pytest-ruler/1"),
            "complete": t("boolean", "false when the run was interrupted or stopped before every item ran."),
            "model": t("string", "The model (--ruler-model)."),
            "backend": t("string", "The engine that ran (hf, vllm, openai, ray, scripted or a registered name)."),
            "tokenizer": t("string", "The tokenizer that measured the lengths."),
            "haystack_corpus": t("string", "The haystack text the tasks used (essays, noise, ...)."),
            "threshold": score("The pass mark (--ruler-threshold); under rel:F the mark resolved on this run's scores."),
            "task_thresholds": mapping("Per-task pass marks (ini ruler_task_thresholds; under rel:F each task's resolved mark).", dict(SCORE)),
            "items": arr("Every item that ran, sorted by mode, length, task and seed.", ref("item")),
            "summary": obj("Table 3 per mode: native, and mapreduce (null when the mode has no items).", {
                "native": ref("summary", "Table 3 of the native items (the whole prompt at once); null without them."),
                "mapreduce": ref("summary", "Table 3 of the map-reduce items (--ruler-mapreduce); null without them.")}, extra=False),
            "gate": ref("gate", "The native effective-length gate; both fields null without --ruler-require-effective-length."),
            "mapreduce_gate": ref("gate", "The map-reduce gate (--ruler-require-mapreduce-effective-length)."),
            "baseline": obj("The comparison with --ruler-baseline.", {
                "path": opt("string", "The baseline report's path."), "test": t("string", "The test asked for."),
                "alpha": t("number", "Significance level."), "passed": opt("boolean", "No significant drop (null: not decided)."),
                "margin": opt("number", "--ruler-noninferiority-margin: passed means non-inferiority shown in every cell."),
                "comparisons": arr("One per cell both runs have.", ref("comparison")),
                "reason": t("string", "Why it was not decided."),
                "engine_differences": arr("How the baseline's engine differs from this run's.", {"type": "string"}),
            }),
            "mapreduce_vs_native": arr("Each item run both ways, side by side.", obj("One item, both modes.", {
                "task": t("string", "Task."), "length": t("integer", "Length."), "seed": t("integer", "Seed."),
                "native": t("number", "Native score."), "mapreduce": t("number", "Map-reduce score."),
                "native_passed": t("boolean", "Native passed."), "mapreduce_passed": t("boolean", "Map-reduce passed."),
                "rescued": t("boolean", "Map-reduce passed where native failed."),
                "grounding": opt("string", "The map-reduce item's grounding."),
            })),
            "prefix_cache": obj("The engine's prefix cache over the run's calls, where reported.", {
                "prompt_tokens": count("Prompt tokens of the calls that reported."),
                "cached_tokens": count("Of those, served from the cache."),
                "share": opt("number", "cached_tokens / prompt_tokens."),
                "untrusted": count("Answers whose count could not be true (left out)."),
            }, nullable=True),
            "endpoints": mapping("Per server URL (--ruler-base-url): its share of the run's calls.", ref("endpoint"), nullable=True),
            "cost": obj("What the run's items cost, summed (items not measured cost nothing).", {
                **cost, "items": count("Items it adds up.")}, nullable=True),
            "chat_template": opt("string", "The prompt template (chat:<model>, base, or a file)."),
            "samples_per_item": t("integer", "Samples per item asked for (--ruler-samples)."),
            "seeds": arr("The seeds (--ruler-seeds).", {"type": "integer"}),
            "preset": t("string", "The preset (--ruler-preset)."),
            "provenance": obj("Where the report came from.", {
                "created": t("string", "When, ISO 8601 UTC."),
                "versions": mapping("Versions of pytest-ruler, Python, torch, transformers, vllm (null: not installed).",
                                    {"type": ["string", "null"]}),
                "command": arr("The command line, secrets scrubbed.", {"type": "string"}),
                "git_commit": opt("string", "HEAD of the repository it ran in."),
            }, nullable=True),
            "engine": obj("The engine's identity (the prediction cache's key): backend, class, options, library versions, and "
                          "the engine's own entries (model, dtype, model revision or weights digest, ...), which depend on the engine.", {
                "backend": t("string", "Engine name."), "class": t("string", "Engine class."),
                "options": t("object", "Engine options (secrets scrubbed)."),
                "versions": mapping("Engine library versions.", {"type": ["string", "null"]}),
            }, extra=True, nullable=True),
            **replay_fields(),  # record, replay (report.schema_replay)
            "arms": arms_schema(),
            "shard": obj("--ruler-shard=I/N: this report is one shard's (merge them with pytest-ruler merge).", {
                "index": t("integer", "I.", minimum=1), "count": t("integer", "N.", minimum=1),
                "suite": t("object", "The settings that chose the items (every shard must agree)."),
            }, required=("index", "count")),
            "shards": obj("A merged report (pytest-ruler merge): its shards.", {
                "count": t("integer", "N.", minimum=1),
                "merged": arr("The shards merged.", {"type": "integer"}),
                "missing": arr("The shards missing (--partial).", {"type": "integer"}),
                "suite": t("object", "The shards' common settings."),
                "reports": arr("Each shard's file and provenance.", {"type": "object"}),
            }, required=("count", "merged", "missing")),
            "mrcr": mrcr_schema(),
            "relative_threshold": obj("--ruler-threshold=rel:F: how the mark was resolved.", {
                "fraction": t("number", "F."), "base_length": opt("integer", "The shortest tested length."),
                "base_score": opt("number", "The Total's score there."),
                "task_bases": mapping("Each task's score at its shortest length.", {"type": ["number", "null"]}),
                "resolved_at": t("string", "merge: a shard's marks are resolved when the shards are merged."),
            }),
            **history_fields(),
            "items_expected": opt("integer", "Items the run collected.", minimum=0),
            "items_finished": opt("integer", "Items that finished.", minimum=0),
            "warnings": arr("Warnings of the run, in words.", {"type": "string"}),
            "interrupted": t("boolean", "The run was interrupted (Ctrl-C): its verdict is not decided."),
            "skipped": arr("Suite items that were skipped, with their reasons.", obj("A skipped item.", {
                "item": t("string", "Test id."), "task": t("string", "Task."), "length": t("integer", "Length."),
                "seed": t("integer", "Seed."), "mode": t("string", "Mode."),
                "reason": t("string", "Why it was skipped (--ruler-stop-when-decided: \"not measured (decided without it): ...\")."),
            })),
            "verdict": obj("The run's verdict: what decided its exit status.", {
                "status": t("string", "passed, failed or not decided.", enum=["passed", "failed", "not decided"]),
                "passed": opt("boolean", "true, false, or null (not decided)."),
                "exit_status": t("integer", "The exit code: 0 passed, 1 failed, 2 not decided."),
                "gated": t("boolean", "A gate, a baseline or a relative mark decided the run."),
                "line": t("string", "The terminal's last line, ruler verdict: ..."),
                "reasons": arr("Each reason.", obj("A reason.", {
                    "kind": t("string", "What it is about (gate, baseline, errors, items, incomplete, shard, planned, ...)."),
                    "status": t("string", "passed, failed, not decided or note."),
                    "text": t("string", "The reason, in words."),
                    "cells": arr("The cells it rests on.", obj("A cell.", {
                        "task": t("string", "Task."), "length": t("integer", "Length."), "mode": t("string", "Mode.")})),
                })),
            }, required=("status", "passed", "exit_status")),
        },
        "required": ["schema", "model", "backend", "tokenizer", "haystack_corpus", "threshold", "items", "summary", "gate"],
        "$defs": {"item": item, "summary": summary, "interval": interval, "failure": failure, "prediction": prediction,
                  "call": call, "mapreduce": mr, "endpoint": endpoint, "thinking": thinking, "gate": gate, "comparison": comparison},
    }


# --------------------------------------------------------------------------- the shipped file, checks, fields


def schema_text(schema: dict[str, Any]) -> str:
    """The schema as schema.json holds it: indented JSON, short lists on one line, a final newline."""
    text = json.dumps(schema, indent=2, ensure_ascii=False)
    return re.sub(r"\[\n\s+([^\[\]{}]*?)\n\s*\]", lambda m: "[" + re.sub(r",\n\s+", ", ", m.group(1)) + "]", text) + "\n"


def report_schema() -> dict[str, Any]:
    """The shipped schema (package data ``pytest_ruler/report/schema.json``)."""
    return json.loads(resources.files(__package__).joinpath("schema.json").read_text(encoding="utf-8"))


def strict_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """A copy where every object that lists its properties allows no others (unless it says it does)."""

    def close(node: Any) -> None:
        if isinstance(node, dict):
            if "properties" in node and "additionalProperties" not in node:
                node["additionalProperties"] = False
            for value in node.values():
                close(value)
        elif isinstance(node, list):
            for value in node:
                close(value)

    out = copy.deepcopy(schema)
    close(out)
    return out


def validate_report(data: Any, *, strict: bool = False, schema: dict[str, Any] | None = None) -> list[str]:
    """The problems of ``data`` (a parsed report) against the schema, one line each: where, then what."""
    try:
        import jsonschema
    except ImportError:
        raise RulerUsageError("jsonschema", None, "not installed: pip install jsonschema (or the test extra, "
                              "pip install 'pytest-ruler[test]') to validate reports") from None
    schema = schema or report_schema()
    validator = jsonschema.Draft202012Validator(strict_schema(schema) if strict else schema)
    problems = []
    for error in sorted(validator.iter_errors(data), key=lambda e: list(map(str, e.absolute_path))):
        where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path) or "(the report)"
        problems.append(f"{where.lstrip('.')}: {error.message}")
    return problems

