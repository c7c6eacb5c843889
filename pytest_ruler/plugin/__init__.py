"""The pytest entry point (``pytest11``: ``ruler = pytest_ruler.plugin``): cheap unless used.

Every pytest run with the plugin installed imports this module, so it imports only
what a run without ``--ruler-model`` needs: pytest, the option spec
(:mod:`pytest_ruler.options`, data: the engines' flags are its table ``ENGINE_FLAGS``, so
declaring the options loads no engine) and the two names in :mod:`.keys`: 7 of our
modules, 8 with the hook specs (tests/integration/test_entry_cost.py). It declares
the options and the ``ruler`` marker and defines the fixtures users' tests ask for
(they skip without a model). Everything else is imported inside the hooks, once the
suite is active (``--ruler-model`` or ini ``ruler_model``); the model for this shape
is hypothesis's pytest plugin, a module pytest can load without loading the library.

Hooks, each a hand-off:

- ``pytest_addhooks``: the hook specs (:mod:`.hookspecs`);
- ``pytest_addoption``: ``options.add_options`` (the spec's data);
- ``pytest_load_initial_conftests``: an xdist worker pins its GPU slot (``engines.gpus``);
- ``pytest_configure``: active only: ``pytest_ruler_register`` (historic, so conftests
  of subfolders register too), ``config.build_config``, a ``run.session.RulerSession`` (its
  prediction cache in ``--ruler-cache-dir``, else ``folders.predictions_dir()``: a per-user
  folder outside ``.pytest_cache``; with ``pytest --cache-clear`` the header says the
  predictions were kept and how to clear them),
  ``run.preflight.check_start`` and the run's plugin object
  (:class:`~pytest_ruler.plugin.terminal.RulerPlugin`, which builds the items and
  reports) and, on the controller, the two that keep the run's end (:mod:`.run_end`:
  a Ctrl-C or SIGTERM from the last item on, another output's full disk), and with ``--ruler-shard`` the shard's selection
  (:mod:`.shards`);
- ``pytest_xdist_auto_num_workers``, ``pytest_runtest_makereport`` (results ride on
  the test report to an xdist controller), ``pytest_sessionfinish`` on a worker and
  ``pytest_testnodedown`` on the controller (the engine identity a worker used rides on its
  ``workeroutput``, so the controller's report names it without loading an engine),
  ``pytest_unconfigure`` (closes the session).

Fixtures: ``ruler_session``, ``ruler``, ``ruler_mapreduce``; their runners are
:mod:`.fixtures` (imported when a fixture is used with an active session).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import pytest

from ..options import add_options, early_value, is_active, raw_value
from .keys import RESULT_ATTR, SESSION_KEY

if TYPE_CHECKING:  # the run's session and the fixtures' runners load with a model, not with the plugin
    from ..run.session import RulerSession
    from .fixtures import MapReduceRunner, RulerRunner

IDENTITY_OUTPUT = "ruler_engine_identity"  # the xdist workeroutput key of the engine identity a worker used
MARKER = "ruler(task=None, lengths=None, samples=None, threshold=None, seed=0): a RULER check for the `ruler` fixture"
NO_MODEL = "RULER tests need a model: pass --ruler-model=NAME (e.g. --ruler-model=smollm2-135m)"


def pytest_addhooks(pluginmanager: Any) -> None:
    from . import hookspecs

    pluginmanager.add_hookspecs(hookspecs)


def pytest_addoption(parser: Any) -> None:
    add_options(parser)


def _tensor_parallel_size(read: Any) -> int:
    """GPUs per engine (option, ini key or engine option; see engines.gpus.tensor_parallel_size)."""
    from ..engines.gpus import tensor_parallel_size

    return tensor_parallel_size(read) or 1  # build_config reports a bad value


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: Any, parser: Any, args: list) -> None:
    # an xdist worker pins itself to its GPU slot before anything can import CUDA
    if os.environ.get("PYTEST_XDIST_WORKER"):
        from ..engines.gpus import pin_worker

        pin_worker(_tensor_parallel_size(lambda name: early_value(early_config, name)))


@pytest.hookimpl(trylast=True)  # after the cacheprovider has set config.cache
def pytest_configure(config: Any) -> None:
    config.addinivalue_line("markers", MARKER)
    if not is_active(config):
        return
    from ..data.registry import given_paths
    from ..errors import RulerUsageError
    from ..folders import predictions_dir
    from .config import build_config
    from ..run.session import RulerSession
    from .registry import Registry
    from .terminal import RulerPlugin

    try:
        config.hook.pytest_ruler_register.call_historic(kwargs={"registry": Registry()})
        rc = build_config(config)
        data_given = given_paths(rc, lambda dest: config.getoption(dest, None))

        def make(c: Any) -> RulerSession:
            return RulerSession(c, c.cache_dir or predictions_dir(), data_given=data_given)

        if rc.arms:  # --ruler-arm: one session (engine, cache identity) per arm, the reference's the run's (run.arms)
            from ..run.arms import build_sessions

            rs = build_sessions(rc, make)
        else:
            rs = make(rc)
        # the processes running items (-n; 1 without xdist): part of the engine speed's key (run.throughput)
        try:
            workers = max(1, int(getattr(config, "workerinput", {}).get("workercount") or getattr(config.option, "numprocesses", None) or 1))
        except (TypeError, ValueError):
            workers = 1
        for s in (rs, *rs.arms.values()):
            s.workers = workers
        if not hasattr(config, "workerinput"):  # once per run: the controller (or the only process)
            from ..run.preflight import check_start

            for s in (rs, *rs.arms.values()):
                check_start(s, config)
            if rs.arms:  # every arm must be asked the reference's samples: same token ids, same template
                from ..run.arms import check_same_prompts

                check_same_prompts(rs, rs.arms, rs.arm)
    except RulerUsageError as exc:  # its fix may quote outside text (an engine's exception, a path): escaped
        from ..outside_text import shown

        raise pytest.UsageError(shown(str(exc), limit=None)) from None
    config.stash[SESSION_KEY] = rs
    run = RulerPlugin(config)
    config.pluginmanager.register(run, "ruler-run")
    if rs.config.shard is not None:  # --ruler-shard=i/N: this run's share of the items (plugin.shards)
        from .shards import ShardPlugin

        config.pluginmanager.register(ShardPlugin(rs.config.shard, rs.config.no_suite), "ruler-shard")
    if not hasattr(config, "workerinput"):  # the outputs are written on the controller
        from .run_end import HeldCtrlC, OutputErrors

        config.pluginmanager.register(HeldCtrlC(), "ruler-held-ctrl-c")
        config.pluginmanager.register(OutputErrors(config, run.output_lost), "ruler-output-errors")
        if getattr(config.option, "cacheclear", False) and not rs.config.no_cache:
            config.pluginmanager.register(_PredictionsKept(rs.cache_dir), "ruler-predictions-kept")
    _stop_on_sigterm(config)


class _PredictionsKept:
    """``pytest --cache-clear`` empties pytest's cache, never the predictions: the header says so."""

    def __init__(self, folder: Any):
        self.folder = folder

    def pytest_report_header(self, config: Any) -> list[str]:
        return [f"ruler: --cache-clear keeps the predictions in {self.folder}; "
                f"clear them with `pytest-ruler cache clear --cache-dir {self.folder}`"]


