"""Hooks that pytest-ruler adds; implement them in a conftest.py or plugin.

The built-in behaviour goes through the same hooks users implement.
"""

from __future__ import annotations

from typing import Any

import pytest


@pytest.hookspec(historic=True)
def pytest_ruler_register(registry: Any) -> None:
    """Register custom tasks, task families and engines.

    ``registry.task(spec)`` adds a :class:`~pytest_ruler.tasks.TaskSpec` (build
    one with ``pytest_ruler.make_task``); ``registry.family(family)`` adds a task
    family (an object meeting :class:`~pytest_ruler.tasks.Family`), usable in
    ``make_task(name, family.name, ...)``; ``registry.engine(name, factory)``
    makes ``--ruler-backend=name`` call ``factory(EngineConfig)``.

    Called only when the suite is active (``--ruler-model``). The hook is historic:
    once in ``pytest_configure``, before the options are validated, for the conftests
    loaded by then (the rootdir's and the given paths'), and again for each conftest
    of a subfolder as pytest collects it; what a subfolder registers serves that
    folder's own tests (``ruler.run(...)``).
    """


def pytest_ruler_summary(config: Any, report: dict) -> list[str] | None:
    """Inspect the run's report (the JSON report's content) and return gate failures.

    Called on the controller after all items ran, before the report is written
    and the verdict is printed. Return a list of messages to fail the run (each
    is printed), or None. ``report["summary"]["native"]`` holds the paper's
    Table 3 numbers (per_length, avg, wavg_inc, wavg_dec, effective_length,
    per_task_effective_length).
    """
