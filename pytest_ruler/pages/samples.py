"""The per-run page's sample browser: every sample's prediction beside its answers, filtered in the page.

    Report ──sample_rows(report)──► [Sample] (per item's ``predictions``: index, prediction, answers,
        score, prompt hash, and the prompt text when the record has one (``prompt``); a report from
        before per-sample records gives the items' few failing predictions, marked so)
    Report ──browser(report)──► the section's HTML: the filters (task, length, mode when there are two,
        right/wrong), the count shown, and a table with one row per sample whose ``data-*`` attributes
        the filters read
    SCRIPT: the page's JavaScript (a constant: no report text in it). It reads the filters from the
        page's address too (``page.html#task=niah_single_1&length=4096&outcome=wrong``), writes the
        count shown into ``#shown-count`` (text and ``data-shown``), scrolls to the samples when the address
        selected some, and marks the document
        ``data-js="ready"``; an error in any script of the page is written into ``data-js-errors``.
        (The browser test reads those marks from Chromium's DOM.)

A sample is right when its score is 1 (full credit), wrong otherwise (partial credit included).
At most ``MAX_SAMPLES`` rows (the wrong ones first); the section says how many were left out.

Public names: ``MAX_SAMPLES``, ``SCRIPT``, ``Sample``, ``browser``, ``sample_rows``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..lengths import format_length
from ..report.load import MODE_TITLE
from ..results.report import Report
from .markup import esc, tag

__all__ = ["MAX_SAMPLES", "SCRIPT", "Sample", "browser", "sample_rows"]

MAX_SAMPLES = 20000


@dataclass(frozen=True)
class Sample:
    task: str
    length: int
    seed: int
    mode: str
    index: Any
    prediction: str
    answers: tuple[str, ...]
    score: float
    prompt_hash: str
    prompt: str | None = None
    failure_only: bool = False  # from an item's ``failures`` (a report without per-sample records)

    @property
    def right(self) -> bool:
        return self.score >= 1.0


def _float(v: Any) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return 0.0


def sample_rows(report: Report) -> list[Sample]:
    """Every sample of the report, in its items' order (mode, length, task, seed), each item's as recorded."""
    out: list[Sample] = []
    for it in report.items:
        records = [p for p in it.predictions if isinstance(p, Mapping)]
        for p in records:
            prompt = p.get("prompt")
            out.append(Sample(it.task, it.length, it.seed, it.mode, p.get("index"), str(p.get("prediction") or ""),
                              tuple(str(a) for a in (p.get("answers") or [])), _float(p.get("score")),
                              str(p.get("prompt_hash") or ""), None if prompt is None else str(prompt)))
        if not records:
            for f in it.failures:
                if isinstance(f, Mapping):
                    out.append(Sample(it.task, it.length, it.seed, it.mode, f.get("index"), str(f.get("pred") or ""),
                                      tuple(str(a) for a in (f.get("outputs") or [])), 0.0, "", None, True))
    return out


def _options(values: list[tuple[str, str]]) -> str:
    return tag("option", "all", value="") + "".join(tag("option", esc(label), value=v) for v, label in values)


def browser(report: Report) -> str:
    """The sample browser section (see the module docstring)."""
    samples = sample_rows(report)
    head = tag("h2", "Samples", id="samples")
    if not samples:
        return tag("section", head + tag("p", "This report holds no per-sample predictions.", class_="muted"), id="sample-browser")
    total = len(samples)
    if total > MAX_SAMPLES:
        samples = sorted(samples, key=lambda s: s.right)[:MAX_SAMPLES]
    wrong = sum(not s.right for s in samples)
    tasks = list(dict.fromkeys(s.task for s in samples))
    lengths = sorted({s.length for s in samples})
    modes = list(dict.fromkeys(s.mode for s in samples))
    filters = [
        tag("label", "Task " + tag("select", _options([(t, t) for t in tasks]), id="f-task", data_key="task")),
        tag("label", "Length " + tag("select", _options([(str(L), format_length(L)) for L in lengths]), id="f-length", data_key="length")),
    ]
    if len(modes) > 1:
        filters.append(tag("label", "Mode " + tag("select", _options([(m, MODE_TITLE.get(m, m)) for m in modes]), id="f-mode", data_key="mode")))
    filters.append(tag("label", "Outcome " + tag("select", _options([("wrong", "wrong (score < 1)"), ("right", "right (score 1)")]),
                                                 id="f-outcome", data_key="outcome")))
    filters.append(tag("span", f"{len(samples)} of {len(samples)} samples shown", id="shown-count", data_shown=len(samples)))
    notes = [f"{len(samples)} samples, {wrong} wrong (score below 1: partial credit counts as wrong here). "
             "Filters can be given in the address too: <code>#task=NAME&amp;length=4096&amp;outcome=wrong</code>."]
    if total > MAX_SAMPLES:
        notes.append(f"The report holds {total} samples: the page shows {MAX_SAMPLES}, the wrong ones first.")
    if any(s.failure_only for s in samples):
        notes.append("This report has no per-sample records: the rows are each item's few failing predictions.")
    rows = []
    for s in samples:
        outcome = "right" if s.right else "wrong"
        answers = "\n".join(esc(a) for a in s.answers) or tag("span", "(none)", class_="muted")
        hash_cell = tag("code", esc(s.prompt_hash)) if s.prompt_hash else tag("span", "-", class_="muted")
        if s.prompt is not None:
            hash_cell += tag("details", tag("summary", "prompt") + tag("pre", esc(s.prompt)))
        pred = tag("div", esc(s.prediction)) if s.prediction.strip() else tag("span", "(empty)", class_="muted")
        where = f"{s.task}" + ("" if s.mode == "native" else f" [{MODE_TITLE.get(s.mode, s.mode)}]")
        cells = [tag("td", esc(where)), tag("td", format_length(s.length), class_="num"), tag("td", str(s.seed), class_="num"),
                 tag("td", esc(s.index), class_="num"), tag("td", f"{s.score:.2f}", class_="score num"),
                 tag("td", pred, class_="pred"), tag("td", answers, class_="ans"), tag("td", hash_cell)]
        rows.append(tag("tr", "".join(cells), class_=f"sample {'pass' if s.right else 'fail'}", data_task=s.task,
                        data_length=s.length, data_mode=s.mode, data_outcome=outcome))
    widths = "".join(f'<col style="width:{w}">' for w in ("13%", "6%", "5%", "6%", "6%", "32%", "20%", "12%"))
    header = tag("tr", "".join(tag("th", h) for h in ("Task", "Length", "Seed", "Sample", "Score", "Prediction", "Answers", "Prompt hash")))
    table = tag("table", f"<colgroup>{widths}</colgroup>" + tag("thead", header) + tag("tbody", "".join(rows)),
                class_="samples", id="sample-table", data_total=len(samples))
    return tag("section", head + "".join(tag("p", n, class_="note") for n in notes) + tag("div", "".join(filters), class_="filters")
               + table, id="sample-browser")


SCRIPT = r"""
(function () {
  var root = document.documentElement, errors = [];
  window.addEventListener("error", function (e) {
    errors.push(String(e.message || e));
    root.setAttribute("data-js-errors", errors.join(" | "));
  });
  var selects = Array.prototype.slice.call(document.querySelectorAll(".filters select"));
  var table = document.getElementById("sample-table");
  var count = document.getElementById("shown-count");
  function apply() {
    if (!table) { return; }
    var want = {};
    selects.forEach(function (s) { if (s.value) { want[s.getAttribute("data-key")] = s.value; } });
    var rows = table.tBodies[0].rows, shown = 0;
    for (var i = 0; i < rows.length; i++) {
      var ok = true;
      for (var key in want) {
        if (rows[i].getAttribute("data-" + key) !== want[key]) { ok = false; break; }
      }
      rows[i].hidden = !ok;
      if (ok) { shown++; }
    }
    count.textContent = shown + " of " + rows.length + " samples shown";
    count.setAttribute("data-shown", String(shown));
  }
  var asked = {};
  location.hash.replace(/^#/, "").split("&").forEach(function (part) {
    var kv = part.split("=");
    if (kv.length === 2) { asked[decodeURIComponent(kv[0])] = decodeURIComponent(kv[1]); }
  });
  selects.forEach(function (s) {
    var v = asked[s.getAttribute("data-key")];
    if (v !== undefined) {
      for (var i = 0; i < s.options.length; i++) { if (s.options[i].value === v) { s.value = v; } }
    }
    s.addEventListener("change", apply);
  });
  apply();
  var section = document.getElementById("samples");
  if (section && Object.keys(asked).length) { section.scrollIntoView(); }  // a link to a selection lands on it
  root.setAttribute("data-js", "ready");
})();
"""
