"""Render a saved JSON report (schema ``pytest-ruler/1``) as Markdown and PNG plots.

This is what ``pytest-ruler report REPORT.json [--out DIR] [--no-plots]`` runs. Every
function here is a pure function of the report dict: the numbers shown are the ones
the report holds (``summary`` for the Total row, averages and effective lengths);
the only arithmetic is pivoting item scores into a task x length table and averaging
them over seeds, which is what ``summary`` itself was built from.

Layout follows the RULER paper's Table 3 for one model: tasks as rows, then a Total
row; columns 4K..128K, Avg, wAvg (inc), wAvg (dec), effective length. The paper
prints ">128K" when the longest tested length passes and "<4K" when none does; here
those are "≥128K" and "<4K" over whatever lengths were tested
(:func:`format_effective_length`).

Optional per-item depth sweeps are shown when present: ``item["depth_scores"]`` as a
mapping ``{depth: score}``, or as a list parallel to ``item["depths"]``, or a list of
``{"depth": d, "score": s}``; or ``item["depths"]`` itself as a mapping. Depths in
[0, 1] are read as fractions, larger ones as percentages. Reports without them render
without a depth section.

matplotlib is optional (``pip install "pytest-ruler[plot]"``); it is imported only
inside :func:`plot_scores`, drawing on the Agg canvas without touching pyplot's
global state.

Public names: ``load_report``, ``markdown``, ``plot_scores``, ``render_report``,
``format_effective_length``, ``SCHEMA``.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..errors import RulerUsageError
from ..lengths import format_length
from ..results.table import TASK_ORDER, format_effective_length

__all__ = [
    "SCHEMA",
    "format_effective_length",
    "load_report",
    "markdown",
    "plot_scores",
    "render_report",
]

SCHEMA = "pytest-ruler/1"

#: The paper's row order for the 13 standard tasks; other tasks follow in report order.
_PAPER_ORDER = TASK_ORDER
_MODE_TITLE = {"native": "native", "mapreduce": "map-reduce"}
_OVER = "†"
_ERR = "‡"
_PLOT_FIX = 'pip install "pytest-ruler[plot]"'


# ---------------------------------------------------------------- loading --
def load_report(path: str | Path) -> dict[str, Any]:
    """Read and check a JSON report; any problem is a ``RulerUsageError("REPORT.json", ...)``."""
    p = Path(path)
    shown = str(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise RulerUsageError("REPORT.json", shown, "no such file; write one with `pytest --ruler-model=... --ruler-report=PATH`") from None
    except IsADirectoryError:
        raise RulerUsageError("REPORT.json", shown, "this is a folder; pass the JSON file written by --ruler-report") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise RulerUsageError("REPORT.json", shown, f"cannot read it as UTF-8 text ({exc})") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise RulerUsageError("REPORT.json", shown, f"not valid JSON ({exc.msg} at line {exc.lineno}); pass the file written by --ruler-report") from None
    if not isinstance(data, dict):
        raise RulerUsageError("REPORT.json", shown, f"expected a JSON object with \"schema\": {SCHEMA!r}, found a JSON {type(data).__name__}")
    schema = data.get("schema")
    if schema != SCHEMA:
        found = "no \"schema\" field" if schema is None else f"schema {schema!r}"
        raise RulerUsageError("REPORT.json", shown, f"expected schema {SCHEMA!r}, found {found}; pass a report written by pytest --ruler-report")
    problem = _shape_problem(data)
    if problem:
        raise RulerUsageError("REPORT.json", shown, f"not a complete {SCHEMA} report: {problem}")
    return data


def _shape_problem(data: Mapping[str, Any]) -> str | None:
    items = data.get("items")
    if not isinstance(items, list):
        return "\"items\" must be a list"
    for i, item in enumerate(items):
        if not isinstance(item, Mapping):
            return f"items[{i}] is not an object"
        for key, kind in (("task", str), ("length", int), ("score", (int, float))):
            if not isinstance(item.get(key), kind) or isinstance(item.get(key), bool):
                return f"items[{i}] has no valid {key!r}"
    summary = data.get("summary")
    if not isinstance(summary, Mapping):
        return "\"summary\" must be an object"
    for mode, s in summary.items():
        if s is None:
            continue
        if not isinstance(s, Mapping) or not isinstance(s.get("per_length"), Mapping):
            return f"summary[{mode!r}] has no \"per_length\" object"
        for key in ("avg", "wavg_inc", "wavg_dec"):  # None: not established (an errored length)
            if not isinstance(s.get(key), (int, float)) and not (key in s and s[key] is None):
                return f"summary[{mode!r}] has no numeric {key!r}"
    return None


# ------------------------------------------------------------- formatting --
def _cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _row(cells: Sequence[object]) -> str:
    return "| " + " | ".join(_cell(c) for c in cells) + " |"


def _score(x: float | None) -> str:
    return "-" if x is None else f"{x:.1f}"


def _ordered_tasks(names: Sequence[str]) -> list[str]:
    seen = list(dict.fromkeys(names))
    return [t for t in _PAPER_ORDER if t in seen] + [t for t in seen if t not in _PAPER_ORDER]


def _mode_items(report: Mapping[str, Any], mode: str) -> list[Mapping[str, Any]]:
    return [it for it in report.get("items", []) if it.get("mode", "native") == mode]


def _pivot(items: Sequence[Mapping[str, Any]]) -> dict[str, dict[int, float]]:
    """``{task: {length: mean score over seeds}}``."""
    acc: dict[str, dict[int, list[float]]] = {}
    for it in items:
        if it.get("error") is None:  # an errored item has no score (its cell shows ERR)
            acc.setdefault(it["task"], {}).setdefault(int(it["length"]), []).append(float(it["score"]))
    return {t: {L: math.fsum(v) / len(v) for L, v in sorted(ls.items())} for t, ls in acc.items()}


def _summary_lengths(summary: Mapping[str, Any] | None) -> list[int]:
    if not summary:
        return []
    return sorted(int(k) for k in summary.get("per_length", {}))


def _modes(report: Mapping[str, Any]) -> list[str]:
    summary = report.get("summary") or {}
    modes = [m for m in ("native", "mapreduce") if summary.get(m) or _mode_items(report, m)]
    return modes


# --------------------------------------------------------------- markdown --
def _haystack_lines(corpus: str) -> tuple[str, str | None]:
    """The header line for the haystack corpus, and a warning when it is not the paper's essays."""
    parts = [p.strip() for p in str(corpus or "").split(";") if p.strip()]
    if not parts:
        return "- **Haystack corpus:** not recorded in this report", None
    line = f"- **Haystack corpus:** {'; '.join(parts)}"
    other_essays = []
    for p in parts:
        low = p.lower()
        flat = re.sub(r"[^a-z]", "", low)
        if "pydoc_data" in low or "not the paper" in low:
            other_essays.append(p)
        elif low.startswith("essays:") and "paulgraham" not in flat:
            other_essays.append(p)
    if not other_essays:
        return line, None
    return line, (
        f"> **Warning: not the paper's haystack.** The essay haystack here is {'; '.join(other_essays)}, "
        "not the Paul Graham essays the RULER paper uses, so scores on the essay-haystack tasks are not "
        "comparable with the paper's numbers. Fetch the paper's essays with `pytest-ruler download essays` "
        "and pass them with `--ruler-essays`."
    )


