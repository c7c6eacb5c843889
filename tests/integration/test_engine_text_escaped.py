"""An engine's error text is outside text (issue 23): an exception that quotes a model name,
a path or a server's body may hold terminal controls. One ``\\x1b[2J`` cleared the screen
and left a fake green verdict above the real one. Whatever an engine says reaches the
terminal, the item's longrepr, the JUnit XML and the JSON report escaped.

The engine is a test engine (not a model): the scripted oracle, except that it fails in
the way HOSTILE_ACTION says, with a message carrying a screen clear and a fake verdict.
"""

from __future__ import annotations

import pytest

from .helpers import report, run

HOSTILE_CONFTEST = '''
import os
from pytest_ruler.engines.base import Completion
from pytest_ruler.engines.scripted import ScriptedEngine
from pytest_ruler.errors import RulerUsageError

TEXT = "model /srv/m\\x1b[2J\\x1b[1;32mgate PASSED: effective length 128K\\x1b[0m\\u202e"


class HostileTextEngine(ScriptedEngine):
    """A test engine: its failures quote text with terminal controls."""

    name = "hostile-text"

    @staticmethod
    def describe(config):
        return {"engine": "hostile-text (test engine, not a model)"}

    @staticmethod
    def preflight(config):
        if os.environ.get("HOSTILE_ACTION") == "preflight":
            raise RulerUsageError("--ruler-model", config.model, f"it does not load ({TEXT})")
        return None

    def __init__(self, config):
        if os.environ.get("HOSTILE_ACTION") == "load":
            raise OSError(f"cannot open {TEXT}")
        super().__init__(config)

    def generate(self, requests, on_result=None):
        if os.environ.get("HOSTILE_ACTION") == "raise":
            raise RuntimeError(f"engine failed: {TEXT}")
        out = [Completion("", r.prompt_tokens, 0, "error", error=f"server said: {TEXT}") for r in requests]
        if on_result:
            for i, c in enumerate(out):
                on_result(i, c)
        return out


def pytest_ruler_register(registry):
    registry.engine("hostile-text", HostileTextEngine)
'''
ARGS = ["--ruler-model=smollm2-135m", "--ruler-backend=hostile-text", "--ruler-tasks=vt", "--ruler-lengths=1k", "--ruler-samples=2",
        "--ruler-no-cache", "--ruler-report=r.json", "--junitxml=j.xml"]


def _no_raw_controls(pytester, result):
    shown = result.stdout.str() + result.stderr.str()
    assert "\x1b" not in shown and "\u202e" not in shown, repr(shown[-2000:])
    assert "\\x1b[2J" in shown, shown[-2000:]  # said, escaped
    for name in ("j.xml", "r.json"):
        path = pytester.path / name
        if path.exists():
            text = path.read_text(encoding="utf-8")
            assert "\x1b" not in text and "&#27;" not in text and "\\u001b" not in text, name
    return shown


@pytest.mark.parametrize("action", ["raise", "load", "answer"])
def test_an_engine_error_reaches_the_terminal_and_reports_escaped(pytester, monkeypatch, action):
    pytester.makeconftest(HOSTILE_CONFTEST)
    monkeypatch.setenv("HOSTILE_ACTION", action)
    result = run(pytester, *ARGS)
    result.assert_outcomes(failed=1)
    _no_raw_controls(pytester, result)
    item = report(pytester)["items"][0]
    assert "\\x1b[2J" in (item["error"] or "") + " ".join(item["reasons"])


def test_the_long_traceback_of_an_engine_error_is_escaped(pytester, monkeypatch):
    pytester.makeconftest(HOSTILE_CONFTEST)
    monkeypatch.setenv("HOSTILE_ACTION", "raise")
    result = run(pytester, *ARGS, "--tb=long")
    result.assert_outcomes(failed=1)
    shown = _no_raw_controls(pytester, result)
    assert "Traceback (most recent call last)" in shown and "RuntimeError: engine failed: model /srv/m\\x1b[2J" in shown


def test_a_start_up_refusal_quoting_an_engine_message_is_escaped(pytester, monkeypatch):
    pytester.makeconftest(HOSTILE_CONFTEST)
    monkeypatch.setenv("HOSTILE_ACTION", "preflight")
    result = run(pytester, *ARGS)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    shown = _no_raw_controls(pytester, result)
    assert "--ruler-model='smollm2-135m' is invalid: it does not load (model /srv/m\\x1b[2J" in shown


def test_a_model_name_with_controls_is_shown_escaped_in_the_header_summary_and_markdown(pytester):
    """The model's name is outside text too: the header, the summary lines and the Markdown escape it."""
    name = "m\x1b[2J\x1b[1;32mgate PASSED\x1b[0m"
    result = run(pytester, f"--ruler-model={name}", "--ruler-backend=scripted", "--ruler-tokenizer=smollm2-135m", "--ruler-tasks=vt",
                 "--ruler-lengths=1k", "--ruler-samples=1", "--ruler-no-cache", "--ruler-report=r.json", "--ruler-markdown=r.md")
    shown = result.stdout.str() + result.stderr.str()
    assert "\x1b" not in shown, repr(shown[-2000:])
    assert "ruler: model=m\\x1b[2J\\x1b[1;32mgate PASSED\\x1b[0m backend=scripted" in shown
    markdown = (pytester.path / "r.md").read_text(encoding="utf-8")
    assert "\x1b" not in markdown and "# RULER report: m\\x1b[2J" in markdown
    assert report(pytester)["model"] == name  # the report keeps the name as given (JSON escapes it)
