"""--ruler-record and --ruler-replay (issue 39, item 4), as pytester runs of the plugin with the scripted engine
(a rule-based stand-in for plumbing tests, not a model): a recorded run replays the same prompts (the same
hashes) to the same scores without generating anything; a tokenizer that does not reproduce the recorded ids,
and options that contradict the recording, are refused at start."""

from __future__ import annotations

import hashlib
import json

import pytest

from pytest_ruler.report.schema import build_schema, validate_report

from .helpers import SCRIPTED, XDIST, report, run

ITEMS = ["--ruler-tasks=niah_single_1,vt", "--ruler-lengths=1k", "--ruler-samples=3", "--ruler-only"]


def hashes(data):
    return {(i["task"], i["length"], i["seed"]): [p["prompt_hash"] for p in i["predictions"]] for i in data["items"]}


def scores(data):
    return {(i["task"], i["length"], i["seed"]): (i["score"], [p["score"] for p in i["predictions"]]) for i in data["items"]}


def _refused(result, *needles):
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    err = result.stderr.str()
    for needle in needles:
        assert needle in err, err
    return err


@pytest.fixture
def recorded(pytester):
    result = run(pytester, *SCRIPTED, *ITEMS, "--ruler-record=rec", "--ruler-report=recorded.json")
    result.assert_outcomes(passed=2)
    assert "ruler: recording each item's samples to rec (pytest-ruler-samples/1)" in result.stdout.str()
    return pytester.path / "rec"


@pytest.mark.parametrize("xdist", XDIST)
def test_a_replay_sends_the_recorded_prompts_and_scores_them_the_same(pytester, monkeypatch, xdist):
    result = run(pytester, *SCRIPTED, *ITEMS, "--ruler-record=rec", "--ruler-report=recorded.json", *xdist)
    result.assert_outcomes(passed=2)
    first = report(pytester, "recorded.json")
    files = {(e["task"], e["length"], e["seed"]): e for e in first["record"]["items"]}
    assert set(files) == set(hashes(first)) and all(e["samples"] == 3 for e in files.values())
    for e in files.values():
        assert hashlib.sha256((pytester.path / "rec" / e["file"]).read_bytes()).hexdigest() == e["sha256"]

    from pytest_ruler.tasks import generate

    def never(*args, **kwargs):
        raise AssertionError("a replay generated a sample")

    monkeypatch.setattr(generate, "iter_samples", never)  # in this process (without xdist): a replay must not generate
    # no --ruler-tasks/--ruler-lengths/--ruler-samples: the items are the recorded ones; no cache: the engine answers
    result = run(pytester, *SCRIPTED, "--ruler-only", "--ruler-no-cache", "--ruler-replay=rec", "--ruler-report=replayed.json", *xdist)
    result.assert_outcomes(passed=2)
    out = result.stdout.str()
    assert "ruler: replaying 2 recorded items from rec (recorded " in out and "nothing is generated" in out
    second = report(pytester, "replayed.json")
    assert hashes(second) == hashes(first)
    assert scores(second) == scores(first)
    replay = second["replay"]
    assert replay["from"] == "rec" and replay["format"] == "pytest-ruler-samples/1"
    assert replay["recorded"]["backend"] == "scripted" and replay["recorded"]["tokenizer"]["name"] == "smollm2-135m"
    assert replay["checked_at_start"] == 6  # every sample: far below the start check's token budget
    assert {(e["task"], e["length"], e["seed"]): e["sha256"] for e in replay["items"]} == {k: e["sha256"] for k, e in files.items()}
    assert second["samples_per_item"] == 3 and "record" not in second
    schema = build_schema()
    assert validate_report(first, strict=True, schema=schema) == []
    assert validate_report(second, strict=True, schema=schema) == []


def test_a_replay_can_select_among_the_recorded_items(pytester, recorded):
    result = run(pytester, *SCRIPTED, "--ruler-only", "--ruler-replay=rec", "--ruler-tasks=vt", "--ruler-samples=2",
                 "--ruler-report=vt.json")
    result.assert_outcomes(passed=1)
    data = report(pytester, "vt.json")
    assert [(i["task"], i["samples"]) for i in data["items"]] == [("vt", 2)]
    assert hashes(data)[("vt", 1024, 0)] == hashes(report(pytester, "recorded.json"))[("vt", 1024, 0)][:2]


def tiny_tokenizer(folder):
    """A word-level tokenizer that knows a few words: it cannot reproduce the embedded model's ids."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    tok = Tokenizer(models.WordLevel(vocab={"[UNK]": 0, "the": 1, "a": 2}, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    folder.mkdir()
    tok.save(str(folder / "tokenizer.json"))
    return folder


def test_a_tokenizer_that_does_not_reproduce_the_ids_is_refused_at_start(pytester, recorded):
    tiny = tiny_tokenizer(pytester.path / "tiny")
    result = run(pytester, *SCRIPTED, "--ruler-only", "--ruler-replay=rec", f"--ruler-tokenizer={tiny}")
    err = _refused(result, "--ruler-replay='rec' is invalid: this run's tokenizer", "does not reproduce the recorded token ids",
                   "niah_single_1[1024-seed0] sample 0 (niah_single_1-1024-seed0.jsonl) differs at token 0",
                   "recorded with the tokenizer smollm2-135m", "pass it with --ruler-tokenizer")
    assert "passed" not in result.stdout.str()


def test_the_first_sample_whose_ids_differ_is_named(pytester, recorded):
    path = recorded / "samples" / "vt-1024-seed0.jsonl"
    lines = path.read_text().split("\n")[:-1]
    edited = json.loads(lines[1])
    edited["prompt_ids"][5] += 1
    path.write_text("\n".join([lines[0], json.dumps(edited), *lines[2:]]) + "\n")
    result = run(pytester, *SCRIPTED, "--ruler-only", "--ruler-replay=rec")
    _refused(result, "vt[1024-seed0] sample 1 (vt-1024-seed0.jsonl) differs at token 5")


@pytest.mark.parametrize("args, needles", [
    (["--ruler-replay=nowhere"], ["--ruler-replay='nowhere' is invalid: no such folder"]),
    (["--ruler-replay=rec", "--ruler-tasks=niah_single_2"],
     ["--ruler-tasks='niah_single_2' is invalid: niah_single_2 is not recorded (rec holds niah_single_1, vt)", "drop --ruler-tasks"]),
    (["--ruler-replay=rec", "--ruler-lengths=2k"], ["--ruler-lengths='2k' is invalid: 2K is not recorded (rec holds 1K)"]),
    (["--ruler-replay=rec", "--ruler-samples=4"], ["--ruler-samples='4' is invalid: niah_single_1[1024-seed0] has 3 recorded samples"]),
    (["--ruler-replay=rec", "--ruler-record=again"], ["--ruler-record='again' is invalid: a replay generates nothing"]),
])
def test_bad_replay_input_is_refused_at_start(pytester, recorded, args, needles):
    _refused(run(pytester, *SCRIPTED, "--ruler-only", *args), *needles)


def test_a_recording_of_another_format_is_refused_at_start(pytester, recorded):
    manifest = json.loads((recorded / "manifest.json").read_text())
    (recorded / "manifest.json").write_text(json.dumps({**manifest, "format": "pytest-ruler-samples/9"}))
    _refused(run(pytester, *SCRIPTED, "--ruler-only", "--ruler-replay=rec"),
             "--ruler-replay='rec' is invalid: its format is 'pytest-ruler-samples/9'", "record it again")
