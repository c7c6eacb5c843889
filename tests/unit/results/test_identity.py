"""The report's ``engine`` (results.identity): built from the cache identity, secrets scrubbed;
``engine_differences`` names each differing field with both values."""

from __future__ import annotations

import pytest

from pytest_ruler.results.identity import engine_differences, engine_record, scrubbed

IDENTITY = {"backend": "hf", "class": "pytest_ruler.engines.hf.HFEngine",
            "engine": {"engine": "hf", "model": {"hub_id": "org/m", "revision": "abc"}, "dtype": "bfloat16", "device": "cuda"}}
VERSIONS = {"pytest-ruler": "1", "python": "3.11", "torch": "2.5.1", "transformers": "4.46.0", "vllm": None}


def test_the_record_is_the_cache_identity_with_options_and_engine_library_versions():
    record = engine_record(IDENTITY, options={"attn": "sdpa"}, versions=VERSIONS)
    assert record == {"backend": "hf", "class": "pytest_ruler.engines.hf.HFEngine", "engine": "hf",
                      "model": {"hub_id": "org/m", "revision": "abc"}, "dtype": "bfloat16", "device": "cuda",
                      "options": {"attn": "sdpa"}, "versions": {"torch": "2.5.1", "transformers": "4.46.0", "vllm": None}}
    assert engine_record(None) is None


def test_an_own_key_named_like_the_records_is_kept_apart():
    record = engine_record({"backend": "x", "class": "m.X", "engine": {"backend": "inner", "versions": 3}})
    assert (record["backend"], record["engine_backend"], record["engine_versions"]) == ("x", "inner", 3)


def test_an_engine_that_cannot_describe_itself_unloaded_is_marked_unknown():
    record = engine_record({"backend": "mine", "class": "conftest.Mine", "engine": None})
    assert "no describe()" in record["unknown"] and record["backend"] == "mine"


def test_secrets_never_reach_the_record(monkeypatch):
    monkeypatch.setenv("RULER_API_KEY", "sk-verysecretkey123")
    identity = {"backend": "openai", "class": "pytest_ruler.engines.openai.OpenAIEngine",
                "engine": {"base_url": "http://user:pw@host:8000/v1?api-key=abc", "note": "uses sk-verysecretkey123",
                           "extra_body": {"token": "t0k3n", "top_k": 1}}}
    record = engine_record(identity, options={"api_key": "plain", "concurrency": 4, "auth_header": "x"})
    text = repr(record)
    for secret in ("sk-verysecretkey123", "user:pw", "api-key=abc", "t0k3n", "plain", "'x'"):
        assert secret not in text
    assert record["options"] == {"api_key": "<secret>", "concurrency": 4, "auth_header": "<secret>"}
    assert record["extra_body"] == {"token": "<secret>", "top_k": 1}
    assert scrubbed({"password": None, "n": [1, "a"]}) == {"password": None, "n": [1, "a"]}


OLD = engine_record(IDENTITY, options={"attn": "sdpa"}, versions=VERSIONS)


@pytest.mark.parametrize("change, expected", [
    ({"engine": {**IDENTITY["engine"], "dtype": "float32"}}, ["dtype: bfloat16 -> float32"]),
    ({"class": "conftest.Sub"}, ["class: pytest_ruler.engines.hf.HFEngine -> conftest.Sub"]),
    ({"engine": {**IDENTITY["engine"], "model": {"hub_id": "org/m", "revision": "def"}}}, ["model.revision: abc -> def"]),
    ({"engine": {k: v for k, v in IDENTITY["engine"].items() if k != "device"}}, ["device: cuda -> (none)"]),
])
def test_differences_name_each_field_with_both_values(change, expected):
    new = engine_record({**IDENTITY, **change}, options={"attn": "sdpa"}, versions=VERSIONS)
    assert engine_differences(OLD, new) == expected


def test_versions_count_options_do_not_and_unknown_compares_what_both_know():
    new = engine_record(IDENTITY, options={"attn": "eager"}, versions={**VERSIONS, "torch": "2.6.0"})
    assert engine_differences(OLD, new) == ["versions.torch: 2.5.1 -> 2.6.0"]
    assert engine_differences(OLD, OLD) == [] and engine_differences(None, OLD) == [] and engine_differences(OLD, "x") == []
    unknown = engine_record({**IDENTITY, "engine": None}, versions=VERSIONS)
    assert engine_differences(OLD, unknown) == []
    assert engine_differences(OLD, {**unknown, "backend": "vllm"}) == ["backend: hf -> vllm"]
