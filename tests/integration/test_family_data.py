"""A third-party family declares the data it needs (``Family.data_needs``), of a kind of data it
registers itself (``registry.data(DataKind(...))``) behind its own pytest option: the run reads
it through the one data registry, refuses a bad or missing path at start naming that option,
and skips the items (naming the option) when no path is given at all, as for RULER's own data.

The family is tests/data/passphrase_family.py's, fed from a file of numbers; the engine is the
scripted test engine (not a model), whose oracle reads the number out of the prompt."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from .helpers import SCRIPTED, XDIST, report, run

FAMILY = Path(__file__).resolve().parents[1] / "data" / "passphrase_family.py"

CONFTEST = '''
from passphrase_family import PassphraseDraft, PassphraseFamily
from pytest_ruler import make_task
from pytest_ruler.data.registry import DataKind, DataProblem


def read_codes(path):
    codes = [line.strip() for line in path.read_text().splitlines() if line.strip()]
    if not codes or not all(c.isdigit() for c in codes):
        raise DataProblem("not one number per line")
    return tuple(codes)


CODES = DataKind("codes", "--codes", read_codes, "a text file of numbers, one per line")


class CodeFamily(PassphraseFamily):
    name = "code"

    def data_needs(self, args):
        return ("codes",)

    def data_label(self, args, ctx):
        return f"codes ({len(ctx.read('codes'))} numbers)"

    def draft(self, args, ctx, rng, index, **where):
        codes = ctx.read("codes")
        return PassphraseDraft(codes[index % len(codes)], ctx)


def pytest_addoption(parser):
    parser.addoption("--codes", default=None, help="numbers for the code_lookup task")


def pytest_ruler_register(registry):
    registry.data(CODES)
    registry.family(CodeFamily())
    registry.task(make_task("code_lookup", "code", tokens_to_generate=16))
'''
ARGS = [*SCRIPTED, "--ruler-tasks=code_lookup", "--ruler-lengths=1k", "--ruler-samples=2", "--ruler-no-cache"]


@pytest.fixture
def third_party(pytester):
    shutil.copy(FAMILY, pytester.path / "passphrase_family.py")
    pytester.makeconftest(CONFTEST)
    return pytester


def _refused_once(result) -> str:
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    err = result.stderr.str()
    lines = [ln for ln in err.splitlines() if ln.startswith("ERROR:")]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def test_a_missing_data_path_of_a_registered_kind_is_refused_at_start_by_its_option(third_party):
    line = _refused_once(run(third_party, *ARGS, "--codes=nowhere.txt"))
    assert "--codes='nowhere.txt' is invalid: no such file" in line
    assert "pass the file with --codes PATH" in line


def test_a_bad_data_file_of_a_registered_kind_is_refused_at_start_with_its_readers_reason(third_party):
    (third_party.path / "codes.txt").write_text("12345\nnot a number\n")
    line = _refused_once(run(third_party, *ARGS, "--codes=codes.txt"))
    assert "--codes='codes.txt' is invalid: not one number per line. Expected a text file of numbers, one per line" in line


def test_without_the_data_the_items_are_skipped_naming_the_option(third_party):
    result = run(third_party, *ARGS, "-rs")
    result.assert_outcomes(skipped=1)
    assert "code_lookup needs the codes data: pass --codes=PATH" in result.stdout.str()


@pytest.mark.parametrize("xdist", XDIST)
def test_with_the_data_the_family_reads_it_through_the_registry(third_party, xdist):
    (third_party.path / "codes.txt").write_text("4815162\n3421379\n")
    result = run(third_party, *ARGS, "--codes=codes.txt", "--ruler-report=r.json", *xdist)
    result.assert_outcomes(passed=1)
    [item] = report(third_party)["items"]
    assert item["task"] == "code_lookup" and item["score"] == 100.0
    assert "haystack: codes" in result.stdout.str()  # its data_label, from the data it read
