"""What code may do to map records, and what it must leave to the model.

The readers here are test doubles, not models:

- ``know_nothing``: the map lists every 7-digit number or uuid of its chunk
  (with a full, confident four-field record); it understands nothing of the
  question. Code must not turn it into a correct answer: every distractor value of
  the chunk must still reach the reduce (RULER's metric is recall-only, so a reduce
  that joined everything would score 100; what reaches the reduce is what is tested,
  plus a reduce that has to pick one value).
- the scripted oracle (a perfect per-chunk reader) must still pass every family.
"""

from __future__ import annotations

import dataclasses
import re

import pytest

from pytest_ruler.engines.base import Completion
from pytest_ruler.engines.scripted import oracle_answer
from pytest_ruler.mapreduce import MapReduceConfig, MapReducer, document_for
from pytest_ruler.mapreduce.pipeline import MAP_LAYOUTS
from pytest_ruler.results.scoring import get_metric
from pytest_ruler.tasks import BASE_FRAME, GenerationContext, generate_samples, get_family, get_task
from pytest_ruler.tasks.tokenizer import load_tokenizer

VALUE = re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b|\b\d{7}\b")


@pytest.fixture(scope="module")
def tok():
    return load_tokenizer("smollm2-135m")


class Recorder:
    """A completion function that answers by a rule and keeps every request (a test double)."""

    def __init__(self, rule):
        self.rule = rule
        self.requests = []

    def __call__(self, requests, label):
        self.requests += [(label, r) for r in requests]
        return [Completion(self.rule(r.prompt), r.prompt_tokens, 5, "stop", 0.0) for r in requests], [False] * len(requests)


def _samples(tok, task, length, n):
    ctx = GenerationContext(tok, frame=BASE_FRAME)
    return get_task(task), generate_samples(task, length, samples=n, seed=0, ctx=ctx)


def _pick_first(prompt: str) -> str:
    """A reduce that must pick one value: the first one the records show (a test double)."""
    values = VALUE.findall(prompt.split("These records say", 1)[-1])
    return f" {values[0]}." if values else " none."


def _list_everything(prompt: str) -> str:
    """The know-nothing map: every 7-digit number or uuid of the prompt's chunk, confidently (a test double)."""
    chunk = prompt.rsplit("\n\n", 1)[0].rsplit("\n\n", 1)[-1]  # MAP_PROMPT: ... calibration \n\n chunk \n\n question
    values = list(dict.fromkeys(VALUE.findall(chunk)))
    listed = ", ".join(values) or "NO INFORMATION"
    return f" {listed}\nRationale: these are the values in this part.\nAnswer: {listed}\nConfidence Score: 5"


def _reader(prompt: str) -> str:
    if prompt.endswith("Extracted Information:"):
        return _list_everything(prompt)
    return _pick_first(prompt)


@pytest.mark.parametrize("layout", sorted(MAP_LAYOUTS))
@pytest.mark.parametrize("task", ["niah_multikey_2", "niah_multikey_3"])
def test_code_does_not_narrow_a_know_nothing_reader_to_the_gold_value(tok, task, layout):
    spec, samples = _samples(tok, task, 16384, 2)
    reader = Recorder(_reader)
    outcomes = MapReducer(reader, tok, BASE_FRAME, MapReduceConfig(layout=layout), window=8192).run([document_for(s, spec, get_family(spec.family)) for s in samples])
    reduce_prompts = [r.prompt for label, r in reader.requests if label.endswith("reduce")]
    collapse_prompts = [r.prompt for label, r in reader.requests if "collapse" in label]
    assert len(reduce_prompts) == len(samples)
    for s, o, prompt in zip(samples, outcomes, reduce_prompts):
        in_context = set(VALUE.findall(s.context))
        keys = set(dict(s.metadata)["query_keys"])  # the test may read the answer key; the pipeline may not
        distractors = in_context - set(s.outputs) - keys
        assert len(distractors) > 100
        if collapse_prompts:  # records that did not fit went through collapse: look at what the model was shown
            shown = set(VALUE.findall("\n".join(collapse_prompts) + prompt))
        else:
            shown = set(VALUE.findall(prompt.split("These records say", 1)[-1]))
        assert distractors <= shown, f"code dropped {len(distractors - shown)} distractor values before the reduce"
        dropped = [v for c in o.calls for v in c.dropped]
        assert not dropped  # every listed value is literally in its chunk: the hallucination filter keeps them all
    # a reduce that must pick one value is not rescued by code
    score = get_metric(spec.metric)([o.prediction for o in outcomes], [list(s.outputs) for s in samples])
    assert score < 100.0


