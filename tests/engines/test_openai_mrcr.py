"""An MRCR sample through the OpenAI-compatible chat endpoint: the server gets the chat's messages
(never the rendered prompt as one user turn, never the record's answer). A stub server, not a model."""

from __future__ import annotations

import json

from pytest_ruler.engines.base import EngineConfig
from pytest_ruler.tasks import GenerationContext, iter_samples
from pytest_ruler.tasks.chat import frame_for
from tests.mrcr_data import make_records, write_jsonl

from ..servers import stub_openai as stub


def test_the_chat_endpoint_sends_the_records_messages(tokenizer, tmp_path, monkeypatch):
    monkeypatch.delenv("RULER_API_KEY", raising=False)
    from pytest_ruler.engines.openai import OpenAIEngine
    from pytest_ruler.run.runner import _request

    rows = make_records(turns=(12, 16, 20, 26), needles=(2,))
    ctx = GenerationContext(tokenizer, frame_for("auto", tokenizer), data={"mrcr": str(write_jsonl(tmp_path / "r.jsonl", rows))})
    sample = next(iter_samples("mrcr_2", 1024, samples=1, seed=0, ctx=ctx))

    def chat_only(call):
        if call.path == "/v1/completions":
            return 404, {"error": {"message": "Not Found"}}
        if call.path == "/v1/chat/completions":
            return 200, stub.chat_completion("x")

    with stub.StubServer(chat_only) as server:
        engine = OpenAIEngine(EngineConfig(model="stub-model", backend="openai", tokenizer="smollm2-135m", base_url=server.base_url,
                                           options={"retry_backoff": 0.01}))
        spec = type("Spec", (), {"name": "mrcr_2", "tokens_to_generate": 1024})()
        [done] = engine.generate([_request(type("S", (), {"tokenizer": tokenizer})(), spec, sample, 1024, 0)])
        [body] = [c.body for c in server.posts("/v1/chat/completions")]
    assert done.ok
    assert body["messages"] == [dict(m) for m in sample.messages] and body["messages"][-1]["role"] == "user"
    assert "continue_final_message" not in body and body["max_tokens"] == 1024
    assert rows[sample.metadata["record"]]["answer"] not in json.dumps(body)
