"""pytester runs: the release gate, baseline regression, presets, user tests
(fixture, marker, hooks), Markdown/plots — with the scripted test engine."""

from __future__ import annotations

import json

import pytest

from .helpers import SCRIPTED, XDIST, report, run


@pytest.mark.parametrize("xdist", XDIST)
def test_unreachable_gate_fails_the_run_and_says_so(pytester, xdist):
    result = run(pytester, *SCRIPTED, "--ruler-tasks=niah_single_1", "--ruler-lengths=1k,2k", "--ruler-samples=2",
                 "--ruler-require-effective-length=64k", "--ruler-report=r.json", *xdist)
    result.assert_outcomes(passed=2, failed=1)  # every item passes; the verdict (ruler::verdict) does not
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    out = result.stdout.str()
    # the ruler summary, not pytest's short test summary (which CI=true prints untruncated)
    summary = out.split("RULER: effective context length")[1].split("short test summary info")[0]
    verdict = [ln for ln in summary.splitlines() if "required 64K" in ln]
    assert verdict == ["gate FAILED: effective length 2K (required 64K) at threshold 85.6 (the run tested only up to 2K: add longer --ruler-lengths)",
                       "ruler verdict: FAILED — effective length 2K < required 64K at threshold 85.6 (the run tested only up to 2K: add longer --ruler-lengths)"]
    assert "RULER FAILED" not in out  # one verdict, one line
    gate = report(pytester)["gate"]
    assert gate == {"required_effective_length": 65536, "passed": False, "effective_length": 2048,
                    "reason": "effective length 2K < required 64K at threshold 85.6 (the run tested only up to 2K: add longer --ruler-lengths)"}


def test_reachable_gate_passes(pytester):
    result = run(pytester, *SCRIPTED, "--ruler-tasks=niah_single_1", "--ruler-lengths=1k,2k", "--ruler-samples=2", "--ruler-require-effective-length=2k")
    assert result.ret == pytest.ExitCode.OK
    assert "gate PASSED: effective length 2K (required 2K)" in result.stdout.str()


def test_gate_counts_failing_lengths(pytester):
    # cwe fails under the oracle, so the mean at every length is 50 < 85.6: no effective length
    result = run(pytester, *SCRIPTED, "--ruler-tasks=niah_single_1,cwe", "--ruler-lengths=1k", "--ruler-samples=1", "--ruler-require-effective-length=1k")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert "gate FAILED: effective length below the shortest tested length (required 1K) at threshold 85.6" in result.stdout.str()


def _baseline(pytester, score, samples):
    data = {
        "schema": "pytest-ruler/1", "model": "smollm2-135m", "backend": "scripted", "tokenizer": "smollm2-135m",
        "haystack_corpus": "noise", "threshold": 0.0,
        "items": [{"task": "niah_single_1", "length": 1024, "seed": 0, "mode": "native", "samples": samples, "score": score,
                   "threshold": 0.0, "passed": True, "nulls": 0, "seconds": 1.0}],
        "summary": {"native": None, "mapreduce": None}, "gate": {"required_effective_length": None, "passed": None},
    }
    (pytester.path / "base.json").write_text(json.dumps(data))


