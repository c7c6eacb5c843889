"""Chunked inference (LLM x MapReduce) in user tests: the `ruler_mapreduce` fixture.

    pytest examples/test_mapreduce.py --ruler-model=smollm2-135m --ruler-max-model-len=2048

With the embedded model held to a 2K window, native 4K prompts do not fit, while
map-reduce over 1K chunks answers them. Without --ruler-model these tests skip.
The default grounding ("literal") only drops claimed values that are not in their chunk;
which value answers the question is the model's choice.
"""

from pytest_ruler.mapreduce import grounding_label


def test_chunked_inference_rescues_the_passkey_at_4k(ruler_mapreduce):
    # fails unless native context fails AND map-reduce passes (the gate users ask for)
    native, chunked = ruler_mapreduce.check_rescue("niah_single_1", "4k", samples=2, chunk_tokens="1k")
    print(f"native {native.score:.0f} ({native.over_length} over the window), map-reduce {chunked.score:.0f}")
    # what code did to the model's records, and how often the model wrote the protocol's four fields
    print(grounding_label(chunked.mapreduce))


def test_map_reduce_options_and_per_call_records(ruler_mapreduce):
    result = ruler_mapreduce.run("niah_single_1", "4k", samples=1, chunk_tokens="1k", overlap=64, max_rounds=2, parallel=4)
    stages = {call["stage"] for call in result.calls}
    assert "map" in stages  # every call is recorded: prompt tokens, parse result, confidence, seconds
    assert result.mapreduce["config"]["overlap"] == 64
