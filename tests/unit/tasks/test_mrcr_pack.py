"""The MRCR pack: its registration, and its bins counted with the real embedded tokenizer (SmolLM2) and its chat template."""

from __future__ import annotations

import json

import jinja2
import pytest

from pytest_ruler.data.mrcr import read_mrcr
from pytest_ruler.errors import RulerUsageError
from pytest_ruler.tasks import GenerationContext, get_task, iter_samples, resolve_tasks
from pytest_ruler.tasks.chat import frame_for
from pytest_ruler.tasks.mrcr import select
from pytest_ruler.tasks.registry import PACKS, pack_of
from tests.mrcr_data import make_records, write_jsonl


def test_the_pack_is_registered_beside_ruler2():
    assert [t.name for t in resolve_tasks("mrcr")] == ["mrcr_2", "mrcr_4", "mrcr_8"]
    assert [t.name for t in resolve_tasks("mrcr:*_8")] == ["mrcr_8"]
    assert {pack_of(n) for n in ("mrcr_2", "mrcr_4", "mrcr_8")} == {"mrcr"} and "ruler2" in PACKS
    spec = get_task("mrcr_4")
    assert (spec.family, spec.metric, dict(spec.args)) == ("mrcr", "mrcr", {"n_needles": 4})
    assert "mrcr_2" not in [t.name for t in resolve_tasks("all")]  # not one of the paper's 13
    custom = spec.with_args("mrcr_4_short", tokens_to_generate=256)  # a custom task of the family: make_task accepts its metric
    assert custom.tokens_to_generate == 256 and custom.metric == "mrcr"
    with pytest.raises(RulerUsageError, match="2, 4 or 8"):
        spec.with_args("mrcr_3", n_needles=3)


@pytest.fixture(scope="module")
def records(tmp_path_factory):
    rows = make_records(per_size=2)
    return rows, str(write_jsonl(tmp_path_factory.mktemp("mrcr") / "records.jsonl", rows))


@pytest.fixture(scope="module")
def chat_ctx(tokenizer, records):
    return GenerationContext(tokenizer, frame_for("auto", tokenizer), data={"mrcr": records[1]})


def _counted(tokenizer, rows):
    """Every record counted apart from the package's code: SmolLM2's template rendered by plain jinja2
    (not the package's sandbox), encoded by the tokenizer."""
    template = jinja2.Environment(trim_blocks=True, lstrip_blocks=True).from_string(tokenizer.chat_template)

    out = []
    for row in rows:
        text = template.render(messages=json.loads(row["prompt"]), add_generation_prompt=True, bos_token=tokenizer.bos_token or "",
                               eos_token=tokenizer.eos_token or "")
        out.append(len(tokenizer.encode(text)))
    return out


@pytest.mark.parametrize("n_needles", [2, 4, 8])
@pytest.mark.parametrize("length", [1024, 2048, 4096])
def test_bins_hold_the_first_records_with_half_to_all_of_the_length(tokenizer, records, chat_ctx, n_needles, length):
    rows, path = records
    counts = _counted(tokenizer, rows)
    expected = [i for i, (row, c) in enumerate(zip(rows, counts)) if row["n_needles"] == n_needles and length // 2 < c <= length]
    assert expected, "the test's records must reach every bin"
    data = read_mrcr(path)
    got = select(chat_ctx, data, n_needles, length, 3)
    assert [c.record.position for c in got.chosen] == expected[:3]
    assert [len(c.ids) for c in got.chosen] == [counts[i] for i in expected[:3]]
    assert got.short == (len(expected) < 3)


def test_samples_are_the_bins_records_with_their_chats(tokenizer, records, chat_ctx):
    rows, _ = records
    samples = list(iter_samples("mrcr_2", 2048, samples=2, seed=0, ctx=chat_ctx))
    again = list(iter_samples("mrcr_2", 2048, samples=1, seed=0, ctx=chat_ctx, start=1))
    assert again[0].input == samples[1].input and again[0].index == 1  # deterministic, from any start
    for s in samples:
        row = rows[s.metadata["record"]]
        assert 1024 < s.prompt_tokens <= 2048 and len(s.prompt_ids) == s.prompt_tokens
        assert s.outputs == (row["answer"], row["random_string_to_prepend"])  # the grade's references
        assert s.input.endswith("<|im_start|>assistant\n") and s.answer_prefix == ""
        assert s.input.startswith(chat_ctx.frame.head)  # the model's own template, its system turn included
        assert [dict(m) for m in s.messages] == json.loads(row["prompt"])
        assert row["answer"] not in s.input  # the prefixed answer is never in the prompt (its text is: it is the chat's)
        assert s.tokens_to_generate == 1024 and s.target_length == 2048


def test_a_bin_with_fewer_records_gives_what_it_has(records, chat_ctx):
    rows, _ = records
    samples = list(iter_samples("mrcr_8", 1024, samples=50, seed=0, ctx=chat_ctx))
    assert 0 < len(samples) < 50 and [s.index for s in samples] == list(range(len(samples)))


def test_base_prompts_are_refused(tokenizer, records):
    base = GenerationContext(tokenizer, data={"mrcr": records[1]})
    with pytest.raises(RulerUsageError, match="chat template") as info:
        list(iter_samples("mrcr_2", 2048, samples=1, seed=0, ctx=base))
    assert "--ruler-chat-template" in str(info.value)


def test_records_that_cannot_be_in_a_bin_are_not_counted(tokenizer, records, chat_ctx, monkeypatch):
    """n_chars rules a record out of a bin far below or far above its own size without tokenizing it."""
    rows, path = records
    data = read_mrcr(path)
    counted = []
    real = chat_ctx.tokenizer.encode
    monkeypatch.setattr(chat_ctx, "tokenizer", type("Counting", (), {"encode": lambda self, t: counted.append(t) or real(t),
                                                                      "name": tokenizer.name})())
    select(chat_ctx, data, 2, 64, 5)  # 33..64 tokens: every record is far larger
    assert counted == []
