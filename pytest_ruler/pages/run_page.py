"""The per-run HTML page: one self-contained file that opens offline (``--ruler-html=PATH``,
``pytest-ruler html REPORT --out PATH``).

    Report ──run_page(report)──► the page's HTML:
        header      model, back end (a test engine's run, scripted, is labelled NOT A MODEL in a banner and
                    in every chart title: report.engine_label), the engine's identity, tokenizer,
                    haystack, threshold, items, provenance (created, versions, commit, command)
        verdict     the report's ``verdict``: its line word for word (the terminal's ``ruler verdict:``
                    line) and its reasons; a report from before the verdict gets the one
                    ``results.gate.gate`` gives it (its stored gate's required length), said so
        Table 3     per mode, each score with its 95 % interval (``results.table.mode_table(ci=True)``),
                    cells at or below their mark shaded, the notes the terminal prints under it
        charts      score vs length (``report.plots.score_figure``, as the PNG) and the depth x length
                    heat map per task with a depth sweep (``report.plots.depth_figures``); a run without
                    one gets the task x length heat map (``svg.cells_heat_map``); all inline SVG (svg)
        samples     the sample browser (samples.browser; filters in a little inline JavaScript)
    Report, PATH ──write_run_page(report, path)──► PATH (atomically: report.build.write_atomically)
    REPORT.json ──render_html(path, out)──► the page (``pytest-ruler html``; the report read by the
        one reader, ``report.load.load_report``; default out: REPORT.html beside it)
    html_reporter() ──► the ``html`` reporter of a run (``--ruler-html``; report.reporters)
    check_html(path) ──► at start-up (run.preflight): a path that can be written, and matplotlib
        importable, else ``RulerUsageError("--ruler-html", ...)`` naming the ``plot`` extra

Charts: Matplotlib's SVG (the ``plot`` extra; see :mod:`.svg` for why not a JavaScript library).
Every text from the report is escaped (:mod:`.markup`): predictions are model output.

Public names: ``check_html``, ``html_reporter``, ``render_html``, ``run_page``, ``write_run_page``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .. import __version__
from ..errors import RulerUsageError
from ..lengths import format_length
from ..report.build import write_atomically
from ..report.engine_label import engine_label, run_title
from ..report.load import MODE_TITLE, load_report
from ..report.plots import PLOT_FIX, depth_figures, score_figure
from ..report.reporters import Reporter, RunEnd
from ..results.aggregate import passes
from ..results.report import Report, as_report
from ..results.table import mode_table, table_notes
from .markup import esc, page, tag
from .samples import SCRIPT, browser
from .svg import cells_heat_map, svg_of

__all__ = ["check_html", "html_reporter", "render_html", "run_page", "write_run_page"]

_CI = re.compile(r"^(\S+?)\+(\S+)/-(\S+?)(\s.*)?$")
_STATUS_CLASS = {"passed": "passed", "failed": "failed", "not decided": "not-decided"}
_HEADER = {"wAvg.inc": "wAvg (inc)", "wAvg.dec": "wAvg (dec)", "Eff.LB": "Effective (95% lower bound)"}
HTML_FIX = f'the page draws its charts with matplotlib: {PLOT_FIX} (the plot extra)'


def check_html(path: Path | None) -> None:
    """Start-up: matplotlib importable when ``--ruler-html`` is given (else a usage error naming the extra)."""
    if path is None:
        return
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise RulerUsageError("--ruler-html", str(path), HTML_FIX) from None


def _dl(pairs: list[tuple[str, str]]) -> str:
    return tag("dl", "".join(tag("dt", esc(k)) + tag("dd", v) for k, v in pairs if v), class_="meta")


def _engine_text(engine: Any) -> str:
    if not isinstance(engine, Mapping):
        return ""
    parts = [f"{k}={v}" for k, v in engine.items() if k not in ("options", "versions") and isinstance(v, (str, int, float, bool))]
    versions = engine.get("versions") or {}
    parts += [f"{k} {v}" for k, v in versions.items() if v] if isinstance(versions, Mapping) else []
    return esc(", ".join(parts))


def _header(r: Report) -> str:
    label = engine_label(r)
    out = tag("h1", esc(run_title(r)))
    if label.scripted:
        out += tag("div", esc(f"Scripted run: the items were answered by {label.text}. Its scores test pytest-ruler's "
                              "plumbing and say nothing about any model."), class_="banner scripted", id="scripted-banner")
    if not r.complete:
        state = "Interrupted" if r.interrupted else "Incomplete"
        done = f" after {r.items_finished} of {r.items_expected} items" if r.items_expected is not None else ""
        out += tag("div", esc(f"{state}{done}: the tables are partial (\"complete\": false)."), class_="banner partial")
    prov = r.field("provenance") if isinstance(r.field("provenance"), Mapping) else {}
    versions = prov.get("versions") if isinstance(prov.get("versions"), Mapping) else {}
    command = prov.get("command")
    items = r.items
    shape = ", ".join(f"{len(r.mode(m).items)} {MODE_TITLE[m]}" for m in r.modes)
    pairs = [("Model", tag("code", esc(r.model))), ("Back end", esc(label.text)), ("Engine", _engine_text(r.field("engine"))),
             ("Tokenizer", tag("code", esc(r.tokenizer))), ("Chat template", esc(r.field("chat_template") or "")),
             ("Haystack", esc(r.haystack_corpus or "not recorded")),
             ("Threshold", esc("" if r.threshold is None else f"{r.threshold:g}")),
             ("Items", esc(f"{len(items)} ({shape})" if items else "none")),
             ("Created", esc(prov.get("created") or "")), ("Commit", tag("code", esc(prov["git_commit"])) if prov.get("git_commit") else ""),
             ("Versions", esc(", ".join(f"{k} {v}" for k, v in versions.items() if v))),
             ("Command", tag("code", esc(" ".join(map(str, command)))) if isinstance(command, list) else "")]
    return out + _dl(pairs)


def _verdict(r: Report) -> str:
    stored = r.field("verdict")
    note = ""
    if isinstance(stored, Mapping) and stored.get("line"):
        status, line, reasons = str(stored.get("status") or ""), str(stored["line"]), stored.get("reasons") or []
    else:
        from ..results.gate import gate

        required = (r.field("gate") or {}).get("required_effective_length") if isinstance(r.field("gate"), Mapping) else None
        v = gate(r, required=required)
        status, line, reasons = v.status, v.line(), [x.to_dict() for x in v.reasons]
        note = tag("p", "This report was written before reports kept their verdict: this one is what "
                        "<code>pytest-ruler gate</code> gives it now.", class_="note")
    cls = _STATUS_CLASS.get(status, "not-decided")
    items = []
    for reason in reasons:
        if isinstance(reason, Mapping):
            word = str(reason.get("status") or "")
            items.append(tag("li", tag("span", esc(word.upper()), class_=f"status-{_STATUS_CLASS.get(word, 'not-decided')}")
                             + " " + esc(reason.get("text") or reason.get("kind") or "")))
    body = tag("div", esc(line), class_="line", id="verdict-line") + (tag("ul", "".join(items)) if items else "")
    return tag("h2", "Verdict", id="verdict") + tag("div", body, class_=f"verdict {cls}", data_status=status) + note


def _cell(text: str) -> str:
    m = _CI.match(text)
    if not m:
        return esc(text)
    return esc(m.group(1) + (m.group(4) or "")) + tag("span", esc(f"+{m.group(2)}/\u2212{m.group(3)}"), class_="iv")


def _table3(r: Report, mode: str) -> str:
    m = r.mode(mode)
    table = mode_table(m, ci=True)
    n = len(table.lengths)
    by_cell: dict[tuple[str, int], list[Any]] = {}
    for it in m.items:
        by_cell.setdefault((it.task, it.length), []).append(it)
    relative = bool(r.field("relative_threshold"))
    per_length = (m.summary or {}).get("per_length") or {}
    head = tag("tr", "".join(tag("th", esc(_HEADER.get(h, h)), class_=None if i == 0 else "num") for i, h in enumerate(table.header)))
    rows = []
    for row in table.rows:
        total = row[0] == "Total"
        cells = [tag("td", esc(row[0]))]
        for L, text in zip(table.lengths, row[1:1 + n]):
            if total:
                v = per_length.get(str(L), per_length.get(L))
                state = None if relative or v is None or r.threshold is None else ("above" if passes(v, r.threshold) else "below")
            else:
                its = by_cell.get((row[0], L), [])
                state = None if not its else ("below" if any(it.error is not None or not passes(it.score, it.threshold) for it in its) else "above")
            cells.append(tag("td", _cell(text), class_=f"num {state}" if state else "num"))
        cells += [tag("td", _cell(text), class_="num") for text in row[1 + n:]]
        rows.append(tag("tr", "".join(cells), class_="total" if total else None))
    notes = "".join(tag("p", esc(line), class_="note") for line in table_notes(r, mode))
    caption = tag("p", "Scores in percent, each with its 95% interval (+a/\u2212b points) when the report has per-sample "
                       "scores. Shaded: a cell above (green) or at or below (red) its mark.", class_="note")
    title = "Table 3" + ("" if mode == "native" else f" ({MODE_TITLE[mode]})")
    return tag("h3", esc(title)) + tag("table", tag("thead", head) + tag("tbody", "".join(rows)), class_="t3", data_mode=mode) + caption + notes


def _charts(r: Report) -> str:
    out = []
    for mode in r.modes:
        fig = score_figure(r, mode)
        charts = [tag("div", svg_of(fig, f"s{mode[0]}-"), class_="chart", data_chart=f"scores-{mode}")] if fig is not None else []
        depth = depth_figures(r, mode)
        for i, (task, dfig) in enumerate(depth):
            charts.append(tag("div", svg_of(dfig, f"d{mode[0]}{i}-"), class_="chart", data_chart=f"depth-{mode}", data_task=task))
        if not depth:
            hfig = cells_heat_map(r, mode)
            if hfig is not None:
                charts.append(tag("div", svg_of(hfig, f"h{mode[0]}-"), class_="chart", data_chart=f"cells-{mode}"))
        title = "" if len(r.modes) == 1 else MODE_TITLE[mode]
        note = "" if depth else tag("p", "No depth sweep in this run (<code>--ruler-depths=0,0.25,0.5,0.75,1</code> adds one): "
                                         "the heat map shows Table 3's cells, task by length.", class_="note")
        out.append((tag("h3", esc(title)) if title else "") + note + tag("div", "".join(charts), class_="charts"))
    return "".join(out)


def run_page(report: Report | Mapping[str, Any]) -> str:
    """The whole page of a report (see the module docstring); needs matplotlib."""
    r = as_report(report)
    body = [_header(r), _verdict(r)]
    if r.modes:
        body.append(tag("h2", "Effective context length", id="table3") + "".join(_table3(r, m) for m in r.modes))
        body.append(tag("h2", "Charts", id="charts") + _charts(r))
    else:
        body.append(tag("p", "No items in this report.", class_="muted"))
    body.append(browser(r))
    lengths = ", ".join(format_length(L) for L in sorted({it.length for it in r.items}))
    body.append(tag("p", esc(f"Written by pytest-ruler {__version__}; lengths {lengths or '-'}. One file: it opens offline."),
                    class_="note"))
    return page(run_title(r), "\n".join(body), SCRIPT)


def write_run_page(report: Report | Mapping[str, Any], path: str | Path) -> Path:
    """Write the page of ``report`` at ``path`` (atomically); return the path."""
    text = run_page(report)
    target = Path(path)
    if target.parent and not target.parent.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
    return write_atomically(target, lambda fh: fh.write(text))


def render_html(report_path: str | Path, out: str | Path | None = None) -> Path:
    """``pytest-ruler html REPORT [--out PATH]``: the page of a saved report (default: REPORT.html beside it)."""
    report = load_report(report_path)
    check_html(Path(out) if out else Path(report_path).with_suffix(".html"))
    target = Path(out) if out else Path(report_path).with_suffix(".html")
    if target.is_dir():
        raise RulerUsageError("--out", str(target), "this is a directory; pass a file path, e.g. run.html")
    return write_run_page(report, target)


def _write(end: RunEnd) -> list[Path]:
    return [write_run_page(end.report, end.config.html)]


def html_reporter() -> Reporter:
    """The ``html`` reporter: ``--ruler-html=PATH``, for a run with items."""
    return Reporter("html", _write, lambda end: getattr(end.config, "html", None) is not None and bool(end.report.items),
                    lambda end: f"writing the HTML page {end.config.html}")
