"""Fresh reports meet the published schema (``pytest-ruler schema``) strictly: every field a run writes
is described there, with its type. The runs use the scripted test engine and the stub server (rule-based
plumbing, not models) and cover the report's optional parts: map-reduce, a depth sweep, a gate, a
baseline, a relative mark, a thinking stand-in, endpoints, a shard and a merged report."""

from __future__ import annotations

import json

import pytest

from pytest_ruler.cli import main
from pytest_ruler.report.schema import validate_report

from ..servers.stub_openai import StubServer, completion
from .helpers import SCRIPTED, run

pytest.importorskip("jsonschema")  # the test extra

BASE = [*SCRIPTED, "--ruler-tasks=niah_single_1,vt", "--ruler-lengths=1k,2k", "--ruler-samples=2"]


def _valid(pytester, name: str) -> dict:
    data = json.loads((pytester.path / name).read_text(encoding="utf-8"))
    assert data["schema"] == "pytest-ruler/1"
    assert validate_report(data, strict=True) == [], name
    return data


def test_reports_of_plugin_runs_validate_strictly(pytester):
    run(pytester, *BASE, "--ruler-mapreduce", "--ruler-depths=0,1", "--ruler-require-effective-length=1k", "--ruler-report=a.json")
    a = _valid(pytester, "a.json")
    assert a["mapreduce_vs_native"] and any(it["depth_scores"] for it in a["items"]) and a["gate"]["passed"] is True and a["verdict"]
    assert any(it["mode"] == "mapreduce" and it["calls"] for it in a["items"])

    run(pytester, *BASE, "--ruler-baseline=a.json", "--ruler-threshold=rel:0.85", "--ruler-report=b.json")
    b = _valid(pytester, "b.json")
    assert b["baseline"]["comparisons"] and b["relative_threshold"]["fraction"] == 0.85

    run(pytester, *BASE, "--ruler-engine-option=mode=thinking", "--ruler-think-budget=256", "--ruler-report=c.json")
    c = _valid(pytester, "c.json")
    assert c["items"][0]["thinking"] and c["items"][0]["predictions"][0]["outcome"]


def test_reports_of_shards_and_their_merge_validate_strictly(pytester, capsys):
    for k in (1, 2):
        run(pytester, *BASE, f"--ruler-shard={k}/2", f"--ruler-report=s{k}.json")
        assert _valid(pytester, f"s{k}.json")["shard"]["count"] == 2
    assert main(["merge", str(pytester.path / "s1.json"), str(pytester.path / "s2.json"), "--out", str(pytester.path / "m.json")]) == 0
    assert _valid(pytester, "m.json")["shards"]["merged"] == [1, 2]


def test_a_report_over_endpoints_validates_strictly(pytester):
    from pytest_ruler.engines.scripted import oracle_answer

    def answer(call):
        if call.route != "/v1/completions" or call.body.get("max_tokens", 1) <= 1:
            return None
        return 200, completion(oracle_answer(call.prompt))

    with StubServer(answer) as server:
        run(pytester, "--ruler-model=stub-model", "--ruler-backend=openai", f"--ruler-base-url={server.base_url}",
            "--ruler-tokenizer=smollm2-135m", "--ruler-engine-option=prompt_format=text", "--ruler-tasks=niah_single_1",
            "--ruler-lengths=1k", "--ruler-samples=2", "--ruler-no-cache", "--ruler-report=d.json")
    d = _valid(pytester, "d.json")
    assert d["endpoints"] and d["items"][0]["endpoints"]
