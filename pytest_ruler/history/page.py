"""``pytest-ruler history DIR --html OUT``: the trend page of a history folder, one self-contained HTML file.

    [Run] (store.read_runs) ──groups (group id, oldest run first)──► per group, newest group first:
        effective length per run, native and map-reduce: a step chart, with its lower confidence bound (dashed)
        the Total per length across runs: one line per length, the pass mark dashed
        the latest run's task × length heat map, and its change from the previous run of the group
        the list of runs: label (a link to ``<run>.html`` when that page sits beside the run's file), date,
            commit, model, engine identity, verdict, effective length and bound
    ──pages.assets.page──► the HTML text (written by the command, atomically)

Charts are Matplotlib figures inlined as SVG (``pages.assets.svg``): the page loads nothing (no
script, no CDN, no font), so it opens offline, from a file, in an artifact viewer. Runs of another
model or other settings (``history.groups``) are another group: their numbers never share a chart.
An effective length below the shortest tested length is drawn at half of it and labelled ``< shortest``.

Public names: ``history_page``.
"""

from __future__ import annotations

import datetime
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..lengths import format_length
from ..pages.assets import escape, new_figure, page, svg
from .store import Run

__all__ = ["history_page"]

_MODE_TITLE = {"native": "native", "mapreduce": "map-reduce"}
_MAX_TICKS = 30  # more runs than this: every k-th label on the x axis


def _groups(runs: Sequence[Run]) -> list[list[Run]]:
    """Runs by group, each oldest first; the group with the newest run first."""
    by: dict[str, list[Run]] = {}
    for run in runs:
        by.setdefault(run.entry["group"], []).append(run)
    return sorted(by.values(), key=lambda rs: (str(rs[-1].entry.get("created") or ""), rs[-1].file.name), reverse=True)


