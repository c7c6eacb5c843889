"""The JSON report (schema ``pytest-ruler/1``): built from item results, computes
nothing beyond the paper's aggregation.

The summary's floats (per-length means, Avg, wAvg) are stored rounded to
``SUMMARY_DIGITS`` decimals (``43.6667``, not ``43.666669999999996``). Effective
lengths and the gate are decided on the unrounded values, by ``summarize_results``,
before the rounding; tables print one decimal.

Public names: ``build_report``, ``write_report``, ``summarize_results``.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any, Iterable, Mapping

from ..results import ItemResult, mapreduce_vs_native, summarize_results
from ..results.item import SCHEMA
from ..secrets import scrub

__all__ = ["SUMMARY_DIGITS", "build_report", "mapreduce_vs_native", "summarize_results", "write_report"]

SUMMARY_DIGITS = 4


def _stored(summary: dict[str, Any] | None) -> dict[str, Any] | None:
    """A mode's summary as stored: its means (per length, Avg, wAvg) rounded to ``SUMMARY_DIGITS``."""
    if summary is None:
        return None
    out = dict(summary, per_length={L: round(v, SUMMARY_DIGITS) for L, v in summary["per_length"].items()})
    for key in ("avg", "wavg_inc", "wavg_dec"):
        if isinstance(out.get(key), float):
            out[key] = round(out[key], SUMMARY_DIGITS)
    return out


def _item_interval(r: ItemResult) -> dict[str, Any]:
    """The item's own error bar (user contract: ``stderr``, a 95 % interval ``ci95``, and
    ``samples_used``, which --ruler-sequential can make fewer than asked): from its
    per-sample scores, as a cell's (results.intervals); None without them or when it errored."""
    from ..results.intervals import cell_interval

    iv = cell_interval(r.sample_scores, r.score) if r.error is None else None
    return {"samples_used": len(r.sample_scores) or r.samples,
            "stderr": round(iv["stderr"], 4) if iv else None,
            "ci95": [round(v, 4) for v in iv["ci95"]] if iv else None}


def build_report(*, model: str, backend: str, tokenizer: str, haystack_corpus: str, threshold: float,
                 results: Iterable[ItemResult], task_thresholds: Mapping[str, float] | None = None,
                 required_effective_length: int | None = None,
                 gate_passed: bool | None = None, extra: Mapping[str, Any] | None = None,
                 complete: bool = True) -> dict[str, Any]:
    results = sorted(results, key=lambda r: (r.mode, r.length, r.task, r.seed))
    keys = ("task", "length", "seed", "mode", "samples", "score", "threshold", "passed", "nulls", "seconds",
            "over_length", "errors", "cached", "engine_calls", "prompt_tokens", "failures", "reasons", "depth_scores", "error",
            "sample_scores", "sample_hashes", "stopped", "predictions")
    items = []
    for r in results:
        d = r.to_dict()
        item = {k: d[k] for k in keys}
        item.update(_item_interval(r))
        if r.mode == "mapreduce":  # per-call records: trace a failure to map, collapse or reduce
            item["mapreduce"] = d["mapreduce"]
            item["calls"] = d["calls"]
        items.append(item)
    report = {
        "schema": SCHEMA,
        "complete": complete,  # false: interrupted or stopped before every item ran
        "model": model,
        "backend": backend,
        "tokenizer": tokenizer,
        "haystack_corpus": haystack_corpus,
        "threshold": threshold,
        "task_thresholds": dict(task_thresholds or {}),  # the ini's per-task marks (the rest use threshold)
        "items": items,
        "summary": {  # effective lengths are computed before the stored floats are rounded
            "native": _stored(summarize_results(results, threshold, "native", task_thresholds)),
            "mapreduce": _stored(summarize_results(results, threshold, "mapreduce", task_thresholds)),
        },
        "gate": {"required_effective_length": required_effective_length, "passed": gate_passed},
    }
    if any(r.mode == "mapreduce" for r in results):
        report["mapreduce_vs_native"] = mapreduce_vs_native(results)
    if extra:
        report.update(extra)
    return report


def write_report(path: str | Path, report: Mapping[str, Any]) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = scrub(json.dumps(report, indent=2)) + "\n"
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600; a report is an ordinary file (CI artifacts)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):  # never leave a half-written .tmp beside the report
            os.unlink(tmp)
    return path
