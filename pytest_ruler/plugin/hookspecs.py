"""Hooks that pytest-ruler adds; implement them in a conftest.py or plugin.

The built-in behaviour goes through the same hooks users implement.
"""

from __future__ import annotations

from typing import Any


def pytest_ruler_register(registry: Any) -> None:
    """Register custom tasks and engines before the options are validated.

    ``registry.task(spec)`` adds a :class:`~pytest_ruler.tasks.TaskSpec` (build
    one with ``pytest_ruler.make_task``); ``registry.engine(name, factory)``
    makes ``--ruler-backend=name`` call ``factory(EngineConfig)``. Called once
    per process, in ``pytest_configure``, when the suite is active or not.
    """


def pytest_ruler_summary(config: Any, report: dict) -> list[str] | None:
    """Inspect the run's report (the JSON report's content) and return gate failures.

    Called on the controller after all items ran, before the report is written
    and the verdict is printed. Return a list of messages to fail the run (each
    is printed), or None. ``report["summary"]["native"]`` holds the paper's
    Table 3 numbers (per_length, avg, wavg_inc, wavg_dec, effective_length,
    per_task_effective_length).
    """
