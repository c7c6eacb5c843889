"""--ruler-no-suite (ini ruler_no_suite): the plugin is configured (fixtures, engine,
gate, report) but the standard suite is not collected, so only the user's own tests
run. pytester runs with the scripted test engine (a rule-based stand-in, not a model)."""

from __future__ import annotations

import pytest

from .helpers import SCRIPTED, XDIST, report, run

USER_TEST = """
import pytest

@pytest.mark.ruler(task="niah_single_1", lengths=["1k"], samples=2, threshold=80)
def test_mine(ruler):
    ruler.check()
"""


@pytest.mark.parametrize("xdist", XDIST)
def test_only_the_users_tests_run_with_the_plugin_configured(pytester, xdist):
    pytester.makepyfile(test_mine=USER_TEST)
    # the ci preset's lengths (up to 16K) exceed an 8K engine: no suite, so no warning about them
    result = run(pytester, *SCRIPTED, "--ruler-engine-option=max_context=8192", "--ruler-no-suite",
                 "--ruler-require-effective-length=1k", "--ruler-report=r.json", *xdist)
    result.assert_outcomes(passed=2)  # the user's test and the verdict (a gate is asked: ruler::verdict)
    assert result.ret == pytest.ExitCode.OK
    out = result.stdout.str()
    assert "ruler::" not in out and "exceed" not in out
    assert "ruler: standard suite not collected (--ruler-no-suite): only your own tests run, threshold 85.6" in out
    assert "gate PASSED: effective length 1K (required 1K)" in out
    data = report(pytester)
    assert [(i["task"], i["length"]) for i in data["items"]] == [("niah_single_1", 1024)]
    assert data["complete"] is True and data["items_expected"] == 0


def test_the_ini_key_does_the_same(pytester):
    pytester.makepyfile(test_mine=USER_TEST)
    pytester.makeini("[pytest]\nruler_no_suite = true\n")
    result = run(pytester, *SCRIPTED, "--collect-only", "-q")
    out = result.stdout.str()
    assert "test_mine.py::test_mine" in out and "ruler::" not in out


@pytest.mark.parametrize("how", [["--ruler-only", "--ruler-no-suite"], ["--ruler-only", "-o", "ruler_no_suite=true"]])
def test_no_suite_with_only_is_refused_naming_both(pytester, how):
    pytester.makepyfile(test_mine=USER_TEST)
    result = run(pytester, *SCRIPTED, *how)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = [ln for ln in result.stderr.str().splitlines() if ln.startswith("ERROR:")]
    assert len(errors) == 1 and "--ruler-no-suite" in errors[0] and "--ruler-only" in errors[0], result.stderr.str()
