"""bench/harness.py: the rule that withholds a ratio the machine's load can explain (pure), the
committed results that follow it, and one real arm (the scripted test engine, a few items) run
and read through the harness."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from bench import harness
from bench.harness import Arm, ArmFailed, Ratio, load_reason, pytest_command, ratio, run_arm

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "bench" / "results"


def run(name: str, before: float, after: float | None = None) -> dict:
    return {"arm": name, "load_before": before, "load_after": before if after is None else after}


# --------------------------------------------------------------------------- the ratio rule (pure)


def test_equal_quiet_loads_give_the_ratio():
    assert ratio(30.0, 60.0, [run("a", 0.4, 1.2), run("b", 0.4, 1.1)], cores=2) == Ratio(0.5, None)
    assert ratio(1.0, 3.0, [run("a", 0.2), run("b", 0.3)], cores=2, digits=2).value == 0.33


def test_start_loads_that_differ_give_null_and_name_the_loads():
    got = ratio(30.0, 60.0, [run("whole", 0.2, 1.9), run("shard1", 1.6, 1.8)], cores=2, tolerance=1.0)
    assert got.value is None
    assert "differ by 1.40 (0.20 to 1.60), more than the tolerance 1.0" in got.reason
    assert "whole 0.20 -> 1.90, shard1 1.60 -> 1.80" in got.reason  # every arm's loads, at start and end
    assert "above the 2 cores" not in got.reason


def test_a_start_load_above_the_cores_gives_null_even_when_the_arms_agree():
    got = ratio(30.0, 60.0, [run("a", 5.1, 5.0), run("b", 5.3, 5.2)], cores=2)
    assert got.value is None
    assert got.reason.startswith("the 1-minute load average was above the 2 cores when an arm started (a 5.10, b 5.30)")
    assert "differ" not in got.reason  # 0.2 apart: within the tolerance
    assert ratio(30.0, 60.0, [run("a", 5.1), run("b", 5.3)], cores=8).value == 0.5  # 8 cores: not overloaded


def test_the_limits_are_inclusive_and_the_end_load_decides_nothing():
    # a spread of exactly the tolerance and a load of exactly the core count keep the ratio
    assert ratio(2.0, 1.0, [run("a", 1.0), run("b", 2.0)], cores=2, tolerance=1.0).value == 2.0
    # an arm's own threads lift the load at its end (4 busy threads on 2 cores): not other work
    assert ratio(2.0, 1.0, [run("n0", 0.9, 1.8), run("n2_every_core", 1.3, 3.6)], cores=2).value == 2.0
    assert ratio(2.0, 1.0, [run("a", 0.5), run("b", 0.8)], cores=2, tolerance=0.2).value is None


def test_runs_and_their_records_are_read_alike():
    arm = Arm("a", ["x"], 0, 10.0, 3.0, 3.5, "")
    assert load_reason([arm, run("b", 0.5)], cores=2) == load_reason([arm.record(), run("b", 0.5)], cores=2)
    assert "a 3.00 -> 3.50" in load_reason([arm], cores=2)
    assert load_reason([arm], cores=4) is None


@pytest.mark.parametrize("call, words", [
    (lambda: ratio(1.0, 0.0, [run("a", 0.1)], cores=2), "ratio(denominator=0.0)"),
    (lambda: load_reason([], cores=2), "load_reason(arms=[])"),
    (lambda: load_reason([run("a", 0.1)], cores=2, tolerance=-1), "load_reason(tolerance=-1)"),
])
def test_misuse_is_refused_by_name(call, words):
    with pytest.raises(ValueError, match=words.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[").replace("]", r"\]")):
        call()


# --------------------------------------------------------------------------- the committed results follow the rule


def test_the_committed_shards_ratios_are_null_with_the_recorded_loads():
    data = json.loads((RESULTS / "shards.json").read_text())
    loads = data["load_1min_at_start_and_end"]
    assert data["ratio_shards_sum_vs_whole"] is None and data["ratio_slower_shard_vs_whole_computed"] is None
    reason = data["ratio_withheld_because"]
    # what the rule says of those loads on the machine's 2 cores, and every recorded load named
    assert reason.startswith(load_reason([run(name, *pair) for name, pair in loads.items()], cores=2, tolerance=1.0))
    for name, (start, end) in loads.items():
        assert f"{name} {start:.2f} -> {end:.2f}" in reason


@pytest.mark.parametrize("name", ["xdist_threads.json", "xdist_threads_epyc.json"])
def test_each_committed_xdist_ratio_is_what_the_rule_keeps(name):
    from bench.xdist_threads import summarize

    data = json.loads((RESULTS / name).read_text())
    again = summarize(data["runs"], data["settings"]["load_tolerance"], cores=data["machine"]["cpus"])
    assert again["ratio_withheld_because"] is None
    for key in ("n2_over_n0", "n2_every_core_over_n0", "n2_fixed_share_over_n0"):
        assert again.get(key) == data["summary"].get(key)


def test_a_committed_xdist_ratio_under_another_load_is_withheld():
    from bench.xdist_threads import summarize

    data = json.loads((RESULTS / "xdist_threads.json").read_text())
    # the same runs under another machine's load: withheld, with the reason
    busy = [dict(r, load_before=r["load_before"] + 3 * i) for i, r in enumerate(data["runs"])]
    withheld = summarize(busy, 1.0, cores=2)
    assert withheld["n2_over_n0"] is None and withheld["n2_every_core_over_n0"] is None
    assert "n0 0.86 -> 1.77" in withheld["ratio_withheld_because"]


# --------------------------------------------------------------------------- running an arm


def test_an_arm_gets_its_environment_and_cwd(tmp_path, monkeypatch):
    monkeypatch.setenv("BENCH_GONE", "x")
    monkeypatch.setenv("PYTHONPATH", "/elsewhere")
    show = "import json, os; print(json.dumps([os.getcwd(), os.environ.get('BENCH_SET'), 'BENCH_GONE' in os.environ, os.environ['PYTHONPATH']]))"
    arm = run_arm("env", [sys.executable, "-c", show], cwd=tmp_path, env={"BENCH_SET": "1"}, unset=["BENCH_GONE"], timeout=60)
    cwd, set_, gone, path = json.loads(arm.output)
    assert (Path(cwd), set_, gone) == (tmp_path, "1", False)
    assert path == f"{ROOT}{os.pathsep}/elsewhere"  # the arm measures this checkout, the inherited path after it
    assert arm.rc == 0 and arm.wall_s > 0 and arm.load_before >= 0 and arm.load_after >= 0
    assert (tmp_path / "env.log").read_text() == arm.output
    own = run_arm("own", [sys.executable, "-c", "import os; print(os.environ['PYTHONPATH'])"], cwd=tmp_path,
                  env={"PYTHONPATH": "/nowhere"}, timeout=60)
    assert own.output.strip() == "/nowhere"  # a PYTHONPATH the caller sets is kept as given


@pytest.mark.parametrize("code, report, ok, words", [
    ("import time; time.sleep(30)", None, (0, 1), "killed after the timeout of 1 s"),
    ("raise SystemExit(3)", None, (0, 1), "exit 3 (a result exits 0 or 1)"),
    ("pass", "r.json", (0, 1), "exit 0, it wrote no"),
    ("raise SystemExit(5)", "r.json", None, "exit 5, it wrote no"),
])
def test_an_arm_without_a_result_stops_the_bench_with_its_log(tmp_path, code, report, ok, words):
    with pytest.raises(ArmFailed) as failed:
        run_arm("broken", [sys.executable, "-c", code], cwd=tmp_path, report=report, ok_codes=ok, timeout=1)
    assert f"arm broken: {words}" in str(failed.value) and str(tmp_path / "broken.log") in str(failed.value)
    assert isinstance(failed.value, SystemExit)  # a bench script ends with the message, as before the harness


def test_a_timeout_must_be_positive(tmp_path):
    with pytest.raises(ValueError, match=r"run_arm\(timeout=0\) for arm 'x'"):
        run_arm("x", [sys.executable, "-c", "pass"], cwd=tmp_path, timeout=0)


def test_a_scripted_plugin_run_is_run_and_read_through_the_harness(tmp_path):
    """End to end: a fresh pytest process with the plugin on the scripted test engine (a few items)."""
    args = ["--ruler-only", "--ruler-model=smollm2-135m", "--ruler-backend=scripted", "--ruler-tasks=niah_single_1,vt,cwe",
            "--ruler-lengths=1k", "--ruler-samples=2", "--ruler-no-cache"]
    arm = run_arm("scripted", pytest_command(args, "r.json"), cwd=tmp_path, report="r.json", timeout=120)
    assert arm.rc == 1  # the oracle answers niah and vt; cwe gets an empty answer and fails: a result, not a crash
    assert arm.report["backend"] == "scripted" and len(arm.items) == 3
    assert arm.scores() == {"niah_single_1@1024/0": 100.0, "vt@1024/0": 100.0, "cwe@1024/0": 0.0}
    assert arm.samples_used == 6
    assert arm.summary["native"]["effective_length"] == arm.report["summary"]["native"]["effective_length"]
    assert len(arm.predictions()) == 6
    assert arm.processor == harness.machine()["processor"] and arm.processor["model"]
    record = arm.record()
    assert list(record) == ["arm", "wall_s", "load_before", "load_after", "exit"] and record["exit"] == 1
    assert "ruler verdict" in (tmp_path / "scripted.log").read_text()