def _gate_line(report: Mapping[str, Any]) -> str | None:
    gate = report.get("gate") or {}
    required = gate.get("required_effective_length")
    passed = gate.get("passed")
    if required is None and passed is None:
        return None
    native = (report.get("summary") or {}).get("native") or {}
    eff = native.get("effective_length")
    lengths = _summary_lengths(native)
    eff_s = format_effective_length(eff, lengths)
    req_s = "-" if required is None else format_length(int(required))
    if passed is True:
        return f"- **Gate:** PASSED: effective length {eff_s} ≥ required {req_s}"
    if passed is False:
        return f"- **Gate:** FAILED: effective length {eff_s} < required {req_s}"
    return f"- **Gate:** not decided (required {req_s}; effective length {eff_s})"


def _grounding_lines(report: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    """What code did to the model's records (a label, shown above the map-reduce Table 3),
    and how often the model wrote the protocol, per map-reduce item (a table, shown below it)."""
    from ..mapreduce import grounding_label

    its = _mode_items(report, "mapreduce")
    if not its:
        return [], []
    labels = sorted({grounding_label({"grounding": (it.get("mapreduce") or {}).get("grounding")}) for it in its})
    head = [f"**Map-reduce {label}.**" for label in labels] + [""]
    lines = ["Protocol compliance of the map records (the structured information protocol's four fields):", ""]
    lines.append(_row(["Task", "Length", "Strategy", "Grounding", "Map records", "All four fields", "With a confidence", "Parse failures", "Collapse calls"]))
    lines.append("|:---|---:|:---|:---|---:|---:|---:|---:|---:|")
    for it in sorted(its, key=lambda x: (x["task"], x["length"], x.get("seed", 0))):
        mr = it.get("mapreduce") or {}
        comp = (mr.get("compliance") or {}).get("map") or {}
        collapse = (mr.get("calls_per_stage") or {}).get("collapse", 0)
        cells = [comp.get(k, "-") for k in ("records", "four_fields", "confidence", "parse_failures")]
        lines.append(_row([it["task"], format_length(int(it["length"])), mr.get("strategy") or "-", mr.get("grounding") or "-", *map(str, cells), str(collapse)]))
    lines.append("")
    return head, lines


def _items_line(report: Mapping[str, Any]) -> str | None:
    items = report.get("items") or []
    if not items:
        return None
    parts = []
    for mode in ("native", "mapreduce"):
        its = _mode_items(report, mode)
        if not its:
            continue
        tasks = {it["task"] for it in its}
        lengths = {it["length"] for it in its}
        seeds = {it.get("seed") for it in its}
        parts.append(f"{len(its)} {_MODE_TITLE[mode]} ({len(tasks)} tasks × {len(lengths)} lengths × {len(seeds)} seeds)")
    samples = sorted({it.get("samples") for it in items if isinstance(it.get("samples"), int)})
    text = "- **Items:** " + ", ".join(parts)
    if samples:
        text += f"; {samples[0]} samples per item" if len(samples) == 1 else f"; {samples[0]}–{samples[-1]} samples per item"
    return text


def _flag(items: Sequence[Mapping[str, Any]]) -> str:
    marks = ""
    if any(int(it.get("over_length") or 0) > 0 for it in items):
        marks += _OVER
    if any(int(it.get("errors") or 0) > 0 for it in items):
        marks += _ERR
    return marks


def _table(report: Mapping[str, Any], mode: str) -> list[str]:
    """Table 3 of one mode (the terminal's cells, from results.table3), with flags per cell."""
    from ..results.table import table3

    table = table3(report, mode)
    by_cell: dict[tuple[str, int], list[Mapping[str, Any]]] = {}
    for it in _mode_items(report, mode):
        by_cell.setdefault((it["task"], int(it["length"])), []).append(it)
    head = ["Task", *table.header[1:-4], "Avg", "wAvg (inc)", "wAvg (dec)", "Effective"]
    out = [_row(head), "|:---|" + "---:|" * (len(head) - 1)]
    for row in table.rows:
        if row[0] == "Total":
            out.append(_row(["**Total**", *row[1:]]))
            continue
        cells = [row[0]]
        for L, text in zip(table.lengths, row[1:1 + len(table.lengths)]):
            marks = _flag(by_cell.get((row[0], L), []))
            cells.append(f"{text} {marks}" if marks else text)
        out.append(_row(cells + row[1 + len(table.lengths):]))
    return out


def _flag_notes(report: Mapping[str, Any], mode: str) -> list[str]:
    over, err = [], []
    for it in _mode_items(report, mode):
        where = f"{it['task']} at {format_length(int(it['length']))} (seed {it.get('seed')}"
        n = it.get("samples")
        if int(it.get("over_length") or 0) > 0:
            over.append(f"{where}: {it['over_length']} of {n})")
        if int(it.get("errors") or 0) > 0:
            err.append(f"{where}: {it['errors']} of {n})")
    lines = []
    if over:
        lines.append(f"{_OVER} samples longer than the model's context window (scored as wrong): " + "; ".join(over))
    if err:
        lines.append(f"{_ERR} samples whose generation failed (scored as wrong): " + "; ".join(err))
    return lines


def _depth_map(item: Mapping[str, Any]) -> dict[float, float] | None:
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


def _depth_tables(report: Mapping[str, Any], mode: str) -> dict[str, tuple[list[float], list[int], dict[tuple[float, int], float]]]:
    """Per task with depth data: (depths, lengths, {(depth, length): mean over seeds})."""
    acc: dict[str, dict[tuple[float, int], list[float]]] = {}
    for it in _mode_items(report, mode):
        dm = _depth_map(it)
        if not dm:
            continue
        for d, s in dm.items():
            acc.setdefault(it["task"], {}).setdefault((d, int(it["length"])), []).append(s)
    out = {}
    for task in _ordered_tasks(list(acc)):
        cells = {k: math.fsum(v) / len(v) for k, v in acc[task].items()}
        depths = sorted({d for d, _ in cells})
        lengths = sorted({L for _, L in cells})
        out[task] = (depths, lengths, cells)
    return out


def _depth_label(d: float, depths: Sequence[float]) -> str:
    pct = d * 100 if max(depths) <= 1.0 else d
    return f"{pct:g}%"


def _depth_section(report: Mapping[str, Any], mode: str) -> list[str]:
    tables = _depth_tables(report, mode)
    if not tables:
        return []
    title = "Depth sweep" if mode == "native" else f"Depth sweep ({_MODE_TITLE[mode]})"
    out = [f"## {title}", "", "Score by needle depth (rows, 0% = start of the context) and length (columns), averaged over seeds.", ""]
    for task, (depths, lengths, cells) in tables.items():
        out.append(f"### {task}")
        out.append("")
        out.append(_row(["Depth", *(format_length(L) for L in lengths)]))
        out.append("|:---|" + "---:|" * len(lengths))
        for d in depths:
            out.append(_row([_depth_label(d, depths), *(_score(cells.get((d, L))) for L in lengths)]))
        out.append("")
    return out


def markdown(report: Mapping[str, Any], *, images: Sequence[str | Path] = ()) -> str:
    """The report as Markdown: header, Table 3 per mode, comparisons, depth sweeps.

    ``images`` (paths relative to where the Markdown will live) are linked at the end.
    """
    threshold = report.get("threshold")
    lines = [f"# RULER report: {report.get('model', '?')}", ""]
    lines.append(f"- **Model:** `{report.get('model', '?')}`")
    lines.append(f"- **Backend:** {report.get('backend', '?')}")
    lines.append(f"- **Tokenizer:** `{report.get('tokenizer', '?')}`")
    if report.get("chat_template"):
        lines.append(f"- **Chat template:** {report['chat_template']}")
    hay_line, hay_warning = _haystack_lines(report.get("haystack_corpus", ""))
    lines.append(hay_line)
    if threshold is not None:
        lines.append(f"- **Threshold:** {threshold:g} (an item passes, and a length counts toward the effective length, when its score is above it)")
    items_line = _items_line(report)
    if items_line:
        lines.append(items_line)
    gate = _gate_line(report)
    if gate:
        lines.append(gate)
    lines.append("")
    if hay_warning:
        lines += [hay_warning, ""]

    modes = _modes(report)
    if not modes:
        lines += ["No items in this report.", ""]
    seeds = {it.get("seed") for it in report.get("items") or []}
    for mode in modes:
        heading = "Effective context length" if mode == "native" else "Map-reduce (chunked inference)"
        lines += [f"## {heading}", ""]
        grounding_head, grounding_table = _grounding_lines(report) if mode == "mapreduce" else ([], [])
        lines += grounding_head
        lines += _table(report, mode)
        lines.append("")
        notes = _flag_notes(report, mode)
        if notes:
            lines += notes + [""]
        lines += grounding_table
    if modes:
        thr = f" {threshold:g}" if threshold is not None else ""
        lines.append(
            f"Scores are percentages (RULER metric over each item's samples), averaged over {len(seeds)} seed(s); "
            "Total is the mean over tasks at each length, as in the paper's Table 3. "
            f"Effective length: the longest tested length scoring above the threshold{thr}; "
            "\"≥L\" means it passes at the longest tested length L (the paper's \">128K\"), "
            "\"<L\" that it is below the threshold at every tested length, the shortest being L."
        )
        lines.append("")

    summary = report.get("summary") or {}
    native, mr = summary.get("native"), summary.get("mapreduce")
    if native and mr:
        n_eff = format_effective_length(native.get("effective_length"), _summary_lengths(native))
        m_eff = format_effective_length(mr.get("effective_length"), _summary_lengths(mr))
        lines += ["## Native vs map-reduce", "", f"**native effective {n_eff} vs map-reduce effective {m_eff}**", ""]
        lines.append(_row(["Mode", "Effective", "Avg", "wAvg (inc)", "wAvg (dec)"]))
        lines.append("|:---|---:|---:|---:|---:|")
        lines.append(_row(["native", n_eff, _score(native["avg"]), _score(native["wavg_inc"]), _score(native["wavg_dec"])]))
        lines.append(_row(["map-reduce", m_eff, _score(mr["avg"]), _score(mr["wavg_inc"]), _score(mr["wavg_dec"])]))
        lines.append("")

    for mode in modes:
        lines += _depth_section(report, mode)

    if images:
        lines += ["## Plots", ""]
        for img in images:
            p = Path(img)
            lines += [f"![{p.stem}]({p.as_posix()})", ""]
    return "\n".join(lines).rstrip("\n") + "\n"


# ------------------------------------------------------------------ plots --
def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("._") or "task"


def _import_matplotlib(out_dir: Any) -> tuple[Any, Any]:
    try:
        import matplotlib  # noqa: F401
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        raise RulerUsageError("--ruler-plots", str(out_dir), _PLOT_FIX) from None
    return Figure, FigureCanvasAgg


def _new_figure(Figure: Any, FigureCanvasAgg: Any, size: tuple[float, float]) -> Any:
    fig = Figure(figsize=size, dpi=100)
    FigureCanvasAgg(fig)  # Agg canvas, no pyplot global state
    return fig


def _length_axis(ax: Any, lengths: Sequence[int]) -> None:
    ax.set_xscale("log", base=2)
    ax.set_xticks(list(lengths))
    ax.set_xticklabels([format_length(L) for L in lengths])
    ax.minorticks_off()
    ax.set_xlabel("context length (tokens)")


def plot_scores(report: Mapping[str, Any], out_dir: str | Path, *, prefix: str = "ruler") -> list[Path]:
    """Write the PNG plots of a report into ``out_dir``; return their paths.

    - ``{prefix}.scores.png``: score vs length, one line per task, the Total line
      (``summary``'s per-length scores) in bold, the threshold dashed; x is log2 with
      K labels. ``{prefix}.scores.mapreduce.png`` likewise for map-reduce items, with
      the native Total as a grey reference.
    - ``{prefix}.depth.{task}.png`` (``.mapreduce`` before ``.png`` for that mode): a
      depth x length heatmap per task that carries depth sweeps.

    Needs matplotlib: ``RulerUsageError("--ruler-plots", out_dir, ...)`` without it.
    """
    Figure, FigureCanvasAgg = _import_matplotlib(out_dir)
    from matplotlib import colormaps
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    summary = report.get("summary") or {}
    threshold = report.get("threshold")
    model = report.get("model", "?")
    native = summary.get("native")

    for mode in _modes(report):
        s = summary.get(mode)
        means = _pivot(_mode_items(report, mode))
        pl = {int(k): float(v) for k, v in ((s or {}).get("per_length") or {}).items()}
        lengths = sorted(set(pl) | {L for sc in means.values() for L in sc})
        if not lengths:
            continue
        fig = _new_figure(Figure, FigureCanvasAgg, (9.0, 5.0))
        ax = fig.add_subplot(1, 1, 1)
        tasks = _ordered_tasks(list(means))
        palette = colormaps["tab10" if len(tasks) <= 10 else "tab20"]
        for i, task in enumerate(tasks):
            xs = sorted(means[task])
            ax.plot(xs, [means[task][L] for L in xs], marker="o", markersize=3, linewidth=1.0, alpha=0.8,
                    color=palette(i % palette.N), label=task)
        if pl:
            xs = sorted(pl)
            eff = format_effective_length(s.get("effective_length"), xs)
            ax.plot(xs, [pl[L] for L in xs], color="black", linewidth=2.6, marker="s", label=f"Total (effective {eff})")
        if mode != "native" and native:
            npl = {int(k): float(v) for k, v in native["per_length"].items()}
            xs = sorted(npl)
            ax.plot(xs, [npl[L] for L in xs], color="grey", linewidth=1.8, linestyle=":", label="Total, native")
        if threshold is not None:
            ax.axhline(float(threshold), color="red", linestyle="--", linewidth=1.2, label=f"threshold {float(threshold):g}")
        _length_axis(ax, lengths)
        ax.set_ylim(-2, 102)
        ax.set_ylabel("score (%)")
        ax.grid(True, alpha=0.3)
        ax.set_title(f"RULER, {model} ({_MODE_TITLE[mode]}): score vs length")
        ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize="small", frameon=False)
        fig.tight_layout()
        path = out / (f"{prefix}.scores.png" if mode == "native" else f"{prefix}.scores.{mode}.png")
        fig.savefig(path, format="png")
        written.append(path)

        for task, (depths, dlengths, cells) in _depth_tables(report, mode).items():
            fig = _new_figure(Figure, FigureCanvasAgg, (1.6 + 1.0 * len(dlengths), 1.4 + 0.45 * len(depths)))
            ax = fig.add_subplot(1, 1, 1)
            grid = [[cells.get((d, L), float("nan")) for L in dlengths] for d in depths]
            im = ax.imshow(grid, aspect="auto", cmap="RdYlGn", vmin=0, vmax=100, interpolation="nearest")
            ax.set_xticks(range(len(dlengths)))
            ax.set_xticklabels([format_length(L) for L in dlengths])
            ax.set_yticks(range(len(depths)))
            ax.set_yticklabels([_depth_label(d, depths) for d in depths])
            ax.set_xlabel("context length (tokens)")
            ax.set_ylabel("needle depth")
            for i, row in enumerate(grid):
                for j, v in enumerate(row):
                    if not math.isnan(v):
                        ax.text(j, i, f"{v:.0f}", ha="center", va="center", fontsize=7, color="black")
            fig.colorbar(im, ax=ax, label="score (%)")
            ax.set_title(f"{task} ({_MODE_TITLE[mode]}): depth × length", fontsize="medium")
            fig.tight_layout()
            suffix = "" if mode == "native" else f".{mode}"
            path = out / f"{prefix}.depth.{_safe(task)}{suffix}.png"
            fig.savefig(path, format="png")
            written.append(path)
    return written


