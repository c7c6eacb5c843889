"""The active run's hooks: the header, the items, and at the end the run's lines on the terminal.

``RulerPlugin`` is registered by ``plugin.pytest_configure`` only when the suite is
active. Its hooks hand off to the core:

    collection ──make_items──► the items (none with ``--ruler-no-suite``: only the user's own tests)
    each item's start ──Plan.upcoming──► RulerSession.queue.ahead: the items the engine's queue
        fetches ahead for (plugin.plan: the rest of the collection, or what an xdist worker holds)
    each test report ──RunRecord.finished_item / skipped_item / failed_item──► the run's record
        (run.outcome; from test reports, so the controller of an xdist run sees all workers'
        results the way a single process does; the estimate and ETA lines: run.eta)
    pytest_sessionfinish ──RunRecord.finish(reporters=, summary_hook=, dry_run=, settle=)──► Outcome (report, verdict,
        exit status; ``settle``: a stop held at the run's end, plugin.run_end.HeldCtrlC); the reporters
        (report.reporters: json, markdown, plots, github; pages.run_page's html; and those a ``pytest_ruler_add_reporters`` hook adds) write the outputs; the verdict becomes a
        ``ruler::verdict`` test report and JUnit suite properties (plugin.verdict_report)
    pytest_terminal_summary ──Outcome.lines()──► the terminal (report.lines)
    output_lost(session, what, exc): an output written after ours failed (plugin.run_end) ──► Outcome.add_error

On the controller only. ``Registry`` is what ``pytest_ruler_register`` hooks receive.

Public names: ``RulerPlugin``, ``header_lines``, ``thinking_lines``.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
from pathlib import Path
from typing import Any

import pytest

from ..engines.dtypes import dtype_line
from ..errors import RulerUsageError
from .items import SESSION_KEY, make_items, parse_item_arm, parse_item_name
from .plan import Plan
from ..run.decided import plan_lines
from ..lengths import format_length
from ..outside_text import escaped, shown
from ..secrets import scrub
from ..results import ItemResult
from ..run.replay import header_lines as samples_lines
from ..run.session import RulerSession

log = logging.getLogger("pytest_ruler")

__all__ = ["RulerPlugin", "header_lines", "thinking_lines"]


def _short(text: str, width: int = 70) -> str:
    text = text.replace("\n", "\\n")
    return text if len(text) <= width else text[: width - 3] + "..."


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
        *dtype_line(rs.backend, rs.engine_config),  # which dtype and why (none for openai, scripted)
        suite,
        f"ruler: cache {'off' if c.no_cache or rs.cache_dir is None else rs.cache_dir}",
    ]
    frame = rs.frame
    if frame.head or frame.tail:
        lines.append(f"ruler: chat template {frame.name}: prompt = {_short(frame.head, 60)!s}<task prompt>{_short(frame.tail, 60)!s}<answer prefix>")
    else:
        lines.append(f"ruler: no chat template (RULER base prompts): prompt = <task prompt><answer prefix>; {_why_base(rs)}")
    lines += thinking_lines(c)
    lines += samples_lines(rs)  # --ruler-record / --ruler-replay: where the samples come from
    if c.arms:  # --ruler-arm (run.arms): what each arm changes, and how they are compared
        shown = "; ".join(f"{a.name}{' (reference)' if n == 0 else ''}: "
                          f"{', '.join(f'{k}={v}' for k, v in a.overrides().items()) or 'the run as given'}" for n, a in enumerate(c.arms))
        test = (f"non-inferiority margin {c.noninferiority_margin:g} points" if c.noninferiority_margin is not None
                else "paired drop test (no --ruler-noninferiority-margin)")
        lines.append(f"ruler: arms {shown}; each compared with the reference on the same samples: {test}")
    return lines


def thinking_lines(c: Any) -> list[str]:
    """The header's lines on thinking: the template's kwargs, the think budget and what the answer is."""
    lines = []
    if c.chat_template_kwargs:
        shown_kwargs = ", ".join(f"{k}={json.dumps(v)}" for k, v in sorted(c.chat_template_kwargs.items()))
        lines.append(f"ruler: chat template kwargs (--ruler-chat-template-kwargs): {shown_kwargs}")
    if c.think_budget is not None:
        lines.append(f"ruler: think budget {c.think_budget} tokens (--ruler-think-budget): a thinking call, then "
                     f"<prompt><thinking>{c.think_end}<answer prefix> with the task's answer budget")
    if c.think_budget is not None or (c.think_start, c.think_end) != ("<think>", "</think>"):
        lines.append(f"ruler: the answer is what follows {c.think_end} (or a server's reasoning field)")
    return lines


def _why_base(rs: RulerSession) -> str:
    """Why the prompts are RULER's base ones: chosen, or the model has no chat template (a base model)."""
    from ..models.embedded import EMBEDDED_ALIASES

    c = rs.config
    if c.chat_template in ("none", "base"):
        return f"--ruler-chat-template={c.chat_template}"
    embedded = EMBEDDED_ALIASES.get(c.tokenizer or c.model)
    if embedded is not None and not embedded.instruct:
        return f"{embedded.alias} is a base model (no chat template), prompted as the paper prompts base models"
    return f"{rs.tokenizer.name}'s tokenizer has no chat template (a base model?), so base prompts, as the paper gives base models"


