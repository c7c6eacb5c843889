"""The hf engine on the real embedded model (SmolLM2-135M-Instruct, CPU), at short lengths."""

from __future__ import annotations

import pytest

from pytest_ruler.tasks.chat import frame_for
from pytest_ruler.engines import EngineConfig, GenerationRequest, describe_engine, load_engine
from pytest_ruler.errors import RulerUsageError
from pytest_ruler.results.scoring import string_match_all
from pytest_ruler.tasks import GenerationContext, generate_samples


@pytest.fixture(scope="module")
def engine():
    e = load_engine(EngineConfig(model="smollm2-135m", backend="hf"))
    yield e
    e.close()


def requests_for(engine, task, length, n, seed=0):
    tok = engine.tokenizer
    ctx = GenerationContext(tok, frame=frame_for("auto", tok))
    samples = generate_samples(task, length, samples=n, seed=seed, ctx=ctx)
    return samples, [GenerationRequest(s.prompt, tuple(s.prompt_ids), 128) for s in samples]


def test_identity_without_loading_matches_the_loaded_engine(engine):
    described = describe_engine(EngineConfig(model="smollm2-135m", backend="hf"))
    assert described == engine.identity()
    assert described["model"]["sha256"] and described["device"] == "cpu" and described["trust_remote_code"] is False
    assert engine.max_context == 8192


def test_real_passkey_retrieval_at_1k(engine):
    samples, reqs = requests_for(engine, "niah_single_1", 1024, 3)
    seen = []
    completions = engine.generate(reqs, on_result=lambda i, c: seen.append(i))
    assert sorted(seen) == [0, 1, 2]
    assert all(c.finish_reason in ("stop", "length") and c.prompt_tokens == len(r.prompt_ids) for c, r in zip(completions, reqs))
    # measured: SmolLM2-135M retrieves the 7-digit passkey at 1K on every sample tried
    assert string_match_all([c.text for c in completions], [s.outputs for s in samples]) == 100.0
    assert all(c.finish_reason == "stop" and c.completion_tokens < 128 for c in completions)


def test_over_length_is_refused_without_running(engine):
    ids = tuple(range(100, 100 + 8150))
    [c] = engine.generate([GenerationRequest("x", ids, 128)])
    assert c.finish_reason == "over_length" and c.error == "exceeds model context (8278 > 8192)"


def test_batched_equals_one_by_one(engine):
    samples, reqs = requests_for(engine, "niah_single_1", 512, 2, seed=3)
    default = engine.batch_size
    try:
        engine.batch_size = 1
        one = [engine.generate([r])[0].text for r in reqs]
        engine.batch_size = 2
        both = [c.text for c in engine.generate(reqs)]
    finally:
        engine.batch_size = default
    # left padding with an attention mask keeps greedy answers the same
    assert [t.strip() for t in both] == [t.strip() for t in one]


@pytest.mark.parametrize(
    ("model", "needle"),
    [("./no/such/model", "no such file or folder"), ("/tmp/missing.gguf", "this .gguf file does not exist")],
)
def test_bad_model_paths(model, needle):
    with pytest.raises(RulerUsageError, match=needle):
        load_engine(EngineConfig(model=model, backend="hf"))


def test_gguf_without_tokenizer_is_a_clear_error(tmp_path):
    gguf = pytest.importorskip("gguf")
    import numpy as np

    path = tmp_path / "no_tokenizer.gguf"
    writer = gguf.GGUFWriter(str(path), "llama")  # a real GGUF: model metadata and a tensor, no tokenizer
    writer.add_context_length(128)
    writer.add_embedding_length(8)
    writer.add_block_count(1)
    writer.add_head_count(1)
    writer.add_tensor("token_embd.weight", np.zeros((16, 8), dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    with pytest.raises(RulerUsageError) as e:
        load_engine(EngineConfig(model=str(path), backend="hf"))
    assert "no_tokenizer.gguf" in str(e.value) and "--ruler-tokenizer" in str(e.value)


def test_unknown_engine_name():
    with pytest.raises(RulerUsageError, match="--ruler-backend='tpu' is invalid: choose one of auto, hf, vllm, openai"):
        load_engine(EngineConfig(model="smollm2-135m", backend="tpu"))


def test_missing_optional_dependency_is_named(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "transformers", None)
    with pytest.raises(RulerUsageError, match=r'pip install "pytest-ruler\[hf\]"'):
        load_engine(EngineConfig(model="smollm2-135m", backend="hf"))