# ----------------------------------------------------------------- render --
def render_report(path: str | Path, out_dir: str | Path | None = None, *, plots: bool = True) -> tuple[str, list[Path]]:
    """``pytest-ruler report``: read ``path``, write ``<stem>.md`` (and PNGs) next to it or in ``out_dir``.

    Returns the Markdown text and the files written, the Markdown file first. The
    Markdown is written before the plots, so it exists even when matplotlib is
    missing (which raises a ``RulerUsageError`` whose fix names ``--no-plots``).
    """
    report = load_report(path)
    src = Path(path)
    dest = Path(out_dir) if out_dir is not None else src.parent
    try:
        dest.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise RulerUsageError("--out", str(dest), f"cannot create the folder ({exc})") from None
    prefix = src.stem
    md_path = dest / f"{prefix}.md"
    text = markdown(report)
    md_path.write_text(text, encoding="utf-8")
    written = [md_path]
    if plots:
        try:
            pngs = plot_scores(report, dest, prefix=prefix)
        except RulerUsageError as exc:
            if exc.fix != _PLOT_FIX:
                raise
            raise RulerUsageError("plots", "matplotlib not installed", f"{_PLOT_FIX}, or pass --no-plots (the Markdown was written to {md_path})") from None
        if pngs:
            text = markdown(report, images=[p.name for p in pngs])
            md_path.write_text(text, encoding="utf-8")
        written += pngs
    return text, written
