"""Thinking models through the plugin, with the scripted thinking stand-in (``mode=thinking``: it
thinks 200 tokens and then answers as the oracle does; a test engine, not a model).

Under the tasks' own answer budgets (niah 128 tokens, vt 30) it is cut off inside its thinking:
every cell fails, is marked §, its outcomes are counted under the table and in the JSON, and
the gate names the budget and --ruler-think-budget. With --ruler-think-budget=256 it thinks,
then answers after its thinking with RULER's answer prefix, and passes. With and without -n 2.
"""

from __future__ import annotations

import pytest

from .helpers import SCRIPTED, XDIST, report, run

THINKING = [*SCRIPTED, "--ruler-engine-option=mode=thinking", "--ruler-tasks=niah_single_1,vt", "--ruler-lengths=1k,2k",
            "--ruler-samples=3", "--ruler-require-effective-length=1k", "--ruler-report=r.json", "--ruler-markdown=t.md"]
GATE_CAUSE = "a token budget, not the model, caused these failures"


@pytest.mark.parametrize("xdist", XDIST)
def test_a_thinking_stand_in_fails_under_the_task_budget_and_passes_with_a_think_budget(pytester, xdist):
    result = run(pytester, *THINKING, *xdist)
    out = result.stdout.str()
    result.assert_outcomes(xfailed=4, failed=1)  # the items are measurements under a gate; the verdict fails
    rows = {ln.split()[0]: ln for ln in out.splitlines() if ln.startswith(("niah_single_1 ", "vt ", "Total "))}
    assert rows["niah_single_1"].split()[1:3] == ["0.0§", "0.0§"] and rows["vt"].split()[1:3] == ["0.0§", "0.0§"]
    assert "  niah_single_1@1K: 0/3/0/0/0;" in out and "  vt@2K: 0/3/0/0/0;" in out
    gate_line = next(ln for ln in out.splitlines() if ln.startswith("gate FAILED"))
    assert GATE_CAUSE in gate_line and "pass --ruler-think-budget=N" in gate_line and "12 failing samples" in gate_line
    assert "ran out of tokens inside their thinking" in out  # each failing item's message too
    data = report(pytester)
    assert data["gate"]["passed"] is False and "--ruler-think-budget" in data["gate"]["reason"]
    for item in data["items"]:
        assert item["thinking"]["outcomes"] == {"answered": 0, "thinking_truncated": 3, "answer_truncated": 0,
                                                "empty_answer": 0, "end_missing": 0}
        assert item["thinking"]["budget_limited"] is True and item["thinking"]["think_budget"] is None
        assert {p["outcome"] for p in item["predictions"]} == {"thinking_truncated"}
        assert all(p["finish_reason"] == "length" and p["thinking_tokens"] > 0 for p in item["predictions"])
    assert data["summary"]["native"]["outcomes"]["vt"]["1024"]["budget_limited"] is True
    md = (pytester.path / "t.md").read_text()
    assert "0.0§" in md and "vt@1K: 0/3/0/0/0" in md

    result = run(pytester, *THINKING, "--ruler-think-budget=256", *xdist)
    out = result.stdout.str()
    result.assert_outcomes(passed=5)  # four items and the verdict
    assert "ruler: think budget 256 tokens (--ruler-think-budget)" in out
    assert "gate PASSED: effective length 2K (required 1K)" in out
    rows = [ln for ln in out.splitlines() if ln.startswith(("niah_single_1 ", "vt "))]
    assert len(rows) == 2 and all(ln.split()[1:3] == ["100.0", "100.0"] for ln in rows)
    assert "  niah_single_1@1K: 3/0/0/0/0;" in out
    data = report(pytester)
    for item in data["items"]:
        assert item["score"] == 100.0 and item["thinking"]["outcomes"]["answered"] == 3
        assert item["thinking"]["think_budget"] == 256 and item["thinking"]["thinking_tokens"] > 0


def test_a_rerun_with_a_think_budget_is_served_from_the_cache(pytester):
    args = [*THINKING, "--ruler-think-budget=256", "--ruler-tasks=niah_single_1", "--ruler-lengths=1k"]
    run(pytester, *args).assert_outcomes(passed=2)  # the item and the verdict (a gate is asked)
    result = run(pytester, *args)
    result.assert_outcomes(passed=2)
    assert "3 of 3 predictions from the cache" in result.stdout.str()
    assert report(pytester)["items"][0]["thinking"]["outcomes"]["answered"] == 3


def test_map_reduce_calls_get_the_same_split(pytester):
    result = run(pytester, *SCRIPTED, "--ruler-engine-option=mode=thinking", "--ruler-tasks=niah_single_1", "--ruler-lengths=2k",
                 "--ruler-samples=2", "--ruler-mapreduce", "--ruler-mapreduce-chunk=1k", "--ruler-think-budget=256",
                 "--ruler-report=r.json")
    data = report(pytester)
    twin = next(i for i in data["items"] if i["mode"] == "mapreduce")
    assert {c["stage"] for c in twin["calls"]} >= {"map", "reduce"}
    assert all(c["outcome"] == "answered" and c["thinking_tokens"] > 0 for c in twin["calls"]), twin["calls"]
    assert twin["thinking"]["outcomes"]["answered"] == len(twin["calls"])
    assert twin["score"] == 100.0, result.stdout.str()


def test_template_kwargs_are_shown_in_the_header_and_refused_without_a_template(pytester):
    result = run(pytester, *SCRIPTED, "--ruler-tasks=vt", "--ruler-lengths=1k", "--ruler-samples=1",
                 "--ruler-chat-template-kwargs=enable_thinking=false", "--ruler-chat-template-kwargs=effort=low")
    assert "ruler: chat template kwargs (--ruler-chat-template-kwargs): effort=\"low\", enable_thinking=false" in result.stdout.str()
    result = run(pytester, *SCRIPTED, "--ruler-chat-template=none", "--ruler-chat-template-kwargs=enable_thinking=false")
    err = result.stderr.str()
    assert result.ret != 0 and "--ruler-chat-template-kwargs" in err and "--ruler-chat-template=none" in err
    assert "Traceback" not in err
