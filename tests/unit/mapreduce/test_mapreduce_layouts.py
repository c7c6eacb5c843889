"""Map prompt layouts, and the few-shot layout's made-up example.

The few-shot layout shows one filled four-field record for a made-up part before the real
part. These tests check that the example is what the protocol asks for (its record parses
with the protocol's own parser, with all four fields and a confidence; its claims are in its
own made-up part), that it is fixed text (the same for every sample, length and key; none of
a sample's answers in the prompt outside the chunk), how ``auto`` picks a layout for base and
chat prompts, and that ``--ruler-mapreduce-layout`` is parsed (and refused) as an option.
The blind-reader tests (test_mapreduce_grounding.py) run every layout too.
"""

from __future__ import annotations

import re

import pytest

from pytest_ruler.errors import RulerUsageError
from pytest_ruler.mapreduce import MapReduceConfig, MapReducer, STRATEGIES, document_for, parse_record
from pytest_ruler.mapreduce.pipeline import AUTO_LAYOUTS, MAP_LAYOUTS, resolve_layout
from pytest_ruler.mapreduce.prompts import FEW_SHOT_EXAMPLES, LAYOUT_NOTES, RECORD_PREFIX
from pytest_ruler.mapreduce.strategies import grounding_label, grounding_summary, retrieve_hints
from pytest_ruler.options import option
from pytest_ruler.tasks import BASE_FRAME, GenerationContext, generate_samples, get_family, get_task
from pytest_ruler.tasks.base import Frame
from pytest_ruler.tasks.tokenizer import load_tokenizer

CHAT = Frame(head="<|im_start|>user\n", tail="<|im_end|>\n<|im_start|>assistant\n", name="chat:test")
_HINTS = {kind: {**retrieve_hints(kind, ("some-key",)), "top_map": 15, "query": "40213"} for kind in ("numbers", "words", "uuids")}


@pytest.fixture(scope="module")
def tok():
    return load_tokenizer("smollm2-135m")


def _example(name: str, hints: dict) -> tuple[str, str, str]:
    chunk, question = FEW_SHOT_EXAMPLES[name]
    return chunk.format(**hints), question.format(**hints), STRATEGIES[name].example.format(**hints)


def test_every_layout_is_described_and_every_strategy_has_a_made_up_part():
    assert set(LAYOUT_NOTES) == set(MAP_LAYOUTS) and "few-shot" in MAP_LAYOUTS
    assert set(FEW_SHOT_EXAMPLES) == set(STRATEGIES)
    assert set(AUTO_LAYOUTS.values()) <= set(MAP_LAYOUTS) and AUTO_LAYOUTS["base"] == "few-shot"


@pytest.mark.parametrize("kind", ["numbers", "words", "uuids"])
@pytest.mark.parametrize("name", sorted(STRATEGIES))
def test_the_example_record_parses_with_the_protocols_parser_and_its_part_supports_it(name, kind):
    hints = _HINTS[kind]
    chunk, question, record = _example(name, hints)
    assert record.startswith(RECORD_PREFIX)
    r = parse_record(record[len(RECORD_PREFIX):], prefix=RECORD_PREFIX)
    assert r.ok, r.problems
    assert r.extracted and r.rationale and r.confidence == 5 and not r.no_information
    # the made-up part states what its record claims: the strategy's own check keeps it all
    checked = STRATEGIES[name].check(r, chunk, hints, True)
    assert not checked.dropped and not checked.no_information, (checked.answer, checked.dropped)
    assert "{" not in chunk + question + record, "a placeholder was left unfilled"


def _map_prompts(tok, task, length, n, layout, frame=BASE_FRAME):
    ctx = GenerationContext(tok, frame=BASE_FRAME)
    spec = get_task(task)
    samples = generate_samples(task, length, samples=n, seed=0, ctx=ctx)
    reducer = MapReducer(None, tok, frame, MapReduceConfig(chunk_tokens=1024, layout=layout), window=2048)
    out = []
    for s in samples:
        chunks, requests = reducer.chunks(document_for(s, spec, get_family(spec.family)))
        out.append((s, chunks, [r.prompt for r in requests]))
    return out


