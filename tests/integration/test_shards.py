"""--ruler-shard=i/N and ``pytest-ruler merge``, run as users run them (pytester, the scripted test
engine: rule-based plumbing, not a model): two shards merged equal the unsharded run, with and
without -n 2; the selection is the same whatever the order or the workers; a shard's gate is NOT
DECIDED; xdist gateways with their own environment (the multi-host recipe, --tx ... //env:...)
give the single-process report."""

from __future__ import annotations

import json

import pytest

from pytest_ruler.cli import main

from .helpers import SCRIPTED, XDIST, report, run

# the oracle answers niah and vt; cwe gets an empty answer (0): items that pass and items that fail
SUITE = [*SCRIPTED, "--ruler-tasks=niah_single_1,vt,cwe,niah_multikey_1", "--ruler-lengths=1k,2k", "--ruler-samples=2",
         "--ruler-no-cache"]


def _same_run(a: dict, b: dict) -> None:
    """Same items (every field but the wall time: predictions, scores, per-sample scores) and the same summary."""
    def items(data):
        return [{k: v for k, v in it.items() if k != "seconds"} for it in data["items"]]

    assert items(a) == items(b) and a["summary"] == b["summary"]
    assert a.get("mapreduce_vs_native") == b.get("mapreduce_vs_native")


def _cells(data: dict) -> set:
    return {(i["task"], i["length"], i["seed"], i["mode"]) for i in data["items"]}


@pytest.mark.parametrize("xdist", XDIST)
def test_two_shards_merged_equal_the_unsharded_run(pytester, capsys, xdist):
    run(pytester, *SUITE, "--ruler-report=whole.json").assert_outcomes(passed=6, failed=2)
    for k in (1, 2):
        result = run(pytester, *SUITE, f"--ruler-shard={k}/2", f"--ruler-report=s{k}.json", *xdist)
        out = result.stdout.str()
        assert f"ruler: shard {k}/2 (--ruler-shard)" in out
        if not xdist:  # pytest's own count of what the shard left to the other one
            assert f"{8 - len(report(pytester, f's{k}.json')['items'])} deselected" in out
    s1, s2 = report(pytester, "s1.json"), report(pytester, "s2.json")
    assert s1["items"] and s2["items"] and not _cells(s1) & _cells(s2)  # the premise: two non-empty, disjoint shards
    assert s1["shard"]["index"] == 1 and s1["shard"]["count"] == 2 and s1["shard"]["suite"]["lengths"] == [1024, 2048]
    capsys.readouterr()
    assert main(["merge", str(pytester.path / "s2.json"), str(pytester.path / "s1.json"), "--out", str(pytester.path / "m.json")]) == 0
    assert "merged shards 1/2, 2/2: 8 items" in capsys.readouterr().out
    whole, merged = report(pytester, "whole.json"), report(pytester, "m.json")
    _same_run(whole, merged)
    assert merged["complete"] and merged["items_expected"] == merged["items_finished"] == 8
    # the renderers and the gate read the merged report as a whole run's
    assert main(["gate", str(pytester.path / "m.json"), "--require-effective-length=1k"]) == 1  # cwe fails both lengths
    assert "gate FAILED: effective length below the shortest tested length" in capsys.readouterr().out


def test_the_selection_does_not_depend_on_the_order_or_the_workers(pytester):
    reordered = [a if not a.startswith("--ruler-tasks=") else "--ruler-tasks=niah_multikey_1,cwe,vt,niah_single_1" for a in SUITE]
    run(pytester, *SUITE, "--ruler-shard=1/3", "--ruler-report=a.json")
    run(pytester, *reordered, "--ruler-shard=1/3", "--ruler-report=b.json", "-n", "2")
    a, b = report(pytester, "a.json"), report(pytester, "b.json")
    assert a["items"] and _cells(a) == _cells(b)


