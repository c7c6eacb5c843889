"""What ``pytest_ruler_register`` hooks receive: add tasks, task families, kinds of data and engines by name.

The hook is historic: it is called once in ``pytest_configure`` (for the plugins and
conftests known then: the rootdir's and those of the given paths) and again for each
conftest pytest loads later, as it collects a subfolder. What a subfolder registers is
there for the tests of that folder (``ruler.run("my_task", ...)``); the standard
suite's ``--ruler-tasks`` and ``--ruler-backend`` are checked at start-up, so the
tasks and engines they name belong in a conftest that is loaded by then.

Public names: ``Registry``.
"""

from __future__ import annotations

from typing import Any, Callable

import pytest

from ..errors import RulerUsageError

__all__ = ["Registry"]


class Registry:
    """``registry.task(spec)``, ``registry.family(family)``, ``registry.data(kind)``, ``registry.engine(name, factory)``."""

    def task(self, spec: Any) -> Any:
        """Make a :class:`~pytest_ruler.tasks.TaskSpec` (``pytest_ruler.make_task(...)``) selectable by name."""
        from ..tasks import register_task

        return _said(register_task, spec, replace=True)

    def family(self, family: Any) -> Any:
        """Make a task family (any object meeting :class:`~pytest_ruler.tasks.Family`) usable in ``make_task``."""
        from ..tasks import register_family

        return _said(register_family, family, replace=True)

    def data(self, kind: Any) -> Any:
        """Make a kind of data (a :class:`~pytest_ruler.data.registry.DataKind`) one a family may need
        (``data_needs``); its option is the plugin's or conftest's own pytest option (``pytest_addoption``)."""
        from ..data.registry import register_data_kind

        return _said(register_data_kind, kind, replace=True)

    def engine(self, name: str, factory: Callable[..., Any]) -> None:
        """Make ``--ruler-backend=name`` build ``factory(EngineConfig)``."""
        from ..engines import register_engine

        _said(register_engine, name, factory)


def _said(register: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """A registration's usage error as pytest's (one ``ERROR:`` line), wherever the hook runs."""
    try:
        return register(*args, **kwargs)
    except RulerUsageError as exc:
        raise pytest.UsageError(str(exc)) from None
