"""The prediction cache: keys cover what changes an answer; writers in parallel processes."""

from __future__ import annotations

import multiprocessing as mp

import pytest

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


# ---- engines named per completion; what a folder holds; clearing it ---------------------------


def _filled(folder):
    from pytest_ruler.run.cache import PredictionCache

    cache = PredictionCache(folder)
    a = cache.tag("model-a", "hf", {"backend": "hf", "engine": {"dtype": "float32"}})
    b = cache.tag("model-b", "vllm", {"backend": "vllm", "engine": {"api_key": "sk-not-kept", "dtype": "bfloat16"}})
    for i in range(3):
        cache.put(f"a{i}", Completion("x", 3, 1, "stop"), a)
    cache.put("b0", Completion("y", 3, 1, "stop"), b)
    cache.close()


def test_contents_count_the_predictions_per_model_and_create_nothing(tmp_path):
    from pytest_ruler.run.cache import cache_contents

    empty = cache_contents(tmp_path / "none")
    assert (empty.exists, empty.entries) == (False, 0) and not (tmp_path / "none").exists()
    _filled(tmp_path)
    got = cache_contents(tmp_path)
    assert got.exists and got.entries == 4 and got.size > 0
    assert got.by_engine == (("model-a", "hf", 3), ("model-b", "vllm", 1)) and got.models == ["model-a", "model-b"]
    import sqlite3

    stored = sqlite3.connect(tmp_path / "predictions.sqlite").execute("SELECT identity FROM engines").fetchall()
    assert "sk-not-kept" not in repr(stored) and "<secret>" in repr(stored)  # a credential-named field never stored


def test_clearing_one_model_keeps_the_others(tmp_path):
    from pytest_ruler.run.cache import cache_contents, clear_cache

    _filled(tmp_path)
    done = clear_cache(tmp_path, "model-a")
    assert (done.removed, done.kept) == (3, 1)
    assert cache_contents(tmp_path).by_engine == (("model-b", "vllm", 1),)
    assert clear_cache(tmp_path, "model-z").removed == 0


def test_clearing_all_removes_every_prediction_and_the_corrupt_files_aside(tmp_path):
    from pytest_ruler.run.cache import PredictionCache, cache_contents, clear_cache

    _filled(tmp_path)
    aside = tmp_path / "predictions.sqlite.corrupt-20260101-000000"
    aside.write_bytes(b"junk")
    done = clear_cache(tmp_path)
    assert (done.removed, done.kept, done.files) == (4, 0, (aside,)) and not aside.exists()
    assert cache_contents(tmp_path).entries == 0
    cache = PredictionCache(tmp_path)  # still a sound cache
    cache.put("k", Completion("z", 1, 1, "stop"))
    assert len(cache) == 1
    cache.close()


def test_an_older_file_without_engine_names_is_counted_and_cleared_whole(tmp_path):
    import sqlite3

    from pytest_ruler.run.cache import cache_contents, clear_cache

    conn = sqlite3.connect(tmp_path / "predictions.sqlite")
    conn.execute("CREATE TABLE completions (key TEXT PRIMARY KEY, text TEXT NOT NULL, prompt_tokens INTEGER NOT NULL, "
                 "completion_tokens INTEGER NOT NULL, finish_reason TEXT NOT NULL, seconds REAL NOT NULL, created REAL NOT NULL)")
    conn.execute("INSERT INTO completions VALUES ('k', 't', 1, 1, 'stop', 0, 0)")
    conn.commit()
    conn.close()
    assert cache_contents(tmp_path).by_engine == ((None, None, 1),)
    assert clear_cache(tmp_path, "m").removed == 0 and clear_cache(tmp_path).removed == 1


def test_a_corrupt_file_is_removed_by_clearing_all_and_named_otherwise(tmp_path):
    from pytest_ruler.errors import RulerUsageError
    from pytest_ruler.run.cache import cache_contents, clear_cache

    (tmp_path / "predictions.sqlite").write_bytes(b"not a database" * 100)
    with pytest.raises(RulerUsageError, match="cannot be read"):
        cache_contents(tmp_path)
    done = clear_cache(tmp_path)
    assert done.files == (tmp_path / "predictions.sqlite",) and not (tmp_path / "predictions.sqlite").exists()
