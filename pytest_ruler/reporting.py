"""What the run shows and writes: header, per-item results, Table 3, the JSON report.

``RulerPlugin`` is registered by ``plugin.pytest_configure`` only when the
suite is active. It builds the items, collects every item's result from its
test report (so the controller of an xdist run sees all workers' results the
same way a single process does), prints the summary and writes the report —
on the controller only.

Public names: ``RulerPlugin``, ``header_lines``, ``format_table``.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any, Mapping

import pytest

from .errors import RulerUsageError
from .items import SESSION_KEY, make_items
from .lengths import format_length
from .session import ItemResult, RulerSession

__all__ = ["Registry", "RulerPlugin", "format_table", "header_lines"]


def _short(text: str, width: int = 70) -> str:
    text = text.replace("\n", "\\n")
    return text if len(text) <= width else text[: width - 3] + "..."


def header_lines(rs: RulerSession) -> list[str]:
    c = rs.config
    lines = [
        f"ruler: model={c.model} backend={rs.backend} tokenizer={rs.tokenizer.name}",
        f"ruler: {len(c.tasks)} tasks x {len(c.lengths)} lengths ({', '.join(format_length(L) for L in c.lengths)}) "
        f"x {len(c.seeds)} seeds, {c.samples} samples per item, threshold {c.threshold}",
        f"ruler: cache {'off' if c.no_cache or rs.cache_dir is None else rs.cache_dir}",
    ]
    frame = rs.frame
    if frame.head or frame.tail:
        lines.append(f"ruler: chat template {frame.name}: prompt = {_short(frame.head, 60)!s}<task prompt>{_short(frame.tail, 60)!s}<answer prefix>")
    else:
        lines.append("ruler: no chat template (RULER base prompts): prompt = <task prompt><answer prefix>")
    return lines


def format_table(summary: Mapping[str, Any], per_task: Mapping[str, Mapping[int, float]], lengths: list[int]) -> list[str]:
    """The paper's Table 3 for one model: tasks as rows, then the averaged row."""
    name_w = max([len("Total")] + [len(t) for t in per_task]) + 2
    head = "".ljust(name_w) + "".join(format_length(L).rjust(8) for L in lengths) + "     Avg  wAvg.inc  wAvg.dec  Effective"
    out = [head]
    per_task_eff = summary.get("per_task_effective_length", {})
    for task, scores in per_task.items():
        row = task.ljust(name_w) + "".join((f"{scores[L]:.1f}" if L in scores else "-").rjust(8) for L in lengths)
        row += " " * 31 + format_length(per_task_eff.get(task)).rjust(11)
        out.append(row)
    pl = summary["per_length"]
    total = "Total".ljust(name_w) + "".join((f"{pl[str(L)]:.1f}" if str(L) in pl else "-").rjust(8) for L in lengths)
    total += f"{summary['avg']:8.1f}{summary['wavg_inc']:10.1f}{summary['wavg_dec']:10.1f}{format_length(summary['effective_length']):>11}"
    out.append(total)
    return out


class Registry:
    """What ``pytest_ruler_register`` hooks receive: add tasks and engines by name."""

    def task(self, spec: Any) -> Any:
        from .tasks import register_task

        return register_task(spec, replace=True)

    def engine(self, name: str, factory: Any) -> None:
        from .engines import register_engine

        register_engine(name, factory)


