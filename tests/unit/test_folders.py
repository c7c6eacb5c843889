"""Where the prediction cache lives by default (folders.predictions_dir): a per-user folder,
never inside pytest's .pytest_cache, apart from the converted models."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from pytest_ruler.folders import PREDICTIONS_ENV, cache_root, predictions_dir


@pytest.fixture
def bare(monkeypatch, tmp_path):
    for name in (PREDICTIONS_ENV, "RULER_CACHE_DIR", "XDG_CACHE_HOME", "LOCALAPPDATA"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    return tmp_path


def test_the_environment_variable_names_the_folder(bare, monkeypatch):
    monkeypatch.setenv(PREDICTIONS_ENV, str(bare / "p"))
    monkeypatch.setenv("RULER_CACHE_DIR", str(bare / "root"))
    assert predictions_dir() == bare / "p"


def test_a_moved_cache_root_takes_the_predictions_along_in_a_folder_of_their_own(bare, monkeypatch):
    monkeypatch.setenv("RULER_CACHE_DIR", str(bare / "root"))
    assert predictions_dir() == bare / "root" / "predictions" and predictions_dir() != cache_root()


@pytest.mark.parametrize("platform", ["linux", "darwin", "win32"])
def test_xdg_cache_home_wins_where_set(bare, monkeypatch, platform):
    monkeypatch.setattr(sys, "platform", platform)
    monkeypatch.setenv("XDG_CACHE_HOME", str(bare / "xdg"))
    assert predictions_dir() == bare / "xdg" / "pytest-ruler" / "predictions"


def test_each_platform_has_its_per_user_cache_folder(bare, monkeypatch):
    home = Path(bare / "home")
    monkeypatch.setattr(sys, "platform", "linux")
    assert predictions_dir() == home / ".cache" / "pytest-ruler" / "predictions"
    monkeypatch.setattr(sys, "platform", "darwin")
    assert predictions_dir() == home / "Library" / "Caches" / "pytest-ruler" / "predictions"
    monkeypatch.setattr(sys, "platform", "win32")
    monkeypatch.setenv("LOCALAPPDATA", str(bare / "local"))
    assert predictions_dir() == bare / "local" / "pytest-ruler" / "Cache" / "predictions"


def test_a_relative_folder_is_made_absolute_so_xdist_workers_agree(bare, monkeypatch):
    monkeypatch.chdir(bare)
    monkeypatch.setenv(PREDICTIONS_ENV, "rel")
    assert predictions_dir() == bare / "rel" and predictions_dir().is_absolute()
