"""The RULERv2 pack: names, selection, generation inside the budget, determinism across processes."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import textwrap

import pytest

from pytest_ruler.errors import RulerUsageError
from pytest_ruler.tasks import generate_samples, resolve_tasks
from pytest_ruler.tasks.registry import PACKS, pack_of
from pytest_ruler.tasks.ruler2 import pack_task_names

REFERENCE_NAMES = ["mk_niah_basic", "mk_niah_easy", "mk_niah_medium", "mk_niah_hard", "mv_niah_basic", "mv_niah_easy",
                   "mv_niah_medium", "mv_niah_hard", "qa_basic", "qa_easy", "qa_medium", "qa_hard"]
SYNTHETIC = ["mk_niah_basic", "mv_niah_basic"]


@pytest.fixture
def ruler2_data(tmp_path):
    """The data options of the pack's MMLU and HotpotQA tasks, as small files written here."""
    return {}


def test_the_pack_has_the_reference_names_in_order():
    assert pack_task_names() == REFERENCE_NAMES
    assert [t for t in PACKS["ruler2"]] == [n for n in REFERENCE_NAMES if n in PACKS["ruler2"]]
    assert pack_of("mk_niah_basic") == "ruler2" and pack_of("niah_single_1") is None


def test_selection_by_pack_glob_and_name():
    assert [t.name for t in resolve_tasks("ruler2")] == list(PACKS["ruler2"])
    assert [t.name for t in resolve_tasks("ruler2:*")] == list(PACKS["ruler2"])
    assert [t.name for t in resolve_tasks("ruler2:mv_*")] == [n for n in PACKS["ruler2"] if n.startswith("mv_")]
    assert [t.name for t in resolve_tasks("mk_niah_basic,niah_single_1")] == ["mk_niah_basic", "niah_single_1"]
    # a bare glob keeps its meaning: the paper's tasks only
    assert [t.name for t in resolve_tasks("qa_*")] == ["qa_1", "qa_2"]
    assert len(resolve_tasks("all")) == 13
    with pytest.raises(RulerUsageError, match="ruler2"):
        resolve_tasks("ruler2:nothing_*")


@pytest.mark.parametrize("task", SYNTHETIC)
@pytest.mark.parametrize("length", [4096, 32768])
def test_synthetic_tasks_fill_the_budget(ctx, task, length):
    samples = generate_samples(task, length, samples=2, seed=0, ctx=ctx)
    for s in samples:
        assert s.length <= length and s.length > 0.97 * length  # template + generation counted, nearly full
        assert s.answer_prefix == ""
        for value in s.outputs:
            assert len(value) == 10 and value.isdigit()
            assert s.input.count(value) == 1  # each real value appears once
        key = s.metadata["query_keys"][0]
        assert s.input.count(f"for {key} is:") == len(s.outputs)  # the real key holds only the real needles
        assert s.input.rstrip().endswith("mentioned in the provided text " + ("is" if len(s.outputs) == 1 else "are"))


def test_mv_basic_distractors_come_in_groups_of_four(ctx):
    s = generate_samples("mv_niah_basic", 4096, samples=1, seed=0, ctx=ctx)[0]
    keys = [line.split(" for ", 1)[1].split(" is:")[0] for line in s.input.splitlines() if line.startswith("One of the special")]
    counts = {k: keys.count(k) for k in set(keys)}
    assert len(s.outputs) == 4 and counts[s.metadata["query_keys"][0]] == 4
    assert sum(1 for c in counts.values() if c == 4) >= len(counts) - 1  # only the stream's last group may be cut


_DIGEST = textwrap.dedent("""
    import hashlib, json, sys
    from pytest_ruler.tasks.tokenizer import load_tokenizer
    from pytest_ruler.tasks import GenerationContext, generate_samples
    ctx = GenerationContext(load_tokenizer("smollm2-135m"), **json.loads(sys.argv[1]))
    h = hashlib.sha256()
    for task in json.loads(sys.argv[2]):
        for s in generate_samples(task, 4096, samples=2, seed=1, ctx=ctx):
            h.update(s.prompt.encode())
            h.update(json.dumps(list(s.outputs)).encode())
    print(h.hexdigest())
""")


def prompt_digest(tasks: list[str], data: dict[str, str], hash_seed: str) -> str:
    env = {**os.environ, "PYTHONHASHSEED": hash_seed}
    out = subprocess.run([sys.executable, "-c", _DIGEST, json.dumps(data), json.dumps(tasks)], env=env,
                         capture_output=True, text=True, timeout=600, check=True)
    return out.stdout.strip()


def test_two_fresh_processes_give_byte_identical_prompts(ruler2_data):
    tasks = list(PACKS["ruler2"])
    first = prompt_digest(tasks, ruler2_data, "1")
    second = prompt_digest(tasks, ruler2_data, "2")
    assert first == second and len(first) == 64
    assert first != hashlib.sha256().hexdigest()  # something was hashed
