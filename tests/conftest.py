"""Shared fixtures: the embedded tokenizer, a generation context over the test data, and a prediction cache of each test's own."""

from __future__ import annotations

from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data"


@pytest.fixture(scope="session")
def tokenizer():
    from pytest_ruler.tasks.tokenizer import load_tokenizer

    return load_tokenizer("smollm2-135m")


@pytest.fixture(scope="session")
def ctx(tokenizer):
    from pytest_ruler.tasks import GenerationContext

    return GenerationContext(tokenizer, squad=str(DATA / "squad_mini.json"), hotpotqa=str(DATA / "hotpotqa_mini.json"))


@pytest.fixture
def fresh_ctx(tokenizer):
    """A context with nothing learned yet (no drift memory)."""
    from pytest_ruler.tasks import GenerationContext

    def make(**kw):
        kw.setdefault("squad", str(DATA / "squad_mini.json"))
        kw.setdefault("hotpotqa", str(DATA / "hotpotqa_mini.json"))
        return GenerationContext(tokenizer, **kw)

    return make


@pytest.fixture(autouse=True)
def _not_on_github_actions(monkeypatch):
    """The suite may itself run on GitHub Actions: in-process plugin runs must not write
    into the job's real step summary or print annotations meant for a user's run."""
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)


@pytest.fixture(scope="session", autouse=True)
def _no_user_prediction_cache(tmp_path_factory):
    """Session-wide, set before any module- or session-scoped fixture runs a plugin (the real-engine
    tests' ``plugin_runs``): nothing in the suite reads or writes the developer's own prediction cache."""
    from pytest_ruler.folders import PREDICTIONS_ENV

    patch = pytest.MonkeyPatch()
    patch.setenv(PREDICTIONS_ENV, str(tmp_path_factory.mktemp("session-predictions")))
    yield
    patch.undo()


@pytest.fixture(autouse=True)
def _own_prediction_cache(monkeypatch, tmp_path_factory):
    """Every test has its own prediction cache (the plugin's default is a per-user folder): no test
    writes to the developer's, and none is answered from another test's. The variable reaches
    pytester runs, their xdist workers and subprocesses; two runs of one test share the folder."""
    from pytest_ruler.folders import PREDICTIONS_ENV

    monkeypatch.setenv(PREDICTIONS_ENV, str(tmp_path_factory.mktemp("predictions")))
