"""The SQuAD and HotpotQA readers, on the fixture files and on broken files."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import pytest

from pytest_ruler.errors import RulerDataError, RulerUsageError
from pytest_ruler.data.qa import (
    QA_DATASETS,
    QADataset,
    QAItem,
    clear_qa_cache,
    load_hotpotqa,
    load_qa,
    load_squad,
)

DATA = Path(__file__).resolve().parents[2] / "data"
SQUAD = DATA / "squad_mini.json"
HOTPOT = DATA / "hotpotqa_mini.json"


@pytest.fixture(autouse=True)
def _fresh_cache() -> None:
    clear_qa_cache()


def _write(tmp_path: Path, payload: Any, name: str = "data.json") -> Path:
    path = tmp_path / name
    path.write_text(payload if isinstance(payload, str) else json.dumps(payload))
    return path


def _squad_doc(*articles: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "version": "v2.0",
        "data": [{"title": f"a{i}", "paragraphs": ps} for i, ps in enumerate(articles)],
    }


def _para(context: str, *qas: dict[str, Any]) -> dict[str, Any]:
    return {"context": context, "qas": list(qas)}


def _qa(
    question: str, *answers: str, impossible: bool | None = False
) -> dict[str, Any]:
    qa: dict[str, Any] = {
        "question": question,
        "id": question,
        "answers": [{"text": a, "answer_start": 0} for a in answers],
    }
    if impossible is not None:
        qa["is_impossible"] = impossible
    return qa


# -- SQuAD ---------------------------------------------------------------------


def test_squad_fixture_loads_answerable_questions_only() -> None:
    raw = json.loads(SQUAD.read_text())
    all_qas = [qa for a in raw["data"] for p in a["paragraphs"] for qa in p["qas"]]
    answerable = [qa for qa in all_qas if not qa["is_impossible"]]
    ds = load_squad(SQUAD)

    assert isinstance(ds, QADataset) and ds.name == "squad"
    assert len(all_qas) > len(answerable) == len(ds.items) == 24
    assert [it.question for it in ds.items] == [qa["question"] for qa in answerable]
    assert ds.docs == tuple(sorted(set(ds.docs))) and len(ds.docs) == 14
    assert ds.sha256 == hashlib.sha256(SQUAD.read_bytes()).hexdigest()
    assert ds.source == str(SQUAD.resolve())


def test_squad_items_point_at_the_paragraph_holding_the_answer() -> None:
    ds = load_squad(SQUAD)
    raw = json.loads(SQUAD.read_text())
    article_of = {
        p["context"]: a["title"] for a in raw["data"] for p in a["paragraphs"]
    }
    for item in ds.items:
        assert isinstance(item, QAItem)
        (gold,) = item.gold_docs
        assert all(answer in ds.docs[gold] for answer in item.answers)
        # related = the other paragraphs of the same article, never the gold one
        assert gold not in item.related_docs
        assert {article_of[ds.docs[i]] for i in item.related_docs} <= {
            article_of[ds.docs[gold]]
        }
        siblings = [c for c, t in article_of.items() if t == article_of[ds.docs[gold]]]
        assert len(item.related_docs) == len(siblings) - 1


def test_squad_keeps_every_answer_in_file_order_with_duplicates() -> None:
    ds = load_squad(SQUAD)
    first = ds.items[0]
    assert first.question == "How long is the Brenna Valley Railway?"
    assert first.answers == ("31 kilometres", "31 kilometres", "31")
    assert first.qid


def test_squad_without_is_impossible_counts_as_answerable(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        _squad_doc(
            [
                _para(
                    "Blue is a colour.",
                    _qa("What is blue?", "a colour", impossible=None),
                )
            ]
        ),
    )
    assert load_squad(path).items[0].answers == ("a colour",)


def test_squad_deduplicates_contexts_across_articles(tmp_path: Path) -> None:
    shared = "The same paragraph appears twice."
    path = _write(
        tmp_path,
        _squad_doc(
            [
                _para(shared, _qa("q1", "same")),
                _para("Zebra text.", _qa("q2", "Zebra")),
            ],
            [_para(shared, _qa("q3", "twice"))],
        ),
    )
    ds = load_squad(path)
    assert ds.docs == (shared, "Zebra text.")
    q1, q2, q3 = ds.items
    assert q1.gold_docs == q3.gold_docs == (0,)
    assert q1.related_docs == (1,) and q2.related_docs == (0,) and q3.related_docs == ()


# -- HotpotQA ------------------------------------------------------------------


def test_hotpotqa_fixture_loads_every_question_with_its_ten_paragraphs() -> None:
    raw = json.loads(HOTPOT.read_text())
    ds = load_hotpotqa(HOTPOT)
    assert ds.name == "hotpotqa" and len(ds.items) == len(raw) == 12
    assert ds.docs == tuple(sorted(set(ds.docs)))
    for record, item in zip(raw, ds.items, strict=True):
        assert item.question == record["question"]
        assert item.answers == (record["answer"],)
        assert item.related_docs == ()
        assert item.qid == record["_id"]
        expected = [f"{t}\n{''.join(s)}" for t, s in record["context"]]
        assert [ds.docs[i] for i in item.gold_docs] == expected
        assert len(item.gold_docs) == 10
        supporting = {t for t, _ in record["supporting_facts"]}
        assert supporting <= {ds.docs[i].split("\n", 1)[0] for i in item.gold_docs}
    # distractors are shared between questions, so the pool is smaller than 12 x 10
    assert len(ds.docs) < 120


def test_hotpotqa_doc_text_is_title_newline_joined_sentences(tmp_path: Path) -> None:
    record = {
        "_id": "x",
        "question": "q?",
        "answer": "a",
        "context": [["T", ["One.", " Two."]]],
    }
    ds = load_hotpotqa(_write(tmp_path, [record]))
    assert ds.docs == ("T\nOne. Two.",)


# -- dispatch and cache --------------------------------------------------------


@pytest.mark.parametrize("name", QA_DATASETS)
def test_load_qa_dispatches_by_name(name: str) -> None:
    path = SQUAD if name == "squad" else HOTPOT
    assert load_qa(name, path).name == name


def test_load_qa_rejects_an_unknown_dataset() -> None:
    with pytest.raises(RulerUsageError) as info:
        load_qa("triviaqa", SQUAD)
    assert info.value.parameter == "dataset"
    assert "squad" in info.value.fix and "hotpotqa" in info.value.fix


def test_parsed_datasets_are_cached_until_the_file_changes(tmp_path: Path) -> None:
    path = tmp_path / "squad.json"
    path.write_bytes(SQUAD.read_bytes())
    first = load_squad(path)
    assert load_squad(str(path)) is first
    assert load_squad(tmp_path / "." / "squad.json") is first  # same resolved file
    assert load_qa("squad", path, cache=False) is not first

    edited = json.loads(path.read_text())
    edited["data"] = edited["data"][:1]
    path.write_text(json.dumps(edited))
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    second = load_squad(path)
    assert second is not first and len(second.items) < len(first.items)


# -- errors --------------------------------------------------------------------

_SQUAD_CASES: dict[str, tuple[Any, str]] = {
    "invalid json": ('{"data": [', "not valid JSON"),
    "list at top": ([{"question": "q"}], "HotpotQA"),
    "string at top": ('"hello"', "top level is a str"),
    "no data": ({"version": "v2.0"}, "has no 'data'"),
    "no paragraphs": ({"data": [{"title": "t"}]}, "data[0] has no 'paragraphs'"),
    "no context": (
        {"data": [{"paragraphs": [{"qas": []}]}]},
        "data[0].paragraphs[0] has no 'context'",
    ),
    "no question": (
        _squad_doc([_para("c", {"id": "1", "answers": [], "is_impossible": False})]),
        "data[0].paragraphs[0].qas[0] has no 'question'",
    ),
    "no answers": (
        _squad_doc([_para("c", _qa("q?"))]),
        "answerable but has no answers",
    ),
    "only impossible": (
        _squad_doc([_para("c", _qa("q?", impossible=True))]),
        "no answerable questions",
    ),
    "context not a string": (
        {"data": [{"paragraphs": [{"context": 3, "qas": []}]}]},
        "'context' of type int, expected str",
    ),
}

_HOTPOT_CASES: dict[str, tuple[Any, str]] = {
    "invalid json": ("[{", "not valid JSON"),
    "object at top": ({"version": "v2.0", "data": []}, "looks like a SQuAD file"),
    "empty": ([], "no questions"),
    "no question": (
        [{"_id": "a", "answer": "x", "context": [["T", ["s"]]]}] * 13,
        "record 0 (_id 'a') has no 'question'",
    ),
    "twelfth record broken": (
        [{"question": "q", "answer": "x", "context": [["T", ["s"]]]}] * 12
        + [{"answer": "x"}],
        "record 12 has no 'question'",
    ),
    "no answer": (
        [{"question": "q", "context": [["T", ["s"]]]}],
        "record 0 has no 'answer'",
    ),
    "bad pair": (
        [{"question": "q", "answer": "x", "context": [["T", "not a list"]]}],
        "record 0 context[0] is not a [title, [sentences...]] pair",
    ),
    "empty context": (
        [{"question": "q", "answer": "x", "context": []}],
        "empty 'context'",
    ),
}


def _assert_data_error(
    info: pytest.ExceptionInfo[RulerDataError], name: str, value: str, problem: str
) -> None:
    err = info.value
    option = "--ruler-squad" if name == "squad" else "--ruler-hotpotqa"
    assert err.parameter == option
    assert err.value == value
    assert problem in err.fix
    assert f"pytest-ruler download {name}" in err.fix
    message = str(err)
    assert message.startswith(f"{option}={value!r} is invalid: ")
    assert problem in message
    # one clear error: no chained traceback behind it
    assert err.__cause__ is None
    assert err.__context__ is None or err.__suppress_context__


@pytest.mark.parametrize("case", list(_SQUAD_CASES))
def test_squad_errors_name_option_path_problem_and_fix(
    tmp_path: Path, case: str
) -> None:
    payload, problem = _SQUAD_CASES[case]
    path = _write(tmp_path, payload)
    with pytest.raises(RulerDataError) as info:
        load_squad(path)
    _assert_data_error(info, "squad", str(path), problem)


@pytest.mark.parametrize("case", list(_HOTPOT_CASES))
def test_hotpotqa_errors_name_option_path_problem_and_fix(
    tmp_path: Path, case: str
) -> None:
    payload, problem = _HOTPOT_CASES[case]
    path = _write(tmp_path, payload)
    with pytest.raises(RulerDataError) as info:
        load_hotpotqa(path)
    _assert_data_error(info, "hotpotqa", str(path), problem)


@pytest.mark.parametrize("name", QA_DATASETS)
def test_missing_file_says_how_to_get_it(tmp_path: Path, name: str) -> None:
    path = tmp_path / "nope.json"
    with pytest.raises(RulerDataError) as info:
        load_qa(name, path)
    _assert_data_error(info, name, str(path), "no such file")


def test_directory_and_binary_files_are_data_errors(tmp_path: Path) -> None:
    with pytest.raises(RulerDataError) as info:
        load_squad(tmp_path)
    _assert_data_error(info, "squad", str(tmp_path), "is a directory")

    binary = tmp_path / "b.json"
    binary.write_bytes(b"\xff\xfe\x00\x81garbage")
    with pytest.raises(RulerDataError) as info:
        load_squad(binary)
    assert info.value.parameter == "--ruler-squad"
