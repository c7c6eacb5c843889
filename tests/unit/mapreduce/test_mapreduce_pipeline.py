"""MapReducer over a fake completion function (plumbing, not a model)."""

from __future__ import annotations

import pytest

from pytest_ruler.engines.base import Completion
from pytest_ruler.engines.scripted import oracle_answer
from pytest_ruler.errors import RulerUsageError
from pytest_ruler.mapreduce import Document, MapReduceConfig, MapReducer, STRATEGIES, document_for
from pytest_ruler.tasks import BASE_FRAME, GenerationContext, generate_samples, get_family, get_task
from pytest_ruler.tasks.tokenizer import load_tokenizer


@pytest.fixture(scope="module")
def tok():
    return load_tokenizer("smollm2-135m")


class FakeModel:
    """Answers each request by a rule; records what it was asked (a test double)."""

    def __init__(self, rule):
        self.rule = rule
        self.batches = []

    def __call__(self, requests, label):
        self.batches.append((label, list(requests)))
        return [Completion(self.rule(r.prompt), r.prompt_tokens, 5, "stop", 0.01) for r in requests], [False] * len(requests)


def _docs(tok, task, length, n=2):
    ctx = GenerationContext(tok, frame=BASE_FRAME)
    spec = get_task(task)
    samples = generate_samples(task, length, samples=n, seed=0, ctx=ctx)
    return spec, samples, [document_for(s, spec, get_family(spec.family)) for s in samples]


def test_every_map_call_fits_the_window_and_a_stage_is_one_batch(tok):
    _, samples, docs = _docs(tok, "niah_single_1", 8192, n=3)
    model = FakeModel(oracle_answer)
    reducer = MapReducer(model, tok, BASE_FRAME, MapReduceConfig(chunk_tokens=1024), window=2048)
    outcomes = reducer.run(docs)
    labels = [label for label, _ in model.batches]
    assert labels == ["mapreduce map", "mapreduce reduce"]  # all samples' map calls in one call
    assert len(model.batches[0][1]) == sum(o.chunks for o in outcomes)
    for _, reqs in model.batches:
        assert all(r.prompt_tokens + r.max_tokens <= 2048 for r in reqs)
        assert all(r.prompt_tokens == len(tok.encode(r.prompt)) for r in reqs)
    for s, o in zip(samples, outcomes):
        assert s.outputs[0] in o.prediction
        assert o.chunks >= 8 and o.malformed == 0
        stages = [c.stage for c in o.calls]
        assert stages.count("map") == o.chunks and stages.count("reduce") == 1


def test_parallel_splits_a_stage_into_engine_calls_of_that_size(tok):
    _, _, docs = _docs(tok, "niah_single_1", 4096, n=1)
    model = FakeModel(oracle_answer)
    MapReducer(model, tok, BASE_FRAME, MapReduceConfig(chunk_tokens=512, parallel=2), window=2048).run(docs)
    map_batches = [len(reqs) for label, reqs in model.batches if label.endswith("map")]
    assert max(map_batches) == 2 and sum(map_batches) >= 7


def test_malformed_output_never_crashes_and_is_counted(tok):
    _, samples, docs = _docs(tok, "niah_single_1", 4096, n=2)
    for garbage in ("", "\x00\x01 ??? ::::", "Answer:\nConfidence Score: lots"):
        outcomes = MapReducer(FakeModel(lambda p: garbage), tok, BASE_FRAME, MapReduceConfig(chunk_tokens=1024), window=2048).run(docs)
        for o in outcomes:
            assert o.malformed == o.chunks
            assert all(c.parse != "ok" and c.output == garbage for c in o.calls if c.stage == "map")
            assert o.prediction == "" and o.notes == ["every part answered NO INFORMATION: nothing to reduce"]


def test_an_engine_failure_is_recorded_not_raised(tok):
    _, _, docs = _docs(tok, "niah_single_1", 4096, n=1)

    def failing(requests, label):
        return [Completion("", r.prompt_tokens, 0, "error", 0.0, "boom") for r in requests], [False] * len(requests)

    [o] = MapReducer(failing, tok, BASE_FRAME, MapReduceConfig(chunk_tokens=1024), window=2048).run(docs)
    assert all(c.parse == "no output (error)" and c.output == "<error: boom>" for c in o.calls)


def _long_records_doc(tok, parts=12):
    context = "\n".join(f"Line {i}: the fact number {i} is {1000 + i}." for i in range(parts * 40))
    return Document("Read the text.\n", context, "\nWhich facts are there?", " Answer:", 16, STRATEGIES["facts"], {})


