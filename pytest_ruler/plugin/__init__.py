"""The pytest entry point (``pytest11``: ``ruler = pytest_ruler.plugin``).

Hooks only; each hands off to ``pytest_ruler.options`` (the option spec),
``engines.gpus``, ``run`` (the session and its runner), or this package's
``items``, ``fixtures``, ``terminal`` and ``hookspecs``. Nothing here runs an
item, aggregates or gates: that is the core's (``run``, ``results``, ``report``).

Nothing happens unless ``--ruler-model`` (or ini ``ruler_model``) is given: then a :class:`~pytest_ruler.plugin.terminal.RulerPlugin`
object holding the run's state is registered. Plain ``pytest`` is unchanged,
and importing this module imports no torch, transformers or vllm.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from ..options import add_options, build_config, is_active
from ..errors import RulerUsageError
from .fixtures import ruler, ruler_mapreduce, ruler_session  # noqa: F401  (fixtures for user tests)
from .items import RESULT_ATTR, SESSION_KEY


def pytest_addhooks(pluginmanager: Any) -> None:
    from . import hookspecs, reporter_hooks

    pluginmanager.add_hookspecs(hookspecs)
    pluginmanager.add_hookspecs(reporter_hooks)


def pytest_addoption(parser: Any) -> None:
    add_options(parser)


def _tensor_parallel_size(config: Any) -> int:
    """GPUs per engine (option, ini key or engine option; see gpus.tensor_parallel_size)."""
    from ..options import _raw
    from ..engines.gpus import tensor_parallel_size

    return tensor_parallel_size(lambda name: _raw(config, name)) or 1  # build_config reports a bad value


def _early_raw(early_config: Any, name: str) -> Any:
    """An option's raw value before the command line is fully parsed: known args, else ini."""
    from ..options import _dest

    namespace = getattr(early_config, "known_args_namespace", None)
    value = getattr(namespace, _dest(name), None)
    if value is None or value == []:
        try:
            ini = early_config.getini(_dest(name))
        except (ValueError, KeyError):
            ini = None
        value = ini if ini not in (None, "", []) else None
    return value


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: Any, parser: Any, args: list) -> None:
    # an xdist worker pins itself to its GPU slot before anything can import CUDA
    if os.environ.get("PYTEST_XDIST_WORKER"):
        from ..engines.gpus import pin_worker, tensor_parallel_size

        pin_worker(tensor_parallel_size(lambda name: _early_raw(early_config, name)) or 1)


@pytest.hookimpl(trylast=True)  # after the cacheprovider has set config.cache
def pytest_configure(config: Any) -> None:
    config.addinivalue_line("markers", "ruler(task=None, lengths=None, samples=None, threshold=None, seed=0): a RULER check for the `ruler` fixture")
    from .terminal import Registry

    config.hook.pytest_ruler_register(registry=Registry())
    if not is_active(config):
        return
    from .terminal import RulerPlugin
    from ..run.session import RulerSession

    try:
        rc = build_config(config)
        cache_dir = rc.cache_dir
        if cache_dir is None and getattr(config, "cache", None) is not None:
            cache_dir = Path(config.cache.mkdir("ruler"))
        rs = RulerSession(rc, cache_dir)
        if not hasattr(config, "workerinput"):  # once per run: the controller (or the only process)
            from ..run.preflight import check_start

            check_start(rs, config)
    except RulerUsageError as exc:
        raise pytest.UsageError(str(exc)) from None
    config.stash[SESSION_KEY] = rs
    config.pluginmanager.register(RulerPlugin(config), "ruler-run")
    _stop_on_sigterm(config)


def _stop_on_sigterm(config: Any) -> None:
    """SIGTERM (a CI job cancelled or timed out) stops the run like Ctrl-C: the partial
    report is written, marked incomplete, and the engine is closed (a vLLM engine's
    worker processes would otherwise outlive the run). Only where nobody else handles it."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread() or signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        return

    def interrupt(signum: int, frame: Any) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a second SIGTERM ends the process at once
        raise KeyboardInterrupt("SIGTERM")

    signal.signal(signal.SIGTERM, interrupt)
    config.add_cleanup(lambda: signal.signal(signal.SIGTERM, signal.SIG_DFL))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_auto_num_workers(config: Any) -> int | None:
    """``-n auto``: one worker per GPU slot (visible GPUs // tensor parallel size)."""
    if not is_active(config) or os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None
    from ..engines.gpus import gpu_slots, visible_gpus

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
