"""The typed report: a run's items, and per mode its Table 3, computed once from them.

    [ItemResult] + the run's fields ──Report.of_results(...)──► Report        (the plugin, build_report)
    report dict ──Report.from_dict(data)──► Report                             (an in-process dict, or a saved
                                                                                report that results.saved checked)
    Report ──.mode("native" | "mapreduce")──► ModeResults
        .items, .scores / .errored (Table 3's cells: results.summary.cell_scores), .lengths,
        .summary (results.summary.summarize_results over those cells, as stored: floats rounded to SUMMARY_DIGITS),
        .effective_length, .effective (as Table 3 prints it); Table 3 itself is results.table.mode_table(m, ci)
    Report ──.to_dict()──► the JSON report (schema pytest-ruler/1), what --ruler-report writes
    Report ──.with_fields(gate=..., ...)──► the same report with other top-level entries (the verdict's)

A summary is never read from a dict: it is computed from the items, the threshold and the
per-task marks, once per mode and only when something asks for it, and every renderer, the
gate and the CLI read that one. ``mapreduce_vs_native`` is computed from the items too. A
saved report's stored summary is only compared with the computed one (``results.saved``).

Top-level entries this module does not type (``gate``, ``baseline``, ``provenance``,
``chat_template``, ...) are kept as given in ``fields`` and written back in their order.
Item fields this version does not know (a saved item's ``stderr``, ``ci95`` and
``samples_used`` are recomputed when written) are dropped; the older depth-sweep shapes
(``depths`` lists) are read into ``depth_scores`` (:func:`depth_map`).

``as_report(x)`` is what the public functions that take "a report" call: a ``Report`` is
itself, a mapping is read with ``Report.from_dict`` (unchecked: use ``results.saved`` for
input from outside).

``prefix_cache`` (top level, when an engine reported it) is computed from the items' own
``prefix_cache`` entries (``prefix_cache_total``; a count that cannot be true, more cached tokens
than prompt tokens, is left out and counted as ``untrusted``: ``results.endpoints.prefix_cache_notes``
is the report's warning); ``endpoints`` (top level, when an engine
answered through endpoints) from the items' ``endpoints`` (``results.endpoints.endpoint_total``).

Public names: ``MODES``, ``ModeResults``, ``Report``, ``SUMMARY_DIGITS``, ``as_report``, ``depth_map``, ``prefix_cache_total``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import RulerUsageError
from .budgets import summary_outcomes
from .cost import cost_total
from .endpoints import endpoint_total, trusted_cached
from .intervals import cell_interval
from .item import SCHEMA, ItemResult, item_passes
from .marks import resolve
from .notation import format_effective_length
from .summary import cell_scores, mapreduce_vs_native, summarize_results

__all__ = ["MODES", "ModeResults", "Report", "SUMMARY_DIGITS", "as_report", "depth_map", "prefix_cache_total"]

MODES = ("native", "mapreduce")
SUMMARY_DIGITS = 4  # the stored summary's means (per length, Avg, wAvg); effective lengths use the unrounded ones

#: the report's typed top-level entries, in the order a new report writes them (items and summary included)
_ORDER = ("schema", "complete", "model", "backend", "tokenizer", "haystack_corpus", "threshold", "task_thresholds",
          "items", "summary")
_RUN_ORDER = ("items_expected", "items_finished", "warnings", "interrupted", "skipped")  # the plugin's, after the rest
_TYPED = set(_ORDER) | set(_RUN_ORDER) | {"mapreduce_vs_native", "prefix_cache", "endpoints", "cost"}
#: an item's JSON entries, in order (ItemResult's fields less the map-reduce ones, which only twins carry)
_ITEM_KEYS = ("task", "length", "seed", "mode", "samples", "score", "threshold", "passed", "nulls", "seconds",
              "over_length", "errors", "cached", "engine_calls", "prompt_tokens", "failures", "reasons", "depth_scores", "error",
              "sample_scores", "sample_hashes", "stopped", "predictions", "prefix_cache", "endpoints", "cost")
_FIELDS = {f.name for f in dataclasses.fields(ItemResult)}


def _stored(summary: dict[str, Any] | None) -> dict[str, Any] | None:
    """A mode's summary as stored: its means (per length, Avg, wAvg) rounded to ``SUMMARY_DIGITS``."""
    if summary is None:
        return None
    out = dict(summary, per_length={L: round(v, SUMMARY_DIGITS) for L, v in summary["per_length"].items()})
    for key in ("avg", "wavg_inc", "wavg_dec"):
        if isinstance(out.get(key), float):
            out[key] = round(out[key], SUMMARY_DIGITS)
    return out