class RulerPlugin:
    """The active run's hooks (see the module docstring): each hands off to the run's
    :class:`~pytest_ruler.run.outcome.RunRecord` in a line or two, then writes its lines."""

    def __init__(self, config: Any):
        from ..run.outcome import RunRecord

        self.config = config
        self.run = RunRecord(self.rs, parse_item_name, controller=not self.is_worker, arm_of=parse_item_arm)
        self.outcome: Any = None  # run.outcome.Outcome, on the controller after pytest_sessionfinish
        self.plan: Plan | None = None  # the order this process runs its items in (after collection)
        self.failed_tests = 0  # failed test reports (setup, call or teardown), suite items included
        self.other_failures = 0  # of those, tests that are not the suite's items (the user's own)

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
            # the message may quote outside text (a model name, a server's answer): escaped line by line
            raise pytest.UsageError("\n".join(escaped(scrub(line)) for line in str(exc).splitlines())) from None
        lines += plan_lines(self.rs.config, xdist=getattr(config.option, "dist", "no") not in (None, "no"))
        # the model's name, paths and template text come from outside: shown escaped
        return [escaped(scrub(line)) for line in lines + [f"ruler: warning: {w}" for w in self.rs.warnings]]

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_modifyitems(self, session: pytest.Session, config: Any, items: list) -> None:
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

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        from .items import RulerItem

        self.rs.notify = self._say
        self.run.expect(i.nodeid for i in session.items if isinstance(i, RulerItem))
        # the engine's queue fetches ahead for the items this process runs next (plugin.plan)
        self.plan = Plan(session.items, worker=self.is_worker)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_protocol(self, item: Any, nextitem: Any) -> None:
        # with --ruler-arm each item has its arm's engine: no fetching ahead across items (run.arms)
        if self.plan is not None and self.rs.config.batch_items > 1 and not self.rs.arms:
            self.rs.queue.ahead(self.plan.upcoming(self.config, item, nextitem))

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list) -> None:
        # the controller collects nothing itself: its workers tell it what will run
        self.rs.notify = self._say
        self.run.expect(ids)

    def _say(self, line: str) -> None:
        """Write one line to the terminal now, even while an item's output is captured: on a line of
        its own, never after pytest's progress letters (xdist writes them with no file name, so pytest
        does not know its line is begun: the writer's width says), and the letters go on after the file
        name again (``ruler ..``), not alone on the next line."""
        tr = self.config.pluginmanager.get_plugin("terminalreporter")
        if tr is None or self.is_worker:
            log.warning(line)
            return
        capman = self.config.pluginmanager.get_plugin("capturemanager")
        with capman.global_and_fixture_disabled() if capman is not None else contextlib.nullcontext():
            tw = self.config.get_terminal_writer()
            resume = tr.currentfspath if isinstance(tr.currentfspath, Path) else None  # a file's letters under way
            tr.ensure_newline()
            if tw.width_of_current_line:
                tw.line()
            tr.write_line(escaped(scrub(line)))
            if resume is not None:
                tw.write(f"{os.path.relpath(resume, tr.startpath)} ")
                tr.currentfspath = resume

    def pytest_runtest_logreport(self, report: Any) -> None:
        if getattr(report, "ruler_verdict", None) is not None:  # the verdict's own report (plugin.verdict_report)
            return
        if report.failed:
            self.failed_tests += 1
            self.other_failures += parse_item_name(report.nodeid) is None
        data = getattr(report, "ruler", None)
        if data and report.when == "call":
            self.run.finished_item(report.nodeid, [ItemResult.from_dict(d) for d in data])
        elif report.skipped:
            self.run.skipped_item(report.nodeid, _skip_reason(report.longrepr))
        elif report.failed:  # failed without a result: a setup error, or the worker running it crashed
            self.run.failed_item(report.nodeid, shown(" ".join(str(report.longrepr).strip().splitlines()[-1:]), limit=None))

    def pytest_runtest_logstart(self, nodeid: str, location: Any) -> None:
        self.run.starting(nodeid)

    def pytest_keyboard_interrupt(self, excinfo: Any) -> None:
        self.run.interrupted = True

    @pytest.hookimpl(tryfirst=True)
    def pytest_report_teststatus(self, report: Any, config: Any) -> Any:
        from .verdict_report import teststatus

        return teststatus(report)

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: Any) -> None:
        if self.is_worker:
            return
        dry_run = bool(self.config.getoption("collectonly", False))
        held = self.config.pluginmanager.get_plugin("ruler-held-ctrl-c")  # a stop held at the run's end (plugin.run_end)
        self.outcome = self.run.finish(interrupted=exitstatus == pytest.ExitCode.INTERRUPTED, reporters=() if dry_run else self._reporters(),
                                       summary_hook=self._summary_hook, rootpath=self.config.rootpath, say=self._say,
                                       dry_run=dry_run, settle=held.settle if held is not None else None)
        if not dry_run:
            self._verdict_to_pytest()
        session.exitstatus = self.outcome.exit_status(session.exitstatus, bool(self.other_failures))

    def _verdict_to_pytest(self) -> None:
        """The verdict in pytest's own terms (plugin.verdict_report): a ``ruler::verdict`` test report
        when the verdict decides the run (a gate, a baseline, a relative mark) or fails for a reason
        no test shows; the JUnit test suite's properties always."""
        from .verdict_report import deliver, junit_properties, verdict_report

        verdict = self.outcome.verdict
        if verdict.gated or (self.outcome.failed and not self.failed_tests):
            deliver(self.config, verdict_report(verdict, self.config.rootpath))
        try:
            from _pytest.junitxml import xml_key
        except ImportError:  # pragma: no cover - junitxml is a built-in plugin
            return
        xml = self.config.stash.get(xml_key, None)
        if xml is not None:
            for name, value in junit_properties(verdict, self.outcome.report):
                xml.add_global_property(name, value)

    def output_lost(self, session: pytest.Session, what: str, exc: BaseException) -> bool:
        """An output written after ours failed (plugin.run_end.OutputErrors: the JUnit XML on a full
        disk): one more end-of-run error, and the run fails; False before the run's end (raised as before)."""
        from ..run.session import one_line

        if self.is_worker or self.outcome is None:
            return False
        self.outcome.add_error(f"{what}: {one_line(exc)}")
        session.exitstatus = self.outcome.exit_status(session.exitstatus, bool(self.other_failures))
        return True

    def _summary_hook(self, report: dict) -> Any:
        return self.config.hook.pytest_ruler_summary(config=self.config, report=report)

    def _reporters(self) -> Any:
        """The built-in reporters, the run's page (--ruler-html) and history's (--ruler-history), then those a
        ``pytest_ruler_add_reporters`` hook adds (pages and history sit above report: report cannot import them)."""
        from ..history.reporter import history_reporter
        from ..pages.run_page import html_reporter
        from ..report.reporters import Reporters, builtin_reporters

        reporters = Reporters([*builtin_reporters(), html_reporter(), history_reporter()])
        add = getattr(self.config.hook, "pytest_ruler_add_reporters", None)
        if add is not None:
            add(config=self.config, reporters=reporters)
        return reporters

    def pytest_terminal_summary(self, terminalreporter: Any, exitstatus: Any, config: Any) -> None:
        if self.is_worker or self.outcome is None:
            return
        for line in self.outcome.lines():
            if line.section:
                terminalreporter.section(line.text)
            else:
                terminalreporter.write_line(escaped(line.text), **line.markup)  # names and paths from outside


def _skip_reason(longrepr: Any) -> str:
    """A skipped report's reason (pytest keeps ``(path, line, reason)``)."""
    reason = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr or "skipped")
    return str(reason)
