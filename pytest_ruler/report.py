"""The JSON report (schema ``pytest-ruler/1``): built from item results, computes
nothing beyond the paper's aggregation.

Public names: ``build_report``, ``write_report``, ``summarize_results``.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any, Iterable, Mapping

from .aggregate import summarize
from .session import ItemResult

__all__ = ["build_report", "mapreduce_vs_native", "summarize_results", "write_report"]

SCHEMA = "pytest-ruler/1"


def summarize_results(results: Iterable[ItemResult], threshold: float, mode: str = "native") -> dict[str, Any] | None:
    """Table 3 for one mode: item scores averaged over seeds, then the paper's formulas."""
    by_task: dict[str, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    for r in results:
        if r.mode == mode:
            by_task[r.task][r.length].append(r.score)
    if not by_task:
        return None
    task_scores = {t: {L: sum(v) / len(v) for L, v in ls.items()} for t, ls in by_task.items()}
    return summarize(task_scores, threshold=threshold).to_dict()


def mapreduce_vs_native(results: Iterable[ItemResult]) -> list[dict[str, Any]]:
    """Each item run both ways: scores side by side; ``rescued`` = native fails, map-reduce passes."""
    native = {(r.task, r.length, r.seed): r for r in results if r.mode == "native"}
    out = []
    for r in results:
        n = native.get((r.task, r.length, r.seed)) if r.mode == "mapreduce" else None
        if n is not None:
            out.append({"task": r.task, "length": r.length, "seed": r.seed, "native": n.score, "mapreduce": r.score,
                        "native_passed": n.passed, "mapreduce_passed": r.passed, "rescued": (not n.passed) and r.passed})
    return out


def build_report(*, model: str, backend: str, tokenizer: str, haystack_corpus: str, threshold: float,
                 results: Iterable[ItemResult], required_effective_length: int | None = None,
                 gate_passed: bool | None = None, extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    results = sorted(results, key=lambda r: (r.mode, r.length, r.task, r.seed))
    keys = ("task", "length", "seed", "mode", "samples", "score", "threshold", "passed", "nulls", "seconds",
            "over_length", "errors", "cached", "engine_calls", "prompt_tokens", "failures", "reasons", "depth_scores")
    items = []
    for r in results:
        d = r.to_dict()
        item = {k: d[k] for k in keys}
        if r.mode == "mapreduce":  # per-call records: trace a failure to map, collapse or reduce
            item["mapreduce"] = d["mapreduce"]
            item["calls"] = d["calls"]
        items.append(item)
    report = {
        "schema": SCHEMA,
        "model": model,
        "backend": backend,
        "tokenizer": tokenizer,
        "haystack_corpus": haystack_corpus,
        "threshold": threshold,
        "items": items,
        "summary": {
            "native": summarize_results(results, threshold, "native"),
            "mapreduce": summarize_results(results, threshold, "mapreduce"),
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
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(report, fh, indent=2)
        fh.write("\n")
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600; a report is an ordinary file (CI artifacts)
    os.replace(tmp, path)
    return path
