"""A history folder: one report file per complete run, and an index rebuilt from those files.

    a run's end (the ``history`` reporter, ``--ruler-history=DIR``) or ``pytest-ruler merge --history DIR``
        report ──add_run(DIR, report, label=)──► DIR/<created>_<label>.json, then rebuild_index(DIR)
            refused (``RulerUsageError``, the run is not added) when ``not_addable(report)`` says why:
            an incomplete or interrupted run, a shard's report (merge the shards and add the merged
            report), a partial merge, a run with no items
    rebuild_index(DIR) ──► DIR/index.json: {"schema": HISTORY_SCHEMA, "runs": [entry, ...] oldest first,
                                           "skipped": [{"file", "reason"}, ...]}
    read_runs(DIR) ──► ([Run(file, report, entry), ...] oldest first, skipped): what ``pytest-ruler
        history`` draws and exports; it reads the run files (the truth), never the index

The folder is plain files, so it fits a git branch, a CI cache or an artifact. A run file is the
JSON report itself (with its top-level ``label``): ``pytest-ruler gate``, ``compare``, ``report``
and ``pytest_ruler.load_report`` read it as they read any report, and a per-run page saved beside
it as ``<same name>.html`` is linked from the trend page.

Two writers never corrupt the folder: a run file is written to a temporary file and linked to its
name (``os.link`` fails when the name exists: the next free ``-2``, ``-3``, ... is taken, so no run
replaces another); the index is rebuilt from the run files under an exclusive lock on ``DIR/.lock``
(``fcntl.flock``; on a system without it, a lock file created exclusively) and written to a temporary
file renamed over ``index.json``. Each writer rebuilds after its own file is complete, so the last
rebuild sees every run; the index is never read, changed and written back.

The label (``--ruler-label``) defaults to ``git describe --always --dirty`` of the working directory,
else the UTC date and time (``default_label``). File names keep ``[A-Za-z0-9._-]`` only
(``safe_name``).

Public names: ``HISTORY_SCHEMA``, ``INDEX``, ``Run``, ``add_run``, ``default_label``, ``entry_of``,
``not_addable``, ``read_runs``, ``rebuild_index``, ``safe_name``.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import re
import subprocess
import tempfile
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import RulerUsageError
from ..report.build import write_atomically
from ..results.gate import gate
from ..results.report import MODES, Report, as_report
from ..results.saved import read_report
from ..secrets import scrub
from .groups import engine_summary, group_of

__all__ = ["HISTORY_SCHEMA", "INDEX", "Run", "add_run", "default_label", "entry_of", "not_addable", "read_runs",
           "rebuild_index", "safe_name"]

HISTORY_SCHEMA = "pytest-ruler-history/1"
INDEX = "index.json"
LOCK = ".lock"
_RUN_FILE = re.compile(r"^\d{8}T\d{6}Z_[A-Za-z0-9._-]+\.json$")


@dataclass(frozen=True)
class Run:
    """One run of a history folder: its file, its report (read and checked) and its index entry."""

    file: Path
    report: Report
    entry: Mapping[str, Any]


def default_label(folder: str | Path | None = None, timeout: float = 3.0) -> str:
    """``git describe --always --dirty`` in ``folder`` (default: the working directory), else the UTC date and time."""
    try:
        done = subprocess.run(["git", "describe", "--always", "--dirty"], cwd=str(folder or Path.cwd()), capture_output=True,
                              text=True, timeout=timeout, stdin=subprocess.DEVNULL)
        described = done.stdout.strip()
        if done.returncode == 0 and described and "\n" not in described:
            return described
    except (OSError, subprocess.SubprocessError, ValueError):
        pass
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def safe_name(text: str, limit: int = 60) -> str:
    """``text`` with only ``[A-Za-z0-9._-]`` (each run of others becomes ``-``), at most ``limit`` characters."""
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-.")[:limit].strip("-.")
    return name or "run"


def not_addable(report: Report | Mapping[str, Any]) -> str | None:
    """Why ``report`` is not added to a history folder (None: it is a complete run)."""
    report = as_report(report)
    if report.field("shard"):
        shard = report.field("shard")
        return (f"it is the report of shard {shard.get('index')}/{shard.get('count')} only: merge the shards "
                "(pytest-ruler merge ... --history DIR) and the merged report is added")
    missing = (report.field("shards") or {}).get("missing")
    if missing:
        return f"it is a partial merge (shards {', '.join(map(str, missing))} missing)"
    if report.interrupted:
        return "the run was interrupted"
    if not report.complete:
        done = f" ({report.items_finished} of {report.items_expected} items)" if report.items_expected is not None else ""
        return f"the run is incomplete{done}"
    if not report.items:
        return "the run has no items"
    return None


def _stamp(report: Report) -> str:
    created = str((report.field("provenance") or {}).get("created") or "")
    try:
        when = datetime.datetime.fromisoformat(created.replace("Z", "+00:00")).astimezone(datetime.timezone.utc)
    except ValueError:
        when = datetime.datetime.now(datetime.timezone.utc)
    return when.strftime("%Y%m%dT%H%M%SZ")


def add_run(folder: str | Path, report: Report | Mapping[str, Any], label: str | None = None,
            parameter: str = "--ruler-history") -> Path:
    """Add a complete run's ``report`` to ``folder`` as one file (see the module docstring) and rebuild the
    index; the file's path. A run that is not complete is refused: ``RulerUsageError`` saying why."""
    report = as_report(report)
    why = not_addable(report)
    if why:
        raise RulerUsageError(parameter, str(folder), f"not added to the history: {why}")
    label = label or report.field("label") or default_label()
    report = report.with_fields(label=label)
    folder = Path(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise RulerUsageError(parameter, str(folder), f"cannot create the history folder ({exc.strerror or exc})") from None
    text = scrub(json.dumps(report.to_dict(), indent=2, ensure_ascii=False)) + "\n"
    stem = f"{_stamp(report)}_{safe_name(label)}"
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".add-", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.chmod(tmp, 0o644)
        path = _claim(folder, stem, tmp)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    rebuild_index(folder)
    return path


def _claim(folder: Path, stem: str, tmp: str) -> Path:
    """Put the complete file ``tmp`` at the first free ``stem[-N].json``: a hard link never replaces a file."""
    for n in range(1, 10_000):
        path = folder / (f"{stem}.json" if n == 1 else f"{stem}-{n}.json")
        try:
            os.link(tmp, path)
            return path
        except FileExistsError:
            continue
        except OSError:  # no hard links here (some network or FAT folders): claim the name exclusively, then replace it
            try:
                os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
            except FileExistsError:
                continue
            os.replace(tmp, path)
            return path
    raise RulerUsageError("--ruler-history", str(folder), f"no free file name for {stem}.json; clean the folder")


@contextlib.contextmanager
def _locked(folder: Path, timeout: float = 60.0) -> Iterator[None]:
    """An exclusive lock on ``folder/.lock`` for the index's rebuild."""
    path = folder / LOCK
    try:
        import fcntl
    except ImportError:  # no flock: a lock file created exclusively, removed after
        deadline = time.monotonic() + timeout
        while True:
            try:
                os.close(os.open(path.with_suffix(".held"), os.O_CREAT | os.O_EXCL | os.O_WRONLY))
                break
            except FileExistsError:
                if time.monotonic() > deadline:
                    raise RulerUsageError("--ruler-history", str(folder), f"the index lock {path.with_suffix('.held')} is "
                                          "held too long; remove it if no run is writing") from None
                time.sleep(0.05)
        try:
            yield
        finally:
            os.unlink(path.with_suffix(".held"))
        return
    with open(path, "a+") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def rebuild_index(folder: str | Path) -> Path:
    """``folder/index.json`` rebuilt from the run files, under the folder's lock, written by a rename."""
    folder = Path(folder)
    with _locked(folder):
        runs, skipped = read_runs(folder)
        index = {"schema": HISTORY_SCHEMA, "runs": [dict(r.entry) for r in runs], "skipped": skipped}
        text = json.dumps(index, indent=2, ensure_ascii=False) + "\n"
        return write_atomically(folder / INDEX, lambda fh: fh.write(text))


def read_runs(folder: str | Path, parameter: str = "DIR") -> tuple[list[Run], list[dict[str, str]]]:
    """The runs of a history folder, oldest first, and the files skipped with why (unreadable, not a report)."""
    folder = Path(folder)
    if not folder.is_dir():
        raise RulerUsageError(parameter, str(folder), "not a folder; give the folder of --ruler-history=DIR")
    runs: list[Run] = []
    skipped: list[dict[str, str]] = []
    for path in sorted(folder.iterdir()):
        if not _RUN_FILE.match(path.name):
            continue
        try:
            report = read_report(path, "history run")
        except RulerUsageError as exc:
            skipped.append({"file": path.name, "reason": exc.fix})
            continue
        runs.append(Run(path, report, entry_of(report, path.name)))
    runs.sort(key=lambda r: (str(r.entry.get("created") or ""), r.file.name))
    return runs, skipped


def _verdict(report: Report) -> dict[str, Any]:
    """The run's verdict as stored; a merged report's is decided again from its items (a shard's says not decided)."""
    stored = report.field("verdict")
    if isinstance(stored, Mapping) and not report.field("shards"):
        return {"status": stored.get("status"), "line": stored.get("line")}
    verdict = gate(report).to_dict()
    return {"status": verdict.get("status"), "line": verdict.get("line")}


def entry_of(report: Report | Mapping[str, Any], file: str) -> dict[str, Any]:
    """The index entry of one run: label, provenance, engine identity, model, verdict, and per mode the
    effective length, its lower bound and the Total per length, and each cell's score."""
    report = as_report(report)
    prov = report.field("provenance") or {}
    modes = {}
    for mode in MODES:
        m = report.mode(mode)
        s = m.summary
        if not s:
            continue
        modes[mode] = {
            "effective_length": s.get("effective_length"),
            "effective_length_bound": s.get("effective_length_bound"),
            "bound_confidence": s.get("bound_confidence"),
            "per_length": dict(s.get("per_length") or {}),
            "avg": s.get("avg"), "wavg_inc": s.get("wavg_inc"), "wavg_dec": s.get("wavg_dec"),
            "intervals": {L: (iv or {}).get("ci95") for L, iv in ((s.get("intervals") or {}).get("per_length") or {}).items()},
            "cells": {task: {str(L): v for L, v in sorted(by.items())} for task, by in sorted(m.scores.items())},
        }
    group_id, settings = group_of(report)
    return {
        "file": file, "label": report.field("label"), "created": prov.get("created"), "commit": prov.get("git_commit"),
        "pytest_ruler": (prov.get("versions") or {}).get("pytest-ruler"),
        "versions": dict(prov.get("versions") or {}),
        "model": report.model, "backend": report.backend, "engine": engine_summary(report.field("engine")),
        "engine_identity": report.field("engine"),
        "group": group_id, "settings": settings, "verdict": _verdict(report), "items": len(report.items), "modes": modes,
    }
