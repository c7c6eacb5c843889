"""Hypothesis properties of every family over random seeds and lengths:
budget respected with an exact count, context filled, answers present,
generation deterministic."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings, strategies as st

from pytest_ruler.tasks import generate_samples, get_task

# (task, minimum length tested, fill floor at that length)
FAMILIES = {
    "niah_single_1": 0.95,
    "niah_single_2": 0.93,
    "niah_multikey_2": 0.93,
    "niah_multikey_3": 0.90,
    "niah_multivalue": 0.93,
    "vt": 0.95,
    "cwe": 0.92,
    "fwe": 0.88,
}
SETTINGS = settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def _check(ctx, tokenizer, task, length, seed):
    spec = get_task(task)
    samples = generate_samples(task, length, samples=1, seed=seed, ctx=ctx)
    for s in samples:
        assert s.prompt_tokens == tokenizer.count(s.input + s.answer_prefix)
        assert s.length <= length
        assert s.length >= FAMILIES[task] * length, (task, length, s.length)
        assert all(o in s.input for o in s.outputs)
    again = generate_samples(task, length, samples=1, seed=seed, ctx=ctx)
    assert [s.to_ruler_json() for s in again] == [s.to_ruler_json() for s in samples]
    return spec


def make_test(task):
    @SETTINGS
    @given(length=st.integers(min_value=1500, max_value=6000), seed=st.integers(min_value=0, max_value=2**31))
    def test(ctx, tokenizer, length, seed):
        _check(ctx, tokenizer, task, length, seed)

    test.__name__ = f"test_property_{task}"
    return test


for _task in FAMILIES:
    globals()[f"test_property_{_task}"] = make_test(_task)


@SETTINGS
@given(length=st.integers(min_value=1200, max_value=4000), seed=st.integers(min_value=0, max_value=2**31), dataset=st.sampled_from(["qa_1", "qa_2"]))
def test_property_qa(ctx, tokenizer, length, seed, dataset):
    # the fixture datasets are small, so only budget, answers and determinism are checked
    s = generate_samples(dataset, length, samples=1, seed=seed, ctx=ctx)[0]
    assert s.prompt_tokens == tokenizer.count(s.input + s.answer_prefix) and s.length <= length
    # HotpotQA comparison questions answer yes/no, which the documents need not contain
    assert any(o in s.input for o in s.outputs) or set(s.outputs) <= {"yes", "no"}
    assert s.to_ruler_json() == generate_samples(dataset, length, samples=1, seed=seed, ctx=ctx)[0].to_ruler_json()
    pos = s.metadata["gold_positions"]
    assert all(1 <= p <= s.metadata["haystack_units"] for p in pos)


NOISE = "The grass is green. The sky is blue. The sun is yellow. Here we go. There and back again."


@SETTINGS
@given(length=st.integers(min_value=1200, max_value=5000), seed=st.integers(min_value=0, max_value=2**31), task=st.sampled_from(["vt", "niah_single_1", "niah_multikey_2"]))
def test_property_inserted_lines_sit_at_distinct_existing_lines(ctx, length, seed, task):
    # the reference's placement: each needle or statement before its own haystack line
    s = generate_samples(task, length, samples=1, seed=seed, ctx=ctx)[0]
    lines = s.context.split("\n")
    if task == "vt":
        inserted = [i for i, ln in enumerate(lines) if ln.startswith("VAR ")]
        assert len(inserted) == 5
    else:
        key = s.metadata["query_keys"][0]
        inserted = [i for i, ln in enumerate(lines) if f" for {key} is: " in ln]
        assert len(inserted) == 1
        if task == "niah_single_1":
            inserted = [i for i, ln in enumerate(lines) if ln != NOISE]
    assert all(b - a >= 2 for a, b in zip(inserted, inserted[1:])) and inserted[-1] < len(lines) - 1
