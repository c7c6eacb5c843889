"""The report's ``arms`` (``--ruler-arm``; results.arms), described with the blocks of ``report.schema_blocks``.

    arms_schema() ──► the node ``report.schema.build_schema`` adds as the top-level ``arms``

Public names: ``arms_schema``.
"""

from __future__ import annotations

from .schema_blocks import Node, arr, obj, opt, ref, t

__all__ = ["arms_schema"]


def arms_schema() -> Node:
    """The ``arms`` entry: the reference arm, the test, and per arm its cells compared with the reference."""
    points = {"type": "number"}
    example = obj("A question the two arms scored differently.", {
        "seed": t("integer", "The item's seed."), "index": t("integer", "The sample's index within its item."),
        "prompt_hash": opt("string", "Hash of the prompt (the same question in both arms)."),
        "answers": arr("The reference answers.", {"type": "string"}),
        "reference_prediction": t("string", "The reference arm's answer (scrubbed of secrets)."),
        "arm_prediction": t("string", "This arm's answer (scrubbed of secrets)."),
        "reference_score": t("number", "The reference arm's score in [0, 1]."),
        "arm_score": t("number", "This arm's score in [0, 1]."),
    })
    cell = obj("One (task, length, mode) cell, pooled over seeds, paired question by question.", {
        "task": t("string", "Task."), "length": t("integer", "Length in tokens."), "mode": t("string", "native or mapreduce."),
        "pairs": t("integer", "Questions both arms answered (same prompt hash).", minimum=0),
        "reference_score": t("number", "The reference arm's score over the pairs, points."),
        "arm_score": t("number", "This arm's score over the pairs, points."),
        "difference": t("number", "Mean of (arm - reference) per question, points."),
        "difference_ci95": arr("Its 95 % interval [low, high], points (betting interval, valid at any n).", points),
        "lost": t("integer", "Questions this arm scored lower on.", minimum=0),
        "gained": t("integer", "Questions this arm scored higher on.", minimum=0),
        "lost_examples": arr("Up to two questions lost, with both answers.", example),
        "gained_examples": arr("Up to two questions gained, with both answers.", example),
        "status": t("string", "With a margin: shown, refuted or not shown; without: drop or no significant drop."),
        "p_shown": t("number", "p-value of H0 'difference <= -margin' (non-inferiority shown when rejected)."),
        "p_refuted": t("number", "p-value of H0 'difference >= -margin' (refuted when rejected)."),
        "p_shown_adjusted": t("number", "p_shown, Holm-corrected over the arm's cells."),
        "p_refuted_adjusted": t("number", "p_refuted, Holm-corrected over the arm's cells."),
        "p_drop_adjusted": t("number", "Without a margin: the paired drop test's p-value, Holm-corrected."),
    })
    arm = obj("One arm.", {
        "name": t("string", "The arm's name (--ruler-arm=NAME:...)."),
        "reference": t("boolean", "The reference arm (the first given): the report's items and Table 3 are its."),
        "status": opt("string", "passed, failed or not decided (null for the reference arm)."),
        "settings": t("object", "What the arm changes: backend, dtype, base_url, model, max_model_len, engine options."),
        "engine": {"type": ["object", "null"], "description": "The arm's engine identity (as the top-level engine)."},
        "cells": arr("Its cells compared with the reference arm's (empty for the reference).", cell),
        "unpaired_items": t("integer", "Its items with no counterpart in the reference arm, or errored.", minimum=0),
        "prompt_mismatches": arr("Cells where its prompts differ from the reference's (fails the run).", obj("A cell.", {
            "task": t("string", "Task."), "length": t("integer", "Length."), "mode": t("string", "Mode.")})),
        "errored_items": arr("Its items that errored (each fails the run).", obj("An item.", {
            "task": t("string", "Task."), "length": t("integer", "Length."), "seed": t("integer", "Seed."), "mode": t("string", "Mode.")})),
        "items": arr("Its items (the reference arm's are the report's items).", ref("item")),
    }, required=("name", "reference", "status", "cells"))
    return obj("--ruler-arm: each arm run on the reference arm's samples and compared with it (results.arms).", {
        "reference": t("string", "The reference arm's name."),
        "margin": opt("number", "--ruler-noninferiority-margin, points (null: the paired drop test)."),
        "alpha": t("number", "Significance level (--ruler-baseline-alpha)."),
        "correction": t("string", "The correction over each arm's cells (holm)."),
        "test": t("string", "noninferiority or paired-drop."),
        "interleaving": t("string", "How the arms' work alternates: item (one item per arm, side by side)."),
        "arms": arr("Every arm, the reference first.", arm),
    }, required=("reference", "margin", "arms"), nullable=True)
