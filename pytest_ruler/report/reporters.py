"""The run's outputs: reporters, chosen by name.

    Reporters (name ──► Reporter), run in order at the end of a run, on the controller:
        json      --ruler-report=PATH                       report.build.write_report
        markdown  --ruler-markdown=PATH                     report.markdown.markdown
        plots     --ruler-plots=DIR (a run with items)      report.plots.plot_scores
        github    $GITHUB_STEP_SUMMARY / $GITHUB_ACTIONS    report.github.github_output
        <yours>   reporters.add(name, write) in a pytest_ruler_add_reporters hook (plugin.hookspecs)
    RunEnd (report, verdict, config, errors so far, say) ──reporter.write(end)──► the files it wrote (or None)

The files are written atomically (``report.build.write_atomically``: a temporary file
beside the target, then ``os.replace``). A run that finished no item (every item deselected,
interrupted before the first) never replaces a complete report that has items: the JSON and the
Markdown of such a run go beside it (``keep.json`` stays, ``keep.incomplete.json`` is written) and
``say`` tells the terminal so (``ruler: kept keep.json (...)``). ``--collect-only`` writes
nothing: the plugin hands ``RunRecord.finish`` no reporters then (plugin.terminal).

A reporter writes; it does not gate. What it returns is the files it wrote (listed after
"wrote:"), never a failure; a gate of your own is a ``pytest_ruler_summary`` hook. One that
raises is one end-of-run error (``RULER ERROR: <what>: <why>``, and the run fails: an output
asked for was lost), and the reporters after it still run, so a failed plot never costs the
JSON report. ``wanted(end)`` says whether the run asked for it (the built-in ones: their
option, or the CI's environment); a reporter added by a hook is wanted unless it says
otherwise. Adding a name that exists is refused unless ``replace=True`` (e.g. your own
``markdown``).

Public names: ``RunEnd``, ``Reporter``, ``Reporters``, ``builtin_reporters``.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import RulerUsageError
from ..results.report import Report
from ..secrets import scrub

__all__ = ["Reporter", "Reporters", "RunEnd", "builtin_reporters"]


@dataclass(frozen=True)
class RunEnd:
    """What a reporter reads: the typed report, the verdict (None when the gate itself failed), the
    run's config (``run_config.RulerConfig``: paths, ``show_ci``), the end-of-run errors so far, and
    ``say`` (a terminal line now)."""

    report: Report
    verdict: Any
    config: Any
    errors: tuple[str, ...] = ()
    say: Callable[[str], Any] = print
    environ: Mapping[str, str] = field(default_factory=lambda: os.environ)

    def lines(self) -> list[Any]:
        """The terminal's lines of this run (``report.lines.lines``), without the files written."""
        from .lines import lines

        return lines(self.report, self.verdict, ci=bool(getattr(self.config, "show_ci", False)), errors=self.errors)


@dataclass(frozen=True)
class Reporter:
    """An output: ``write(end)`` returns the files it wrote; ``wanted(end)`` whether the run asked for
    it; ``what(end)`` how an error names it."""

    name: str
    write: Callable[[RunEnd], Iterable[str | Path] | None]
    wanted: Callable[[RunEnd], bool] = lambda end: True
    what: Callable[[RunEnd], str] | None = None

    def label(self, end: RunEnd) -> str:
        return self.what(end) if self.what is not None else f"reporter {self.name!r}"