@pytest.mark.parametrize("xdist", XDIST)
def test_significant_drop_against_baseline_fails(pytester, xdist):
    _baseline(pytester, 100.0, 20)
    result = run(pytester, *SCRIPTED, "--ruler-engine-option=mode=empty", "--ruler-tasks=niah_single_1", "--ruler-lengths=1k",
                 "--ruler-samples=20", "--ruler-threshold=0", "--ruler-baseline=base.json", "--ruler-report=r.json", *xdist)
    # 0 is not above the mark 0: with a baseline the item is a measurement (xfailed), the verdict fails
    result.assert_outcomes(xfailed=1, failed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    out = result.stdout.str()
    assert "niah_single_1 @ 1K: 100.0 → 0.0" in out and "significant drop" in out
    assert report(pytester)["baseline"]["passed"] is False
    assert "ruler verdict: FAILED — niah_single_1 @ 1K dropped 100.0 points against base.json" in out


def test_drop_within_noise_passes(pytester):
    # 3/3 -> 0/3: one-sided exact p = 1/20 = 0.05, not below alpha 0.05 for three samples
    _baseline(pytester, 100.0, 3)
    result = run(pytester, *SCRIPTED, "--ruler-engine-option=mode=empty", "--ruler-tasks=niah_single_1", "--ruler-lengths=1k",
                 "--ruler-samples=3", "--ruler-threshold=0", "--ruler-baseline=base.json", "--ruler-report=r.json")
    b = report(pytester)["baseline"]
    assert b["passed"] is True and b["comparisons"][0]["p_value"] >= 0.05
    out = result.stdout.str()
    assert "significant drop" not in out.split("baseline:")[1].splitlines()[0].replace("0 significant drops", "")
    # the item is a measurement below its mark 0 (xfailed); the baseline decides, and it passes
    result.assert_outcomes(xfailed=1, passed=1)
    assert result.ret == pytest.ExitCode.OK and "ruler verdict: PASSED" in out


def test_missing_baseline_file_is_a_usage_error(pytester):
    result = run(pytester, *SCRIPTED, "--ruler-baseline=nope.json")
    assert result.ret == pytest.ExitCode.USAGE_ERROR and "--ruler-baseline='nope.json' is invalid" in result.stderr.str()


def test_summary_follows_the_papers_formulas(pytester):
    run(pytester, *SCRIPTED, "--ruler-tasks=niah_single_1,cwe,vt", "--ruler-lengths=1k,2k,3k", "--ruler-samples=2", "--ruler-seeds=2", "--ruler-report=r.json")
    data = report(pytester)
    lengths = [1024, 2048, 3072]
    per_task = {}
    for item in data["items"]:
        per_task.setdefault(item["task"], {}).setdefault(item["length"], []).append(item["score"])
    mean = {L: sum(sum(v[L]) / len(v[L]) for v in per_task.values()) / len(per_task) for L in lengths}
    s = data["summary"]["native"]
    assert s["per_length"] == {str(L): pytest.approx(mean[L]) for L in lengths}
    assert s["avg"] == pytest.approx(sum(mean.values()) / 3)
    assert s["wavg_inc"] == pytest.approx(sum((k + 1) * mean[L] for k, L in enumerate(lengths)) / 6)
    assert s["wavg_dec"] == pytest.approx(sum((3 - k) * mean[L] for k, L in enumerate(lengths)) / 6)
    above = [L for L in lengths if mean[L] > 85.6]
    assert s["effective_length"] == (max(above) if above else None)
    assert s["per_task_effective_length"] == {"cwe": None, "niah_single_1": 3072, "vt": 3072}


USER_CONFTEST = '''
import pytest
from pytest_ruler import make_task
from pytest_ruler.engines.scripted import ScriptedEngine


class OracleEngine(ScriptedEngine):
    """A custom engine for the test: the scripted oracle under another name."""
    name = "my-oracle"


def pytest_ruler_register(registry):
    registry.task(make_task("niah_5keys", "niah", tokens_to_generate=64, type_haystack="needle", num_needle_k=5))
    registry.engine("my-oracle", OracleEngine)


def pytest_ruler_summary(config, report):
    eff = report["summary"]["native"]["per_task_effective_length"]
    if eff.get("niah_5keys") is None:
        return ["custom gate: niah_5keys has no effective length"]
'''

USER_TEST = '''
import pytest

@pytest.mark.ruler(task="niah_5keys", lengths=["1k", "2k"], samples=2, threshold=90)
def test_marker_check(ruler):
    results = ruler.check()
    assert [r.length for r in results] == [1024, 2048]

def test_run_custom_length(ruler):
    result = ruler.run("vt", "1536", samples=2)
    assert result.score == 100.0 and result.samples == 2

@pytest.mark.ruler(task="cwe", lengths=["1k"], samples=1)
def test_failing_check_shows_item_message(ruler):
    ruler.check()
'''


@pytest.mark.parametrize("xdist", XDIST)
def test_user_tests_with_fixture_marker_custom_task_engine_and_gate_hook(pytester, xdist):
    pytester.makeconftest(USER_CONFTEST)
    pytester.makepyfile(test_user=USER_TEST)
    result = run(pytester, "--ruler-model=smollm2-135m", "--ruler-backend=my-oracle", "--ruler-tasks=niah_5keys",
                 "--ruler-lengths=1k", "--ruler-samples=2", "--ruler-report=r.json", *xdist)
    result.assert_outcomes(passed=3, failed=1)
    out = result.stdout.str()
    assert "cwe at 1024 tokens (seed 0): score 0.00 <= threshold 85.60" in out
    data = report(pytester)
    tasks = sorted((i["task"], i["length"]) for i in data["items"])
    # the standard item plus the user tests' results all reach the report
    assert tasks == [("cwe", 1024), ("niah_5keys", 1024), ("niah_5keys", 1024), ("niah_5keys", 2048), ("vt", 1536)]
    assert data["backend"] == "my-oracle"


def test_summary_hook_can_fail_the_run(pytester):
    pytester.makeconftest(USER_CONFTEST)
    result = run(pytester, "--ruler-model=smollm2-135m", "--ruler-backend=scripted", "--ruler-engine-option=mode=empty",
                 "--ruler-tasks=niah_5keys", "--ruler-lengths=1k", "--ruler-samples=1", "--ruler-threshold=0")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert "RULER FAILED: custom gate: niah_5keys has no effective length" in result.stdout.str()


def test_user_tests_skip_without_a_model(pytester):
    pytester.makepyfile(test_user="def test_it(ruler):\n    ruler.run('vt', '1k')\n")
    result = run(pytester, "-rs")
    result.assert_outcomes(skipped=1)
    assert "pass --ruler-model=NAME" in result.stdout.str()


def test_presets_set_defaults_and_options_override(pytester):
    result = run(pytester, *SCRIPTED, "--ruler-preset=smoke", "--collect-only", "-q")
    out = result.stdout.str()
    assert out.count("ruler::") == 10
    result = run(pytester, *SCRIPTED, "--ruler-preset=paper", "--ruler-tasks=vt", "--ruler-samples=2", "--collect-only", "-q")
    assert result.stdout.str().count("ruler::vt[") == 6
    bad = run(pytester, *SCRIPTED, "--ruler-preset=huge")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR and "--ruler-preset='huge' is invalid: choose one of smoke, ci, long, paper" in bad.stderr.str()


def test_markdown_and_plots(pytester):
    pytest.importorskip("matplotlib")
    result = run(pytester, *SCRIPTED, "--ruler-tasks=niah_single_1,vt", "--ruler-lengths=1k,2k", "--ruler-samples=1",
                 "--ruler-markdown=out/r.md", "--ruler-plots=out/plots", "--ruler-report=r.json")
    assert result.ret == 0
    md = (pytester.path / "out" / "r.md").read_text()
    assert "| niah_single_1 |" in md and "| **Total** |" in md
    pngs = list((pytester.path / "out" / "plots").glob("*.png"))
    assert pngs and all(p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in pngs)


@pytest.mark.parametrize("xdist", XDIST)
def test_depth_sweep_scores_and_heatmap(pytester, xdist):
    pytest.importorskip("matplotlib")
    result = run(pytester, *SCRIPTED, "--ruler-tasks=niah_single_1,vt,fwe", "--ruler-lengths=1k,2k", "--ruler-samples=4",
                 "--ruler-depths=0,0.5,1", "--ruler-report=r.json", "--ruler-plots=plots", "--ruler-markdown=r.md", *xdist)
    assert result.ret == 1  # fwe has no depth and the oracle cannot do it
    items = {(i["task"], i["length"]): i for i in report(pytester)["items"]}
    assert items["niah_single_1", 1024]["depth_scores"] == {"0": 100.0, "0.5": 100.0, "1": 100.0}
    assert set(items["vt", 2048]["depth_scores"]) == {"0", "0.5", "1"}
    assert items["fwe", 1024]["depth_scores"] == {}
    assert "Depth sweep" in (pytester.path / "r.md").read_text()
    assert any("depth" in p.name for p in (pytester.path / "plots").glob("*.png"))
    bad = run(pytester, *SCRIPTED, "--ruler-depths=0,150")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR and "--ruler-depths='0,150' is invalid" in bad.stderr.str()
