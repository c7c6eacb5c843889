"""The engine's speed remembered between runs (run.throughput) and the start-up time line (run.eta)."""

from __future__ import annotations

import json
from types import SimpleNamespace

from pytest_ruler.run import throughput
from pytest_ruler.run.eta import RunClock

IDENTITY = {"engine": "scripted", "model": "smollm2-135m", "dtype": "float32"}


def test_the_key_names_what_sets_the_speed():
    key = throughput.speed_key(IDENTITY, "AMD EPYC", 2, 1)
    assert key == throughput.speed_key(dict(reversed(list(IDENTITY.items()))), "AMD EPYC", 2, 1)
    assert len({key, throughput.speed_key(IDENTITY, "Xeon", 2, 1), throughput.speed_key(IDENTITY, "AMD EPYC", 4, 1),
                throughput.speed_key(IDENTITY, "AMD EPYC", 2, 2), throughput.speed_key({**IDENTITY, "dtype": "bfloat16"}, "AMD EPYC", 2, 1)}) == 5
    assert throughput.speed_key({"engine": None}, "AMD EPYC", 2, 1) is None


def test_remember_then_recall(tmp_path):
    assert throughput.recall(tmp_path, "k") is None
    throughput.remember(tmp_path, "k", 0.002, 5000)
    got = throughput.recall(tmp_path, "k")
    assert got["seconds_per_token"] == 0.002 and got["tokens"] == 5000 and got["measured"]
    assert throughput.recall(tmp_path, "other") is None
    assert not list(tmp_path.glob("*.tmp"))


def test_a_damaged_file_or_rate_is_ignored(tmp_path):
    (tmp_path / throughput.FILE).write_text("{not json")
    assert throughput.recall(tmp_path, "k") is None
    throughput.remember(tmp_path, "k", 0.001, 10)  # rewrites it whole
    assert throughput.recall(tmp_path, "k")["seconds_per_token"] == 0.001
    (tmp_path / throughput.FILE).write_text(json.dumps({"k": {"seconds_per_token": -1}}))
    assert throughput.recall(tmp_path, "k") is None
    throughput.remember(tmp_path / "file" / "x", "k", 0.001, 10)  # unwritable: no error


class FakeSession:
    """Plumbing stand-in for RunClock's session (no engine)."""

    def __init__(self, folder, no_cache=False):
        self.config = SimpleNamespace(samples=2, no_cache=no_cache)
        self.cache_dir = folder
        self.engine_load_seconds = 0.0
        self.lines = []

    def known_identity(self):
        return IDENTITY

    def say(self, line):
        self.lines.append(line)


def start(session, clock):
    rc = RunClock(session, clock=clock)
    rc.items_known({"a": ("niah_single_1", 1000, 0, "native"), "b": ("niah_single_1", 1000, 1, "native")})
    return rc


def test_the_first_run_says_no_estimate_then_the_next_one_gives_one(tmp_path):
    now = [0.0]
    first = FakeSession(tmp_path)
    rc = start(first, lambda: now[0])
    assert first.lines[1].startswith("ruler: no time estimate yet")
    now[0] = 4.0  # 4 s for the first item's 2,000 tokens: 2 ms per token
    rc.item_done([SimpleNamespace(prompt_tokens=2000, samples=2, cached=0, length=1000, seconds=4.0)], {"a"}, rc_cells(rc))
    second = FakeSession(tmp_path)
    start(second, lambda: 0.0)
    assert second.lines[1].startswith("ruler: time estimate: at most about 8s for those tokens at 2 ms per prompt token"), second.lines


def rc_cells(rc):
    return {"a": ("niah_single_1", 1000, 0, "native"), "b": ("niah_single_1", 1000, 1, "native")}


def test_without_the_cache_nothing_is_kept(tmp_path):
    session = FakeSession(tmp_path, no_cache=True)
    start(session, lambda: 0.0)
    assert session.lines[1].startswith("ruler: no time estimate: without the prediction cache")
    assert not (tmp_path / throughput.FILE).exists()
