"""The prediction cache: keys cover what changes an answer; writers in parallel processes."""

from __future__ import annotations

import multiprocessing as mp

from pytest_ruler.run.cache import PredictionCache, prediction_key
from pytest_ruler.engines.base import Completion, GenerationRequest

REQ = GenerationRequest("p", (1, 2, 3), 16)
IDENT = {"engine": "hf", "model": {"sha256": "abc"}, "dtype": "float32"}


def test_key_changes_with_everything_that_changes_an_answer():
    base = prediction_key(IDENT, REQ)
    assert prediction_key(dict(IDENT), GenerationRequest("other text", (1, 2, 3), 16)) == base  # ids, not text, are sent
    assert prediction_key(IDENT, GenerationRequest("p", (1, 2, 4), 16)) != base
    assert prediction_key(IDENT, GenerationRequest("p", (1, 2, 3), 32)) != base
    assert prediction_key(IDENT, GenerationRequest("p", (1, 2, 3), 16, stop=("\n",))) != base
    assert prediction_key({**IDENT, "dtype": "bfloat16"}, REQ) != base
    assert prediction_key({**IDENT, "model": {"sha256": "abd"}}, REQ) != base


def test_only_successful_completions_are_kept(tmp_path):
    cache = PredictionCache(tmp_path)
    cache.put("a", Completion("x", 3, 1, "stop"))
    cache.put("b", Completion("", 3, 0, "error", error="boom"))
    cache.put("c", Completion("", 3, 0, "over_length", error="too long"))
    assert set(cache.get_many(["a", "b", "c"])) == {"a"}
    assert cache.get_many(["a"])["a"] == Completion("x", 3, 1, "stop", 0.0)
    cache.close()


def test_an_answer_that_came_with_an_error_is_never_kept(tmp_path):
    """Whatever its finish reason, an answer a failure produced is recomputed, never reused."""
    cache = PredictionCache(tmp_path)
    cache.put("stop-with-error", Completion("", 3, 0, "stop", error="malformed answer: choices[0].text is int, not text"))
    cache.put("malformed", Completion("", 3, 0, "malformed", error="malformed answer: lone surrogate"))
    assert cache.get_many(["stop-with-error", "malformed"]) == {}
    assert len(cache) == 0
    cache.close()


def _writer(folder: str, start: int) -> None:
    cache = PredictionCache(folder)
    for i in range(start, start + 200):
        cache.put(f"k{i}", Completion(str(i), 1, 1, "stop"))
    cache.close()


def test_parallel_writers_lose_nothing(tmp_path):
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(str(tmp_path), s)) for s in (0, 200, 400)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    cache = PredictionCache(tmp_path)
    assert len(cache) == 600
    assert cache.get_many(["k0", "k599"])["k599"].text == "599"