@dataclass(frozen=True, eq=False)
class ModeResults:
    """One mode's items and Table 3 (see the module docstring); the summary and tables are
    computed on first use and kept."""

    mode: str
    items: tuple[ItemResult, ...]
    threshold: float | None
    task_thresholds: Mapping[str, float]
    scores: Mapping[str, Mapping[int, float]]  # {task: {length: mean over seeds}}, cells with no errored item
    errored: Mapping[str, set[int]]  # {task: lengths where an item errored}
    relative: Mapping[str, Any] | None = None  # the report's relative_threshold entry (results.relative), if any
    _cache: dict = field(default_factory=dict, repr=False)

    @classmethod
    def of(cls, mode: str, items: Sequence[ItemResult], threshold: float | None, task_thresholds: Mapping[str, float],
           relative: Mapping[str, Any] | None = None) -> "ModeResults":
        mine = tuple(r for r in items if r.mode == mode)
        scores, errored = cell_scores(mine, mode)
        return cls(mode, mine, threshold, dict(task_thresholds), scores, errored, relative)

    @property
    def summary(self) -> Mapping[str, Any] | None:
        """The mode's summary as stored (None without items)."""
        if "summary" not in self._cache:
            if not self.items:
                self._cache["summary"] = None
            elif self.threshold is None:
                raise RulerUsageError("report", "no threshold", "a report needs its 'threshold' to compute its summary")
            else:
                self._cache["summary"] = _stored(summarize_results(self.items, self.threshold, self.mode, self.task_thresholds,
                                                                   cells=(self.scores, self.errored), relative=self.relative))
                outcomes = summary_outcomes(self.items)
                if outcomes:  # per cell: what happened to the samples' tokens (thinking models, truncations)
                    self._cache["summary"]["outcomes"] = outcomes
        return self._cache["summary"]

    @property
    def lengths(self) -> list[int]:
        """The tested lengths, ascending."""
        return sorted({r.length for r in self.items})

    @property
    def effective_length(self) -> int | None:
        return (self.summary or {}).get("effective_length")

    @property
    def effective(self) -> str:
        """The effective length as Table 3's Total prints it; ``-`` when the mode has no results."""
        return format_effective_length(self.effective_length, self.lengths) if self.summary else "-"

    def cached(self, key: Any, compute: Callable[[], Any]) -> Any:
        """``compute()`` once per ``key`` for this mode, then kept: a view a layer above the model
        derives from it (``results.table.mode_table`` keeps Table 3 here), without the model
        importing that layer."""
        if key not in self._cache:
            self._cache[key] = compute()
        return self._cache[key]


