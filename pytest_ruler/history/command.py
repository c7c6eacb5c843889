"""``pytest-ruler history DIR [--html OUT] [--format github-action-benchmark] [--out FILE]``.

    DIR ──store.read_runs──► runs
        --html OUT   ──page.history_page──► OUT (written atomically; its path printed)
        --format F   ──export.benchmark_entries──► JSON to --out FILE (or stdout)
        neither      ──► store.rebuild_index(DIR), and one line per run (label, date, verdict, effective length)

Without matplotlib, ``--html`` is a usage error naming the ``plot`` extra (pages.assets.matplotlib),
before any file is written.

Public names: ``add_after_merge``, ``history_command``, ``run_line``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from ..errors import RulerUsageError
from ..lengths import format_length
from ..pages.assets import matplotlib
from ..report.build import write_atomically
from .export import FORMATS, benchmark_entries
from .page import history_page
from .store import Run, read_runs, rebuild_index

__all__ = ["add_after_merge", "history_command", "run_line"]


def run_line(run: Run) -> str:
    e = run.entry
    native = e["modes"].get("native") or next(iter(e["modes"].values()), {})
    return (f"{e.get('created') or '-'}  {e.get('label')}  {e.get('model')}  {(e.get('verdict') or {}).get('status')}  "
            f"effective length {format_length(native.get('effective_length'))}  [{e['group']}]  {run.file.name}")


def history_command(folder: str, *, html: str | None = None, fmt: str | None = None, out: str | None = None) -> int:
    """The command (see the module docstring); exit status 0."""
    if fmt is not None and fmt not in FORMATS:
        raise RulerUsageError("--format", fmt, f"one of {', '.join(FORMATS)}")
    if html is not None:
        matplotlib("--html", html)  # the plot extra, asked for before anything is read or written
    runs, skipped = read_runs(folder, "DIR")
    if html is not None:
        text = history_page(runs, folder, html, skipped)
        try:
            write_atomically(html, lambda fh: fh.write(text))
        except OSError as exc:
            raise RulerUsageError("--html", html, f"cannot write the file ({exc.strerror or exc})") from None
        print(html)
    if fmt is not None:
        text = json.dumps(benchmark_entries(runs), indent=2, ensure_ascii=False) + "\n"
        if out in (None, "-"):
            sys.stdout.write(text)
        else:
            try:
                write_atomically(out, lambda fh: fh.write(text))
            except OSError as exc:
                raise RulerUsageError("--out", out, f"cannot write the file ({exc.strerror or exc})") from None
            print(out)
    if html is None and fmt is None:
        rebuild_index(folder)
        for run in runs:
            print(run_line(run))
        for s in skipped:
            print(f"skipped {s['file']}: {s['reason']}")
    return 0


def add_after_merge(report: Any, folder: str, label: str | None) -> Path:
    """``pytest-ruler merge ... --history DIR``: the merged report added (store.add_run; a partial merge is refused)."""
    from .store import add_run

    return add_run(folder, report, label, parameter="--history")
