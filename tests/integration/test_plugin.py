"""pytester runs of the plugin with the scripted test engine (a rule-based
stand-in, not a model): activation, items and ids, pass/fail messages, the
report, the cache, usage errors, ini keys — with and without ``-n 2``."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from .helpers import SCRIPTED, XDIST, prediction_db, report, run, wait_for_cached


def test_plain_pytest_is_unchanged(pytester):
    pytester.makepyfile("def test_one():\n    assert True\n")
    result = run(pytester)
    result.assert_outcomes(passed=1)
    assert "ruler:" not in result.stdout.str()


def test_importing_the_plugin_imports_no_heavy_library():
    code = "import sys, pytest_ruler, pytest_ruler.plugin; print(sorted(m for m in ('torch', 'transformers', 'vllm') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[]"


@pytest.mark.parametrize("xdist", XDIST)
def test_items_pass_and_report(pytester, xdist):
    pytester.makepyfile("def test_user():\n    assert True\n")
    result = run(pytester, *SCRIPTED, "--ruler-tasks=niah_single_1,vt", "--ruler-lengths=1k,2k", "--ruler-samples=3", "--ruler-report=r.json", "-v", *xdist)
    result.assert_outcomes(passed=5)
    out = result.stdout.str()
    for node in ("ruler::niah_single_1[1024-seed0]", "ruler::vt[2048-seed0]"):
        assert node in out
    assert "RULER: effective context length" in out and "Total" in out
    data = report(pytester)
    assert data["schema"] == "pytest-ruler/1" and data["backend"] == "scripted"
    assert {"model", "tokenizer", "haystack_corpus", "threshold", "items", "summary", "gate"} <= set(data)
    assert len(data["items"]) == 4
    for item in data["items"]:
        assert {"task", "length", "seed", "mode", "samples", "score", "threshold", "passed", "nulls", "seconds"} <= set(item)
        assert item["score"] == 100.0 and item["passed"] and item["samples"] == 3 and item["mode"] == "native"
    native = data["summary"]["native"]
    assert native["per_length"] == {"1024": 100.0, "2048": 100.0}
    assert native["effective_length"] == 2048
    assert data["summary"]["mapreduce"] is None


def test_xdist_gives_the_same_scores(pytester):
    args = [*SCRIPTED, "--ruler-tasks=niah_single_1,niah_multikey_2,vt,cwe", "--ruler-lengths=1k", "--ruler-samples=2", "--ruler-no-cache"]
    run(pytester, *args, "--ruler-report=a.json")
    run(pytester, *args, "--ruler-report=b.json", "-n", "2")
    a, b = report(pytester, "a.json"), report(pytester, "b.json")
    key = lambda d: sorted((i["task"], i["length"], i["seed"], i["score"], i["nulls"]) for i in d["items"])  # noqa: E731
    assert key(a) == key(b)
    assert a["summary"] == b["summary"]


def test_keyword_selection(pytester):
    result = run(pytester, *SCRIPTED, "--ruler-tasks=niah_single_1,vt", "--ruler-lengths=1k,2k", "--ruler-samples=1", "-k", "vt and 2048", "-v")
    result.assert_outcomes(passed=1)
    assert "ruler::vt[2048-seed0] PASSED" in result.stdout.str()


@pytest.mark.parametrize("xdist", XDIST)
def test_failing_item_explains_itself(pytester, xdist):
    result = run(pytester, *SCRIPTED, "--ruler-engine-option=mode=echo", "--ruler-tasks=niah_single_1", "--ruler-lengths=1k", "--ruler-samples=3", *xdist)
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "niah_single_1 at 1024 tokens (seed 0): score 0.00 <= threshold 85.60 over 3 samples" in out
    assert out.count("predicted '") >= 2 and "expected ['" in out
    assert result.ret == 1


def test_seeds_and_threshold(pytester):
    result = run(pytester, *SCRIPTED, "--ruler-tasks=cwe", "--ruler-lengths=1k", "--ruler-samples=1", "--ruler-seeds=0,5", "--ruler-threshold=0", "-v")
    result.assert_outcomes(failed=2)  # the oracle cannot do cwe: 0 is not above the mark 0 (the one pass rule)
    assert "cwe[1024-seed5]" in result.stdout.str() and "score 0.00 <= threshold 0.00" in result.stdout.str()
    low = run(pytester, *SCRIPTED, "--ruler-tasks=niah_single_1", "--ruler-lengths=1k", "--ruler-samples=1", "--ruler-seeds=0,5",
              "--ruler-threshold=99.9")
    low.assert_outcomes(passed=2)


def test_cache_makes_reruns_free_and_no_cache_disables_it(pytester):
    args = [*SCRIPTED, "--ruler-tasks=niah_single_1", "--ruler-lengths=1k", "--ruler-samples=3"]
    run(pytester, *args, "--ruler-report=first.json")
    run(pytester, *args, "--ruler-report=second.json")
    run(pytester, *args, "--ruler-report=third.json", "--ruler-no-cache")
    first, second, third = (report(pytester, f"{n}.json")["items"][0] for n in ("first", "second", "third"))
    assert (first["cached"], first["engine_calls"]) == (0, 3)
    assert (second["cached"], second["engine_calls"]) == (3, 0)
    assert (third["cached"], third["engine_calls"]) == (0, 3)
    assert first["score"] == second["score"] == third["score"]


def test_a_crashed_run_keeps_finished_samples(pytester):
    base = [*SCRIPTED, "--ruler-tasks=niah_single_1,vt", "--ruler-lengths=1k", "--ruler-samples=3"]
    crashed = run(pytester, *base, "--ruler-engine-option=crash_after=4", "--ruler-batch-items=1")
    crashed.assert_outcomes(passed=1, failed=1)
    assert "scripted engine crashed after 4 completions" in crashed.stdout.str()
    run(pytester, *base, "--ruler-report=r.json").assert_outcomes(passed=2)
    items = {i["task"]: i for i in report(pytester)["items"]}
    assert items["niah_single_1"]["cached"] == 3
    assert items["vt"]["cached"] == 1 and items["vt"]["engine_calls"] == 2


def test_a_crash_in_a_call_shared_by_items_keeps_every_answer_that_arrived(pytester):
    """The default queue sends both items' 6 prompts in one call: the crash after 4 answers
    is retried with the running item's batch alone, and the engine stays down for what it
    has not answered; the rerun reuses all 4 answers and asks only for the other 2."""
    base = [*SCRIPTED, "--ruler-tasks=niah_single_1,vt", "--ruler-lengths=1k", "--ruler-samples=3"]
    crashed = run(pytester, *base, "--ruler-engine-option=crash_after=4")
    assert "scripted engine crashed after 4 completions" in crashed.stdout.str()
    outcomes = crashed.parseoutcomes()  # vt fails for sure; niah passes if its 3 answers came before the crash
    assert outcomes.get("failed", 0) >= 1 and outcomes.get("failed", 0) + outcomes.get("passed", 0) == 2
    run(pytester, *base, "--ruler-report=r.json").assert_outcomes(passed=2)
    items = report(pytester)["items"]
    assert sum(i["cached"] for i in items) == 4 and sum(i["engine_calls"] for i in items) == 2


def test_a_killed_run_keeps_finished_samples(pytester):
    args = [sys.executable, "-m", "pytest", "-p", "no:hypothesispytest", *SCRIPTED, "--ruler-tasks=niah_single_1", "--ruler-lengths=1k", "--ruler-samples=40", "--ruler-engine-option=delay=0.1"]
    proc = subprocess.Popen(args, cwd=pytester.path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    db = prediction_db()
    done = wait_for_cached(db, 5)
    proc.kill()
    proc.wait()
    assert done >= 5
    run(pytester, *SCRIPTED, "--ruler-tasks=niah_single_1", "--ruler-lengths=1k", "--ruler-samples=40", "--ruler-report=r.json")
    assert report(pytester)["items"][0]["cached"] >= done


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--ruler-tasks=niah_single_9"], "--ruler-tasks='niah_single_9' is invalid: did you mean 'niah_single_"),
        (["--ruler-lengths=4k,12q"], "--ruler-lengths='12q' is invalid"),
        (["--ruler-samples=0"], "--ruler-samples='0' is invalid"),
        (["--ruler-threshold=101"], "--ruler-threshold='101' is invalid"),
        (["--ruler-backend=tpu"], "--ruler-backend='tpu' is invalid: choose one of auto, hf, vllm, openai"),
        (["--ruler-backend=openai"], "--ruler-base-url=None is invalid"),
        (["--ruler-chat-template=missing.jinja"], "--ruler-chat-template='missing.jinja' is invalid"),
    ],
)
def test_usage_errors_are_refused_once_before_any_model_loads(pytester, args, needle):
    started = time.time()
    result = run(pytester, "--ruler-model=smollm2-135m", *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert needle in err and err.count("is invalid") == 1
    assert time.time() - started < 60


def test_qa_without_data_is_skipped_with_instructions(pytester):
    result = run(pytester, *SCRIPTED, "--ruler-tasks=qa_1", "--ruler-lengths=1k", "--ruler-samples=1", "-rs")
    result.assert_outcomes(skipped=1)
    assert "pytest-ruler download squad" in result.stdout.str()


def test_over_length_is_recorded_not_truncated(pytester):
    # a suite length over the context is refused at start (tests/integration/test_verdict.py);
    # a user test may still ask for one: its prompts are refused, never truncated
    pytester.makepyfile("def test_long(ruler):\n    r = ruler.run('niah_single_1', '2k', samples=2)\n    assert not r.passed, r\n")
    result = run(pytester, *SCRIPTED, "--ruler-tasks=niah_single_1", "--ruler-lengths=1k", "--ruler-samples=1", "--ruler-max-model-len=1500", "--ruler-report=r.json", "-k", "test_long")
    result.assert_outcomes(passed=1, deselected=1)
    item = next(i for i in report(pytester)["items"] if i["length"] == 2048)
    assert item["over_length"] == 2 and item["score"] == 0.0 and item["error"] is None
    assert "exceeds model context (" in item["reasons"][0] and "> 1500)" in item["reasons"][0]


def test_ini_keys_and_per_task_threshold(pytester):
    pytester.makeini(
        """
        [pytest]
        ruler_model = smollm2-135m
        ruler_backend = scripted
        ruler_tasks = niah_single_1, cwe
        ruler_lengths = 1k
        ruler_samples = 2
        ruler_task_thresholds =
            cwe = 0
        ruler_report = ini.json
        """
    )
    result = run(pytester)
    result.assert_outcomes(passed=1, failed=1)  # cwe scores 0 with the oracle: not above its mark 0
    thresholds = {i["task"]: i["threshold"] for i in report(pytester, "ini.json")["items"]}
    assert thresholds == {"niah_single_1": 85.6, "cwe": 0.0}
    pytester.makeini("[pytest]\nruler_model = smollm2-135m\nruler_task_thresholds =\n    cwee = 0\n")
    bad = run(pytester)
    assert bad.ret == pytest.ExitCode.USAGE_ERROR and "task='cwee' is invalid" in bad.stderr.str()


def test_only_runs_just_the_suite_and_junit_gets_properties(pytester):
    pytester.makepyfile("def test_user():\n    assert True\n")
    result = run(pytester, *SCRIPTED, "--ruler-tasks=vt", "--ruler-lengths=1k", "--ruler-samples=1", "--ruler-only", "--junitxml=j.xml")
    result.assert_outcomes(passed=1)
    xml = (pytester.path / "j.xml").read_text()
    for prop in ('name="ruler_task" value="vt"', 'name="ruler_length" value="1024"', 'name="ruler_score" value="100.0"', 'name="ruler_threshold" value="85.6"'):
        assert prop in xml


def test_header_shows_the_chat_wrapper_once(pytester):
    result = run(pytester, *SCRIPTED, "--ruler-tasks=vt", "--ruler-lengths=1k", "--ruler-samples=1")
    out = result.stdout.str()
    assert out.count("ruler: chat template chat:smollm2-135m: prompt = <|im_start|>system") == 1
    result = run(pytester, *SCRIPTED, "--ruler-tasks=vt", "--ruler-lengths=1k", "--ruler-samples=1", "--ruler-chat-template=none")
    assert "no chat template (RULER base prompts)" in result.stdout.str()


def test_every_option_together_with_and_without_xdist(pytester):
    from pathlib import Path

    data = Path(__file__).parent.parent / "data"
    for name in ("essays_mini.txt", "squad_mini.json", "hotpotqa_mini.json"):
        (pytester.path / name).write_bytes((data / name).read_bytes())
    common = [
        *SCRIPTED, "--ruler-preset=smoke", "--ruler-tokenizer=smollm2-135m",
        "--ruler-tasks=niah_single_2,vt,qa_1,qa_2", "--ruler-lengths=1k,1536", "--ruler-samples=3", "--ruler-seeds=0,3",
        "--ruler-depths=0.2,0.8", "--ruler-threshold=0", "--ruler-chat-template=none", "--ruler-only",
        "--ruler-max-model-len=100000", "--ruler-dtype=float32", "--ruler-device=cpu", "--ruler-batch-size=2",
        "--ruler-engine-option=mode=oracle", "--ruler-tensor-parallel-size=1", "--ruler-gpu-memory-utilization=0.5",
        "--ruler-hf-overrides={}", "--ruler-trust-remote-code",
        "--ruler-essays=essays_mini.txt", "--ruler-squad=squad_mini.json", "--ruler-hotpotqa=hotpotqa_mini.json",
        "--ruler-require-effective-length=1k", "--ruler-cache-dir=cache",
    ]
    pytester.makepyfile("def test_user():\n    assert False\n")  # --ruler-only leaves it out
    first = run(pytester, *common, "--ruler-report=a.json", "--ruler-markdown=a.md")
    # the oracle answers no QA question: the 8 qa items score 0, not above the mark 0
    first.assert_outcomes(passed=9, xfailed=8)  # a gate is asked: the qa items are measurements below their marks; the verdict passed
    second = run(pytester, *common, "--ruler-report=b.json", "--ruler-baseline=a.json", "--ruler-baseline-alpha=0.01",
                 "--ruler-baseline-test=fisher", "-n", "2")
    second.assert_outcomes(passed=9, xfailed=8)
    assert second.ret == pytest.ExitCode.OK  # the gate is met and nothing dropped: the verdict passed
    assert {i["task"] for i in report(pytester, "b.json")["items"] if not i["passed"]} == {"qa_1", "qa_2"}
    a, b = report(pytester, "a.json"), report(pytester, "b.json")
    key = lambda d: sorted((i["task"], i["length"], i["seed"], i["score"], tuple(sorted(i["depth_scores"].items()))) for i in d["items"])  # noqa: E731
    assert key(a) == key(b) and a["summary"] == b["summary"]
    assert a["gate"]["passed"] is True and b["baseline"]["passed"] is True and b["baseline"]["test"] == "fisher"
    assert all(i["cached"] == i["samples"] for i in b["items"])  # the shared --ruler-cache-dir served the second run
    assert "essays:essays_mini.txt" in a["haystack_corpus"] and "squad:" in a["haystack_corpus"]
    assert (pytester.path / "a.md").is_file() and (pytester.path / "cache" / "predictions.sqlite").is_file()


def test_cross_item_batching_gives_the_same_results_with_fewer_engine_calls(pytester):
    pytester.makeconftest(
        """