@dataclass(frozen=True, eq=False)
class Report:
    """A run's report, typed (see the module docstring)."""

    items: tuple[ItemResult, ...]
    threshold: float | None
    task_thresholds: Mapping[str, float] = field(default_factory=dict)
    model: str = "?"
    backend: str = "?"
    tokenizer: str = "?"
    haystack_corpus: str = ""
    complete: bool = True  # false: interrupted or stopped before every item ran
    interrupted: bool = False
    items_expected: int | None = None
    items_finished: int | None = None
    warnings: tuple[str, ...] = ()
    skipped: tuple[Mapping[str, Any], ...] = ()  # suite items that were skipped, with their reasons
    fields: Mapping[str, Any] = field(default_factory=dict)  # the other top-level entries, as given
    order: tuple[str, ...] = _ORDER  # the top-level keys to_dict writes, in order
    _modes: dict = field(default_factory=dict, repr=False)

    # ------------------------------------------------------------------ making one
    @classmethod
    def of_results(cls, results: Iterable[ItemResult], *, threshold: float, task_thresholds: Mapping[str, float] | None = None,
                   model: str, backend: str, tokenizer: str, haystack_corpus: str, complete: bool = True,
                   **fields: Any) -> "Report":
        """A new run's report: items sorted by mode, length, task and seed; ``fields`` are the
        other top-level entries (a ``gate`` entry is added when not given)."""
        if not isinstance(threshold, (int, float)):  # rel:F (parsers.RelativeMark): resolved on these items
            resolved = resolve(results, threshold)
            results, threshold, task_thresholds = resolved.items, resolved.threshold, resolved.task_thresholds
            fields["relative_threshold"] = resolved.info
        items = tuple(sorted(results, key=lambda r: (r.mode, r.length, r.task, r.seed)))
        rest = {"gate": {"required_effective_length": None, "passed": None}}
        rest.update(fields)
        typed = {k: rest.pop(k) for k in list(rest) if k in _TYPED}
        order = _ORDER + ("gate",) + (("mapreduce_vs_native",) if any(r.mode == "mapreduce" for r in items) else ())
        order += ("prefix_cache",) if any(r.prefix_cache for r in items) else ()
        order += ("endpoints",) if any(r.endpoints for r in items) else ()
        order += ("cost",) if any(r.cost for r in items) else ()  # the run's (results.cost), from its items
        report = cls(items=items, threshold=float(threshold), task_thresholds=dict(task_thresholds or {}), model=model,
                     backend=backend, tokenizer=tokenizer, haystack_corpus=haystack_corpus, complete=complete,
                     fields=rest, order=order + tuple(k for k in rest if k != "gate"))
        return report.with_fields(**typed) if typed else report

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Report":
        """A report dict read back; missing entries take their defaults (see the module docstring)."""
        threshold = data.get("threshold")
        items = tuple(_item(it, threshold) for it in (data.get("items") or []) if isinstance(it, Mapping))
        typed: dict[str, Any] = {}
        for key in ("model", "backend", "tokenizer", "haystack_corpus", "complete", "interrupted", "items_expected", "items_finished"):
            if data.get(key) is not None:
                typed[key] = data[key]
        return cls(items=items, threshold=None if threshold is None else float(threshold),
                   task_thresholds={str(t): float(v) for t, v in (data.get("task_thresholds") or {}).items()},
                   warnings=tuple(data.get("warnings") or ()), skipped=tuple(data.get("skipped") or ()),
                   fields={k: v for k, v in data.items() if k not in _TYPED}, order=tuple(data), **typed)

    def with_fields(self, **entries: Any) -> "Report":
        """This report with top-level entries set (typed ones by name, others into ``fields``); the
        computed modes are kept (items and marks do not change here)."""
        typed = {k: v for k, v in entries.items() if k in _TYPED and k not in ("items", "summary", "schema", "mapreduce_vs_native")}
        if "warnings" in typed:
            typed["warnings"] = tuple(typed["warnings"])
        if "skipped" in typed:
            typed["skipped"] = tuple(typed["skipped"])
        if {"threshold", "task_thresholds"} & set(typed):
            raise RulerUsageError("with_fields", sorted(typed), "a report's marks are fixed: build a new report")
        rest = dict(self.fields)
        rest.update({k: v for k, v in entries.items() if k not in _TYPED})
        order = self.order + tuple(k for k in entries if k not in self.order and k not in ("schema", "items", "summary"))
        return dataclasses.replace(self, **typed, fields=rest, order=order, _modes=self._modes)

    # ------------------------------------------------------------------ reading it
    def mode(self, mode: str) -> ModeResults:
        if mode not in self._modes:
            self._modes[mode] = ModeResults.of(mode, self.items, self.threshold, self.task_thresholds,
                                               self.fields.get("relative_threshold"))
        return self._modes[mode]

    @property
    def modes(self) -> list[str]:
        """The modes with items, native first."""
        return [m for m in MODES if self.mode(m).items]

    def field(self, key: str, default: Any = None) -> Any:
        """An untyped top-level entry (``gate``, ``baseline``, ``chat_template``, ``provenance``, ...)."""
        return self.fields.get(key, default)

    @property
    def mapreduce_vs_native(self) -> list[dict[str, Any]]:
        """Each item run both ways, side by side (results.summary.mapreduce_vs_native)."""
        if "mapreduce_vs_native" not in self._modes:
            self._modes["mapreduce_vs_native"] = mapreduce_vs_native(self.items)
        return self._modes["mapreduce_vs_native"]

    def to_dict(self) -> dict[str, Any]:
        """The JSON report (a new dict each call; the per-item intervals are computed here)."""
        typed = {"schema": SCHEMA, "complete": self.complete, "model": self.model, "backend": self.backend,
                 "tokenizer": self.tokenizer, "haystack_corpus": self.haystack_corpus, "threshold": self.threshold,
                 "task_thresholds": dict(self.task_thresholds), "items_expected": self.items_expected,
                 "items_finished": self.items_finished, "warnings": list(self.warnings), "interrupted": self.interrupted,
                 "skipped": [dict(s) for s in self.skipped]}
        out: dict[str, Any] = {}
        for key in self.order:
            if key == "items":
                out[key] = [_item_dict(r) for r in self.items]
            elif key == "summary":
                out[key] = {m: self.mode(m).summary for m in MODES}
            elif key == "mapreduce_vs_native":
                out[key] = self.mapreduce_vs_native
            elif key == "prefix_cache":
                out[key] = prefix_cache_total(self.items)
            elif key == "endpoints":
                out[key] = endpoint_total(self.items)
            elif key == "cost":
                out[key] = cost_total(self.items)
            elif key in typed:
                out[key] = typed[key]
            elif key in self.fields:
                out[key] = self.fields[key]
        return out


