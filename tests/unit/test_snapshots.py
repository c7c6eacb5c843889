"""A snapshot of every task's first prompt at a small length: a template or
generator change shows up here as a diff (accept it with --snapshot-update).

The snapshot depends on the embedded tokenizer, wonderwords 2.2.0 and the
CPython version's pydoc text (the essay haystack), so essay tasks are
snapshotted with a fixed user corpus from tests/data.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_ruler.tasks import STANDARD_TASKS, GenerationContext, generate_samples

DATA = Path(__file__).parent.parent / "data"


@pytest.fixture(scope="module")
def snap_ctx(tokenizer):
    return GenerationContext(
        tokenizer,
        essays=str(DATA / "essays_mini.txt"),
        squad=str(DATA / "squad_mini.json"),
        hotpotqa=str(DATA / "hotpotqa_mini.json"),
    )


@pytest.mark.parametrize("task", list(STANDARD_TASKS))
def test_prompt_snapshot(snap_ctx, snapshot, task):
    s = generate_samples(task, 1024, samples=1, seed=0, ctx=snap_ctx)[0]
    assert {"input": s.input, "answer_prefix": s.answer_prefix, "outputs": list(s.outputs), "length": s.length} == snapshot
