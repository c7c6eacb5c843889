"""The JSON report (schema ``pytest-ruler/1``): built from item results by the typed
report (``results.report.Report``), written atomically.

    [ItemResult] ──build_report(...)──► the report dict (Report.of_results(...).to_dict())
    report dict ──write_report(path, report)──► PATH (scrubbed of secrets; written by write_atomically)
    write_atomically(path, write, binary=) ──► PATH: every whole file a run or ``pytest-ruler report`` writes (the
        JSON, the Markdown, the PNGs) is never half-written: ``write(fh)`` fills a temporary file in the same folder,
        then os.replace puts it in place (the usual file mode, not mkstemp's 0600); a PATH that is no regular file
        (/dev/stdout, a pipe, /dev/full) is written in place, never replaced by a file

The summary's floats (per-length means, Avg, wAvg) are stored rounded to
``SUMMARY_DIGITS`` decimals (``43.6667``, not ``43.666669999999996``). Effective
lengths and the gate are decided on the unrounded values, by ``summarize_results``,
before the rounding; tables print one decimal.

Public names: ``build_report``, ``write_report``, ``write_atomically``, ``SUMMARY_DIGITS``, ``summarize_results``.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import IO, Any, Callable, Iterable, Mapping

from ..results import ItemResult, mapreduce_vs_native, summarize_results
from ..results.report import SUMMARY_DIGITS, Report
from ..secrets import scrub

__all__ = ["SUMMARY_DIGITS", "build_report", "mapreduce_vs_native", "summarize_results", "write_atomically", "write_report"]


def build_report(*, model: str, backend: str, tokenizer: str, haystack_corpus: str, threshold: float,
                 results: Iterable[ItemResult], task_thresholds: Mapping[str, float] | None = None,
                 required_effective_length: int | None = None,
                 gate_passed: bool | None = None, extra: Mapping[str, Any] | None = None,
                 complete: bool = True) -> dict[str, Any]:
    """The JSON report of ``results`` as a dict: ``Report.of_results(...).to_dict()``."""
    return Report.of_results(results, threshold=threshold, task_thresholds=task_thresholds, model=model, backend=backend,
                             tokenizer=tokenizer, haystack_corpus=haystack_corpus, complete=complete,
                             gate={"required_effective_length": required_effective_length, "passed": gate_passed},
                             **dict(extra or {})).to_dict()


def write_report(path: str | Path, report: Report | Mapping[str, Any]) -> Path:
    """Write the JSON report (a ``Report`` or its dict) to ``path``, atomically."""
    if isinstance(report, Report):
        report = report.to_dict()
    text = scrub(json.dumps(report, indent=2)) + "\n"
    return write_atomically(path, lambda fh: fh.write(text))


def write_atomically(path: str | Path, write: Callable[[IO[Any]], Any], *, binary: bool = False) -> Path:
    """``write(fh)`` into a temporary file beside ``path``, then ``os.replace`` it there: a reader sees
    the old file or the new one, never half of one (a full disk, a crash, a Ctrl-C in between).
    ``binary``: ``fh`` takes bytes (a PNG), else UTF-8 text. A ``path`` that exists and is no regular
    file (a device, a pipe) is written in place."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    mode, encoding = ("wb", None) if binary else ("w", "utf-8")
    if path.exists() and not path.is_file():  # a device or a pipe: replacing it would put a file where it was
        with open(path, mode, encoding=encoding) as fh:
            write(fh)
        return path
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    try:
        with os.fdopen(fd, mode, encoding=encoding) as fh:
            write(fh)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600; a report is an ordinary file (CI artifacts)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):  # never leave a half-written .tmp beside the report
            os.unlink(tmp)
    return path