class RulerPlugin:
    """The active run's hooks (see the module docstring)."""

    def __init__(self, config: Any):
        self.config = config
        self.results: list[ItemResult] = []
        self.report: dict[str, Any] | None = None
        self.failures: list[str] = []
        self.baseline_lines: list[str] = []

    @property
    def rs(self) -> RulerSession:
        return self.config.stash[SESSION_KEY]

    @property
    def is_worker(self) -> bool:
        return hasattr(self.config, "workerinput")

    def pytest_report_header(self, config: Any) -> list[str]:
        try:
            return header_lines(self.rs)
        except RulerUsageError as exc:
            raise pytest.UsageError(str(exc)) from None

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_modifyitems(self, session: Any, config: Any, items: list) -> None:
        ruler_items = make_items(session, self.rs)
        if self.rs.config.only:
            items[:] = ruler_items
        else:
            items.extend(ruler_items)

    def pytest_collection_finish(self, session: Any) -> None:
        # cross-item batching needs to know what this process runs next; an xdist
        # worker is handed items one chunk at a time, so it does not plan
        from .items import RulerItem

        if not self.is_worker and self.rs.config.batch_items > 1:
            self.rs.plan = [(i.task, i.length, i.seed) for i in session.items if isinstance(i, RulerItem) and i.mode == "native"]

    def pytest_runtest_logreport(self, report: Any) -> None:
        data = getattr(report, "ruler", None)
        if data and report.when == "call":
            self.results.extend(ItemResult.from_dict(d) for d in data)

    def _haystack_corpus(self) -> str:
        labels = []
        for task in dict.fromkeys(r.task for r in self.results):
            try:
                label = self.rs.haystack_label(task)
            except RulerUsageError:
                continue
            if label not in labels:
                labels.append(label)
        return "; ".join(labels)

    def pytest_sessionfinish(self, session: Any, exitstatus: Any) -> None:
        if self.is_worker:
            return
        from .report import build_report, write_report

        rs, c = self.rs, self.rs.config
        report = build_report(
            model=c.model,
            backend=rs.backend,
            tokenizer=rs.tokenizer.name,
            haystack_corpus=self._haystack_corpus(),
            threshold=c.threshold,
            results=self.results,
            extra={"chat_template": rs.frame.name, "samples_per_item": c.samples, "seeds": list(c.seeds), "preset": c.preset},
        )
        self.failures = []
        if self.results:
            self.failures += self._gate(report)
            self.failures += self._baseline(report)
            for found in self.config.hook.pytest_ruler_summary(config=self.config, report=report):
                self.failures += list(found or [])
        self.report = report
        if self.failures and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        if c.report is not None:
            write_report(c.report, report)
        if c.markdown is not None or c.plots is not None:
            from .render import markdown, plot_scores

            if c.markdown is not None:
                c.markdown.parent.mkdir(parents=True, exist_ok=True)
                c.markdown.write_text(markdown(report), encoding="utf-8")
            if c.plots is not None and self.results:
                plot_scores(report, c.plots)

    def _gate(self, report: dict) -> list[str]:
        c = self.rs.config
        failures = []
        for mode, required, key in (
            ("native", c.required_effective_length, "gate"),
            ("mapreduce", c.required_mapreduce_effective_length, "mapreduce_gate"),
        ):
            if required is None:
                continue
            effective = (report["summary"][mode] or {}).get("effective_length")
            passed = effective is not None and effective >= required
            report[key] = {"required_effective_length": required, "passed": passed, "effective_length": effective}
            if passed:
                continue
            got = format_length(effective) if effective is not None else "below the shortest tested length"
            tested = sorted({r.length for r in self.results if r.mode == mode}) or [0]
            hint = "" if required <= max(tested) else f" (the run tested only up to {format_length(max(tested))}: add longer --ruler-lengths)"
            what = "effective length" if mode == "native" else "map-reduce effective length"
            failures.append(f"{what} {got} < required {format_length(required)} at threshold {c.threshold}{hint}")
        return failures

    def _baseline(self, report: dict) -> list[str]:
        c = self.rs.config
        if c.baseline is None:
            return []
        from .baseline import compare, load_baseline, summarize_regressions

        comparisons = compare(load_baseline(c.baseline), report["items"], alpha=c.baseline_alpha, test=c.baseline_test)
        passed, lines = summarize_regressions(comparisons)
        report["baseline"] = {
            "path": str(c.baseline),
            "test": c.baseline_test,
            "alpha": c.baseline_alpha,
            "passed": passed,
            "comparisons": [asdict(x) for x in comparisons],
        }
        self.baseline_lines = lines
        return [] if passed else [ln for ln in lines if "significant drop" in ln] or ["baseline: significant drop"]

    def pytest_terminal_summary(self, terminalreporter: Any, exitstatus: Any, config: Any) -> None:
        if self.is_worker or not self.results or self.report is None:
            return
        tr = terminalreporter
        tr.section("RULER: effective context length")
        c = self.rs.config
        lengths = sorted({r.length for r in self.results})
        modes = [m for m in ("native", "mapreduce") if any(r.mode == m for r in self.results)]
        for mode in modes:
            per_task: dict[str, dict[int, list[float]]] = {}
            for r in self.results:
                if r.mode == mode:
                    per_task.setdefault(r.task, {}).setdefault(r.length, []).append(r.score)
            means = {t: {L: sum(v) / len(v) for L, v in ls.items()} for t, ls in per_task.items()}
            if len(modes) > 1:
                tr.write_line(f"{'native' if mode == 'native' else 'map-reduce (LLM x MapReduce, chunked)'}:", bold=True)
            for line in format_table(self.report["summary"][mode], means, lengths):
                tr.write_line(line)
        if len(modes) > 1:
            eff = {m: format_length((self.report["summary"][m] or {}).get("effective_length")) for m in modes}
            tr.write_line(f"effective length: native {eff['native']} | map-reduce {eff['mapreduce']}", bold=True)
            rescued = [x for x in self.report.get("mapreduce_vs_native", []) if x["rescued"]]
            if rescued:
                cells = dict.fromkeys(f"{x['task']}@{format_length(x['length'])}" for x in rescued)
                tr.write_line("map-reduce passes where native fails: " + ", ".join(cells))
        tr.write_line(f"model {c.model} ({self.rs.backend}); haystack: {self.report['haystack_corpus']}")
        tr.write_line(f"threshold {c.threshold}; {sum(r.cached for r in self.results)} of {sum(r.samples for r in self.results)} predictions from the cache")
        for line in self.baseline_lines:
            tr.write_line(f"baseline: {line}")
        for key, what in (("gate", "effective length"), ("mapreduce_gate", "map-reduce effective length")):
            gate = self.report.get(key) or {}
            if gate.get("required_effective_length") is not None:
                verdict = "PASSED" if gate["passed"] else "FAILED"
                tr.write_line(f"gate {verdict}: {what} {format_length(gate.get('effective_length'))} "
                              f"(required {format_length(gate['required_effective_length'])})", green=gate["passed"], red=not gate["passed"], bold=True)
        for failure in self.failures:
            tr.write_line(f"RULER FAILED: {failure}", red=True, bold=True)
        if c.report is not None:
            tr.write_line(f"report: {c.report}")
