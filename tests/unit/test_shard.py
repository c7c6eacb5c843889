"""--ruler-shard=i/N (pytest_ruler.shard): the selection is a pure function of the node id, every
item lands in exactly one shard, and a bad value is one usage error naming the option."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, strategies as st

from pytest_ruler.errors import RulerUsageError
from pytest_ruler.shard import Shard, parse_shard, shard_of, unmerged

NODE_IDS = st.lists(st.text(min_size=1, max_size=40), min_size=1, max_size=60, unique=True)


@pytest.mark.parametrize("raw, shard", [("1/1", Shard(1, 1)), ("2/4", Shard(2, 4)), (" 3 / 3 ", Shard(3, 3))])
def test_parse_shard_reads_i_of_n(raw, shard):
    assert parse_shard("--ruler-shard", raw) == shard


@pytest.mark.parametrize("raw, fix", [("0/2", "between 1 and the count"), ("3/2", "between 1 and the count"),
                                      ("1/0", "between 1 and the count"), ("2", "write the shard as i/N"),
                                      ("a/b", "write the shard as i/N"), ("-1/2", "write the shard as i/N")])
def test_parse_shard_refuses_bad_values_naming_the_option(raw, fix):
    with pytest.raises(RulerUsageError) as exc:
        parse_shard("--ruler-shard", raw)
    assert "--ruler-shard" in str(exc.value) and repr(raw) in str(exc.value) and fix in str(exc.value)


def test_the_hash_is_sha256_of_the_node_id_not_pythons_salted_hash():
    # the same on every process, machine and version, or the shards of one run would overlap
    import hashlib

    for nodeid in ("ruler::vt[4096-seed0]", "ruler::niah_single_1[131072-seed3-mapreduce]", "tests/test_x.py::test_é"):
        digest = hashlib.sha256(nodeid.encode("utf-8")).digest()
        assert shard_of(nodeid, 7) == int.from_bytes(digest[:8], "big") % 7 + 1


@given(NODE_IDS, st.integers(1, 9))
def test_every_item_is_in_exactly_one_shard(ids, count):
    chosen = [[i for i in ids if Shard(k, count).selects(i)] for k in range(1, count + 1)]
    assert sorted(i for part in chosen for i in part) == sorted(ids)


@given(NODE_IDS, st.integers(1, 9), st.randoms(use_true_random=False))
def test_the_selection_does_not_depend_on_the_order(ids, count, rnd):
    shuffled = list(ids)
    rnd.shuffle(shuffled)
    for k in range(1, count + 1):
        assert {i for i in ids if Shard(k, count).selects(i)} == {i for i in shuffled if Shard(k, count).selects(i)}


def test_shards_are_roughly_even():
    ids = [f"ruler::task{t}[{L}-seed{s}]" for t in range(13) for L in (4096, 8192, 16384, 32768) for s in range(2)]
    sizes = [sum(Shard(k, 4).selects(i) for i in ids) for k in range(1, 5)]
    assert sum(sizes) == len(ids) and min(sizes) >= len(ids) // 4 - 12, sizes


def test_unmerged_names_the_shard_or_the_missing_shards_and_the_fix():
    assert unmerged({}) is None
    assert unmerged({"shards": {"count": 2, "merged": [1, 2], "missing": []}}) is None
    assert unmerged({"shard": {"index": 1, "count": 1}}) is None  # 1/1 is the whole run
    one = unmerged({"shard": {"index": 2, "count": 3}})
    assert "shard 2/3 only" in one and "pytest-ruler merge" in one
    partial = unmerged({"shards": {"count": 3, "merged": [1], "missing": [2, 3]}})
    assert "missing shards 2/3, 3/3" in partial and "pytest-ruler merge" in partial


def test_random_ids_split_close_to_evenly():
    rnd = random.Random(0)
    ids = [f"ruler::t{rnd.random()}" for _ in range(2000)]
    share = sum(Shard(1, 2).selects(i) for i in ids) / len(ids)
    assert 0.45 < share < 0.55
