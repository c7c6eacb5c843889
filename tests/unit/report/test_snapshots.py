"""A snapshot of every task's first prompt at a small length: a template or
generator change shows up here as a diff (accept it with --snapshot-update).

The snapshot depends on the embedded tokenizer, wonderwords 2.2.0 and the
CPython version's pydoc text (the essay haystack), so essay tasks are
snapshotted with a fixed user corpus from tests/data.

Deliberate updates (issue 15, matching the RULER reference byte for byte):

- niah_single_1, niah_multikey_2 (noise/needle haystacks):
  needles now sit before distinct existing lines (never two in one slot, never
  after the last line), so the needle lines move.
- vt: the one-shot example is sized to a 500-token prompt (more noise lines),
  has two spaces before its answer and a blank line before the task; its
  layout is one per (task, length, seed); statements sit at distinct lines;
  values are in [10000, 99998].
- cwe: words from the reference's 8,169-entry pool, example and list words
  drawn independently (other words, same template).
- fwe: vocabulary (length − 50) // 50 (19 at 1024, was 20).
- qa_1, qa_2: sample 0 asks the first question in file order (was a seeded
  permutation), so other gold and distractor documents (the pool does not
  run out at 1024; test_tasks checks the repeat).
- unchanged: the essay-haystack niah tasks (niah_single_2/3, multikey_1,
  multivalue, multiquery), and niah_multikey_3, whose one needle happens to
  land before the same line under the new placement draw.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_ruler.tasks import STANDARD_TASKS, GenerationContext, generate_samples

DATA = Path(__file__).resolve().parents[2] / "data"


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
