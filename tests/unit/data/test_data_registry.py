"""The data registry: one cached reader keyed by path and file state, one error shape for every
kind, the kinds a family needs, and a kind registered from outside."""

from __future__ import annotations

import os

import pytest

from pytest_ruler.data.registry import (
    DataKind, DataProblem, clear_data_cache, data_kind, data_kinds, default_paths, given_paths, missing_data, missing_message,
    read_data, register_data_kind,
)
from pytest_ruler.errors import RulerDataError, RulerUsageError
from pytest_ruler.tasks import data_needs, get_task, make_task

READS: list[str] = []


def _read_lines(path):
    READS.append(str(path))
    lines = path.read_text().split()
    if not lines:
        raise DataProblem("it is empty")
    return tuple(lines)


LINES = DataKind("lines", "--lines", _read_lines, "a text file of words")


@pytest.fixture
def lines_kind(monkeypatch):
    """LINES registered for one test (the registry's table restored after it)."""
    from pytest_ruler.data import registry

    monkeypatch.setattr(registry, "_KINDS", dict(registry._KINDS))
    READS.clear()
    clear_data_cache()
    return register_data_kind(LINES)


def test_every_built_in_kind_has_its_option_download_and_reader():
    built_in = {k.name: k for k in data_kinds()}
    for name in ("essays", "squad", "hotpotqa", "mmlu", "hotpotqa-train"):
        k = built_in[name]
        assert k.option == f"--ruler-{name}" and k.download == f"pytest-ruler download {name}" and callable(k.reader)
    assert built_in["essays"].fallback is not None  # the offline corpus: never missing
    assert all(k.fallback is None for n, k in built_in.items() if n != "essays")


def test_one_cache_keyed_by_path_and_file_state(tmp_path, lines_kind):
    f = tmp_path / "w.txt"
    f.write_text("alpha beta")
    assert read_data("lines", f) == read_data("lines", str(f)) == ("alpha", "beta")
    assert len(READS) == 1  # parsed once
    f.write_text("alpha beta gamma")
    os.utime(f, ns=(1, 10**18))  # a changed file (size and mtime) is read again
    assert read_data("lines", f) == ("alpha", "beta", "gamma") and len(READS) == 2
    assert read_data("lines", f, cache=False) and len(READS) == 3  # a download's check keeps nothing


def test_one_error_shape_for_every_kind(tmp_path, lines_kind):
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    for path, problem in ((empty, "it is empty"), (tmp_path / "nope.txt", "no such file"), (tmp_path, "it is a directory")):
        with pytest.raises(RulerDataError) as info:
            read_data("lines", path)
        assert str(info.value).startswith(f"--lines={str(path)!r} is invalid: {problem}")
        assert "Expected a text file of words; pass the file with --lines PATH" in str(info.value)
        assert info.value.__cause__ is None and info.value.__suppress_context__
    with pytest.raises(RulerDataError, match="no such folder") as info:
        read_data("mmlu", tmp_path / "none")
    assert info.value.parameter == "--ruler-mmlu" and "pytest-ruler download mmlu" in info.value.fix
    with pytest.raises(RulerDataError, match="no file given") as info:
        read_data("lines", None)
    assert info.value.parameter == "--lines"


def test_the_kinds_a_family_needs():
    assert data_needs(get_task("qa_1")) == ("squad",) and data_needs(get_task("qa_2")) == ("hotpotqa",)
    assert data_needs(get_task("niah_single_2")) == ("essays",) and data_needs(get_task("niah_single_1")) == ()
    assert data_needs(get_task("cwe")) == data_needs(get_task("vt")) == ()
    paths = {"squad": None, "essays": None, "mmlu": "m"}
    assert [k.name for k in missing_data(("essays", "squad", "mmlu"), paths)] == ["squad"]  # essays: the offline corpus
    assert missing_message("qa_1", data_kind("squad")) == (
        "qa_1 needs the squad data: run `pytest-ruler download squad` (when online) or pass --ruler-squad=PATH")
    assert missing_message("t", LINES) == "t needs the lines data: pass --lines=PATH"  # no download command


def test_a_family_needing_an_unknown_kind_is_named():
    from tests.data.passphrase_family import PassphraseFamily
    from pytest_ruler.tasks import register_family

    class Needy(PassphraseFamily):
        name = "needy"

        def data_needs(self, args):
            return ("no-such-kind",)

    register_family(Needy(), replace=True)
    with pytest.raises(RulerUsageError, match="data kind='no-such-kind' is invalid"):
        data_needs(make_task("needy_1", "needy", tokens_to_generate=8))


def test_registration_is_checked(lines_kind):
    with pytest.raises(RulerUsageError, match="built-in"):
        register_data_kind(DataKind("squad", "--my-squad", _read_lines, "x"))
    with pytest.raises(RulerUsageError, match="already registered"):
        register_data_kind(DataKind("lines", "--other", _read_lines, "x"))
    with pytest.raises(RulerUsageError, match="starts with --"):
        register_data_kind(DataKind("words", "words", _read_lines, "x"))


def test_paths_given_and_found(tmp_path, lines_kind):
    from types import SimpleNamespace

    config = SimpleNamespace(essays=None, squad="s.json", hotpotqa=None, mmlu=None, hotpotqa_train="t.json")
    given = given_paths(config, {"lines": "w.txt"}.get)
    assert given["squad"] == "s.json" and given["hotpotqa-train"] == "t.json" and given["lines"] == "w.txt"
    (tmp_path / "hotpotqa.json").write_text("[]")
    found = default_paths(given, data_dir=tmp_path)  # what a download left is used when no path is given
    assert found["hotpotqa"] == str(tmp_path / "hotpotqa.json") and found["squad"] == "s.json" and found["mmlu"] is None
