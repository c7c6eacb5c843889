"""The pytest entry point (``pytest11``: ``ruler = pytest_ruler.plugin``).

Hooks only; each hands off to ``config``, ``gpus``, ``session``, ``items``,
``fixtures`` or ``reporting``. Nothing happens unless ``--ruler-model`` (or
ini ``ruler_model``) is given: then a :class:`~pytest_ruler.reporting.RulerPlugin`
object holding the run's state is registered. Plain ``pytest`` is unchanged,
and importing this module imports no torch, transformers or vllm.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from .config import add_options, build_config, is_active
from .errors import RulerUsageError
from .fixtures import ruler, ruler_mapreduce, ruler_session  # noqa: F401  (fixtures for user tests)
from .items import RESULT_ATTR, SESSION_KEY


def pytest_addhooks(pluginmanager: Any) -> None:
    from . import newhooks

    pluginmanager.add_hookspecs(newhooks)


def pytest_addoption(parser: Any) -> None:
    add_options(parser)


def _tensor_parallel_size(config: Any) -> int:
    from .config import _engine_options, _raw

    raw = _raw(config, "tensor-parallel-size")
    if raw is None and _raw(config, "engine-option"):
        raw = _engine_options(_raw(config, "engine-option")).get("tensor_parallel_size")
    try:
        return max(1, int(raw)) if raw is not None else 1
    except (TypeError, ValueError):
        return 1  # build_config reports the bad value


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: Any, parser: Any, args: list) -> None:
    # an xdist worker pins itself to its GPU slot before anything can import CUDA
    if os.environ.get("PYTEST_XDIST_WORKER"):
        from .gpus import pin_worker

        tp = next((int(a.split("=", 1)[1]) for a in args if a.startswith("--ruler-tensor-parallel-size=") and a.split("=", 1)[1].isdigit()), 1)
        pin_worker(tp)


@pytest.hookimpl(trylast=True)  # after the cacheprovider has set config.cache
def pytest_configure(config: Any) -> None:
    config.addinivalue_line("markers", "ruler(task=None, lengths=None, samples=None, threshold=None, seed=0): a RULER check for the `ruler` fixture")
    from .reporting import Registry

    config.hook.pytest_ruler_register(registry=Registry())
    if not is_active(config):
        return
    from .reporting import RulerPlugin
    from .session import RulerSession

    try:
        rc = build_config(config)
    except RulerUsageError as exc:
        raise pytest.UsageError(str(exc)) from None
    cache_dir = rc.cache_dir
    if cache_dir is None and getattr(config, "cache", None) is not None:
        cache_dir = Path(config.cache.mkdir("ruler"))
    config.stash[SESSION_KEY] = RulerSession(rc, cache_dir)
    config.pluginmanager.register(RulerPlugin(config), "ruler-run")


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_auto_num_workers(config: Any) -> int | None:
    """``-n auto``: one worker per GPU slot (visible GPUs // tensor parallel size)."""
    if not is_active(config) or os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None
    from .gpus import gpu_slots, visible_gpus

    slots = gpu_slots(len(visible_gpus()), _tensor_parallel_size(config))
    return slots or None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: Any, call: Any):
    outcome = yield
    results = getattr(item, RESULT_ATTR, None)
    if results and call.when == "call":
        # extra report attributes travel to the xdist controller with the report
        outcome.get_result().ruler = [r.to_dict() for r in results]


def pytest_unconfigure(config: Any) -> None:
    rs = config.stash.get(SESSION_KEY, None)
    if rs is not None:
        rs.close()
