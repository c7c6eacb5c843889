"""The recording format (run.recording) and the replay's settings (run.replay.replay_settings): round trip,
atomic item files, refusals of a wrong format, a foreign folder and options that contradict a recording."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_ruler.errors import RulerUsageError
from pytest_ruler.run.recording import (
    FORMAT, MANIFEST, SAMPLES_DIR, Recorder, Recording, ids_digest, item_file, new_manifest, start_recording,
)
from pytest_ruler.run.replay import replay_settings
from pytest_ruler.run.runner import prompt_hash
from pytest_ruler.tasks import get_task, iter_samples


def manifest(tokenizer, **kw):
    return new_manifest(tokenizer=tokenizer, chat_template=kw.pop("chat_template", "base"), depths=kw.pop("depths", None),
                        model="smollm2-135m", backend="scripted")


def record(folder: Path, tokenizer, ctx, task="niah_single_1", length=1024, seed=0, n=3):
    start_recording(folder, manifest(tokenizer))
    spec = get_task(task)
    recorder = Recorder(folder)
    samples = list(recorder.recording(spec, length, seed, iter_samples(spec, length, samples=n, seed=seed, ctx=ctx)))
    return spec, samples


@pytest.mark.parametrize("task", ["niah_single_1", "vt", "qa_1"])
def test_round_trip_gives_back_every_field_and_the_same_prompt(tmp_path, tokenizer, ctx, task):
    spec, samples = record(tmp_path, tokenizer, ctx, task=task)
    rec = Recording.open(tmp_path)
    assert set(rec.items) == {(task, 1024, 0)}
    assert rec.items[(task, 1024, 0)].samples == 3
    back = [s for s, _ in rec.samples((task, 1024, 0))]
    assert back == samples  # the dataclass's compared fields: task, index, seed, length, text, answers, counts
    for a, b in zip(samples, back):
        assert b.prompt_ids == a.prompt_ids and b.prompt_ids  # the ids engines receive
        assert (b.context, b.around_context) == (a.context, a.around_context)  # map-reduce chunks with them
        assert prompt_hash(b) == prompt_hash(a)
        assert tokenizer.encode(b.prompt) == list(b.prompt_ids)  # what a replay checks
    first = json.loads((tmp_path / SAMPLES_DIR / item_file(task, 1024, 0)).read_text().split("\n")[:-1][0])
    # a line is pytest-ruler generate's RULER object plus what a replay needs
    assert set(samples[0].to_ruler_json()) <= set(first)
    assert first["prompt_hash"] == prompt_hash(samples[0])
    assert first["ids_sha256"] == ids_digest(samples[0].prompt_ids)
    assert first["spec"]["family"] == spec.family and first["spec"]["tokens_to_generate"] == spec.tokens_to_generate


def test_the_manifest_names_the_format_the_tokenizer_and_the_template(tmp_path, tokenizer, ctx):
    record(tmp_path, tokenizer, ctx)
    m = json.loads((tmp_path / MANIFEST).read_text())
    assert m["format"] == FORMAT
    assert m["tokenizer"]["name"] == "smollm2-135m" and len(m["tokenizer"]["digest"]) == 16
    assert m["chat_template"] == "base" and m["generator"] == {"depths": None}


def test_an_item_file_appears_only_whole_and_an_unfinished_item_leaves_nothing(tmp_path, tokenizer, ctx):
    start_recording(tmp_path, manifest(tokenizer))
    spec = get_task("niah_single_1")
    recorder = Recorder(tmp_path)
    final = tmp_path / SAMPLES_DIR / item_file("niah_single_1", 1024, 0)
    stream = recorder.recording(spec, 1024, 0, iter_samples(spec, 1024, samples=3, seed=0, ctx=ctx))
    next(stream)
    next(stream)
    assert not final.exists()  # two of three samples written: only a temporary file
    assert [p.name for p in final.parent.iterdir() if p.name.endswith(".tmp")]
    recorder.close()  # the run ends (Ctrl-C, a crash) before the item's samples are all there
    assert list(final.parent.iterdir()) == []
    # a finished item is in place, and another unfinished one beside it leaves nothing
    list(recorder.recording(spec, 1024, 0, iter_samples(spec, 1024, samples=3, seed=0, ctx=ctx)))
    other = recorder.recording(spec, 2048, 0, iter_samples(spec, 2048, samples=3, seed=0, ctx=ctx))
    next(other)
    recorder.close()
    assert [p.name for p in final.parent.iterdir()] == [final.name]
    assert len(final.read_text().split("\n")[:-1]) == 3


def test_an_item_stopped_early_keeps_the_samples_it_generated(tmp_path, tokenizer, ctx):
    start_recording(tmp_path, manifest(tokenizer))
    spec = get_task("niah_single_1")
    recorder = Recorder(tmp_path)
    stream = recorder.recording(spec, 1024, 0, iter_samples(spec, 1024, samples=4, seed=0, ctx=ctx))
    next(stream), next(stream)
    recorder.finish(("niah_single_1", 1024, 0))  # --ruler-sequential decided it after two samples
    assert Recording.open(tmp_path).items[("niah_single_1", 1024, 0)].samples == 2


def write_manifest(folder: Path, **fields):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / MANIFEST).write_text(json.dumps({"format": FORMAT, **fields}))


def test_a_recording_of_another_format_is_refused_naming_option_value_and_fix(tmp_path, tokenizer, ctx):
    record(tmp_path, tokenizer, ctx)
    m = json.loads((tmp_path / MANIFEST).read_text())
    (tmp_path / MANIFEST).write_text(json.dumps({**m, "format": "pytest-ruler-samples/2"}))
    with pytest.raises(RulerUsageError) as e:
        Recording.open(tmp_path)
    assert e.value.parameter == "--ruler-replay" and e.value.value == str(tmp_path)
    assert "pytest-ruler-samples/2" in e.value.fix and FORMAT in e.value.fix and "record it again" in e.value.fix


@pytest.mark.parametrize("make, says", [
    (lambda p: None, "no such folder"),
    (lambda p: p.mkdir(), "no manifest.json"),
    (lambda p: (p.mkdir(), (p / MANIFEST).write_text("{not json")), "not JSON"),
    (lambda p: write_manifest(p), "no recorded item"),
])
def test_a_folder_that_is_no_recording_is_refused(tmp_path, make, says):
    folder = tmp_path / "rec"
    make(folder)
    with pytest.raises(RulerUsageError) as e:
        Recording.open(folder)
    assert e.value.parameter == "--ruler-replay" and says in e.value.fix


def test_a_malformed_sample_line_is_refused_naming_the_file_and_line(tmp_path, tokenizer, ctx):
    record(tmp_path, tokenizer, ctx)
    path = tmp_path / SAMPLES_DIR / item_file("niah_single_1", 1024, 0)
    lines = path.read_text().split("\n")[:-1]
    obj = json.loads(lines[1])
    del obj["prompt_ids"]
    path.write_text("\n".join([lines[0], json.dumps(obj), lines[2]]) + "\n")
    with pytest.raises(RulerUsageError) as e:
        list(Recording.open(tmp_path).samples(("niah_single_1", 1024, 0)))
    assert e.value.value == f"{path}:2" and "prompt_ids" in e.value.fix


def test_record_refuses_a_folder_it_would_mix_with(tmp_path, tokenizer, ctx):
    other = tmp_path / "notes"
    other.mkdir()
    (other / "x.txt").write_text("mine")
    with pytest.raises(RulerUsageError, match="not empty and holds no recording"):
        start_recording(other, manifest(tokenizer))
    record(tmp_path / "rec", tokenizer, ctx)
    start_recording(tmp_path / "rec", manifest(tokenizer))  # the same settings: a rerun adds to it
    with pytest.raises(RulerUsageError, match="another tokenizer, template"):
        start_recording(tmp_path / "rec", manifest(tokenizer, chat_template="chat:smollm2-135m"))


# ---- replay_settings: the run's selection from the recording ------------------------------


@pytest.fixture
def two_items(tmp_path, tokenizer, ctx):
    folder = tmp_path / "rec"
    start_recording(folder, manifest(tokenizer))
    recorder = Recorder(folder)
    for task, n in (("niah_single_1", 3), ("vt", 2)):
        spec = get_task(task)
        list(recorder.recording(spec, 1024, 0, iter_samples(spec, 1024, samples=n, seed=0, ctx=ctx)))
    return folder


def settings(folder, given=None, **run):
    given = given or {}
    base = {"replay": folder, "tasks": ("niah_single_1",), "lengths": (4096,), "seeds": (0,), "samples": 20, "depths": None}
    return replay_settings({**base, **run}, lambda name: given.get(name))


def test_replay_takes_its_items_from_the_recording(two_items):
    got = settings(two_items)
    assert got == {"tasks": ("niah_single_1", "vt"), "lengths": (1024,), "seeds": (0,), "samples": 3, "depths": None}
    # a selection among the recorded items is kept
    assert settings(two_items, {"tasks": "vt", "samples": "2"}, tasks=("vt",), samples=2)["tasks"] == ("vt",)


@pytest.mark.parametrize("given, run, parameter, says", [
    ({"tasks": "niah_single_2"}, {"tasks": ("niah_single_2",)}, "--ruler-tasks", "niah_single_2 is not recorded"),
    ({"lengths": "1k,4k"}, {"lengths": (1024, 4096)}, "--ruler-lengths", "4K is not recorded"),
    ({"seeds": "2"}, {"seeds": (0, 1)}, "--ruler-seeds", "1 is not recorded"),
    ({"samples": "3"}, {"samples": 3}, "--ruler-samples", "vt[1024-seed0] has 2 recorded samples"),
    ({"depths": "0.5"}, {"depths": (0.5,)}, "--ruler-depths", "recorded with random depths"),
    ({}, {"record": Path("elsewhere")}, "--ruler-record", "a replay generates nothing"),
    ({}, {"no_suite": True}, "--ruler-replay", "--ruler-no-suite"),
])
def test_options_that_contradict_the_recording_are_refused(two_items, given, run, parameter, says):
    with pytest.raises(RulerUsageError) as e:
        settings(two_items, given, **run)
    assert e.value.parameter == parameter and says in e.value.fix, e.value.fix
    if given:
        assert e.value.value == next(iter(given.values()))


def test_a_glob_selects_among_the_recorded_tasks(two_items):
    # niah_* names no unrecorded task itself: the recorded ones it matches are replayed
    assert settings(two_items, {"tasks": "niah_*"}, tasks=("niah_single_1", "niah_single_2"))["tasks"] == ("niah_single_1",)