def _x_labels(ax: Any, runs: Sequence[Run]) -> None:
    step = max(1, -(-len(runs) // _MAX_TICKS))
    ticks = list(range(0, len(runs), step))
    ax.set_xticks(ticks)
    ax.set_xticklabels([str(runs[i].entry.get("label") or i + 1)[:18] for i in ticks], rotation=30, ha="right", fontsize=8)
    ax.set_xlim(-0.6, len(runs) - 0.4)
    ax.set_xlabel("run (label), oldest first")


def _effective_chart(runs: Sequence[Run], mode: str, prefix: str) -> str:
    lengths = sorted({int(L) for r in runs for L in r.entry["modes"].get(mode, {}).get("per_length", {})})
    if not lengths:
        return '<p class="note">No length has a score in these runs.</p>'
    floor = lengths[0] / 2
    fig = new_figure((7.5, 3.2))
    ax = fig.add_subplot()
    xs = list(range(len(runs)))

    def ys(key: str) -> list[float]:
        out = []
        for r in runs:
            m = r.entry["modes"].get(mode)
            v = None if m is None else m.get(key)
            out.append(float("nan") if m is None else floor if v is None else float(v))
        return out

    ax.step(xs, ys("effective_length"), where="mid", marker="o", color="#1f5fbf", label="effective length")
    bounds = ys("effective_length_bound")
    if any(r.entry["modes"].get(mode, {}).get("bound_confidence") for r in runs):
        conf = next(r.entry["modes"][mode]["bound_confidence"] for r in runs if r.entry["modes"].get(mode, {}).get("bound_confidence"))
        ax.step(xs, bounds, where="mid", linestyle="--", marker="v", color="#7a8599", label=f"{100 * float(conf):g}% lower bound")
    ax.set_yscale("log", base=2)
    ax.set_yticks([floor, *lengths])
    ax.set_yticklabels(["< shortest", *[format_length(L) for L in lengths]])
    ax.minorticks_off()
    ax.set_ylim(floor / 1.25, lengths[-1] * 1.25)
    ax.set_ylabel("tokens")
    ax.grid(True, axis="y", alpha=0.3)
    _x_labels(ax, runs)
    ax.legend(loc="lower left", fontsize=8)
    ax.set_title(f"Effective length ({_MODE_TITLE[mode]})", fontsize=10)
    return svg(fig, prefix)


def _total_chart(runs: Sequence[Run], mode: str, threshold: Any, prefix: str) -> str:
    lengths = sorted({int(L) for r in runs for L in r.entry["modes"].get(mode, {}).get("per_length", {})})
    fig = new_figure((7.5, 3.2))
    ax = fig.add_subplot()
    xs = list(range(len(runs)))
    for L in lengths:
        ys = [float((r.entry["modes"].get(mode) or {}).get("per_length", {}).get(str(L), float("nan"))) for r in runs]
        ax.plot(xs, ys, marker="o", label=format_length(L))
    if isinstance(threshold, (int, float)):
        ax.axhline(float(threshold), linestyle="--", color="#b3261e", linewidth=1, label=f"mark {threshold:g}")
    ax.set_ylim(-2, 102)
    ax.set_ylabel("Total score (points)")
    ax.grid(True, axis="y", alpha=0.3)
    _x_labels(ax, runs)
    ax.legend(loc="lower left", fontsize=8, ncol=min(6, len(lengths) + 1))
    ax.set_title(f"Total per length across runs ({_MODE_TITLE[mode]})", fontsize=10)
    return svg(fig, prefix)


def _grid(cells: Mapping[str, Mapping[str, float]]) -> tuple[list[str], list[int]]:
    return sorted(cells), sorted({int(L) for by in cells.values() for L in by})


def _heat_chart(title: str, tasks: list[str], lengths: list[int], value: Any, *, delta: bool, prefix: str) -> str:
    import numpy as np

    grid = np.array([[value(t, L) for L in lengths] for t in tasks], dtype=float)
    fig = new_figure((1.6 + 0.9 * len(lengths), 1.2 + 0.32 * len(tasks)))
    ax = fig.add_subplot()
    span = 100.0
    if delta:
        span = max(10.0, float(np.nanmax(np.abs(grid))) if np.isfinite(grid).any() else 10.0)
        image = ax.imshow(grid, cmap="RdBu", vmin=-span, vmax=span, aspect="auto")
    else:
        image = ax.imshow(grid, cmap="RdYlGn", vmin=0, vmax=100, aspect="auto")
    for i in range(len(tasks)):
        for j in range(len(lengths)):
            v = grid[i, j]
            text = "–" if not np.isfinite(v) else (f"{v:+.1f}" if delta else f"{v:.1f}")
            dark = np.isfinite(v) and (abs(v) > 0.6 * span if delta else (v < 20 or v > 85))
            ax.text(j, i, text, ha="center", va="center", fontsize=8, color="white" if dark else "black")
    ax.set_xticks(range(len(lengths)))
    ax.set_xticklabels([format_length(L) for L in lengths], fontsize=8)
    ax.set_yticks(range(len(tasks)))
    ax.set_yticklabels(tasks, fontsize=8)
    ax.set_xlabel("length")
    fig.colorbar(image, ax=ax, shrink=0.8, label="change (points)" if delta else "score (points)")
    ax.set_title(title, fontsize=10)
    return svg(fig, prefix)


def _heat_maps(runs: Sequence[Run], mode: str, prefix: str) -> str:
    latest = runs[-1].entry
    cells = (latest["modes"].get(mode) or {}).get("cells") or {}
    if not cells:
        return ""
    tasks, lengths = _grid(cells)
    out = [_heat_chart(f"{latest.get('label')}: task × length ({_MODE_TITLE[mode]})", tasks, lengths,
                       lambda t, L: cells.get(t, {}).get(str(L), float("nan")), delta=False, prefix=f"{prefix}-h")]
    before = [r for r in runs[:-1] if (r.entry["modes"].get(mode) or {}).get("cells")]
    if before:
        old = before[-1].entry["modes"][mode]["cells"]

        def change(t: str, L: int) -> float:
            a, b = old.get(t, {}).get(str(L)), cells.get(t, {}).get(str(L))
            return float("nan") if a is None or b is None else float(b) - float(a)

        out.append(_heat_chart(f"change from {before[-1].entry.get('label')} to {latest.get('label')}", tasks, lengths,
                               change, delta=True, prefix=f"{prefix}-d"))
    else:
        out.append('<p class="note">No earlier run in this group: no change to show.</p>')
    return "\n".join(f'<div class="chart">{part}</div>' if part.startswith("<svg") else part for part in out)


def _verdict_cell(verdict: Mapping[str, Any]) -> str:
    status = str(verdict.get("status") or "unknown")
    title = f' title="{escape(verdict.get("line"))}"' if verdict.get("line") else ""
    return f'<td class="{escape(status.replace(" ", "-"))}"{title}>{escape(status)}</td>'


def _link(run: Run, out_dir: Path) -> str:
    label = escape(run.entry.get("label") or run.file.stem)
    beside = run.file.with_suffix(".html")
    if not beside.is_file():
        return label
    href = Path(os.path.relpath(beside.resolve(), out_dir)).as_posix()
    return f'<a href="{escape(href)}">{label}</a>'


def _length_cell(mode: Mapping[str, Any] | None, key: str) -> str:
    """An effective length or its bound as the table shows it: ``< 1K`` below the shortest length, ``-`` when not established."""
    if not mode:
        return ""
    value = mode.get(key)
    if value is not None:
        return format_length(value)
    if key == "effective_length_bound" and not mode.get("bound_confidence"):
        return "-"
    lengths = sorted(int(L) for L in mode.get("per_length") or {})
    return f"< {format_length(lengths[0])}" if lengths else "-"


def _runs_table(runs: Sequence[Run], out_dir: Path) -> str:
    modes = [m for m in ("native", "mapreduce") if any(m in r.entry["modes"] for r in runs)]
    head = "".join(f"<th>effective length ({_MODE_TITLE[m]})</th><th>lower bound</th>" for m in modes)
    rows = []
    for run in reversed(runs):
        e = run.entry
        cells = []
        for m in modes:
            mine = e["modes"].get(m)
            for key in ("effective_length", "effective_length_bound"):
                cells.append(f'<td class="num">{escape(_length_cell(mine, key))}</td>')
        lengths = "".join(cells)
        rows.append(f"<tr><td>{_link(run, out_dir)}</td><td>{escape((e.get('created') or '').replace('T', ' '))}</td>"
                    f"<td><code>{escape((e.get('commit') or '-')[:12])}</code></td><td>{escape(e.get('model'))}</td>"
                    f"<td>{escape(e.get('engine'))}</td>{_verdict_cell(e.get('verdict') or {})}{lengths}"
                    f"<td>{escape(e.get('pytest_ruler') or '-')}</td><td><code>{escape(run.file.name)}</code></td></tr>")
    return ("<table>\n<tr><th>label</th><th>date (UTC)</th><th>commit</th><th>model</th><th>engine identity</th><th>verdict</th>"
            f"{head}<th>pytest-ruler</th><th>file</th></tr>\n" + "\n".join(rows) + "\n</table>")


def _settings_line(settings: Mapping[str, Any]) -> str:
    parts = []
    for mode, s in (settings.get("modes") or {}).items():
        parts.append(f"{_MODE_TITLE.get(mode, mode)}: {len(s['tasks'])} task{'s' if len(s['tasks']) != 1 else ''} "
                     f"({', '.join(s['tasks'][:8])}{', …' if len(s['tasks']) > 8 else ''}) at "
                     f"{', '.join(format_length(L) for L in s['lengths'])}")
    parts.append(f"mark {settings.get('threshold')}")
    parts.append(f"{settings.get('samples_per_item')} samples per item, seeds {settings.get('seeds')}")
    if settings.get("chat_template"):
        parts.append(f"template {settings['chat_template']}")
    return "; ".join(parts)


def _group_section(runs: list[Run], n: int, out_dir: Path) -> str:
    latest = runs[-1].entry
    gid = latest["group"]
    settings = latest.get("settings") or {}
    prefix = f"g{n}"
    body = [f'<h2 id="group-{escape(gid)}">{escape(latest.get("model"))} on {escape(latest.get("backend"))} '
            f'<span class="note">(group {escape(gid)}, {len(runs)} run{"s" if len(runs) != 1 else ""})</span></h2>',
            f'<p class="note">{escape(_settings_line(settings))}. Engine: {escape(latest.get("engine"))}.</p>']
    for mode in ("native", "mapreduce"):
        if not any(mode in r.entry["modes"] for r in runs):
            continue
        body.append(f'<div class="chart">{_effective_chart(runs, mode, f"{prefix}-{mode}-e")}</div>')
        body.append(f'<div class="chart">{_total_chart(runs, mode, settings.get("threshold"), f"{prefix}-{mode}-t")}</div>')
        body.append(f"<h3>Latest run, task × length ({_MODE_TITLE[mode]})</h3>")
        body.append(_heat_maps(runs, mode, f"{prefix}-{mode}"))
    body.append("<h3>Runs (newest first)</h3>")
    body.append(_runs_table(runs, out_dir))
    return "\n".join(body)


def history_page(runs: Sequence[Run], folder: str | Path, out: str | Path, skipped: Sequence[Mapping[str, str]] = ()) -> str:
    """The trend page of ``runs`` (from ``folder``) as HTML text, with links relative to ``out``'s folder."""
    out_dir = Path(out).resolve().parent
    groups = _groups(runs)
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    sub = f"{len(runs)} run{'s' if len(runs) != 1 else ''} in {len(groups)} group{'s' if len(groups) != 1 else ''} from {folder}; made {now}"
    body = []
    if len(groups) > 1:
        body.append("<p>Runs of another model or other settings are drawn apart:</p><ul>" + "".join(
            f'<li><a href="#group-{escape(g[-1].entry["group"])}">{escape(g[-1].entry.get("model"))} on '
            f'{escape(g[-1].entry.get("backend"))}</a>: {len(g)} run{"s" if len(g) != 1 else ""}, latest '
            f'{escape(g[-1].entry.get("label"))}</li>' for g in groups) + "</ul>")
    if not runs:
        body.append('<p class="note">No run in this folder yet: run pytest with --ruler-history=DIR.</p>')
    for n, group in enumerate(groups):
        body.append(_group_section(group, n, out_dir))
    if skipped:
        body.append("<h2>Files skipped</h2><ul>" + "".join(f"<li><code>{escape(s['file'])}</code>: {escape(s['reason'])}</li>"
                                                         for s in skipped) + "</ul>")
    return page(f"RULER history: {Path(folder).name or folder}", "\n".join(body), subtitle=sub)