@pytest.mark.parametrize("layout", sorted(MAP_LAYOUTS))
def test_the_pipeline_sees_no_answers_and_no_metadata(tok, layout):
    """Principle 12: the same requests whether or not the sample carries answers and metadata (every map layout)."""
    for task in ("niah_multikey_2", "niah_multiquery", "vt", "cwe"):
        spec, [sample] = _samples(tok, task, 4096, 1)
        blind = dataclasses.replace(sample, outputs=(), metadata={})
        a, b = document_for(sample, spec, get_family(spec.family)), document_for(blind, spec, get_family(spec.family))
        assert a == b
        prompts = []
        for doc in (a, b):
            rec = Recorder(oracle_answer)
            MapReducer(rec, tok, BASE_FRAME, MapReduceConfig(chunk_tokens=1024, layout=layout), window=2048).run([doc])
            prompts.append([r.prompt for _, r in rec.requests])
        assert prompts[0] == prompts[1]


@pytest.mark.parametrize("task", ["niah_single_1", "niah_single_3", "niah_multikey_1", "niah_multikey_2", "niah_multikey_3",
                                  "niah_multivalue", "niah_multiquery", "vt", "cwe", "fwe"])
def test_a_reader_that_does_its_job_per_chunk_still_passes(tok, task):
    spec, samples = _samples(tok, task, 8192, 2)  # the default layout: few-shot (base prompts)
    outcomes = MapReducer(Recorder(oracle_answer), tok, BASE_FRAME, MapReduceConfig(chunk_tokens=1024), window=2048).run(
        [document_for(s, spec, get_family(spec.family)) for s in samples]
    )
    score = get_metric(spec.metric)([o.prediction for o in outcomes], [list(s.outputs) for s in samples])
    assert score == 100.0, [(o.prediction, s.outputs) for o, s in zip(outcomes, samples)]


# ---- family-owned question parsers (pure) ---------------------------------------------
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from pytest_ruler.errors import RulerUsageError  # noqa: E402
from pytest_ruler.mapreduce import ANSWERED_BY, GROUNDING, STRATEGIES, grounding_label, strategy_for  # noqa: E402
from pytest_ruler.tasks import FAMILIES  # noqa: E402
from pytest_ruler.tasks import aggregation, niah, qa, variable_tracking  # noqa: E402

_WORD = st.from_regex(r"[a-z]{2,9}-[a-z]{2,9}", fullmatch=True)
_NUM = st.integers(1000000, 9999999).map(str)
_UUID = st.uuids().map(str)


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(["numbers", "words", "uuids"]), st.one_of(st.lists(_WORD, min_size=1, max_size=5, unique=True),
       st.lists(_NUM, min_size=1, max_size=5, unique=True), st.lists(_UUID, min_size=1, max_size=5, unique=True)), st.booleans())
def test_the_niah_parser_reads_back_what_the_template_asks(kind, keys, single_value):
    singular = single_value and len(keys) == 1
    template, _, word = niah.render_template(kind, singular)
    question = template.format(type_needle_v=word, context="CONTEXT", query=niah.join_queries(keys)).split("CONTEXT", 1)[1]
    assert niah.parse_question(question) == {"kind": kind, "keys": keys, "plural": not singular}
    name, hints = FAMILIES["niah"].mapreduce_strategy(question)
    assert name == ("retrieve" if singular else "union") and hints == {"kind": kind, "keys": keys}
    strategy, prompt_hints = strategy_for(FAMILIES["niah"], question)
    assert strategy is STRATEGIES[name] and prompt_hints["keys"] == keys and prompt_hints["kind1"] == kind[:-1]


def test_the_other_families_parse_their_own_questions(tok):
    ctx = GenerationContext(tok, frame=BASE_FRAME)
    for task, parser, want in (("vt", variable_tracking.parse_question, "query"), ("cwe", aggregation.parse_question, "top"),
                               ("fwe", aggregation.parse_question, "top")):
        [s] = generate_samples(task, 2048, samples=1, seed=0, ctx=ctx)
        parsed = parser(s.around_context[1])
        assert parsed is not None and want in parsed
    [s] = generate_samples("vt", 2048, samples=1, seed=0, ctx=ctx)
    assert variable_tracking.parse_question(s.around_context[1])["query"] in s.prompt.rsplit("assigned the value", 1)[1]
    assert aggregation.parse_question("Question: What are the 10 most common words in the above list?") == {"top": 10}
    assert aggregation.parse_question("What are the three most frequently appeared words in the above coded text?") == {"top": 3}
    assert qa.parse_question("\n\nQuestion: who wrote it?") == {"question": "who wrote it?"}
    for bad, family in (("What is this?", "niah"), ("no question", "variable_tracking"), ("?", "common_words_extraction")):
        with pytest.raises(RulerUsageError):
            FAMILIES[family].mapreduce_strategy(bad)