@pytest.mark.parametrize("task", ["niah_single_1", "niah_multikey_2", "niah_multivalue", "niah_multiquery", "vt", "cwe", "fwe"])
def test_the_few_shot_prompt_holds_no_answer_and_its_example_is_the_same_for_every_sample(tok, task):
    examples = set()
    for length in (4096, 8192):
        for s, chunks, prompts in _map_prompts(tok, task, length, 2, "few-shot"):
            for c, p in zip(chunks, prompts):
                assert p.endswith("\n" + RECORD_PREFIX)  # the record starts on its own line
                outside = p.replace(c.text.strip(), "")
                for answer in s.outputs:
                    if re.search(r"\d|-", answer):  # values (numbers, uuids, coded words); cwe's plain words may be in the instruction
                        assert answer not in outside, f"{answer!r} is in the prompt outside its chunk"
                example = p.split("A made-up example part", 1)[1].split("Now the real text", 1)[0]
                assert not any(str(k) in example for k in s.metadata.get("query_keys") or ())  # the test may read them
                examples.add(example)
    assert len(examples) == 1, "the made-up example changed with the sample or the length"


def test_auto_picks_few_shot_for_base_prompts_and_the_chat_default_for_chat_prompts(tok):
    assert MapReduceConfig().layout == "auto"
    assert resolve_layout("auto", BASE_FRAME) == "few-shot"
    assert resolve_layout("auto", CHAT) == AUTO_LAYOUTS["chat"]
    for layout in MAP_LAYOUTS:
        assert resolve_layout(layout, BASE_FRAME) == resolve_layout(layout, CHAT) == layout
    # the reducer records the layout that runs (the report's mapreduce.config.layout)
    assert MapReducer(None, tok, BASE_FRAME, MapReduceConfig(), window=2048).config.layout == "few-shot"
    assert MapReducer(None, tok, CHAT, MapReduceConfig(), window=2048).config.layout == AUTO_LAYOUTS["chat"]
    [(_, _, [base, *_])] = _map_prompts(tok, "niah_single_1", 4096, 1, "auto")
    [(_, _, [chat, *_])] = _map_prompts(tok, "niah_single_1", 4096, 1, "few-shot", frame=CHAT)
    assert "A made-up example part" in base and "A made-up example part" in chat  # selectable for chat prompts
    assert chat.startswith(CHAT.head) and CHAT.tail + RECORD_PREFIX in chat


def test_a_layout_that_does_not_exist_is_refused_naming_the_option():
    with pytest.raises(RulerUsageError, match="--ruler-mapreduce-layout.*few-shot"):
        MapReduceConfig(layout="two-shot").validate()


def test_the_option_parses_every_layout_and_refuses_others():
    opt = option("mapreduce-layout")
    assert opt.target == "mapreduce" and opt.field_name == "layout" and opt.default == "auto"
    for name in ("auto", *MAP_LAYOUTS):
        assert opt.parse("--ruler-mapreduce-layout", name) == name
    with pytest.raises(RulerUsageError, match="--ruler-mapreduce-layout.*few-shot"):
        opt.parse("--ruler-mapreduce-layout", "fewshot")


def test_the_option_reaches_the_config():
    from tests.unit.test_options import config

    assert config({"mapreduce-layout": "few-shot"}).mapreduce_config.layout == "few-shot"
    assert config(ini={"mapreduce-layout": "format-last"}).mapreduce_config.layout == "format-last"
    assert config().mapreduce_config.layout == "auto"
    with pytest.raises(RulerUsageError, match="ruler_mapreduce_layout"):
        config(ini={"mapreduce-layout": "one-shot"})


def test_the_grounding_label_names_the_layout():
    few = {"grounding": "literal", "strategy": "retrieve", "config": {"layout": "few-shot"},
           "compliance": {"map": {"records": 4, "four_fields": 2, "confidence": 3, "parse_failures": 1}}}
    label = grounding_label(few)
    assert "map layout: few-shot (one filled record for a made-up part before the chunk)" in label
    assert label.endswith("map records with all four fields 2/4, with a confidence 3/4")
    assert "map layout" not in grounding_label({"grounding": "literal"})  # an old report without a config
    both = grounding_summary([few, {**few, "config": {"layout": "question-last"}}])
    assert "map layout: few-shot (" in both and " / question-last (" in both


def test_the_markdown_report_names_the_layout_that_ran():
    from pytest_ruler.report.markdown import markdown
    from tests.unit.report.test_render import _report, _result

    mr = {"grounding": "literal", "strategy": "retrieve", "config": {"layout": "few-shot"},
          "compliance": {"map": {"records": 4, "four_fields": 2, "confidence": 3, "parse_failures": 1}}}
    results = [_result("niah_single_1", 4096, 0, 100.0), _result("niah_single_1", 4096, 0, 100.0, "mapreduce", mapreduce=mr)]
    md = markdown(_report(results=results))
    head = next(line for line in md.splitlines() if line.startswith("**Map-reduce grounding"))
    assert "map layout: few-shot (one filled record for a made-up part before the chunk)" in head
