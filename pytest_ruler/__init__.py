"""pytest-ruler: RULER long-context regression tests for language models.

The core (tasks, scoring, aggregation) knows nothing about pytest; the plugin
(``pytest_ruler.plugin``) adapts it. Importing this package imports no torch,
transformers or vllm: public names are resolved lazily on first use.

Public API (``__all__``):

- Reading results: ``load_report(path)`` reads a JSON report (``--ruler-report``) back, checked,
  as a typed ``Report``: ``report.items`` (``ItemResult`` each: task, length, seed, mode, score,
  passed, error, predictions, ...), ``report.modes``, and per mode its Table 3, computed from the
  items: ``report.mode("native").summary`` (per-length scores, Avg, wAvg, effective length),
  ``.effective_length``, ``.table()``. The report's format: ``pytest-ruler schema``, or
  docs/reference/report.md.
- Tasks and data: ``generate_samples``, ``iter_samples``, ``GenerationContext``, ``Sample``,
  ``TaskSpec``, ``Frame``, ``make_task``, ``register_task``, ``get_task``, ``resolve_tasks``,
  ``STANDARD_TASKS``, ``load_tokenizer``.
- Scoring and aggregation: ``string_match_all``, ``string_match_part``, ``summarize``,
  ``LengthSummary``.
- Lengths and errors: ``parse_length``, ``parse_lengths``, ``RulerUsageError``; ``__version__``.

For example::

    import pytest_ruler

    report = pytest_ruler.load_report("ruler.json")
    native = report.mode("native")
    print(report.model, native.effective_length, native.summary["per_length"])
    failed = [r for r in report.items if not r.passed]
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

__version__ = "0.1.0"

_EXPORTS = {
    "generate_samples": "pytest_ruler.tasks",
    "iter_samples": "pytest_ruler.tasks",
    "GenerationContext": "pytest_ruler.tasks",
    "Sample": "pytest_ruler.tasks",
    "TaskSpec": "pytest_ruler.tasks",
    "Frame": "pytest_ruler.tasks",
    "make_task": "pytest_ruler.tasks",
    "register_task": "pytest_ruler.tasks",
    "get_task": "pytest_ruler.tasks",
    "resolve_tasks": "pytest_ruler.tasks",
    "STANDARD_TASKS": "pytest_ruler.tasks",
    "load_tokenizer": "pytest_ruler.tasks.tokenizer",
    "string_match_all": "pytest_ruler.results.scoring",
    "string_match_part": "pytest_ruler.results.scoring",
    "summarize": "pytest_ruler.results.aggregate",
    "LengthSummary": "pytest_ruler.results.aggregate",
    "parse_length": "pytest_ruler.lengths",
    "parse_lengths": "pytest_ruler.lengths",
    "RulerUsageError": "pytest_ruler.errors",
    "load_report": "pytest_ruler.report.load",
    "Report": "pytest_ruler.report.load",
    "ItemResult": "pytest_ruler.report.load",
}

__all__ = sorted(_EXPORTS) + ["__version__"]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'pytest_ruler' has no attribute {name!r}")
    # not cached in globals(): the module may be re-imported (e.g. by pytester), and
    # a stale function would build objects of a stale class
    return getattr(import_module(module), name)
