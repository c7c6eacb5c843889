"""--ruler-stop-when-decided on the scripted engine: fewer items, the same verdict and exit code as the full run.

A stand-in model perfect up to 3,000 tokens and blind beyond (``blind_above=3000``: its prompts
are built and sent like a real model's, so its tokens count)."""

from __future__ import annotations

import pytest

from pytest_ruler.cli import main

from .helpers import SCRIPTED, XDIST, report, run

GRID = [*SCRIPTED, "--ruler-tasks=niah_single_1,vt", "--ruler-lengths=1k,2k,4k,8k", "--ruler-samples=4",
        "--ruler-engine-option=blind_above=3000", "--ruler-report=r.json"]


def _last_verdict_line(result) -> str:
    return [line for line in result.stdout.lines if line.startswith("ruler verdict: ")][-1]


def _both(pytester, *args):
    """(full run: exit code, report), (planned run: exit code, report, result)."""
    full = run(pytester, *GRID, *args)
    full_report = report(pytester)
    planned = run(pytester, *GRID, *args, "--ruler-stop-when-decided")
    return (full.ret, full_report), (planned.ret, report(pytester), planned)


@pytest.mark.parametrize("xdist", XDIST)
@pytest.mark.parametrize("gate, passed", [("2k", True), ("4k", False)])
def test_a_planned_point_gate_measures_fewer_items_for_the_same_verdict(pytester, capsys, xdist, gate, passed):
    (full_code, full), (code, planned, result) = _both(pytester, f"--ruler-require-effective-length={gate}", *xdist)
    assert code == full_code == (0 if passed else 1)
    assert planned["verdict"]["status"] == full["verdict"]["status"] == ("passed" if passed else "failed")
    assert len(planned["items"]) < len(full["items"]) == 8
    assert planned["cost"]["prompt_tokens"] < full["cost"]["prompt_tokens"]
    assert planned["cost"]["items"] == len(planned["items"])
    # the items left out: skipped with the reason, never counted as measured, and said in the verdict
    skipped = planned["skipped"]
    assert len(skipped) + len(planned["items"]) == 8 and planned["items_finished"] == 8 and planned["complete"]
    assert all(s["reason"].startswith("not measured (decided without it): ") for s in skipped)
    assert not any(i["length"] < int(gate[0]) * 1024 for i in planned["items"])  # the point gate reads no shorter length
    assert "planned run (--ruler-stop-when-decided): " in planned["verdict"]["line"]
    seen = result.parseoutcomes()  # pytest shows them as skipped; the verdict is one more report (ruler::verdict)
    assert seen["skipped"] == len(skipped) and seen.get("failed", 0) == (0 if passed else 1)
    assert seen.get("passed", 0) + seen.get("xfailed", 0) + seen.get("failed", 0) == len(planned["items"]) + 1
    out = result.stdout.str()
    assert "--ruler-stop-when-decided: point gate at" in out
    if xdist:  # a worker sees only its own results: only the lengths the gate never reads are left out
        required = {"2k": 2048, "4k": 4096}[gate]
        assert "under xdist" in out and {s["length"] for s in skipped} == {L for L in (1024, 2048) if L < required}
    elif passed:  # 2K passes: 4K and 8K are not needed
        assert {i["length"] for i in planned["items"]} == {2048}
    # the JSON's verdict, the terminal's last line and `pytest-ruler gate` on the report agree
    assert _last_verdict_line(result) == planned["verdict"]["line"]
    capsys.readouterr()
    assert main(["gate", str(pytester.path / "r.json"), f"--require-effective-length={gate}"]) == code
    assert planned["verdict"]["line"] in capsys.readouterr().out


def test_a_planned_bound_gate_stops_at_the_first_length_not_shown_above_the_mark(pytester):
    # 4 samples per cell cannot show a length above 85.6 at 95 %: the bound is below 1K, decided at 1K
    (full_code, full), (code, planned, _) = _both(pytester, "--ruler-require-effective-length=2k", "--ruler-gate-confidence=0.95")
    assert code == full_code == 1 and planned["verdict"]["status"] == full["verdict"]["status"] == "failed"
    assert {i["length"] for i in planned["items"]} == {1024}
    assert any("1K is not shown above the mark" in s["reason"] for s in planned["skipped"])


def test_with_a_baseline_the_option_says_it_runs_the_full_set(pytester):
    run(pytester, *GRID, "--ruler-report=base.json")
    result = run(pytester, *GRID, "--ruler-baseline=base.json", "--ruler-stop-when-decided")
    assert "every item runs (planning a baseline comparison is not supported yet" in result.stdout.str()
    assert len(report(pytester)["items"]) == 8 and report(pytester)["skipped"] == []


def test_the_cost_is_in_every_measured_item_and_adds_up(pytester):
    run(pytester, *GRID)
    data = report(pytester)
    for item in data["items"]:
        assert set(item["cost"]) == {"prompt_tokens", "completion_tokens", "engine_seconds"}
        assert item["cost"]["prompt_tokens"] == item["prompt_tokens"] > 0
    assert data["cost"]["prompt_tokens"] == sum(i["cost"]["prompt_tokens"] for i in data["items"])
    assert data["cost"]["completion_tokens"] == sum(i["cost"]["completion_tokens"] for i in data["items"]) > 0


def test_the_ini_key_turns_it_on(pytester):
    pytester.makeini("[pytest]\nruler_stop_when_decided = true\n")
    result = run(pytester, *GRID, "--ruler-require-effective-length=2k")
    assert result.ret == 0 and {i["length"] for i in report(pytester)["items"]} == {2048}