def test_collapse_runs_while_records_do_not_fit_and_stops_at_the_bound(tok):
    doc = _long_records_doc(tok)
    long_record = " " + "a fact worth keeping " * 25 + "\nRationale: -\nAnswer: 1001\nConfidence Score: 4"
    model = FakeModel(lambda p: long_record)
    # 53 chunks; a merged record is as long as one input, so a round divides the count by ~4
    for rounds in (0, 1):
        model.batches.clear()
        [o] = MapReducer(model, tok, BASE_FRAME, MapReduceConfig(chunk_tokens=200, max_rounds=rounds, record_tokens=200), window=900).run([doc])
        assert o.chunks == 53
        assert {c.round for c in o.calls if c.stage == "collapse"} == set(range(1, rounds + 1))
        assert o.rounds == rounds
        assert any("collapse bound reached" in n for n in o.notes)  # the bound stopped it
        reduce_calls = [r for label, reqs in model.batches if label.endswith("reduce") for r in reqs]
        assert len(reduce_calls) == 1 and reduce_calls[0].prompt_tokens + reduce_calls[0].max_tokens <= 900
    [o] = MapReducer(model, tok, BASE_FRAME, MapReduceConfig(chunk_tokens=200, max_rounds=5, record_tokens=200), window=900).run([doc])
    assert o.rounds == 2 and not o.notes  # 53 -> 14 -> 4 records: fits after two rounds


def test_collapse_merges_groups_until_the_reduce_prompt_fits(tok):
    doc = _long_records_doc(tok)
    long_record = " " + "a fact worth keeping " * 25 + "\nRationale: -\nAnswer: 1001\nConfidence Score: 4"
    short_record = " fact 1001\nRationale: -\nAnswer: 1001\nConfidence Score: 5"
    model = FakeModel(lambda p: short_record if "Merge these records" in p else long_record)
    [o] = MapReducer(model, tok, BASE_FRAME, MapReduceConfig(chunk_tokens=200, max_rounds=3, record_tokens=200), window=900).run([doc])
    assert o.rounds >= 1 and not o.notes
    assert [c.stage for c in o.calls][-1] == "reduce"
    assert all(c.prompt_tokens + 200 <= 900 for c in o.calls if c.stage == "collapse")


def test_a_window_too_small_for_the_prompt_is_a_usage_error(tok):
    _, _, docs = _docs(tok, "niah_single_1", 4096, n=1)
    with pytest.raises(RulerUsageError, match="mapreduce-window"):
        MapReducer(FakeModel(oracle_answer), tok, BASE_FRAME, MapReduceConfig(), window=300).run(docs)


def test_bad_options_name_the_option():
    with pytest.raises(RulerUsageError, match="mapreduce-overlap"):
        MapReduceConfig(chunk_tokens=100, overlap=60).validate()
    with pytest.raises(RulerUsageError, match="mapreduce-rounds"):
        MapReduceConfig(max_rounds=-1).validate()


@pytest.mark.parametrize("task", ["niah_single_2", "niah_multikey_1", "niah_multivalue", "niah_multiquery", "vt", "cwe", "fwe"])
def test_each_offline_family_is_solved_when_per_chunk_records_are_right(tok, task):
    spec, samples, docs = _docs(tok, task, 8192, n=2)
    outcomes = MapReducer(FakeModel(oracle_answer), tok, BASE_FRAME, MapReduceConfig(chunk_tokens=1024), window=2048).run(docs)
    from pytest_ruler.results.scoring import get_metric

    score = get_metric(spec.metric)([o.prediction for o in outcomes], [list(s.outputs) for s in samples])
    assert score == 100.0, [(o.prediction, s.outputs) for o, s in zip(outcomes, samples)]
    assert all(o.chunks >= 4 for o in outcomes)


def test_qa_facts_without_an_answer_still_reach_the_reduce(tok):
    """Multi-hop QA: a chunk's facts about the question's entities are kept even when
    that chunk alone cannot answer (the inter-chunk dependency the protocol carries)."""
    from pathlib import Path

    ctx = GenerationContext(tok, frame=BASE_FRAME, hotpotqa=str(Path(__file__).resolve().parents[2] / "data" / "hotpotqa_mini.json"))
    spec = get_task("qa_2")
    [sample] = generate_samples(spec, 4096, samples=1, seed=0, ctx=ctx)
    doc = document_for(sample, spec, get_family(spec.family))
    assert doc.strategy.name == "facts" and doc.answer_prefix == sample.answer_prefix

    def rule(prompt):
        if prompt.endswith("Extracted Information:"):
            part = prompt.split("You will read part ", 1)[1].split(" ", 1)[0]
            return f" fact number {part} about the entity\nRationale: partial\nAnswer: NO INFORMATION\nConfidence Score: 3"
        return " the final answer"

    model = FakeModel(rule)
    [o] = MapReducer(model, tok, BASE_FRAME, MapReduceConfig(chunk_tokens=512), window=2048).run([doc])
    reduce_prompt = model.batches[-1][1][0].prompt
    assert o.chunks >= 4
    for part in range(1, o.chunks + 1):
        assert f"fact number {part} about the entity" in reduce_prompt
    assert reduce_prompt.endswith(sample.answer_prefix) and o.prediction == " the final answer"
