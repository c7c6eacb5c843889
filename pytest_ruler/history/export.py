"""``pytest-ruler history DIR --format github-action-benchmark``: the latest run of each group as the JSON list
that benchmark-action/github-action-benchmark reads with ``tool: customBiggerIsBetter``.

    [Run] (store.read_runs) ──benchmark_entries(runs)──► [{"name", "unit", "value", "range", "extra"}, ...]

The action's custom format is a JSON array of objects with ``name`` (string), ``value`` (number) and
``unit`` (string), and optional ``range`` and ``extra`` (strings, shown in the chart's tooltip). The
action adds one data point per series for the commit it runs on, so the export holds one run per
group: the newest (runs of another model or other settings are other series, their names carry the
group id). Per group and mode:

    "<model> <mode> effective length [<group>]"  tokens; range: the lower confidence bound; a length
                                                  below the shortest tested one is 0
    "<model> <mode> Total at <L> [<group>]"       points; range: ± half the 95 % interval
    "<model> <mode> Avg [<group>]"                points

``extra`` says the run's label, commit, date, verdict and engine identity.

Public names: ``FORMATS``, ``benchmark_entries``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..lengths import format_length
from .store import Run

__all__ = ["FORMATS", "benchmark_entries"]

FORMATS = ("github-action-benchmark",)
_MODE = {"native": "native", "mapreduce": "map-reduce"}


def _latest(runs: Sequence[Run]) -> list[Run]:
    latest: dict[str, Run] = {}
    for run in runs:  # oldest first: the last one of a group wins
        latest[run.entry["group"]] = run
    return list(latest.values())


def benchmark_entries(runs: Sequence[Run]) -> list[dict[str, Any]]:
    """The newest run of each group as customBiggerIsBetter entries (see the module docstring)."""
    out: list[dict[str, Any]] = []
    for run in _latest(runs):
        e = run.entry
        verdict = (e.get("verdict") or {}).get("status") or "unknown"
        extra = (f"label: {e.get('label')}\ncommit: {e.get('commit') or '-'}\ndate: {e.get('created') or '-'}\n"
                 f"verdict: {verdict}\nengine: {e.get('engine')}")
        for mode, m in e["modes"].items():
            base = f"{e.get('model')} {_MODE.get(mode, mode)}"
            tag = f"[{e['group']}]"
            bound, conf = m.get("effective_length_bound"), m.get("bound_confidence")
            lengths = sorted(int(L) for L in m.get("per_length") or {})
            shortest = format_length(lengths[0]) if lengths else "-"
            rng = (f"lower bound {format_length(bound) if bound else '< ' + shortest} at {100 * float(conf):g}%"
                   if conf else "no bound (no per-sample scores)")
            out.append({"name": f"{base} effective length {tag}", "unit": "tokens",
                        "value": int(m.get("effective_length") or 0), "range": rng,
                        "extra": extra + ("" if m.get("effective_length") else f"\nbelow the shortest length ({shortest})")})
            for L in lengths:
                ci = (m.get("intervals") or {}).get(str(L))
                half = f"± {(float(ci[1]) - float(ci[0])) / 2:.1f}" if ci else "no interval"
                out.append({"name": f"{base} Total at {format_length(L)} {tag}", "unit": "points",
                            "value": round(float(m["per_length"][str(L)]), 4), "range": half, "extra": extra})
            if m.get("avg") is not None:
                out.append({"name": f"{base} Avg {tag}", "unit": "points", "value": round(float(m["avg"]), 4), "extra": extra})
    return out