def test_a_family_names_a_strategy_or_brings_its_own_and_one_without_is_refused():
    class Custom:
        name = "custom"

        def mapreduce_strategy(self, question):
            return "retrieve", {"kind": "numbers", "keys": [question.split()[-1].rstrip("?")]}

    strategy, hints = strategy_for(Custom(), "What is the code of door-7?")
    assert strategy is STRATEGIES["retrieve"] and hints["keys"] == ["door-7"] and hints["v1"]  # the prompt's example value

    own = dataclasses.replace(STRATEGIES["facts"], name="my-facts")

    class Owner(Custom):
        def mapreduce_strategy(self, question):
            return own, {}

    assert strategy_for(Owner(), "Who?")[0] is own

    class Misspelt(Custom):
        def mapreduce_strategy(self, question):
            return "retreive", {}

    with pytest.raises(RulerUsageError, match="names the strategy 'retreive'") as err:
        strategy_for(Misspelt(), "anything", "my_task")
    assert err.value.value == "my_task" and "retrieve" in err.value.fix

    class Bare:
        name = "bare"

    with pytest.raises(RulerUsageError, match="no map-reduce strategy"):
        strategy_for(Bare(), "anything", "my_task")


# ---- labels and compliance -----------------------------------------------------------------
def test_the_grounding_label_says_what_code_did():
    assert grounding_label({"grounding": "literal"}).startswith("grounding: literal (hallucination filter:")
    assert "as the model wrote them" in grounding_label({"grounding": "none"})
    assert "before the grounding mode was recorded" in grounding_label({"config": {"verify": True}})  # an old report
    label = grounding_label({"grounding": "literal", "compliance": {"map": {"records": 24, "four_fields": 3, "confidence": 5, "parse_failures": 20}}})
    assert label.endswith("map records with all four fields 3/24, with a confidence 5/24")
    assert set(GROUNDING) == {"literal", "none", "unrecorded", "not run"}


@pytest.mark.parametrize("strategy, chooser", [
    ("retrieve", "the model's reduce chose which value"), ("facts", "the model's reduce chose"),
    ("union", "code took the union"), ("chain", "code followed the chain"), ("count", "code summed"),
])
def test_the_label_says_who_chose_the_answer_from_the_strategy_that_ran(strategy, chooser):
    label = grounding_label({"grounding": "literal", "strategy": strategy})
    assert f"{chooser}" in label and f"({strategy})" in label
    assert ("model's" in label.split("; ")[1]) == (strategy in ("retrieve", "facts"))  # code chose for union/chain/count
    assert set(ANSWERED_BY) == set(STRATEGIES)


def test_an_errored_twin_is_not_labelled_as_using_generator_metadata():
    for recorded in (None, {}):  # what an errored map-reduce item carries
        label = grounding_label(recorded)
        assert label.startswith("grounding: not run (the item errored before map-reduce ran")
        assert "metadata" not in label


def test_protocol_compliance_is_counted_per_stage(tok):
    spec, samples = _samples(tok, "niah_single_1", 4096, 1)
    outputs = iter([
        " fact\nRationale: r\nAnswer: NO INFORMATION\nConfidence Score: 0",  # all four fields
        " The special magic number is 11.",  # free text: a parse failure
        " x\nAnswer: NO INFORMATION",  # two fields, no confidence
    ])

    def rule(prompt):
        return next(outputs, "") if prompt.endswith("Extracted Information:") else " 1."

    [o] = MapReducer(Recorder(rule), tok, BASE_FRAME, MapReduceConfig(chunk_tokens=1024), window=2048).run([document_for(samples[0], spec, get_family(spec.family))])
    m = o.compliance["map"]
    assert m["records"] == o.chunks >= 4
    assert m["four_fields"] == 1 and m["confidence"] == 1
    assert m["parse_failures"] == 1 + (o.chunks - 3)  # the free text, and the empty outputs after the three
    assert o.compliance["collapse"]["records"] == 0


@pytest.mark.parametrize("layout", sorted(MAP_LAYOUTS))
def test_the_scripted_know_nothing_mode_lists_every_value_of_its_chunk(tok, layout):
    from pytest_ruler.engines.scripted import know_nothing_answer

    spec, [s] = _samples(tok, "niah_multikey_2", 8192, 1)
    doc = document_for(s, spec, get_family(spec.family))
    chunks, requests = MapReducer(None, tok, BASE_FRAME, MapReduceConfig(chunk_tokens=1024, layout=layout), window=2048).chunks(doc)
    for c, r in zip(chunks, requests):
        assert know_nothing_answer(r.prompt) == _list_everything(r.prompt)
        assert set(VALUE.findall(c.text)) == set(VALUE.findall(know_nothing_answer(r.prompt)))  # its chunk's, not the example's


def test_one_label_for_many_items():
    from pytest_ruler.mapreduce import grounding_summary

    a = {"grounding": "literal", "compliance": {"map": {"records": 8, "four_fields": 1, "confidence": 2, "parse_failures": 6}}}
    b = {"grounding": "literal", "compliance": {"map": {"records": 16, "four_fields": 0, "confidence": 0, "parse_failures": 16}}}
    text = grounding_summary([a, b])
    assert text.startswith("grounding: literal (") and text.endswith("all four fields 1/24, with a confidence 2/24")
    assert "grounding: none" in grounding_summary([a, {"grounding": "none"}])
    assert grounding_summary([]) == ""
