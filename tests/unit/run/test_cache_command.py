"""``pytest-ruler cache info|clear``: what the cache holds, and clearing it only on purpose."""

from __future__ import annotations

import io
import os

import pytest

from pytest_ruler.cli import main
from pytest_ruler.engines.base import Completion
from pytest_ruler.folders import PREDICTIONS_ENV
from pytest_ruler.run.cache import PredictionCache, cache_contents


class _Stdin(io.StringIO):
    def __init__(self, tty: bool):
        super().__init__("")
        self._tty = tty

    def isatty(self) -> bool:
        return self._tty


def _fill(folder, model="smollm2-135m", n=3):
    cache = PredictionCache(folder)
    tag = cache.tag(model, "scripted", {"backend": "scripted", "model": model})
    for i in range(n):
        cache.put(f"{model}-{i}", Completion("x", 3, 1, "stop"), tag)
    cache.close()


def test_info_names_the_default_folder_its_size_and_its_models(capsys):
    folder = os.environ[PREDICTIONS_ENV]  # tests/conftest.py: this test's own
    assert main(["cache", "info"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[:2] == [f"prediction cache: {folder} (the default; --cache-dir, {PREDICTIONS_ENV} or a run's "
                                    "--ruler-cache-dir name another)", "no predictions yet (no predictions.sqlite there)"]
    _fill(folder)
    _fill(folder, "gemma3-270m", 2)
    assert main(["cache", "info"]) == 0
    out = capsys.readouterr().out
    assert "5 predictions:" in out and "  smollm2-135m (scripted): 3" in out and "  gemma3-270m (scripted): 2" in out
    assert "predictions.sqlite (" in out and "KB)" in out


def test_clear_without_a_terminal_needs_yes_and_removes_nothing_without_it(tmp_path, capsys, monkeypatch):
    _fill(tmp_path)
    monkeypatch.setattr("sys.stdin", _Stdin(tty=False))
    assert main(["cache", "clear", "--cache-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "--yes" in err and "nothing was removed" in err and "3 predictions" in err
    assert cache_contents(tmp_path).entries == 3
    assert main(["cache", "clear", "--cache-dir", str(tmp_path), "--yes"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"removed 3 predictions from {tmp_path / 'predictions.sqlite'} (freed ") and "0 predictions kept" in out
    assert cache_contents(tmp_path).entries == 0


@pytest.mark.parametrize("answer, left", [("y", 0), ("n", 3), ("", 3)])
def test_clear_on_a_terminal_asks_first(tmp_path, capsys, monkeypatch, answer, left):
    _fill(tmp_path)
    asked = []
    monkeypatch.setattr("sys.stdin", _Stdin(tty=True))
    monkeypatch.setattr("builtins.input", lambda q: asked.append(q) or answer)
    assert main(["cache", "clear", "--cache-dir", str(tmp_path)]) == 0
    assert len(asked) == 1 and asked[0].startswith("remove all 3 predictions (") and asked[0].endswith("? [y/N] ")
    assert cache_contents(tmp_path).entries == left
    assert ("nothing removed" in capsys.readouterr().out) == (left == 3)


def test_clear_one_model_and_a_model_it_does_not_hold(tmp_path, capsys):
    _fill(tmp_path)
    _fill(tmp_path, "gemma3-270m", 2)
    assert main(["cache", "clear", "--cache-dir", str(tmp_path), "--model", "gemma3-270m", "--yes"]) == 0
    assert "removed 2 predictions of gemma3-270m" in capsys.readouterr().out
    assert cache_contents(tmp_path).by_engine == (("smollm2-135m", "scripted", 3),)
    assert main(["cache", "clear", "--cache-dir", str(tmp_path), "--model", "nope", "--yes"]) == 2
    err = capsys.readouterr().err
    assert "--model='nope'" in err and "its models: smollm2-135m" in err
    assert cache_contents(tmp_path).entries == 3


def test_clear_with_nothing_there_says_so(tmp_path, capsys):
    assert main(["cache", "clear", "--cache-dir", str(tmp_path / "none")]) == 0
    assert capsys.readouterr().out == f"nothing to clear: no prediction cache in {tmp_path / 'none'}\n"
    assert not (tmp_path / "none").exists()
