"""The MRCR pack in a run, on records the tests make (JSON Lines and parquet): items, grade, marks, the
report's aggregates, and what is refused at start. Runs use a scripted test engine, not a model."""

from __future__ import annotations

import json

import pytest

from pytest_ruler.report.schema import build_schema, validate_report
from tests.mrcr_data import make_records, write_jsonl, write_parquet

from .helpers import XDIST, report, run

# a test engine (not a model) that reads MRCR's question out of the messages it is sent: right below
# 1500 prompt tokens; above, it gives the first of the repeated requests' answers (a wrong needle),
# which the grade scores by similarity, unless the first is the one asked. It writes down what it
# was sent, to check that no answer reaches it.
READER = '''
import json, re
from pytest_ruler.engines.scripted import ScriptedEngine
from pytest_ruler.engines.base import Completion

ASK = re.compile(r"Prepend (\\S+) to the (\\d+)(?:st|nd|rd|th) \\(1 indexed\\) (.+)\\. Do not include any other text in your response\\.")


def mrcr_oracle(messages):
    found = ASK.fullmatch(messages[-1]["content"])
    if not found:
        return ""
    answers = [messages[i + 1]["content"] for i in range(0, len(messages) - 2, 2) if messages[i]["content"] == "write a " + found.group(3)]
    return found.group(1) + answers[int(found.group(2)) - 1]


class MrcrReader(ScriptedEngine):
    name = "mrcr-reader"

    @staticmethod
    def describe(config):
        return {"engine": "mrcr-reader (test engine, not a model)"}

    def generate(self, requests, on_result=None):
        out = []
        with open("sent.jsonl", "a") as seen:
            for r in requests:
                messages = [dict(m) for m in (r.messages or ())]
                seen.write(json.dumps({"prompt": r.prompt, "messages": messages}) + "\\n")
                text = mrcr_oracle(messages)
                if text and len(r.prompt_ids) >= 1500:
                    found = ASK.fullmatch(messages[-1]["content"])
                    first = next(messages[i + 1]["content"] for i in range(0, len(messages) - 2, 2)
                                 if messages[i]["content"] == "write a " + found.group(3))
                    text = found.group(1) + first
                out.append(Completion(text, len(r.prompt_ids), 10, "stop"))
        for i, c in enumerate(out):
            if on_result:
                on_result(i, c)
        return out


def pytest_ruler_register(registry):
    registry.engine("mrcr-reader", MrcrReader)
'''
ARGS = ["--ruler-model=smollm2-135m", "--ruler-backend=mrcr-reader", "--ruler-no-cache", "--ruler-tasks=mrcr",
        "--ruler-lengths=1k,2k,4k", "--ruler-samples=2"]


def _records(pytester, kind="jsonl"):
    rows = make_records(per_size=2)
    for row in rows[::7]:  # some answers unlike their chat: the engine must never see them
        row["answer"] = row["random_string_to_prepend"] + "SECRET ANSWER " + row["answer"][len(row["random_string_to_prepend"]):]
    path = pytester.path / f"records.{kind}"
    (write_jsonl if kind == "jsonl" else write_parquet)(path, rows)
    return rows, path


def _setup(pytester):
    pytester.makeconftest(READER)


@pytest.mark.parametrize("xdist", XDIST)
def test_the_pack_end_to_end(pytester, xdist):
    _setup(pytester)
    rows, path = _records(pytester)
    result = run(pytester, *ARGS, f"--ruler-mrcr={path}", "--ruler-report=r.json", *xdist)
    out = result.stdout.str()
    data = report(pytester)
    assert validate_report(data, strict=True, schema=build_schema()) == []
    items = {(i["task"], i["length"]): i for i in data["items"]}
    assert set(items) == {(f"mrcr_{n}", L) for n in (2, 4, 8) for L in (1024, 2048, 4096)}
    for (task, length), item in items.items():
        assert item["samples"] == 2 and item["nulls"] == 0, (task, length)
        for p in item["predictions"]:
            answer, prefix = p["answers"]
            assert p["prediction"].startswith(prefix)
            if length <= 1024 and "SECRET" not in answer:
                assert p["score"] == 1.0  # read right: the grade of the answer itself
    assert items[("mrcr_8", 4096)]["score"] < 100.0  # the wrong needle above 1500 tokens: a similarity, not 0 or 1
    # the pack's default marks, with their source; the report's aggregates
    assert data["task_thresholds"] == {"mrcr_2": 30.0, "mrcr_4": 15.0, "mrcr_8": 10.0}
    mrcr = data["mrcr"]
    assert "vLLM" in mrcr["marks"]["source"] and "temperature 1" in mrcr["protocol"] and "greedily" in mrcr["protocol"]
    eight = mrcr["needles"]["8"]
    per = [eight["per_length"][str(L)]["score"] for L in (1024, 2048, 4096)]
    assert per == [items[("mrcr_8", L)]["score"] for L in (1024, 2048, 4096)]
    assert eight["mean"] == pytest.approx(sum(per) / 3, abs=1e-4) and eight["label"] == "MRCR 8-needle, 1K–4K"
    assert eight["auc_log_length"] == pytest.approx((per[0] + per[1]) / 4 + (per[1] + per[2]) / 4, abs=1e-4)  # equal log2 steps
    assert "mrcr (3/3 tasks)" in out  # the pack's row in Table 3
    # no answer reached the engine: only the chats (the records' own text) did
    sent = [json.loads(line) for line in (pytester.path / "sent.jsonl").read_text().splitlines()]
    assert len(sent) == 18 and not any("SECRET" in s["prompt"] or "SECRET" in json.dumps(s["messages"]) for s in sent)
    assert all(s["messages"][-1]["role"] == "user" for s in sent)


