"""Chunked inference (LLM x MapReduce) in user tests: the `ruler_mapreduce` fixture.

    pytest examples/test_mapreduce.py --ruler-model=smollm2-135m --ruler-no-suite

The rescue is checked at 12K, past the embedded model's 8K window: native prompts of
that length do not fit (they fail as over length, without being run), while map-reduce
over 1K chunks answers them. The test sets the length it needs itself, so it runs with
the folder's documented command too; --ruler-no-suite leaves the standard suite out
(only these tests run). Without --ruler-model these tests skip.
The default grounding ("literal") only drops claimed values that are not in their chunk;
which value answers the question is the model's choice.
"""

from pytest_ruler.mapreduce import grounding_label


def test_chunked_inference_rescues_the_passkey_past_the_window(ruler_mapreduce):
    # fails unless native context fails AND map-reduce passes (the gate users ask for)
    # 12k: past the embedded model's 8K window (a model with a longer window has nothing to rescue there)
    native, chunked = ruler_mapreduce.check_rescue("niah_single_1", "12k", samples=2, chunk_tokens="1k")
    print(f"native {native.score:.0f} ({native.over_length} over the window), map-reduce {chunked.score:.0f}")
    # what code did to the model's records, and how often the model wrote the protocol's four fields
    print(grounding_label(chunked.mapreduce))


def test_map_reduce_options_and_per_call_records(ruler_mapreduce):
    result = ruler_mapreduce.run("niah_single_1", "4k", samples=1, chunk_tokens="1k", overlap=64, max_rounds=2, parallel=4)
    stages = {call["stage"] for call in result.calls}
    assert "map" in stages  # every call is recorded: prompt tokens, parse result, confidence, seconds
    assert result.mapreduce["config"]["overlap"] == 64
