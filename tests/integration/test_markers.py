"""The repository conftest's opt-in markers: gpu skips without a visible GPU, network
skips unless --run-network; each skip says why."""

from __future__ import annotations

import shutil
from pathlib import Path

ROOT_CONFTEST = Path(__file__).resolve().parents[2] / "conftest.py"

TESTS = '''
import pytest


@pytest.mark.gpu
def test_on_a_gpu():
    pass


@pytest.mark.network
def test_online():
    pass


def test_plain():
    pass
'''


def _setup(pytester, monkeypatch):
    monkeypatch.setenv("RULER_DATA_DIR", str(pytester.path / "data"))  # the conftest sets it; restored after
    shutil.copy(ROOT_CONFTEST, pytester.path / "conftest.py")
    pytester.makepyfile(test_marked=TESTS)


def test_gpu_and_network_tests_skip_with_their_reason(pytester, monkeypatch):
    _setup(pytester, monkeypatch)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")  # no GPU visible, whatever the machine has
    result = pytester.runpytest("-p", "no:ruler", "-rs")
    result.assert_outcomes(passed=1, skipped=2)
    out = result.stdout.str()
    assert "needs a CUDA GPU (marker gpu): none is visible here" in out
    assert "needs network access (marker network): pass --run-network" in out


def test_run_network_opts_in(pytester, monkeypatch):
    _setup(pytester, monkeypatch)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    result = pytester.runpytest("-p", "no:ruler", "--run-network", "-rs")
    result.assert_outcomes(passed=2, skipped=1)