class Reporters:
    """The reporters of a run, by name, in the order they run."""

    def __init__(self, reporters: Iterable[Reporter] = ()):
        self._by_name: dict[str, Reporter] = {}
        for r in reporters:
            self._by_name[r.name] = r

    def add(self, name: str, write: Callable[[RunEnd], Iterable[str | Path] | None], *,
            wanted: Callable[[RunEnd], bool] | None = None, replace: bool = False) -> None:
        """Add a reporter ``name`` whose ``write(end)`` runs at the end of the run (after the built-in ones)."""
        if not isinstance(name, str) or not name or not callable(write):
            raise RulerUsageError("reporters.add", name, "give a name and a callable write(end), e.g. reporters.add('mine', write)")
        if name in self._by_name and not replace:
            raise RulerUsageError("reporters.add", name, f"a reporter {name!r} exists ({', '.join(self._by_name)}); "
                                  "pick another name, or pass replace=True to use yours instead")
        self._by_name[name] = Reporter(name, write, wanted or (lambda end: True))

    def names(self) -> list[str]:
        return list(self._by_name)

    def __iter__(self) -> Iterator[Reporter]:
        return iter(list(self._by_name.values()))


# --------------------------------------------------------------------------- the built-in ones


def _json(end: RunEnd) -> list[Path]:
    from .build import write_report

    return [write_report(_target(end, end.config.report, _report_items, "report"), end.report)]


def _markdown(end: RunEnd) -> list[Path]:
    from .build import write_atomically
    from .markdown import markdown

    text = scrub(markdown(end.report, ci=end.config.show_ci))
    return [write_atomically(_target(end, end.config.markdown, _markdown_items, "Markdown"), lambda fh: fh.write(text))]


def _target(end: RunEnd, path: Path, items_in: Callable[[Path], int], what: str) -> Path:
    """Where this run's ``what`` goes: ``path``, unless this run finished no item and ``path`` holds a
    complete report with items; then beside it (``keep.incomplete.json``), and the terminal says so."""
    if end.report.items or not path.is_file():
        return path
    kept = items_in(path)
    if not kept:
        return path
    beside = path.with_name(f"{path.stem}.incomplete{path.suffix}")
    end.say(f"ruler: kept {path} (a complete report of {kept} item{'s' if kept != 1 else ''}): this run finished no item, "
            f"so its {what} is {beside}")
    return beside


def _report_items(path: Path) -> int:
    """The items of the complete pytest-ruler JSON report at ``path`` (0: not one, unreadable, or incomplete)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return 0
    if not isinstance(data, dict) or not str(data.get("schema", "")).startswith("pytest-ruler/") or data.get("complete") is False:
        return 0
    items = data.get("items")
    return len(items) if isinstance(items, list) else 0


def _markdown_items(path: Path) -> int:
    """The items of the complete pytest-ruler Markdown at ``path``, from its ``Items`` line (report.markdown)
    (0: not one, unreadable, or marked Interrupted/Incomplete)."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, ValueError):
        return 0
    if not lines or not lines[0].startswith("# RULER report:") or any(ln.startswith(("> **Interrupted**", "> **Incomplete**")) for ln in lines):
        return 0
    for line in lines:
        if line.startswith("- **Items:** "):
            counts = line.removeprefix("- **Items:** ").split(";")[0]
            return sum(int(n) for n in re.findall(r"(?:^|, )(\d+) ", counts))
    return 0


def _plots(end: RunEnd) -> list[Path]:
    from .plots import plot_scores

    return list(plot_scores(end.report, end.config.plots))


def _github(end: RunEnd) -> None:
    from .github import github_output  # GitHub Actions: step summary, ::error/::warning lines

    verdict_lines = end.verdict.lines() if end.verdict is not None else []
    github_output(end.report, verdict_lines, end.say, errors=end.errors, environ=end.environ)


def builtin_reporters() -> Reporters:
    """json, markdown, plots and github (see the module docstring)."""
    return Reporters([
        Reporter("json", _json, lambda end: end.config.report is not None, lambda end: f"writing the report {end.config.report}"),
        Reporter("markdown", _markdown, lambda end: end.config.markdown is not None, lambda end: f"writing the Markdown {end.config.markdown}"),
        Reporter("plots", _plots, lambda end: end.config.plots is not None and bool(end.report.items),
                 lambda end: f"writing the plots into {end.config.plots}"),
        Reporter("github", _github, lambda end: True, lambda end: "GitHub Actions output"),
    ])