def prefix_cache_total(items: Iterable[ItemResult]) -> dict[str, Any] | None:
    """The engine's prefix cache over the run's engine calls that reported it: prompt tokens,
    those served from the cache and their share (never above 1); None when no engine call reported
    it. Counts that cannot be true (``results.endpoints.trusted_cached``: more cached than prompt
    tokens) are left out and counted in ``untrusted`` (answers), present only when there are any."""
    prompt = cached = untrusted = 0
    reported = False
    for r in items:
        p = r.prefix_cache
        if not p:
            continue
        reported = True
        untrusted += int(p.get("untrusted", 0))
        if trusted_cached(p.get("cached_tokens", 0), p.get("prompt_tokens", 0)):
            prompt += int(p.get("prompt_tokens", 0))
            cached += int(p.get("cached_tokens", 0))
        else:  # a saved item's counts that cannot be true (from before the check, or edited)
            untrusted += 1
    if not reported:
        return None
    out: dict[str, Any] = {"prompt_tokens": prompt, "cached_tokens": cached, "share": round(cached / prompt, 4) if prompt else None}
    if untrusted:
        out["untrusted"] = untrusted
    return out


def as_report(report: Report | Mapping[str, Any]) -> Report:
    """A ``Report`` as itself; a report dict read with ``Report.from_dict`` (unchecked)."""
    if isinstance(report, Report):
        return report
    if not isinstance(report, Mapping):
        raise RulerUsageError("report", type(report).__name__, "pass a pytest-ruler report (a Report or the JSON report's dict)")
    return Report.from_dict(report)


# --------------------------------------------------------------------------- items


