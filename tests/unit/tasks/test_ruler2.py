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

from ...ruler2_data import write_ruler2_data

REFERENCE_NAMES = ["mk_niah_basic", "mk_niah_easy", "mk_niah_medium", "mk_niah_hard", "mv_niah_basic", "mv_niah_easy",
                   "mv_niah_medium", "mv_niah_hard", "qa_basic", "qa_easy", "qa_medium", "qa_hard"]
SYNTHETIC = ["mk_niah_basic", "mv_niah_basic"]


@pytest.fixture(scope="module")
def ruler2_data(tmp_path_factory):
    """The data of the pack's MMLU and HotpotQA tasks, as small files written here."""
    return write_ruler2_data(tmp_path_factory.mktemp("ruler2"))


@pytest.fixture(scope="module")
def ctx2(tokenizer, ruler2_data):
    from pytest_ruler.tasks import GenerationContext

    return GenerationContext(tokenizer, **ruler2_data)


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


MMLU_AND_QA = [n for n in REFERENCE_NAMES if n not in SYNTHETIC]


@pytest.mark.parametrize("task", MMLU_AND_QA)
@pytest.mark.parametrize("length", [4096, 32768])
def test_data_tasks_fill_the_budget(ctx2, task, length):
    for s in generate_samples(task, length, samples=2, seed=0, ctx=ctx2):
        assert 0.97 * length < s.length <= length and s.answer_prefix == ""
        assert s.outputs and all(s.outputs)


def _ids(text, label):
    import re

    return re.findall(rf"^{label} (\d{{7}}):", text, re.M)


def test_copy_tasks_answer_with_the_hidden_question(ctx2):
    [s] = generate_samples("mk_niah_easy", 4096, samples=1, seed=0, ctx=ctx2)
    qid = s.metadata["question_id"]
    assert s.input.endswith(f"Please copy the Question {qid} from the context.")
    assert s.outputs[0].startswith("Test question") and s.input.count(s.outputs[0]) == 1
    assert f"Question {qid}: {s.outputs[0]}" in s.input and len(set(_ids(s.input, "Question"))) == len(_ids(s.input, "Question"))
    [s] = generate_samples("mv_niah_easy", 4096, samples=1, seed=0, ctx=ctx2)
    qid = s.metadata["question_id"]
    shown = [line.split(": ", 1)[1] for line in s.input.split("\n\n") if line.startswith(f"Question {qid}: ")]
    assert list(s.outputs) == shown and 1 <= len(shown) <= 4 and s.input.endswith(f"Please find and copy all the Question {qid} from the context.")


def test_the_kth_question_of_a_group(ctx2):
    for index in range(4):
        [s] = generate_samples("mv_niah_medium", 4096, samples=1, seed=index, ctx=ctx2)
        qid, order = s.metadata["question_id"], s.metadata["order"]
        k = int(order.split()[0][:-2])
        assert s.input.endswith(f"Please first copy all the Question {qid} from the context and then copy the "
                                f"{order} Question {qid} at the end.")
        shown = [line.split(": ", 1)[1] for line in s.input.split("\n\n") if line.startswith(f"Question {qid}: ")]
        assert s.outputs == (shown[k - 1],) and s.outputs[0].startswith("Test question")


def test_solve_tasks_have_five_worked_examples_and_a_letter(ctx2):
    for task, tail in (("mk_niah_hard", "with an answer from A, B, C, D."), ("mk_niah_medium", "with an answer from A, B, C, D.")):
        [s] = generate_samples(task, 4096, samples=1, seed=0, ctx=ctx2)
        assert "inside \\boxed\\{\\}.\n\n" in s.input and s.input.endswith(tail)
        assert s.input.count("\nSolution: \\boxed{") == 5 and s.outputs[0] in "ABCD"
        assert "Here are some examples to help you understand the task:\n\n" in s.input
        assert "\n\nHere is the actual task you need to solve:\n\n" in s.input


