"""Bad input: one clear error naming the parameter, the value and the fix."""

from __future__ import annotations

import json

import pytest

from pytest_ruler.errors import RulerDataError, RulerUsageError
from pytest_ruler.tasks import generate_samples, get_task, make_task, resolve_tasks


def test_unknown_task_lists_valid_names():
    with pytest.raises(RulerUsageError) as e:
        get_task("niah_single_9")
    msg = str(e.value)
    assert "task='niah_single_9'" in msg
    for name in ("niah_single_1", "vt", "cwe", "fwe", "qa_1", "qa_2"):
        assert name in msg


def test_glob_matching_nothing_is_an_error():
    with pytest.raises(RulerUsageError, match="matches no task"):
        resolve_tasks("nothing_*")
    assert [t.name for t in resolve_tasks("niah_multi*")] == ["niah_multikey_1", "niah_multikey_2", "niah_multikey_3", "niah_multivalue", "niah_multiquery"]
    assert len(resolve_tasks("all")) == 13
    assert [t.name for t in resolve_tasks("vt, cwe,vt")] == ["vt", "cwe"]


@pytest.mark.parametrize("task", ["niah_single_1", "vt", "cwe", "fwe", "niah_multikey_3"])
def test_length_too_small_says_the_minimum(ctx, task):
    spec = get_task(task)
    with pytest.raises(RulerUsageError) as e:
        generate_samples(task, spec.tokens_to_generate + 40, samples=1, ctx=ctx)
    msg = str(e.value)
    assert msg.startswith("length=")
    minimum = int(msg.split("needs at least ")[1].split(" tokens")[0])
    suggested = int(msg.split("use a length of ")[1].split(" ")[0])
    assert spec.tokens_to_generate + 40 < minimum <= suggested
    # the suggested length really works, for several samples
    for s in generate_samples(task, suggested, samples=3, ctx=ctx):
        assert s.length <= suggested


@pytest.mark.parametrize("samples", [0, -3, 1.5, True])
def test_samples_must_be_positive(ctx, samples):
    with pytest.raises(RulerUsageError, match="samples="):
        generate_samples("niah_single_1", 1024, samples=samples, ctx=ctx)


def test_bad_length_type(ctx):
    with pytest.raises(RulerUsageError, match="length="):
        generate_samples("niah_single_1", "4k", samples=1, ctx=ctx)


def test_unknown_tokenizer_name():
    from pytest_ruler.tasks.tokenizer import load_tokenizer

    with pytest.raises(RulerUsageError) as e:
        load_tokenizer("no-such-org/no-such-tokenizer-xyz")
    assert "tokenizer='no-such-org/no-such-tokenizer-xyz'" in str(e.value)
    assert "smollm2-135m" in str(e.value)
    with pytest.raises(RulerUsageError, match="does not exist"):
        load_tokenizer("/nowhere/model.gguf")
    with pytest.raises(RulerUsageError, match="no such file or folder"):
        load_tokenizer("./missing/folder")


@pytest.mark.parametrize(
    ("name", "content", "needle"),
    [
        ("bad.json", "{not json", "not valid JSON"),
        ("list.json", json.dumps(["text"]), "expected RULER's essay JSON"),
        ("short.txt", "Too short.", "at least 100 words"),
    ],
)
def test_malformed_essay_file(tmp_path, fresh_ctx, name, content, needle):
    path = tmp_path / name
    path.write_text(content)
    with pytest.raises(RulerDataError) as e:
        generate_samples("niah_single_2", 2048, samples=1, ctx=fresh_ctx(essays=str(path)))
    assert f"--ruler-essays='{path}'" in str(e.value) and needle in str(e.value)


def test_missing_essay_path_and_empty_folder(tmp_path, fresh_ctx):
    with pytest.raises(RulerDataError, match="no such file or folder"):
        generate_samples("niah_single_2", 2048, samples=1, ctx=fresh_ctx(essays=str(tmp_path / "nope.txt")))
    with pytest.raises(RulerDataError, match="no .txt files"):
        generate_samples("niah_single_2", 2048, samples=1, ctx=fresh_ctx(essays=str(tmp_path)))


def test_qa_without_data_says_how_to_get_it(fresh_ctx):
    with pytest.raises(RulerUsageError) as e:
        generate_samples("qa_1", 4096, samples=1, ctx=fresh_ctx(squad=None))
    assert "--ruler-squad" in str(e.value) and "pytest-ruler download squad" in str(e.value)


@pytest.mark.parametrize(
    ("family", "args", "param"),
    [
        ("niah", {"type_haystack": "sand"}, "type_haystack"),
        ("niah", {"type_needle_v": "emoji"}, "type_needle_v"),
        ("niah", {"num_needle_k": 0}, "num_needle_k"),
        ("niah", {"depth": 1.5}, "depth"),
        ("niah", {"colour": "red"}, "niah argument colour"),
        ("variable_tracking", {"num_hops": 0}, "num_hops"),
        ("common_words_extraction", {"freq_cw": 2, "freq_ucw": 3}, "freq_cw"),
        ("freq_words_extraction", {"alpha": 1.0}, "alpha"),
        ("qa", {"dataset": "trivia"}, "dataset"),
    ],
)
def test_bad_family_arguments(family, args, param):
    with pytest.raises(RulerUsageError) as e:
        make_task("custom", family, tokens_to_generate=16, **args)
    assert str(e.value).startswith(f"{param}=")


def test_downloaded_data_is_used_when_no_path_is_given(tmp_path, monkeypatch, tokenizer):
    import shutil
    from pathlib import Path

    from pytest_ruler.tasks import GenerationContext

    monkeypatch.setenv("RULER_DATA_DIR", str(tmp_path))
    shutil.copy(Path(__file__).parent.parent / "data" / "squad_mini.json", tmp_path / "squad.json")
    ctx = GenerationContext(tokenizer)
    assert ctx.path("squad") == str(tmp_path / "squad.json") and ctx.path("hotpotqa") is None
    assert generate_samples("qa_1", 2048, samples=1, ctx=ctx)[0].metadata["haystack_corpus"].startswith("squad:")