def test_parquet_records_score_as_jsonl(pytester):
    _setup(pytester)
    _, js = _records(pytester, "jsonl")
    _, pq = _records(pytester, "parquet")
    run(pytester, *ARGS, f"--ruler-mrcr={js}", "--ruler-report=a.json")
    run(pytester, *ARGS, f"--ruler-mrcr={pq}", "--ruler-report=b.json")
    a, b = report(pytester, "a.json"), report(pytester, "b.json")
    assert [(i["task"], i["length"], i["score"]) for i in a["items"]] == [(i["task"], i["length"], i["score"]) for i in b["items"]]


def test_a_short_bin_says_so_and_runs_what_it_has(pytester):
    _setup(pytester)
    _, path = _records(pytester)
    result = run(pytester, *ARGS[:-2], "--ruler-tasks=mrcr_2", "--ruler-lengths=2k", "--ruler-samples=9", f"--ruler-mrcr={path}",
                 "--ruler-report=r.json")
    data = report(pytester)
    item = data["items"][0]
    assert 0 < item["samples"] < 9
    said = f"the bin holds {item['samples']} of the 9 samples asked"
    assert said in result.stdout.str() and any(said in w for w in data["warnings"])


def test_marks_from_the_ini_and_the_threshold_option(pytester):
    _setup(pytester)
    _, path = _records(pytester)
    pytester.makeini("[pytest]\nruler_task_thresholds =\n    mrcr_8 = 5\n")
    run(pytester, *ARGS, "--ruler-lengths=1k", f"--ruler-mrcr={path}", "--ruler-report=r.json")
    assert report(pytester)["task_thresholds"] == {"mrcr_2": 30.0, "mrcr_4": 15.0, "mrcr_8": 5.0}
    run(pytester, *ARGS, "--ruler-lengths=1k", f"--ruler-mrcr={path}", "--ruler-threshold=50", "--ruler-report=s.json")
    data = report(pytester, "s.json")
    assert data["task_thresholds"] == {"mrcr_8": 5.0} and {i["threshold"] for i in data["items"] if i["task"] != "mrcr_8"} == {50.0}


@pytest.mark.parametrize(("args", "said"), [
    ([], "pytest-ruler download mrcr"),  # no data: the option and the command
    (["--ruler-chat-template=none", "MRCR"], "base prompts"),
    (["--ruler-mapreduce", "MRCR"], "map-reduce is not defined for the MRCR tasks"),
    (["--ruler-lengths=128", "MRCR"], "falls in the bin of mrcr_2 at 128"),
    (["--ruler-lengths=2k", "--ruler-max-model-len=2100", "MRCR"], "over the context of 2100"),
])
def test_start_up_refusals(pytester, monkeypatch, args, said):
    _setup(pytester)
    monkeypatch.setenv("RULER_DATA_DIR", str(pytester.path / "no-data"))
    _, path = _records(pytester)
    args = [f"--ruler-mrcr={path}" if a == "MRCR" else a for a in args]
    result = run(pytester, *ARGS, *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert said in err, err
    if not args:
        assert "--ruler-mrcr" in err


def test_shards_merge_into_the_whole_runs_aggregates(pytester):
    from pytest_ruler.cli import main

    _setup(pytester)
    _, path = _records(pytester)
    run(pytester, *ARGS, f"--ruler-mrcr={path}", "--ruler-report=whole.json")
    for k in (1, 2):
        run(pytester, *ARGS, f"--ruler-mrcr={path}", f"--ruler-shard={k}/2", f"--ruler-report=s{k}.json")
    assert report(pytester, "s1.json")["mrcr"] != report(pytester, "whole.json")["mrcr"]  # a shard holds a share of the cells
    assert main(["merge", str(pytester.path / "s1.json"), str(pytester.path / "s2.json"), "--out", str(pytester.path / "m.json")]) == 0
    assert report(pytester, "m.json")["mrcr"] == report(pytester, "whole.json")["mrcr"]