def _item(data: Mapping[str, Any], threshold: Any) -> ItemResult:
    """An ItemResult from a report item; ``RulerUsageError`` without a task, length or (unless it errored) score."""
    d = {k: v for k, v in data.items() if k in _FIELDS}
    try:
        d["task"], d["length"] = str(data["task"]), int(data["length"])
        d["score"] = float(data["score"]) if data.get("error") is None or data.get("score") is not None else 0.0
    except (KeyError, TypeError, ValueError):
        raise RulerUsageError("report", dict(data), "each item needs 'task', 'length' and 'score' (a --ruler-report item).") from None
    mark = float(data["threshold"]) if isinstance(data.get("threshold"), (int, float)) else float(threshold or 0.0)
    d.setdefault("seed", 0)
    d.setdefault("mode", "native")
    d.setdefault("samples", 0)
    d["threshold"] = mark
    d["passed"] = item_passes(d["score"], mark, d.get("error"))  # the one rule, never the stored verdict
    d.setdefault("nulls", 0)
    d.setdefault("seconds", 0.0)
    depths = data.get("depth_scores")
    if depths is not None and not isinstance(depths, Mapping) or data.get("depths") is not None:
        sweep = depth_map(data)  # an older shape: lists parallel to "depths", or {"depth", "score"} records
        d["depth_scores"] = {str(k): v for k, v in (sweep or {}).items()}
    return ItemResult.from_dict(d)


def depth_map(item: Mapping[str, Any]) -> dict[float, float] | None:
    """An item's depth sweep as ``{depth: score}``, or ``None`` when it has none.

    Read from ``item["depth_scores"]`` as a mapping ``{depth: score}``, a list parallel
    to ``item["depths"]`` or a list of ``{"depth": d, "score": s}``; or from
    ``item["depths"]`` itself as a mapping or such a list (the older shapes).
    """
    ds, depths = item.get("depth_scores"), item.get("depths")
    pairs: list[tuple[Any, Any]] = []
    if isinstance(ds, Mapping):
        pairs = list(ds.items())
    elif isinstance(ds, list) and isinstance(depths, list) and len(ds) == len(depths):
        pairs = list(zip(depths, ds))
    elif isinstance(ds, list) and all(isinstance(d, Mapping) for d in ds):
        pairs = [(d.get("depth"), d.get("score")) for d in ds]
    elif isinstance(depths, Mapping):
        pairs = list(depths.items())
    elif isinstance(depths, list) and all(isinstance(d, Mapping) for d in depths):
        pairs = [(d.get("depth"), d.get("score")) for d in depths]
    out: dict[float, float] = {}
    for d, s in pairs:
        try:
            out[float(d)] = float(s)
        except (TypeError, ValueError):
            continue
    return out or None


def _item_interval(r: ItemResult) -> dict[str, Any]:
    """The item's own error bar (user contract: ``stderr``, a 95 % interval ``ci95``, and
    ``samples_used``, which --ruler-sequential can make fewer than asked): from its
    per-sample scores, as a cell's (results.intervals); None without them or when it errored."""
    iv = cell_interval(r.sample_scores, r.score) if r.error is None else None
    return {"samples_used": len(r.sample_scores) or r.samples,
            "stderr": round(iv["stderr"], 4) if iv else None,
            "ci95": [round(v, 4) for v in iv["ci95"]] if iv else None}


def _item_dict(r: ItemResult) -> dict[str, Any]:
    d = r.to_dict()
    item = {k: d[k] for k in _ITEM_KEYS}
    item.update(_item_interval(r))
    if r.thinking:  # a thinking model's counts (results.budgets); absent for other models, as before
        item["thinking"] = d["thinking"]
    if r.arm is not None:  # --ruler-arm: the arm that answered (absent without arms, as before)
        item["arm"] = r.arm
    if r.mode == "mapreduce":  # per-call records: trace a failure to map, collapse or reduce
        item["mapreduce"] = d["mapreduce"]
        item["calls"] = d["calls"]
    return item
