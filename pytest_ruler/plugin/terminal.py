"""What the run shows and writes: header, per-item results, Table 3, the JSON report.

``RulerPlugin`` is registered by ``plugin.pytest_configure`` only when the
suite is active. It builds the items (none with ``--ruler-no-suite``: then only
the user's own tests run, with fixtures, engine, gate and report as usual), collects every item's result from its
test report (so the controller of an xdist run sees all workers' results the
same way a single process does), prints the summary and writes the report —
on the controller only. When the items are known it says the run's prompt tokens
(an upper bound: samples x length per item), and after the first item that read
prompts an ETA for the rest (seconds per prompt token so far). The report's ``provenance`` (time, versions, the scrubbed
command line, the git commit of the rootdir) is from ``report.provenance``.

Public names: ``RulerPlugin``, ``header_lines``.
"""

from __future__ import annotations

import contextlib
import logging
import time
from typing import Any

import pytest

from ..errors import RulerUsageError
from .items import SESSION_KEY, make_items, parse_item_name
from ..lengths import format_length
from ..secrets import scrub
from ..results import ItemResult
from ..results.table import NOTATION, format_text, skipped_notes, table3, table_notes
from ..run.batching import CrossItemBatches
from ..run.session import RulerSession, one_line

log = logging.getLogger("pytest_ruler")

__all__ = ["RulerPlugin", "header_lines"]


def _short(text: str, width: int = 70) -> str:
    text = text.replace("\n", "\\n")
    return text if len(text) <= width else text[: width - 3] + "..."


def _duration(seconds: float) -> str:
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds // 60 % 60:02d}m"


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def header_lines(rs: RulerSession) -> list[str]:
    c = rs.config
    suite = (f"ruler: {_count(len(c.tasks), 'task')} x {_count(len(c.lengths), 'length')} ({', '.join(format_length(L) for L in c.lengths)}) "
             f"x {_count(len(c.seeds), 'seed')}, {_count(c.samples, 'sample')} per item, threshold {c.threshold}")
    if c.no_suite:
        suite = f"ruler: standard suite not collected (--ruler-no-suite): only your own tests run, threshold {c.threshold}"
    lines = [
        f"ruler: model={c.model} backend={rs.backend} tokenizer={rs.tokenizer.name}",
        suite,
        f"ruler: cache {'off' if c.no_cache or rs.cache_dir is None else rs.cache_dir}",
    ]
    frame = rs.frame
    if frame.head or frame.tail:
        lines.append(f"ruler: chat template {frame.name}: prompt = {_short(frame.head, 60)!s}<task prompt>{_short(frame.tail, 60)!s}<answer prefix>")
    else:
        lines.append(f"ruler: no chat template (RULER base prompts): prompt = <task prompt><answer prefix>; {_why_base(rs)}")
    return lines


def _why_base(rs: RulerSession) -> str:
    """Why the prompts are RULER's base ones: chosen, or the model has no chat template (a base model)."""
    from ..tasks.tokenizer import EMBEDDED_ALIASES

    c = rs.config
    if c.chat_template in ("none", "base"):
        return f"--ruler-chat-template={c.chat_template}"
    embedded = EMBEDDED_ALIASES.get(c.tokenizer or c.model)
    if embedded is not None and not embedded.instruct:
        return f"{embedded.alias} is a base model (no chat template), prompted as the paper prompts base models"
    return f"{rs.tokenizer.name}'s tokenizer has no chat template (a base model?), so base prompts, as the paper gives base models"


