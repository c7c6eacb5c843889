"""The prediction cache across runs: it outlives ``pytest --cache-clear``, lives in the per-user
folder (or ``--ruler-cache-dir``), and keys answers on the engine's identity, its registered
name and class included; the report's ``engine`` is that identity, with and without ``-n 2``."""

from __future__ import annotations

import json
import os
import textwrap

import pytest

from pytest_ruler.folders import PREDICTIONS_ENV

from .helpers import SCRIPTED, XDIST, prediction_db, report, run

SMALL = [*SCRIPTED, "--ruler-only", "--ruler-tasks=niah_single_1,vt", "--ruler-lengths=1k", "--ruler-samples=3"]


def _cached(data: dict) -> tuple[int, int]:
    items = data["items"]
    return sum(i["cached"] for i in items), sum(i["samples"] for i in items)


@pytest.mark.parametrize("xdist", XDIST)
def test_predictions_outlive_pytest_cache_clear(pytester, xdist):
    """Run, ``pytest --cache-clear``, run again: every prediction of the third run comes from the
    cache, which lives in the per-user folder (here the test's own), not in .pytest_cache."""
    run(pytester, *SMALL, *xdist, "--ruler-report=first.json").assert_outcomes(passed=2)
    assert _cached(report(pytester, "first.json")) == (0, 6)
    cleared = run(pytester, *SMALL, *xdist, "--cache-clear", "--ruler-report=second.json")
    cleared.assert_outcomes(passed=2)
    assert _cached(report(pytester, "second.json")) == (6, 6)
    folder = os.environ[PREDICTIONS_ENV]
    cleared.stdout.fnmatch_lines([f"ruler: cache {folder}",
                                  f"ruler: --cache-clear keeps the predictions in {folder}; clear them with "
                                  f"`pytest-ruler cache clear --cache-dir {folder}`"])
    run(pytester, *SMALL, *xdist, "--cache-clear", "--ruler-report=third.json").assert_outcomes(passed=2)
    assert _cached(report(pytester, "third.json")) == (6, 6)
    assert prediction_db().is_file() and not (pytester.path / ".pytest_cache" / "d" / "ruler").exists()


def test_the_cache_dir_option_wins_over_the_per_user_folder(pytester):
    out = run(pytester, *SMALL, "--ruler-cache-dir=mine", "--ruler-report=r.json")
    out.assert_outcomes(passed=2)
    out.stdout.fnmatch_lines(["ruler: cache mine"])
    assert (pytester.path / "mine" / "predictions.sqlite").is_file() and not prediction_db().exists()
    assert "--cache-clear keeps" not in out.stdout.str()  # said only when --cache-clear is given


SUBCLASS = textwrap.dedent('''
    from pytest_ruler.engines.scripted import ScriptedEngine


    class EchoEngine(ScriptedEngine):
        """A scripted engine (test engine, not a model) that answers with the prompt's end: its
        identity() is its parent's, so only its name and class tell the cache apart."""

        name = "scripted-echo"

        def __init__(self, config):
            super().__init__(config)
            self.mode = "echo"


    def pytest_ruler_register(registry):
        registry.engine("scripted-echo", EchoEngine)
''')


@pytest.mark.parametrize("xdist", XDIST)
def test_a_subclass_registered_as_a_new_backend_never_gets_its_parents_answers(pytester, xdist):
    pytester.makeconftest(SUBCLASS)
    args = [a for a in SMALL if not a.startswith("--ruler-backend")]
    run(pytester, *args, *xdist, "--ruler-backend=scripted", "--ruler-report=parent.json").assert_outcomes(passed=2)
    child = run(pytester, *args, *xdist, "--ruler-backend=scripted-echo", "--ruler-report=child.json")
    data = report(pytester, "child.json")
    assert _cached(data) == (0, 6)  # the parent's answers were not reused
    child.assert_outcomes(failed=2)  # the echo answers are its own: wrong
    parent = report(pytester, "parent.json")["engine"]
    assert (parent["backend"], parent["class"]) == ("scripted", "pytest_ruler.engines.scripted.ScriptedEngine")
    assert (data["engine"]["backend"], data["engine"]["class"]) == ("scripted-echo", "conftest.EchoEngine")
    # its own answers are cached under its own identity
    run(pytester, *args, *xdist, "--ruler-backend=scripted-echo", "--ruler-report=again.json")
    assert _cached(report(pytester, "again.json")) == (6, 6)


@pytest.mark.parametrize("xdist", XDIST)
def test_the_report_names_the_engine_identity(pytester, xdist):
    """The report's ``engine`` is the identity that keyed the cache, with the engine options and
    library versions (secrets scrubbed: tests/unit/results/test_identity.py). Under ``-n 2`` the
    controller, which runs no item, writes it too."""
    run(pytester, *SMALL, *xdist, "--ruler-engine-option=mode=oracle,delay=0", "--ruler-report=r.json").assert_outcomes(passed=2)
    engine = report(pytester)["engine"]
    assert engine["backend"] == "scripted" and engine["class"] == "pytest_ruler.engines.scripted.ScriptedEngine"
    assert engine["mode"] == "oracle" and engine["engine"] == "scripted (test engine, not a model)"
    assert engine["options"]["mode"] == "oracle" and set(engine["versions"]) == {"torch", "transformers", "vllm"}
    assert "unknown" not in engine


def test_shards_run_with_other_engine_settings_do_not_merge(pytester, monkeypatch, capsys):
    """The issue's case: shards with mode=oracle and mode=echo merged silently; now merge names the field."""
    from pytest_ruler.cli import main

    for k, mode in ((1, "oracle"), (2, "echo")):
        run(pytester, *SMALL, f"--ruler-shard={k}/2", f"--ruler-engine-option=mode={mode}", f"--ruler-report=s{k}.json")
    monkeypatch.chdir(pytester.path)
    assert main(["merge", "s1.json", "s2.json", "--out", "m.json"]) == 2
    err = capsys.readouterr().err
    assert "engine.mode: oracle -> echo" in err and "s2.json" in err and not (pytester.path / "m.json").exists()
    assert json.loads((pytester.path / "s1.json").read_text())["engine"]["mode"] == "oracle"


UNDESCRIBED = textwrap.dedent('''
    from pytest_ruler.engines.scripted import ScriptedEngine


    class Undescribed(ScriptedEngine):
        """A scripted engine (test engine, not a model) that cannot describe itself before it is built."""

        name = "scripted-undescribed"

        @staticmethod
        def describe(config):
            return None

        def identity(self):
            return {**super().identity(), "built": True}


    def pytest_ruler_register(registry):
        registry.engine("scripted-undescribed", Undescribed)
''')


@pytest.mark.parametrize("xdist", XDIST)
def test_an_engine_that_cannot_describe_itself_is_named_from_the_engine_the_items_built(pytester, xdist):
    """Only a built engine knows its identity: under -n 2 the workers built it, and hand it to the
    controller, which writes the report without building one."""
    pytester.makeconftest(UNDESCRIBED)
    args = [a for a in SMALL if not a.startswith("--ruler-backend")]
    run(pytester, *args, *xdist, "--ruler-backend=scripted-undescribed", "--ruler-report=r.json").assert_outcomes(passed=2)
    engine = report(pytester)["engine"]
    assert engine["built"] is True and engine["class"] == "conftest.Undescribed" and "unknown" not in engine
