"""pytest_ruler_register is historic: a conftest in a subfolder registers a task family and a
task that its own tests use; without --ruler-model the hook is not called at all.

The family is tests/data/passphrase_family.py (a test family, not one of RULER's), copied
next to the subfolder's conftest; the engine is the scripted test engine (not a model),
whose oracle reads the passphrase out of the prompt.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from .helpers import SCRIPTED, XDIST, report, run

FAMILY = Path(__file__).resolve().parents[1] / "data" / "passphrase_family.py"

SUB_CONFTEST = '''
from passphrase_family import PassphraseFamily
from pytest_ruler import make_task


def pytest_ruler_register(registry):
    registry.family(PassphraseFamily())
    registry.task(make_task("passphrase_7", "passphrase", tokens_to_generate=16))
'''

SUB_TESTS = '''
from pytest_ruler import make_task


def test_the_registered_task_holds_at_1k(ruler):
    result = ruler.run("passphrase_7", "1k", samples=2, threshold=50)
    assert result.passed, result.failure_message(50)


def test_a_task_made_here_from_the_registered_family(ruler):
    result = ruler.run(make_task("passphrase_5", "passphrase", tokens_to_generate=16, digits=5), "1k", samples=2)
    assert result.score == 100.0 and result.task == "passphrase_5"
'''


def _subfolder(pytester, name: str = "retrieval") -> Path:
    # not test*: pytest loads conftests of test* folders at start-up; this one is found by collection
    sub = pytester.path / name
    sub.mkdir()
    shutil.copy(FAMILY, sub / "passphrase_family.py")
    (sub / "conftest.py").write_text(SUB_CONFTEST)
    (sub / "test_passphrase.py").write_text(SUB_TESTS)
    return sub


@pytest.mark.parametrize("xdist", XDIST)
def test_a_family_registered_in_a_subfolder_serves_that_folders_tests(pytester, xdist):
    _subfolder(pytester)
    result = run(pytester, *SCRIPTED, "--ruler-no-suite", "--ruler-no-cache", "--ruler-report=r.json", *xdist)
    result.assert_outcomes(passed=2)
    items = sorted(report(pytester)["items"], key=lambda i: i["task"])
    assert [(i["task"], i["length"], i["samples"], i["score"]) for i in items] == [("passphrase_5", 1024, 2, 100.0), ("passphrase_7", 1024, 2, 100.0)]


def test_a_bad_family_from_a_conftest_is_one_usage_error(pytester):
    pytester.makeconftest('''
class NotAFamily:
    name = "half"


def pytest_ruler_register(registry):
    registry.family(NotAFamily())
''')
    result = run(pytester, *SCRIPTED, "--ruler-no-suite")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert "ERROR: family='half' is invalid" in err and "validate, data_label, draft missing" in err


def test_without_a_model_the_hook_is_not_called(pytester):
    pytester.makeconftest('''
def pytest_ruler_register(registry):
    raise AssertionError("called without --ruler-model")
''')
    pytester.makepyfile(test_plain="def test_plain():\n    assert True\n", test_user="def test_user(ruler):\n    pass\n")
    result = run(pytester, "-rs")
    result.assert_outcomes(passed=1, skipped=1)
    assert "RULER tests need a model: pass --ruler-model=NAME" in result.stdout.str()
