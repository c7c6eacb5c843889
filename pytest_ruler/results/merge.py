"""Merging shard reports: the reports of ``--ruler-shard=1/N`` ... ``N/N`` into the report of the whole run.

    SHARD.json ... ──merge_files(paths, partial=)──► Report           (``pytest-ruler merge``)
        1. each file through the one reader and check (results.saved.read_report): types, schema,
           a stored summary that its items give
        2. merge_reports([(name, Report), ...], partial=): refuses, naming the conflict and the
           files, one ``RulerUsageError``:
           - a report that is no shard's (no ``shard`` entry, nor a partial merge's ``shards``);
           - shards of different runs: another shard count, or a setting that differs
             (``AGREE``: model, backend, tokenizer, threshold, per-task marks, chat template,
             samples, seeds, preset, and the suite's tasks, lengths, depths, ..., the thinking settings
             (think budget, chat template kwargs, think markers) ``shard.SUITE_SETTINGS``);
           - shards run on other engines: their ``engine`` entries differ
             (``results.identity.engine_differences``: backend, class, dtype, mode, library
             versions, ...; each field named with both values);
           - the same shard twice, or the same item (task, length, seed, mode) in two reports;
           - a missing shard, unless ``partial``
        3. the merged report: ``Report.of_results`` over every shard's items, so its summary
           (Table 3, effective lengths, intervals) is computed by results.summary / results.aggregate
           from the items, as a run's is, never added up from the shards' summaries. The run's
           counts are the shards' sums (``items_expected``, ``items_finished``), ``complete`` only
           when every shard is complete and none is missing, ``interrupted`` when one was; the
           warnings, the skipped items and the haystack labels are the shards' together.
           ``shard`` is replaced by ``shards``: {"count", "merged", "missing", "reports":
           [{"index", "file", "provenance"}]}; ``provenance`` is the lowest shard's. The shards'
           gate entries and verdicts are dropped (each shard's says "not decided: a shard"): gate the merged
           report (``pytest-ruler gate``), which decides it from the whole run's items.
           Shards run under ``--ruler-threshold=rel:F`` agree on F (each resolved it on its own items,
           where a task's base cell may be missing); the merged items are judged again under rel:F
           (``results.relative.rejudge``), so the marks come from the whole run's base scores.

A partial merge (``partial=True`` with shards missing) names them in ``shards.missing``; its
gate says NOT DECIDED (``shard.unmerged``), as a single shard's does.

The merged report of shards 1/N ... N/N has the items of the unsharded run (same predictions
and scores) and so the same summary (tests/integration/test_shards.py, bench/shards.py).

Public names: ``AGREE``, ``merge_files``, ``merge_reports``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..errors import RulerUsageError
from ..parsers import RelativeMark
from ..shard import SUITE_SETTINGS
from .identity import engine_differences
from .mrcr import mrcr_block
from .relative import rejudge
from .report import Report
from .saved import read_report

__all__ = ["AGREE", "merge_files", "merge_reports"]

#: the settings every shard of one run shares (report attributes, then top-level entries)
AGREE = ("model", "backend", "tokenizer", "threshold", "task_thresholds", "chat_template", "samples_per_item", "seeds", "preset")
_TYPED_AGREE = ("model", "backend", "tokenizer", "threshold", "task_thresholds")
_DROPPED = ("shard", "shards", "gate", "mapreduce_gate", "baseline", "verdict", "provenance", "items_expected", "items_finished",
            "warnings", "interrupted", "skipped")
PARAMETER = "SHARD.json"


def merge_files(paths: Sequence[str | Path], *, partial: bool = False) -> Report:
    """Read every shard report (results.saved.read_report) and merge them (``merge_reports``)."""
    if len(paths) < 1:
        raise RulerUsageError(PARAMETER, "nothing", "pass the shard reports to merge, e.g. pytest-ruler merge s1.json s2.json --out merged.json")
    return merge_reports([(str(p), read_report(p, PARAMETER)) for p in paths], partial=partial)


def _shards_of(name: str, report: Report) -> tuple[int, list[int], dict[str, Any]]:
    """(count, the shard indices it holds, the suite's settings) of a shard report or a partial merge."""
    one, many = report.field("shard"), report.field("shards")
    if isinstance(one, Mapping) and isinstance(one.get("index"), int) and isinstance(one.get("count"), int):
        return one["count"], [one["index"]], dict(one.get("suite") or {})
    if isinstance(many, Mapping) and isinstance(many.get("count"), int) and isinstance(many.get("merged"), list):
        return many["count"], [int(i) for i in many["merged"]], dict(many.get("suite") or {})
    raise RulerUsageError(PARAMETER, name, "not a shard's report (it has no \"shard\" entry): write each shard's report with "
                                           "pytest --ruler-shard=i/N --ruler-report=shard-i.json, then merge those")


def _relative(report: Report) -> float | None:
    """The fraction F of a shard run under ``--ruler-threshold=rel:F`` (None: an absolute mark)."""
    info = report.field("relative_threshold")
    return float(info["fraction"]) if isinstance(info, Mapping) and info.get("fraction") is not None else None


def _settings(report: Report) -> dict[str, Any]:
    out = {k: getattr(report, k) for k in _TYPED_AGREE}
    out["task_thresholds"] = dict(out["task_thresholds"])
    fraction = _relative(report)
    if fraction is not None:  # each shard resolved rel:F on its own items: the fraction is the setting
        out["threshold"], out["task_thresholds"] = f"rel:{fraction:g}", {}
    out.update({k: report.field(k) for k in AGREE if k not in _TYPED_AGREE})
    return out


def merge_reports(reports: Sequence[tuple[str, Report]], *, partial: bool = False) -> Report:
    """The whole run's report from its shards' (see the module docstring); ``reports``: (file name, Report)."""
    if not reports:
        raise RulerUsageError(PARAMETER, "nothing", "pass the shard reports to merge")
    held: dict[int, str] = {}
    first_name, first = reports[0]
    count, _, suite = _shards_of(first_name, first)
    settings = _settings(first)
    for name, report in reports:
        n, indices, mine = _shards_of(name, report)
        if n != count:
            raise RulerUsageError(PARAMETER, name, f"it is a shard of {n}, {first_name} one of {count}: merge the shards of one run "
                                                   "(the same --ruler-shard=i/N count)")
        for key in SUITE_SETTINGS:
            if mine.get(key) != suite.get(key):
                raise RulerUsageError(PARAMETER, name, f"its run's {key} is {mine.get(key)!r}, {first_name}'s {suite.get(key)!r}: "
                                                       "merge the shards of one run (same options on every shard)")
        for key, value in _settings(report).items():
            if value != settings[key]:
                raise RulerUsageError(PARAMETER, name, f"its {key} is {value!r}, {first_name}'s {settings[key]!r}: "
                                                       "merge the shards of one run (same model, tokenizer, marks and settings)")
        differ = engine_differences(first.field("engine"), report.field("engine"))
        if differ:
            shown = "; ".join(f"engine.{d}" for d in differ)
            raise RulerUsageError(PARAMETER, name, f"it was run on another engine than {first_name} ({first_name} -> {Path(name).name}: "
                                                   f"{shown}): merge the shards of one run (the same engine, engine options "
                                                   "and libraries on every shard)")
        for i in indices:
            if i in held:
                raise RulerUsageError(PARAMETER, name, f"shard {i}/{count} is also in {held[i]}: pass each shard's report once")
            held[i] = name
    seen: dict[tuple[str, str, int, int], str] = {}
    for name, report in reports:
        for r in report.items:
            key = (r.mode, r.task, r.length, r.seed)
            if key in seen:
                raise RulerUsageError(PARAMETER, name, f"item {r.task} at {r.length} tokens, seed {r.seed} ({r.mode}) is also in "
                                                       f"{seen[key]}: shards of one run never share an item; pass each shard once")
            seen[key] = name
    missing = [i for i in range(1, count + 1) if i not in held]
    if missing and not partial:
        shown = ", ".join(f"{i}/{count}" for i in missing)
        raise RulerUsageError(PARAMETER, ", ".join(n for n, _ in reports),
                              f"shard{'s' if len(missing) != 1 else ''} {shown} missing: pass every shard's report, "
                              "or --partial for a partial merge (marked so; its gate is NOT DECIDED)")
    return _merged(reports, count, sorted(held), missing, suite)


def _merged(reports: Sequence[tuple[str, Report]], count: int, merged: list[int], missing: list[int],
            suite: Mapping[str, Any]) -> Report:
    ordered = sorted(reports, key=lambda nr: min(_shards_of(*nr)[1]))
    base = ordered[0][1]
    warnings = list(dict.fromkeys(w for _, r in ordered for w in r.warnings))
    labels = list(dict.fromkeys(part for _, r in ordered for part in (r.haystack_corpus or "").split("; ") if part))
    skipped = sorted((dict(s) for _, r in ordered for s in r.skipped),
                     key=lambda s: (str(s.get("mode")), int(s.get("length") or 0), str(s.get("task")), int(s.get("seed") or 0)))
    expected = [r.items_expected for _, r in ordered]
    finished = [r.items_finished for _, r in ordered]
    reports_entry = [{"index": i, "file": Path(name).name, "provenance": r.field("provenance")}
                     for name, r in ordered for i in _shards_of(name, r)[1]]
    fields: dict[str, Any] = {k: v for k, v in base.fields.items() if k not in _DROPPED}
    fields["provenance"] = base.field("provenance")
    fields["items_expected"] = None if None in expected else sum(expected)
    fields["items_finished"] = None if None in finished else sum(finished)
    if warnings:
        fields["warnings"] = warnings
    fields["interrupted"] = any(r.interrupted for _, r in ordered)
    fields["skipped"] = skipped
    fields["shards"] = {"count": count, "merged": merged, "missing": missing, "suite": dict(suite), "reports": reports_entry}
    complete = not missing and all(r.complete for _, r in ordered)
    fraction = _relative(base)
    fields.pop("relative_threshold", None)
    fields.pop("mrcr", None)  # the MRCR aggregates: of the whole run's items, not the first shard's
    mrcr = mrcr_block(item for _, r in ordered for item in r.items)
    if mrcr:
        fields["mrcr"] = mrcr
    merged = Report.of_results([item for _, r in ordered for item in r.items], threshold=float(base.threshold or 0.0),
                             task_thresholds=dict(base.task_thresholds), model=base.model, backend=base.backend,
                             tokenizer=base.tokenizer, haystack_corpus="; ".join(labels), complete=complete, **fields)
    if fraction is None:
        return merged
    # rel:F: a task's base cell may be in another shard, so the marks are resolved again on the whole run's items
    return rejudge(merged, RelativeMark(fraction))