from pytest_ruler.engines.scripted import ScriptedEngine

CALLS = []

class CountingEngine(ScriptedEngine):
    name = "counting"
    def generate(self, requests, on_result=None):
        CALLS.append(len(requests))
        return super().generate(requests, on_result)

def pytest_ruler_register(registry):
    registry.engine("counting", CountingEngine)

def pytest_ruler_summary(config, report):
    print("ENGINE CALLS", CALLS)
"""
    )
    args = ["--ruler-model=smollm2-135m", "--ruler-backend=counting", "--ruler-tasks=niah_single_1,vt,niah_multikey_2", "--ruler-lengths=1k,2k",
            "--ruler-samples=2", "--ruler-no-cache", "-s"]
    one = run(pytester, *args, "--ruler-report=one.json", "--ruler-batch-items=1")
    many = run(pytester, *args, "--ruler-report=many.json", "--ruler-batch-items=3")
    assert "ENGINE CALLS [2, 2, 2, 2, 2, 2]" in one.stdout.str()
    assert "ENGINE CALLS [6, 6]" in many.stdout.str()  # three items per call
    default = run(pytester, *args, "--ruler-report=default.json")
    assert "ENGINE CALLS [12]" in default.stdout.str()  # by default the whole run, both lengths, in one call
    key = lambda d: sorted((i["task"], i["length"], i["score"], i["engine_calls"], i["cached"]) for i in d["items"])  # noqa: E731
    assert key(report(pytester, "one.json")) == key(report(pytester, "many.json")) == key(report(pytester, "default.json"))
    # with the cache on, items answered in an earlier item's batch still count as engine calls
    args = [a for a in args if a != "--ruler-no-cache"]
    run(pytester, *args, "--ruler-report=cached.json", "--ruler-batch-items=3")
    assert all(i["engine_calls"] == 2 and i["cached"] == 0 for i in report(pytester, "cached.json")["items"])


def test_items_have_real_node_ids_and_lf_reruns_only_the_failed_ones(pytester):
    """Items sit under a virtual file ``ruler``: ids like any test's, so --collect-only
    counts, --deselect and --lf behave as for a test file (cwe fails under the scripted
    oracle, niah_single_1 passes)."""
    pytester.makepyfile(test_other="def test_x():\n    pass\n")
    args = (*SCRIPTED, "--ruler-tasks=niah_single_1,cwe", "--ruler-lengths=1k", "--ruler-samples=1", "--ruler-only")
    collected = run(pytester, *args, "--collect-only", "-q")
    ids = [ln for ln in collected.stdout.lines if "::" in ln]
    assert ids == ["ruler::niah_single_1[1024-seed0]", "ruler::cwe[1024-seed0]"]
    assert "2/3 tests collected (1 deselected)" in collected.stdout.str()  # what runs, and what --ruler-only left out
    first = run(pytester, *args, "-v")
    first.assert_outcomes(passed=1, failed=1)
    assert "FAILED ruler::cwe[1024-seed0]" in first.stdout.str()
    again = run(pytester, *args, "--lf", "-v")
    again.assert_outcomes(failed=1, deselected=2)
    assert "run-last-failure: rerun previous 1 failure" in again.stdout.str()
    assert "ruler::cwe[1024-seed0] FAILED" in again.stdout.str()
    assert "niah_single_1" not in "".join(ln for ln in again.stdout.lines if "PASSED" in ln)
    skipped = run(pytester, *args, "--deselect", "ruler::cwe[1024-seed0]")
    skipped.assert_outcomes(passed=1, deselected=2)


def test_sequential_stops_a_clear_failure_early_and_a_full_rerun_reuses_its_answers(pytester):
    """cwe fails under the scripted oracle (it answers nothing): decided after the first
    batches, not all 40 samples; a rerun without --ruler-sequential answers the rest and
    takes the early ones from the cache."""
    args = (*SCRIPTED, "--ruler-tasks=cwe", "--ruler-lengths=1k", "--ruler-samples=40", "--ruler-only", "--ruler-cache-dir=c")
    first = run(pytester, *args, "--ruler-sequential", "--ruler-report=seq.json")
    first.assert_outcomes(failed=1)
    item = report(pytester, "seq.json")["items"][0]
    assert item["samples"] < 40 and item["samples"] % 4 == 0  # whole batches of max(4, 40 // 10)
    assert item["stopped"].startswith("sequential: the score is below the threshold 85.6 with 95% anytime-valid confidence")
    assert len(item["sample_scores"]) == len(item["sample_hashes"]) == item["samples"]
    full = run(pytester, *args, "--ruler-report=full.json")
    full.assert_outcomes(failed=1)
    again = report(pytester, "full.json")["items"][0]
    assert again["samples"] == 40 and again["stopped"] is None
    assert again["cached"] == item["samples"]  # nothing the sequential run answered is asked again
    assert again["sample_hashes"][: item["samples"]] == item["sample_hashes"]
