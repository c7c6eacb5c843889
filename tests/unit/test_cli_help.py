"""``pytest-ruler --help`` and every command's: what each argument is and its default; a missing
argument says what is missing (not ``--x=None is invalid``)."""

from __future__ import annotations

import argparse

import pytest

from pytest_ruler.cli import COMMANDS, build_parser, main


def _parsers(parser: argparse.ArgumentParser, prog: str = "pytest-ruler") -> dict[str, argparse.ArgumentParser]:
    """Every (sub-)command's parser, by its full name."""
    out = {prog: parser}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                out.update(_parsers(sub, f"{prog} {name}"))
    return out


PARSERS = _parsers(build_parser())


def test_every_command_is_wired_and_listed_in_the_top_level_help():
    top = PARSERS["pytest-ruler"].format_help()
    for name in ("generate", "score", "download", "report", "gate", "compare", "merge", "schema", "cache", "tasks"):
        assert f"pytest-ruler {name}" in PARSERS
        assert f"\n    {name} " in top, name
    assert set(COMMANDS) <= {p.split()[-1] for p in PARSERS}
    assert "generate, score, download data" not in top  # the old description named three of ten commands
    assert "gate, compare and merge the JSON reports" in top and "pytest --ruler-model=smollm2-135m" in top


@pytest.mark.parametrize("prog", sorted(PARSERS))
def test_every_argument_has_help_and_shows_its_default(prog):
    parser = PARSERS[prog]
    text = " ".join(parser.format_help().split())
    for action in parser._actions:
        if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
            continue
        assert action.help, (prog, action.dest)
        meaningful = action.default is not None and action.default is not False and action.default != argparse.SUPPRESS
        if meaningful:
            assert f"default: {action.default}" in text, (prog, action.dest)


def test_a_spec_flag_shows_its_options_default():
    text = " ".join(PARSERS["pytest-ruler compare"].format_help().split())
    assert "(as --ruler-baseline-alpha; default: 0.05)" in text and "default: two-proportion-z" in text
    assert "(default: 0)" in " ".join(PARSERS["pytest-ruler generate"].format_help().split())  # --seed: 0 is a default


@pytest.mark.parametrize(("argv", "code", "message"), [
    (["gate", "r.json"], 4, "pytest-ruler: error: gate: missing the gate: give --require-effective-length=LEN (e.g. 64k), "
                            "--require-mapreduce-effective-length=LEN or --baseline OLD.json"),
    (["score", "p.jsonl"], 2, "pytest-ruler: error: score: missing --task TASK (or --metric): name the task whose metric "
                              "scores the predictions"),
])
def test_a_missing_argument_says_what_is_missing(capsys, argv, code, message):
    assert main(argv) == code
    err = capsys.readouterr().err
    assert err.startswith(message) and "None" not in err and len(err.strip().splitlines()) == 1


def test_a_missing_nested_command_is_named_by_its_choices(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["cache"])
    assert exc.value.code == 2
    assert "the following arguments are required: {info,clear}" in capsys.readouterr().err