def test_a_shard_gate_is_not_decided_until_the_shards_are_merged(pytester, capsys):
    result = run(pytester, *SCRIPTED, "--ruler-tasks=niah_single_1,vt", "--ruler-lengths=1k,2k", "--ruler-samples=1",
                 "--ruler-shard=1/2", "--ruler-require-effective-length=1k", "--ruler-report=s1.json")
    out = result.stdout.str()
    assert result.ret == 2  # its items passed; a shard decides nothing alone: not decided (the merged report's gate decides)
    assert "ruler verdict: NOT DECIDED" in out
    assert "gate NOT DECIDED: this is the report of shard 1/2 only; merge every shard's report with `pytest-ruler merge" in out
    assert report(pytester, "s1.json")["gate"]["passed"] is None
    capsys.readouterr()
    assert main(["gate", str(pytester.path / "s1.json"), "--require-effective-length=1k"]) == 2
    assert "gate NOT DECIDED: this is the report of shard 1/2" in capsys.readouterr().out


def test_merge_refuses_shards_of_different_runs_naming_the_conflict(pytester, capsys):
    base = [*SCRIPTED, "--ruler-tasks=niah_single_1,vt", "--ruler-lengths=1k,2k", "--ruler-samples=1"]
    run(pytester, *base, "--ruler-shard=1/2", "--ruler-report=s1.json")
    run(pytester, *base, "--ruler-shard=2/2", "--ruler-threshold=50", "--ruler-report=s2.json")
    run(pytester, *base, "--ruler-shard=2/2", "--ruler-lengths=1k", "--ruler-report=s2-short.json")
    capsys.readouterr()
    paths = [str(pytester.path / n) for n in ("s1.json", "s2.json")]
    assert main(["merge", *paths, "--out", str(pytester.path / "m.json")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("pytest-ruler: error: SHARD.json=") and "its threshold is 50.0" in err and "s1.json's 85.6" in err
    assert main(["merge", paths[0], str(pytester.path / "s2-short.json"), "--out", str(pytester.path / "m.json")]) == 2
    assert "its run's lengths is [1024]" in capsys.readouterr().err
    assert main(["merge", paths[0], "--out", str(pytester.path / "m.json")]) == 2
    assert "shard 2/2 missing" in capsys.readouterr().err and not (pytester.path / "m.json").exists()
    assert main(["merge", paths[0], "--partial", "--out", str(pytester.path / "p.json")]) == 0
    assert "PARTIAL: missing 2/2" in capsys.readouterr().out
    assert main(["gate", str(pytester.path / "p.json"), "--require-effective-length=1k"]) == 2


GATEWAY_CONFTEST = """
import os

def pytest_configure(config):
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker:  # what each gateway's worker sees after the plugin pinned it
        with open(f"seen-{worker}.json", "w") as fh:
            fh.write('{"CUDA_VISIBLE_DEVICES": "%s"}' % os.environ.get("CUDA_VISIBLE_DEVICES"))
"""


def test_gateways_with_their_own_environment_give_the_single_process_report(pytester):
    """The multi-host recipe (``--tx ssh=host//python=...//env:CUDA_VISIBLE_DEVICES=k``), with local
    gateways: each worker keeps the device its gateway names, and the report is the single process's."""
    pytester.makeconftest(GATEWAY_CONFTEST)
    run(pytester, *SUITE, "--ruler-report=one.json")
    result = run(pytester, *SUITE, "--ruler-report=tx.json", "--dist=load",
                 "--tx", "popen//env:CUDA_VISIBLE_DEVICES=3", "--tx", "popen//env:CUDA_VISIBLE_DEVICES=5")
    assert "2 workers [8 items]" in result.stdout.str()
    seen = {p.stem: json.loads(p.read_text()) for p in pytester.path.glob("seen-gw*.json")}
    assert seen == {"seen-gw0": {"CUDA_VISIBLE_DEVICES": "3"}, "seen-gw1": {"CUDA_VISIBLE_DEVICES": "5"}}
    _same_run(report(pytester, "one.json"), report(pytester, "tx.json"))
