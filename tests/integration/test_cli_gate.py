"""``pytest-ruler gate REPORT.json`` gives the plugin's verdict on a saved report, with the
plugin's exit codes (runs of the plugin use the scripted test engine, not a model)."""

from __future__ import annotations

import json

import pytest

from pytest_ruler.cli import main

from .helpers import SCRIPTED, run
from .test_verdict import FLAKY, FLAKY_CONFTEST


def _gate_lines(text: str) -> list[str]:
    """The gate, baseline and verdict lines of the ruler summary (a failed verdict's text is also under FAILURES)."""
    text = text.split("RULER: effective context length")[-1]
    return [ln for ln in text.splitlines() if ln.startswith(("gate ", "RULER FAILED", "baseline:", "ruler verdict:"))]


@pytest.mark.parametrize("required, code", [("2k", 0), ("64k", 1)])
def test_the_cli_gate_repeats_the_plugins_verdict(pytester, capsys, required, code):
    result = run(pytester, *SCRIPTED, "--ruler-tasks=niah_single_1", "--ruler-lengths=1k,2k", "--ruler-samples=1",
                 f"--ruler-require-effective-length={required}", "--ruler-report=r.json")
    assert result.ret == code
    plugin_lines = _gate_lines(result.stdout.str())
    capsys.readouterr()
    assert main(["gate", str(pytester.path / "r.json"), f"--require-effective-length={required}"]) == code
    assert _gate_lines(capsys.readouterr().out) == plugin_lines and plugin_lines


def test_the_cli_gate_fails_a_report_with_errored_items(pytester, monkeypatch, capsys):
    pytester.makeconftest(FLAKY_CONFTEST)
    monkeypatch.setenv("FLAKY_ACTION", "raise")
    run(pytester, *FLAKY, "--ruler-lengths=1k", "--ruler-report=r.json")  # no gate asked in the run itself
    capsys.readouterr()
    assert main(["gate", str(pytester.path / "r.json"), "--require-effective-length=1k"]) == 1
    assert "gate FAILED: 1 item errored; effective length is not established (required 1K)" in capsys.readouterr().out


def test_the_cli_gate_gives_no_verdict_on_an_interrupted_run(pytester, monkeypatch, capsys):
    pytester.makeconftest(FLAKY_CONFTEST)
    monkeypatch.setenv("FLAKY_ACTION", "interrupt")
    # one item per engine call: the premise is that the first item finished before the Ctrl-C
    pytester.runpytest("-p", "no:hypothesispytest", *FLAKY, "--ruler-lengths=1k", "--ruler-batch-items=1", "--ruler-report=r.json", no_reraise_ctrlc=True)
    capsys.readouterr()
    assert main(["gate", str(pytester.path / "r.json"), "--require-effective-length=1k"]) == 2
    assert "gate NOT DECIDED: interrupted after 1 of 2 items" in capsys.readouterr().out


def test_the_cli_gate_applies_a_baseline(pytester, capsys):
    base = [*SCRIPTED, "--ruler-tasks=niah_single_1", "--ruler-lengths=1k", "--ruler-samples=20", "--ruler-no-cache"]
    run(pytester, *base, "--ruler-report=old.json")
    run(pytester, *base, "--ruler-engine-option=mode=empty", "--ruler-report=new.json")
    capsys.readouterr()
    code = main(["gate", str(pytester.path / "new.json"), "--baseline", str(pytester.path / "old.json")])
    out = capsys.readouterr().out
    assert code == 1 and "significant drop" in out


def test_the_cli_gate_refuses_bad_input_with_the_plugins_usage_code(tmp_path, capsys):
    bad = tmp_path / "r.json"
    bad.write_text(json.dumps({"schema": "something-else"}))
    assert main(["gate", str(bad), "--require-effective-length=4k"]) == 4
    assert "REPORT.json" in capsys.readouterr().err
    assert main(["gate", str(bad)]) == 4  # no gate named