def _stop_on_sigterm(config: Any) -> None:
    """SIGTERM (a CI job cancelled or timed out) stops the run like Ctrl-C: the partial
    report is written, marked incomplete, and the engine is closed (a vLLM engine's
    worker processes would otherwise outlive the run). Only where nobody else handles it;
    at the run's end it is held like Ctrl-C (run.interrupts, plugin.run_end)."""
    from ..run.interrupts import stop_on_sigterm

    restore = stop_on_sigterm()
    if restore is not None:
        config.add_cleanup(restore)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_auto_num_workers(config: Any) -> int | None:
    """``-n auto``: one worker per GPU slot (visible GPUs // tensor parallel size)."""
    if not is_active(config) or os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None
    from ..engines.gpus import gpu_slots, visible_gpus

    slots = gpu_slots(len(visible_gpus()), _tensor_parallel_size(lambda name: raw_value(config, name)))
    return slots or None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: Any, call: Any):
    outcome = yield
    results = getattr(item, RESULT_ATTR, None)
    if results and call.when == "call":
        # extra report attributes travel to the xdist controller with the report
        outcome.get_result().ruler = [r.to_dict() for r in results]


def pytest_sessionfinish(session: pytest.Session) -> None:
    """An xdist worker hands the engine identity it used to the controller (``pytest_testnodedown``)."""
    output = getattr(session.config, "workeroutput", None)
    rs = session.config.stash.get(SESSION_KEY, None)
    if output is None or rs is None:
        return
    try:
        identity = rs.known_identity()
    except Exception:  # the items said why (an engine that cannot describe itself); nothing to hand over
        return
    if identity.get("engine") is not None:
        import json

        from ..engines.base import stable_json

        output[IDENTITY_OUTPUT] = json.loads(stable_json(identity))  # plain JSON types cross execnet


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    rs = node.config.stash.get(SESSION_KEY, None)
    identity = (getattr(node, "workeroutput", None) or {}).get(IDENTITY_OUTPUT)
    if rs is not None and identity is not None:
        rs.adopt_identity(identity)


def pytest_unconfigure(config: Any) -> None:
    rs = config.stash.get(SESSION_KEY, None)
    if rs is not None:
        rs.close()


# ---- fixtures for users' own RULER tests (see .fixtures) ---------------------------------


@pytest.fixture(scope="session")
def ruler_session(request: Any) -> RulerSession:
    """The run's RulerSession (engine, tokenizer, cache); skips without --ruler-model."""
    rs = request.config.stash.get(SESSION_KEY, None)
    if rs is None:
        pytest.skip(NO_MODEL)
    return rs


@pytest.fixture
def ruler(request: Any, ruler_session: RulerSession) -> RulerRunner:
    """Run RULER items from a test; defaults come from @pytest.mark.ruler(...)."""
    from .fixtures import RulerRunner

    return RulerRunner(ruler_session, request.node)


@pytest.fixture
def ruler_mapreduce(request: Any, ruler_session: RulerSession) -> MapReduceRunner:
    """Run RULER items through LLM×MapReduce chunked inference (see fixtures.MapReduceRunner)."""
    from .fixtures import MapReduceRunner

    return MapReduceRunner(ruler_session, request.node)
