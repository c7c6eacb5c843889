"""Hooks that pytest-ruler adds; implement them in a conftest.py or plugin.

They add to the built-in behaviour; the built-ins do not go through them. The standard
tasks and families and the built-in engines are in their registries before any hook runs
(a task or engine a hook registers cannot take a built-in name); the built-in reporters
(json, markdown, plots, github) are in the ``Reporters`` that ``pytest_ruler_add_reporters``
receives, and a hook may replace one by name; the gate and the baseline are judged by the
verdict, and ``pytest_ruler_summary`` only adds failures of the user's own.
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


def pytest_ruler_add_reporters(config: Any, reporters: Any) -> None:
    """Add outputs to the run: ``reporters.add(name, write)``.

    Called once on the controller when the run ends, after the verdict, with the run's
    :class:`~pytest_ruler.report.reporters.Reporters` (json, markdown, plots, github are
    there already; they run first). ``write(end)`` gets a
    :class:`~pytest_ruler.report.reporters.RunEnd` (``end.report`` the typed report,
    ``end.verdict``, ``end.config``, ``end.lines()`` the terminal's lines) and returns the
    files it wrote, or None. An output is not a gate: to fail the run, implement
    ``pytest_ruler_summary``. ``reporters.add(name, write, replace=True)`` replaces a
    reporter of that name. Conftests in subfolders are called too, when pytest loaded them
    (under xdist the controller loads only the conftests of the rootdir and the arguments).
    """
