"""The report's ``mrcr`` entry in the JSON Schema: the MRCR pack's named aggregates (``results.mrcr``).

    mrcr_schema() ──► the node of the top-level field ``mrcr`` (``report.schema.build_schema`` adds it)

Public names: ``mrcr_schema``.
"""

from __future__ import annotations

from .schema_blocks import Node, arr, mapping, obj, opt, t

__all__ = ["mrcr_schema"]


def mrcr_schema() -> Node:
    score = {"type": "number", "minimum": 0, "maximum": 100}
    cell = obj("One bin of one needle count.", {
        "score": t("number", "The mean over the cell's items (its seeds) of the item score: MRCR's grade × 100, averaged "
                   "over the bin's records.", minimum=0, maximum=100),
        "samples": t("integer", "Records graded in the cell (a bin may hold fewer than --ruler-samples).", minimum=0),
        "items": t("integer", "Items (seeds) behind the cell.", minimum=0),
    }, required=("score", "samples", "items"))
    needle = obj("One needle count's aggregates.", {
        "task": t("string", "The task (mrcr_2, mrcr_4, mrcr_8 or a custom task of the mrcr family)."),
        "per_length": mapping("Per bin (the length L in tokens, as a string key: records with L/2 < tokens <= L).", cell,
                              keys="^[1-9][0-9]*$"),
        "lengths": arr("The bins with a score, ascending.", {"type": "integer"}),
        "mean": opt("number", "The plain mean over the bins of their scores (null: no bin scored).", minimum=0, maximum=100),
        "label": t("string", "The mean's name, as vendors quote it: MRCR <n>-needle, <shortest>–<longest bin>."),
        "auc_log_length": opt("number", "The area under the score over log2(length), divided by the span of log2(length) "
                              "(points; trapezoids between the bins); null with fewer than two bins.", minimum=0, maximum=100),
    }, required=("task", "per_length", "lengths", "mean", "label", "auc_log_length"))
    return obj("The MRCR pack's named aggregates (runs with mrcr_2, mrcr_4 or mrcr_8; docs/mrcr.md).", {
        "needles": mapping("Per needle count (2, 4, 8 as a string key).", needle, keys="^[0-9]+$"),
        "marks": obj("The pack's default pass marks and their source (used unless ruler_task_thresholds or --ruler-threshold "
                     "says otherwise).", {"defaults": mapping("Per task, its default mark.", dict(score)),
                                          "source": t("string", "Where the marks come from.")}),
        "protocol": t("string", "How this run's decoding differs from the reference protocol (temperature 1 there, greedy here)."),
        "grade": t("string", "The grade, in words."),
        "bins": t("string", "How records are binned by length, in words."),
    }, required=("needles", "protocol"))
