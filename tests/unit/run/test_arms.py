"""--ruler-arm's parsing, each arm's configuration, the start-up refusal of an arm that would be asked
other prompts, and the comparison of arms (results.arms) on made-up items."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from pytest_ruler.errors import RulerUsageError
from pytest_ruler.results import ItemResult
from pytest_ruler.results.arms import compare_arms
from pytest_ruler.run.arms import Arm, arm_config, check_same_prompts, parse_arms
from pytest_ruler.run_config import RulerConfig


def test_arms_parse_with_json_values_holding_commas():
    arms = parse_arms("--ruler-arm", ["ref", 'cand:dtype=bfloat16,hf_overrides={"rope_theta": 100, "x": [1, 2]},max_model_len=8k'])
    assert [a.name for a in arms] == ["ref", "cand"]
    assert arms[0].settings == {} and arms[0].engine_options == {}
    assert arms[1].settings == {"dtype": "bfloat16", "max_model_len": 8192}
    assert arms[1].engine_options == {"hf_overrides": {"rope_theta": 100, "x": [1, 2]}}


@pytest.mark.parametrize("raw, says", [
    (["ref"], "two arms at least"),
    (["a", "a:dtype=float32"], "given twice"),
    (["a", "b c:dtype=float32"], "NAME:KEY=VALUE"),
    (["a", "b:dtype"], "KEY=VALUE"),
    (["a", "b:dtype=float32,dtype=bfloat16"], "twice"),
    (["a", "b:dtype=int3"], "dtype"),
])
def test_bad_arms_are_refused_naming_the_option(raw, says):
    with pytest.raises(RulerUsageError) as err:
        parse_arms("--ruler-arm", raw)
    assert "--ruler-arm" in str(err.value) and says in str(err.value)


def test_an_arm_config_changes_only_what_the_arm_says():
    base = RulerConfig(model="smollm2-135m", backend="scripted", samples=3, engine_options={"mode": "oracle"})
    c = arm_config(base, Arm("cand", {"max_model_len": 4096}, {"blind_above": 1500}))
    assert (c.samples, c.model, c.backend, c.max_model_len) == (3, "smollm2-135m", "scripted", 4096)
    assert c.engine_options == {"mode": "oracle", "blind_above": 1500}
    with pytest.raises(RulerUsageError) as err:
        arm_config(base, Arm("cand", {}, {"no_such_option": 1}))
    assert "cand" in str(err.value)


class _Tok:
    def __init__(self, name, shift=0):
        self.name, self.shift = name, shift

    def encode(self, text):
        return [ord(c) + self.shift for c in text]


def _session(model, tok, head=""):
    return SimpleNamespace(config=RulerConfig(model=model, backend="scripted"), tokenizer=tok,
                           frame=SimpleNamespace(head=head, tail="", name=f"chat:{model}"))


def test_an_arm_whose_tokenizer_gives_other_ids_is_refused_naming_both_arms():
    ref = _session("model-a", _Tok("tok-a"))
    same = _session("model-b", _Tok("tok-b"))
    check_same_prompts(ref, {"cand": same}, "ref")  # same ids, same template: fine
    other = _session("model-c", _Tok("tok-c", shift=1))
    with pytest.raises(RulerUsageError) as err:
        check_same_prompts(ref, {"cand": other}, "ref")
    assert "'cand'" in str(err.value) and "'ref'" in str(err.value) and "tokenize differently" in str(err.value)
    framed = _session("model-d", _Tok("tok-d"), head="<|user|>")
    with pytest.raises(RulerUsageError, match="chat template"):
        check_same_prompts(ref, {"cand": framed}, "ref")


def _item(length, scores, arm, hashes=None, preds=None):
    n = len(scores)
    hashes = hashes or [f"h{length}-{i}" for i in range(n)]
    preds = preds or ["1234567" if s else "" for s in scores]
    return ItemResult(task="niah_single_1", length=length, seed=0, mode="native", samples=n, score=100 * sum(scores) / n,
                      threshold=50.0, passed=True, nulls=0, seconds=0.0, sample_scores=tuple(scores), sample_hashes=tuple(hashes),
                      predictions=tuple({"index": i, "prediction": p, "answers": ["1234567"], "score": s, "prompt_hash": h}
                                        for i, (p, s, h) in enumerate(zip(preds, scores, hashes))), arm=arm)


def test_a_worse_arm_is_refuted_where_it_is_worse_and_names_its_cells():
    ref = [_item(1024, [1.0] * 20, "ref"), _item(2048, [1.0] * 20, "ref")]
    cand = [_item(1024, [1.0] * 20, "cand"), _item(2048, [0.0] * 20, "cand")]
    out = compare_arms(ref, {"cand": cand}, reference_name="ref", margin=10.0)
    cells = {c["length"]: c for c in out.section["arms"][1]["cells"]}
    assert cells[2048]["status"] == "refuted" and cells[2048]["lost"] == 20 and cells[2048]["difference"] == -100.0
    assert len(cells[2048]["lost_examples"]) == 2 and cells[2048]["lost_examples"][0]["reference_prediction"] == "1234567"
    assert cells[1024]["status"] != "refuted"
    failed = [r for r in out.reasons if r.status == "failed"]
    assert len(failed) == 1 and "arm cand" in failed[0].text and "niah_single_1 @ 2K" in failed[0].text
    assert failed[0].cells == (("niah_single_1", 2048, "native"),)


def test_identical_arms_pass_with_enough_pairs_and_are_not_decided_with_few():
    many = [_item(1024, [1.0, 0.0] * 25, "a")]
    out = compare_arms(many, {"b": [_item(1024, [1.0, 0.0] * 25, "b")]}, reference_name="a", margin=10.0)
    assert [r.status for r in out.reasons] == ["passed"]
    few = [_item(1024, [1.0] * 3, "a")]
    out = compare_arms(few, {"b": [_item(1024, [1.0] * 3, "b")]}, reference_name="a", margin=10.0)
    assert [r.status for r in out.reasons] == ["not decided"] and "more samples" in out.reasons[0].text
    out = compare_arms(few, {"b": [_item(1024, [1.0] * 3, "b")]}, reference_name="a", margin=None)
    assert [r.status for r in out.reasons] == ["passed"]  # no margin: no significant drop


def test_other_prompts_fail_the_arm():
    ref = [_item(1024, [1.0] * 5, "ref")]
    cand = [_item(1024, [1.0] * 5, "cand", hashes=[f"x{i}" for i in range(5)])]
    out = compare_arms(ref, {"cand": cand}, reference_name="ref", margin=10.0)
    assert any(r.final and "other questions" in r.text for r in out.reasons)


def test_an_arms_node_id_reads_back_as_its_cell_and_arm():
    from pytest_ruler.plugin.items import parse_item_arm, parse_item_name

    nodeid = "ruler::niah_single_1[2048-seed0-mapreduce-arm=cand.2]"
    assert parse_item_name(nodeid) == ("niah_single_1", 2048, 0, "mapreduce") and parse_item_arm(nodeid) == "cand.2"
    assert parse_item_arm("ruler::vt[1024-seed1]") is None and parse_item_name("ruler::vt[1024-seed1]") == ("vt", 1024, 1, "native")