def test_qa_tasks(ctx2):
    [s] = generate_samples("qa_basic", 4096, samples=1, seed=0, ctx=ctx2)
    query = s.input.split("\n\nText: ", 1)[1].rsplit("\nMost relevant document index:", 1)[0]
    assert f"Document {s.outputs[0]}:\n{query}" in s.input
    [s] = generate_samples("qa_easy", 4096, samples=1, seed=0, ctx=ctx2)
    assert list(s.outputs) == s.metadata["supporting_ids"] and len(s.outputs) == 2
    assert all(f"Document {i}:\ndev title 0-" in s.input for i in s.outputs)
    for task in ("qa_medium", "qa_hard"):
        [s] = generate_samples(task, 4096, samples=1, seed=0, ctx=ctx2)
        assert "Question: Which" in s.input and "(dev 0)?" in s.input and len(s.outputs) == 1


def test_missing_and_bad_data_are_named(tokenizer, tmp_path):
    from pytest_ruler.data.mmlu import load_mmlu
    from pytest_ruler.errors import RulerDataError
    from pytest_ruler.tasks import GenerationContext

    ctx = GenerationContext(tokenizer, mmlu=None, hotpotqa_train=None, hotpotqa=None)
    ctx.data.update(mmlu=None, **{"hotpotqa-train": None})  # whatever a download left in the data dir
    with pytest.raises(RulerUsageError, match="pytest-ruler download mmlu") as info:
        generate_samples("mk_niah_easy", 4096, samples=1, ctx=ctx)
    assert info.value.parameter == "--ruler-mmlu"
    (tmp_path / "test").mkdir()
    (tmp_path / "test" / "x.csv").write_text("only,three,fields\n")
    (tmp_path / "auxiliary_train.jsonl").write_text("{}\n")
    with pytest.raises(RulerDataError, match="row 1 has 3 fields") as info:
        load_mmlu(tmp_path)
    assert info.value.parameter == "--ruler-mmlu"


class _TinyHotpot:
    """A stand-in data context: a three-paragraph train haystack, one dev question."""

    def __init__(self, tokenizer, docs, supporting, distractors=()):
        from types import SimpleNamespace

        self.tokenizer = tokenizer
        self._docs = SimpleNamespace(docs=tuple(docs), label="tiny")
        self._needle = SimpleNamespace(supporting=tuple(supporting), distractors=tuple(distractors), question="Q?", answer="A")

    def path(self, kind):
        return "tiny-train.json"

    def read(self, kind, reader=None):
        return self._docs if kind == "hotpotqa-train" else [self._needle]


def test_qa_haystack_draws_again_once_every_other_paragraph_is_drawn(tokenizer):
    import random
    import threading

    from pytest_ruler.tasks.ruler2.qa import Ruler2QAFamily

    family = Ruler2QAFamily()
    ctx = _TinyHotpot(tokenizer, ("alpha para", "beta para", "gamma para"), supporting=("beta para",))
    out = []
    worker = threading.Thread(target=lambda: out.append(family.draft(family.validate({}), ctx, random.Random(0), 0).render(5)),
                              daemon=True)
    worker.start()
    worker.join(120)  # it used to loop forever once both other paragraphs were drawn
    assert not worker.is_alive() and out
    rendered = out[0]
    assert rendered.input.count("beta para") == 2  # the query text and its own document, never the haystack
    assert rendered.input.count("alpha para") + rendered.input.count("gamma para") == 5


def test_qa_haystack_of_only_the_questions_own_paragraphs_is_named(tokenizer):
    import random

    from pytest_ruler.tasks.ruler2.qa import Ruler2QAFamily

    family = Ruler2QAFamily()
    import threading

    ctx = _TinyHotpot(tokenizer, ("beta para", "delta para"), supporting=("beta para",), distractors=("delta para",))
    raised = []

    def draft():
        try:
            family.draft(family.validate({}), ctx, random.Random(0), 0)
        except RulerUsageError as exc:
            raised.append(exc)

    worker = threading.Thread(target=draft, daemon=True)
    worker.start()
    worker.join(120)  # it used to loop forever: no paragraph to draw
    assert not worker.is_alive() and raised
    assert raised[0].parameter == "--ruler-hotpotqa-train" and "pytest-ruler download hotpotqa-train" in str(raised[0])
