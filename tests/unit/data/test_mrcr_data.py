"""Reading MRCR records (JSON Lines, parquet, the Hub's folder layout) and `pytest-ruler download mrcr` without a network."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from pytest_ruler.data.mrcr import download_mrcr, read_mrcr
from pytest_ruler.data.registry import read_data
from pytest_ruler.errors import RulerDataError
from tests.mrcr_data import make_record, make_records, write_jsonl, write_parquet

pytest.importorskip("pyarrow")


def test_jsonl_records_in_order(tmp_path):
    rows = make_records(turns=(6, 12), needles=(2, 4))
    data = read_mrcr(write_jsonl(tmp_path / "r.jsonl", rows))
    assert [r.position for r in data.records] == list(range(len(rows)))
    first = data.records[0]
    assert (first.n_needles, first.answer, first.random_string) == (2, rows[0]["answer"], rows[0]["random_string_to_prepend"])
    assert (first.desired_msg_index, first.total_messages, first.n_chars) == (
        rows[0]["desired_msg_index"], rows[0]["total_messages"], rows[0]["n_chars"])
    assert list(data.messages(first)) == json.loads(rows[0]["prompt"])
    assert data.label == "mrcr (r.jsonl: 2 2-needle, 2 4-needle records)"


def test_parquet_gives_the_same_records_and_chats(tmp_path):
    rows = make_records(turns=(6, 9, 12), needles=(2, 8))
    js = read_mrcr(write_jsonl(tmp_path / "r.jsonl", rows))
    pq = read_mrcr(write_parquet(tmp_path / "r.parquet", rows, row_group_size=2))  # chats read from their row groups
    fields = lambda d: [(r.position, r.n_needles, r.answer, r.random_string, r.desired_msg_index, r.total_messages, r.n_chars)
                        for r in d.records]  # noqa: E731
    assert fields(pq) == fields(js) and pq.records[1].source == "r.parquet row 1"
    assert [pq.messages(r) for r in pq.records] == [js.messages(r) for r in js.records]


def test_a_folder_is_read_in_the_hubs_order(tmp_path):
    """The Hub's layout, 2needle/2needle_0.parquet, 2needle_1.parquet, 4needle/...: files sorted by path."""
    for n in (4, 2):
        (tmp_path / f"{n}needle").mkdir()
        for part in (1, 0):
            write_parquet(tmp_path / f"{n}needle" / f"{n}needle_{part}.parquet", [make_record(n, 6 + part, 0)])
    (tmp_path / ".cache").mkdir()
    write_parquet(tmp_path / ".cache" / "stray.parquet", [make_record(8, 8, 0)])  # a hidden folder is not data
    data = read_mrcr(tmp_path)
    assert [(r.n_needles, r.total_messages) for r in data.records] == [(2, 13), (2, 15), (4, 13), (4, 15)]
    assert [r.source for r in data.records][:2] == ["2needle_0.parquet row 0", "2needle_1.parquet row 0"]


@pytest.mark.parametrize(("change", "said"), [
    (lambda r: r.pop("answer"), "has no answer"),
    (lambda r: r.update(n_needles="two"), "n_needles must be a non-negative integer"),
    (lambda r: r.update(random_string_to_prepend=""), "random_string_to_prepend must be non-empty text"),
])
def test_a_bad_record_is_refused_naming_the_option(tmp_path, change, said):
    row = make_record(2, 6, 0)
    change(row)
    path = write_jsonl(tmp_path / "bad.jsonl", [row])
    with pytest.raises(RulerDataError, match=said) as info:
        read_data("mrcr", path, cache=False)
    assert "--ruler-mrcr" in str(info.value) and "pytest-ruler download mrcr" in str(info.value)


def test_a_chat_that_is_no_list_of_messages_is_refused_when_read(tmp_path):
    row = make_record(2, 6, 0)
    row["prompt"] = json.dumps({"role": "user"})
    data = read_mrcr(write_jsonl(tmp_path / "r.jsonl", [row]))
    with pytest.raises(RulerDataError, match="prompt must be a JSON list of messages"):
        data.messages(data.records[0])


def test_a_missing_path_and_an_empty_folder(tmp_path):
    with pytest.raises(RulerDataError, match="no such file or folder"):
        read_data("mrcr", tmp_path / "nowhere")
    with pytest.raises(RulerDataError, match="no .parquet or .jsonl file"):
        read_data("mrcr", tmp_path, cache=False)


def test_download_without_huggingface_hub_says_how_to_get_the_data(tmp_path, monkeypatch):
    from pytest_ruler.data.fetch import RulerDownloadError

    monkeypatch.setitem(sys.modules, "huggingface_hub", None)
    with pytest.raises(RulerDownloadError, match="huggingface_hub is not installed") as info:
        download_mrcr(tmp_path / "mrcr", 5, log=lambda *_: None)
    assert "--ruler-mrcr" in str(info.value) and not (tmp_path / "mrcr").exists()


def test_download_keeps_the_hubs_parquet_files(tmp_path, monkeypatch):
    """The Hub client stood in for by a function that writes the layout: the folder is checked, then kept."""
    import types

    asked = {}

    def snapshot_download(**kw):
        asked.update(kw)
        for n in (2, 4, 8):
            (Path(kw["local_dir"]) / f"{n}needle").mkdir(parents=True)
            write_parquet(Path(kw["local_dir"]) / f"{n}needle" / f"{n}needle_0.parquet", [make_record(n, 9, 1)])
        (Path(kw["local_dir"]) / ".cache" / "huggingface").mkdir(parents=True)  # the client's bookkeeping

    monkeypatch.setitem(sys.modules, "huggingface_hub", types.SimpleNamespace(snapshot_download=snapshot_download))
    lines = []
    download_mrcr(tmp_path / "mrcr", 5, log=lines.append)
    assert asked["repo_id"] == "openai/mrcr" and asked["repo_type"] == "dataset" and asked["allow_patterns"] == ["*needle/*.parquet"]
    assert [r.n_needles for r in read_mrcr(tmp_path / "mrcr").records] == [2, 4, 8]
    assert "3 records" in lines[-1]


def test_download_that_fails_leaves_nothing(tmp_path, monkeypatch):
    import types

    from pytest_ruler.data.fetch import RulerDownloadError

    def offline(**kw):
        raise OSError("network is unreachable")

    monkeypatch.setitem(sys.modules, "huggingface_hub", types.SimpleNamespace(snapshot_download=offline))
    with pytest.raises(RulerDownloadError, match="network is unreachable"):
        download_mrcr(tmp_path / "mrcr", 5, log=lambda *_: None)
    assert list(tmp_path.iterdir()) == []