class RulerPlugin:
    """The active run's hooks (see the module docstring).

    Every standard-suite item that was selected to run ends as exactly one result:
    its own, or an errored one made here from its failed report (a setup error, a
    crashed xdist worker). ``expected`` and ``finished`` (node ids) tell a complete
    run from an interrupted one.
    """

    def __init__(self, config: Any):
        self.config = config
        self.results: list[ItemResult] = []
        self.report: dict[str, Any] | None = None
        self.failures: list[str] = []
        self.errors: list[str] = []  # what failed after the items ran (baseline, plots, ...): reported, never raised
        self.verdict_lines: list[tuple[str, str]] = []  # the baseline's lines and each gate's verdict
        self.expected: set[str] = set()
        self.finished: set[str] = set()
        self.interrupted = False
        self.written: list = []  # files written at the end (report, Markdown, plots)
        self.shown_failures: list[str] = []  # failures a verdict line already states (printed once)
        self.skipped: list[dict[str, Any]] = []  # suite items that were skipped, with their reasons
        self.started: float | None = None  # when the items were known (the estimate's line)
        self.estimate_said = False
        self.eta_said = False

    @property
    def rs(self) -> RulerSession:
        return self.config.stash[SESSION_KEY]

    @property
    def is_worker(self) -> bool:
        return hasattr(self.config, "workerinput")

    def pytest_report_header(self, config: Any) -> list[str]:
        try:
            lines = header_lines(self.rs)
        except RulerUsageError as exc:
            raise pytest.UsageError(str(exc)) from None
        return lines + [f"ruler: warning: {w}" for w in self.rs.warnings]

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_modifyitems(self, session: Any, config: Any, items: list) -> None:
        if self.rs.config.no_suite:  # --ruler-no-suite: only the user's own tests (fixtures, engine, gate, report)
            return
        ruler_items = make_items(session, self.rs)
        if self.rs.config.only:
            others = [i for i in items if i not in ruler_items]
            items[:] = ruler_items
            if others:  # through pytest's own hook, so "collected N / M deselected / K selected" is true
                config.hook.pytest_deselected(items=others)
        else:
            items.extend(ruler_items)

    def pytest_collection_finish(self, session: Any) -> None:
        from .items import RulerItem

        self.expected = {i.nodeid for i in session.items if isinstance(i, RulerItem)}
        self.rs.notify = self._say
        if not self.is_worker:
            self._say_estimate()
        # cross-item batching needs to know what this process runs next; an xdist
        # worker is handed items one chunk at a time, so it does not plan
        if not self.is_worker and self.rs.config.batch_items > 1:
            self.rs.batches = CrossItemBatches([(i.task, i.length, i.seed) for i in session.items if isinstance(i, RulerItem) and i.mode == "native"], self.rs.config.batch_items)

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list) -> None:
        # the controller collects nothing itself: its workers tell it what will run
        self.expected = {i for i in ids if parse_item_name(i) is not None}
        self.rs.notify = self._say
        self._say_estimate()

    def _budget(self, nodeid: str) -> int:
        """An item's prompt tokens at most: samples x length (every prompt is filled up to its length budget)."""
        cell = parse_item_name(nodeid)
        return 0 if cell is None else self.rs.config.samples * cell[1]

    def _say_estimate(self) -> None:
        """Once, when the items are known: the run's prompt tokens, an upper bound by budget."""
        if self.estimate_said or not self.expected:
            return
        self.estimate_said = True
        self.started = time.perf_counter()
        native = [i for i in self.expected if parse_item_name(i)[3] == "native"]
        twins = len(self.expected) - len(native)
        tokens = sum(self._budget(i) for i in native)
        line = (f"ruler: {_count(len(native), 'item')}, at most {tokens:,} prompt tokens "
                f"({_count(self.rs.config.samples, 'sample')} x length per item: an upper bound, every prompt is filled up to its length)")
        if twins:
            line += f"; {_count(twins, 'map-reduce twin')} read about as many again in chunks, plus their instructions"
        self.rs.say(line + "; an ETA follows the first item")  # through the session: the progress lines count it

    def _say_eta(self) -> None:
        """Once, after the first item that read prompts: the run's ETA from the seconds per prompt token so far.

        Seconds are wall-clock since the items were known (less this process's model load,
        so the first item's load does not count; an xdist controller cannot see its workers'
        loads), prompt tokens are the finished items' own; the remaining items' tokens are
        their budget scaled by the share of their budget the finished items filled."""
        suite = [r for r in self.results if r.error is None]
        tokens = sum(r.prompt_tokens for r in suite)
        if self.eta_said or self.started is None or tokens == 0:
            return
        self.eta_said = True
        done_budget = sum(self._budget(i) for i in self.finished) or 1
        left = [i for i in self.expected if i not in self.finished]
        elapsed = max(0.0, time.perf_counter() - self.started - self.rs.engine_load_seconds)
        per_token = elapsed / tokens
        remaining = per_token * sum(self._budget(i) for i in left) * min(1.0, tokens / done_budget)
        clock = time.strftime("%H:%M", time.localtime(time.time() + remaining))
        self.rs.say(f"ruler: ETA {clock} (about {_duration(remaining)} more for {_count(len(left), 'item')}, "
                  f"at {per_token * 1000:.3g} ms per prompt token so far)")

    def _say(self, line: str) -> None:
        """Write one line to the terminal now, even while an item's output is captured."""
        tr = self.config.pluginmanager.get_plugin("terminalreporter")
        if tr is None or self.is_worker:
            log.warning(line)
            return
        capman = self.config.pluginmanager.get_plugin("capturemanager")
        with capman.global_and_fixture_disabled() if capman is not None else contextlib.nullcontext():
            tr.ensure_newline()
            tr.write_line(scrub(line))

    def pytest_runtest_logreport(self, report: Any) -> None:
        data = getattr(report, "ruler", None)
        if data and report.when == "call":
            self.results.extend(ItemResult.from_dict(d) for d in data)
            if parse_item_name(report.nodeid) is not None:
                self.finished.add(report.nodeid)
                if not self.is_worker and len(self.finished) < len(self.expected):
                    self._say_eta()
            return
        cell = parse_item_name(report.nodeid)
        if cell is None or report.nodeid in self.finished:
            return
        if report.skipped:  # e.g. a QA task without its data file: ran to its end, with no cell
            self.finished.add(report.nodeid)
            longrepr = report.longrepr
            reason = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr or "skipped")
            task, length, seed, mode = cell
            self.skipped.append({"item": report.nodeid, "task": task, "length": length, "seed": seed, "mode": mode,
                                 "reason": scrub(str(reason).removeprefix("Skipped: "))})
            return
        if not report.failed:
            return
        # failed without a result: a setup error, or the worker running it crashed
        reason = " ".join(str(report.longrepr).strip().splitlines()[-1:]) or "the item failed without a result"
        task, length, seed, mode = cell
        self.results.append(self.rs.errored_result(task, length, seed, mode, reason[:300]))
        self.finished.add(report.nodeid)

    def pytest_runtest_logstart(self, nodeid: str, location: Any) -> None:
        # where the run is, for the progress bar (an xdist worker sees only its share: no position)
        if not self.is_worker and nodeid in self.expected:
            self.rs.position = f"item {len(self.finished) + 1}/{len(self.expected)}"

    def pytest_keyboard_interrupt(self, excinfo: Any) -> None:
        self.interrupted = True

    def _haystack_corpus(self) -> str:
        labels = []
        for task in dict.fromkeys(r.task for r in self.results):
            try:
                label = self.rs.haystack_label(task)
            except Exception:
                continue
            if label not in labels:
                labels.append(label)
        return "; ".join(labels)

    @property
    def missing(self) -> int:
        """Selected standard-suite items that produced no result (an interrupted or stopped run)."""
        return len(self.expected - self.finished)

    def _attempt(self, what: str, step: Any, *args: Any) -> Any:
        """Run an end-of-run step; a failure is one reported error, never a lost report."""
        try:
            return step(*args)
        except Exception as exc:
            self.errors.append(f"{what}: {one_line(exc)}")
            return None

    def pytest_sessionfinish(self, session: Any, exitstatus: Any) -> None:
        if self.is_worker:
            return
        from ..report.build import build_report, write_report

        rs, c = self.rs, self.rs.config
        self.interrupted = self.interrupted or exitstatus == pytest.ExitCode.INTERRUPTED
        complete = self.missing == 0 and not self.interrupted
        report = build_report(
            model=c.model,
            backend=rs.backend,
            tokenizer=self._attempt("tokenizer", lambda: rs.tokenizer.name) or str(c.tokenizer or c.model),
            haystack_corpus=self._haystack_corpus(),
            threshold=c.threshold,
            task_thresholds=dict(c.task_thresholds),
            results=self.results,
            extra={"chat_template": self._attempt("chat template", lambda: rs.frame.name), "samples_per_item": c.samples,
                   "seeds": list(c.seeds), "preset": c.preset,
                   "provenance": self._attempt("provenance", self._provenance)},
            complete=complete,
        )
        report["items_expected"] = len(self.expected)
        report["items_finished"] = len(self.finished)
        if rs.warnings:
            report["warnings"] = list(rs.warnings)
        report["interrupted"] = self.interrupted
        report["skipped"] = sorted(self.skipped, key=lambda s: (s["mode"], s["length"], s["task"], s["seed"]))
        self.failures, self.shown_failures = [], []
        verdict = self._attempt("gate", self._verdict, report)
        if verdict is not None:
            report.update(verdict.fields)
            self.failures += verdict.failures
            self.shown_failures += verdict.failures  # each is already said by its verdict line
            self.verdict_lines = verdict.lines()
        if self.results:
            found = self._attempt("pytest_ruler_summary hook", lambda: self.config.hook.pytest_ruler_summary(config=self.config, report=report)) or []
            for lines in found:
                self.failures += list(lines or [])
        self.report = report
        if c.report is not None:
            self.written += self._attempt(f"writing the report {c.report}", lambda: [write_report(c.report, report)]) or []
        if c.markdown is not None:
            self.written += self._attempt(f"writing the Markdown {c.markdown}", self._write_markdown, report) or []
        if c.plots is not None and self.results:
            self.written += self._attempt(f"writing the plots into {c.plots}", self._write_plots, report) or []
        from ..report.github import github_output  # GitHub Actions: step summary, ::error/::warning lines

        self._attempt("GitHub Actions output", lambda: github_output(report, self.verdict_lines, self._say, errors=self.errors))
        if (self.failures or self.errors) and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def _provenance(self) -> dict:
        from ..report.provenance import provenance

        return provenance(self.config.rootpath)

    def _verdict(self, report: dict) -> Any:
        from ..results import gate

        c = self.rs.config
        baseline = None
        if c.baseline is not None:
            from ..results.baseline import load_baseline

            baseline = load_baseline(c.baseline)
        return gate(report, required=c.required_effective_length, mapreduce_required=c.required_mapreduce_effective_length,
                    baseline=baseline, baseline_path=str(c.baseline) if c.baseline else None, alpha=c.baseline_alpha, test=c.baseline_test,
                    confidence=c.gate_confidence)

    def _write_markdown(self, report: dict) -> list:
        from ..report.markdown import markdown

        path = self.rs.config.markdown
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(scrub(markdown(report, ci=self.rs.config.show_ci)), encoding="utf-8")
        return [path]

    def _write_plots(self, report: dict) -> list:
        from ..report.plots import plot_scores

        return list(plot_scores(report, self.rs.config.plots))

    def pytest_terminal_summary(self, terminalreporter: Any, exitstatus: Any, config: Any) -> None:
        if self.is_worker or self.report is None:
            return
        tr = terminalreporter
        if not self.results:
            if self.skipped:
                tr.section("RULER: effective context length")
                tr.write_line("no RULER item ran, so nothing was measured; " + skipped_notes(self.report)[0], yellow=True, bold=True)
            for failure in self.failures:
                tr.write_line(f"RULER FAILED: {failure}", red=True, bold=True)
            for error in self.errors:
                tr.write_line(f"RULER ERROR: {error}", red=True, bold=True)
            return
        tr.section("RULER: effective context length")
        c = self.rs.config
        modes = [m for m in ("native", "mapreduce") if any(r.mode == m for r in self.results)]
        grounding = ""
        if "mapreduce" in modes:
            from ..mapreduce import grounding_summary

            grounding = grounding_summary(r.mapreduce for r in self.results if r.mode == "mapreduce")
        notes = []
        for mode in modes:
            if mode == "mapreduce" or len(modes) > 1:  # a table of twins alone still says it is map-reduce
                tr.write_line("native:" if mode == "native" else f"map-reduce (LLM x MapReduce, chunked; {grounding}):", bold=True)
            for line in format_text(table3(self.report, mode, c.show_ci)):
                tr.write_line(line)
            notes += [(f"map-reduce: {n}" if mode == "mapreduce" else n) for n in table_notes(self.report, mode)]
        if "native" not in modes:
            notes += skipped_notes(self.report)
        tr.write_line(NOTATION)
        for note in notes:
            tr.write_line(note, yellow=True)
        bad = [r for r in self.results if r.error is not None]
        if bad:
            tr.write_line(f"ERR: {len(bad)} item{'s' if len(bad) != 1 else ''} errored (scored as failing; no effective length past an errored length):", red=True)
            for r in sorted(bad, key=lambda r: (r.mode, r.length, r.task, r.seed))[:20]:
                suffix = "-mapreduce" if r.mode == "mapreduce" else ""
                tr.write_line(f"  {r.task}[{r.length}-seed{r.seed}{suffix}]: {scrub(r.error or '')}")
            if len(bad) > 20:
                tr.write_line(f"  ... and {len(bad) - 20} more (see the JSON report's summary.<mode>.errored)")
        if not self.report.get("complete", True):
            state = "interrupted" if self.interrupted else "stopped"
            tr.write_line(f"{state} after {len(self.finished)} of {len(self.expected)} items: the table and report are partial (\"complete\": false)", yellow=True, bold=True)
        if len(modes) > 1:
            # the Total row's own notation (<L, L, ≥L), so the line and the table agree
            eff = {m: table3(self.report, m).rows[-1][-1] if (self.report["summary"].get(m)) else "-" for m in modes}
            tr.write_line(f"effective length: native {eff['native']} | map-reduce {eff['mapreduce']}", bold=True)
            rescued = [x for x in self.report.get("mapreduce_vs_native", []) if x["rescued"]]
            if rescued:
                cells = dict.fromkeys(f"{x['task']}@{format_length(x['length'])}" for x in rescued)
                tr.write_line(f"map-reduce passes where native fails ({grounding}): " + ", ".join(cells))
        tr.write_line(f"model {c.model} ({self.rs.backend}); haystack: {self.report['haystack_corpus']}")
        tr.write_line(f"threshold {c.threshold}; {sum(r.cached for r in self.results)} of {sum(r.samples for r in self.results)} predictions from the cache")
        for text, colour in self.verdict_lines:
            tr.write_line(text, **({colour: True, "bold": True} if colour else {}))
        for failure in self.failures:
            if failure not in self.shown_failures:  # a pytest_ruler_summary hook's own failure
                tr.write_line(f"RULER FAILED: {failure}", red=True, bold=True)
        for error in self.errors:
            tr.write_line(f"RULER ERROR: {error}", red=True, bold=True)
        if self.written:  # what the run wrote, so a user (or CI) knows where to look
            tr.write_line("wrote: " + ", ".join(str(p) for p in self.written))
