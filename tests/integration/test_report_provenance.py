"""The JSON report keeps every sample's prediction and says where it came from
(issue 19 E.1): per item ``predictions``, top level ``provenance``. pytester runs
with the scripted test engine (a rule-based stand-in, not a model)."""

from __future__ import annotations

import datetime
import json
import platform
import subprocess
import sys
from importlib import metadata

import pytest

from pytest_ruler.cli import main as cli_main

from .helpers import SCRIPTED, XDIST, report, run

ARGS = [*SCRIPTED, "--ruler-tasks=niah_single_1,vt", "--ruler-lengths=1k", "--ruler-samples=3"]


def _check_predictions(item):
    records = item["predictions"]
    assert [p["index"] for p in records] == list(range(item["samples"]))
    assert [p["score"] for p in records] == item["sample_scores"]
    assert [p["prompt_hash"] for p in records] == item["sample_hashes"]
    for p in records:
        assert set(p) == {"index", "prediction", "answers", "score", "prompt_hash"}
        assert p["answers"] and all(isinstance(a, str) for a in p["answers"])
        assert isinstance(p["prediction"], str)


@pytest.mark.parametrize("xdist", XDIST)
def test_every_item_keeps_every_prediction_also_through_xdist_and_map_reduce(pytester, xdist):
    result = run(pytester, *ARGS, "--ruler-mapreduce", "--ruler-mapreduce-chunk=512", "--ruler-report=r.json", *xdist)
    result.assert_outcomes(passed=4)
    items = report(pytester)["items"]
    assert sorted((i["task"], i["mode"]) for i in items) == [("niah_single_1", "mapreduce"), ("niah_single_1", "native"),
                                                             ("vt", "mapreduce"), ("vt", "native")]
    for item in items:
        _check_predictions(item)
        # the oracle reads the answer out of the prompt: every prediction holds its answers
        for p in item["predictions"]:
            assert p["score"] == 1.0 and all(a in p["prediction"] for a in p["answers"]), p


def test_a_rerun_from_the_cache_reports_the_same_predictions(pytester):
    run(pytester, *ARGS, "--ruler-report=a.json").assert_outcomes(passed=2)
    run(pytester, *ARGS, "--ruler-report=b.json").assert_outcomes(passed=2)
    a, b = report(pytester, "a.json"), report(pytester, "b.json")
    assert all(i["cached"] == 0 for i in a["items"]) and all(i["cached"] == 3 for i in b["items"])
    key = lambda d: {(i["task"], i["length"]): i["predictions"] for i in d["items"]}  # noqa: E731
    assert key(a) == key(b) and all(key(a).values())


def test_failing_samples_keep_their_prediction_beyond_the_three_of_the_failure_message(pytester):
    run(pytester, *SCRIPTED, "--ruler-tasks=niah_single_1", "--ruler-lengths=1k", "--ruler-samples=5",
        "--ruler-engine-option=mode=echo", "--ruler-report=r.json")
    (item,) = report(pytester)["items"]
    assert len(item["failures"]) == 3 and len(item["predictions"]) == 5
    assert all(p["score"] == 0.0 and p["prediction"] for p in item["predictions"])


def test_provenance_names_time_versions_scrubbed_command_and_git_commit(pytester, monkeypatch):
    monkeypatch.setenv("RULER_API_KEY", "sk-env-key-123456")
    monkeypatch.setattr(sys, "argv", ["pytest", "--ruler-model=smollm2-135m", "--ruler-engine-option=api_key=sk-cli-secret-999",
                                      "--ruler-base-url=http://user:pw@127.0.0.1:8000/v1?api-key=sk-query-777", "sk-env-key-123456"])
    run(pytester, *ARGS, "--ruler-report=r.json").assert_outcomes(passed=2)
    text = (pytester.path / "r.json").read_text()
    for secret in ("sk-env-key-123456", "sk-cli-secret-999", "sk-query-777", "user:pw"):
        assert secret not in text
    prov = json.loads(text)["provenance"]
    assert set(prov) == {"created", "versions", "command", "git_commit"}
    created = datetime.datetime.fromisoformat(prov["created"].replace("Z", "+00:00"))
    assert created.utcoffset() == datetime.timedelta(0)
    assert abs((datetime.datetime.now(datetime.timezone.utc) - created).total_seconds()) < 600
    versions = prov["versions"]
    assert set(versions) == {"pytest-ruler", "python", "torch", "transformers", "vllm"}
    assert versions["python"] == platform.python_version() and versions["pytest-ruler"] == metadata.version("pytest-ruler")
    for name in ("torch", "transformers"):
        try:
            assert versions[name] == metadata.version(name)
        except metadata.PackageNotFoundError:
            assert versions[name] is None
    assert prov["command"][0] == "pytest" and prov["command"][1] == "--ruler-model=smollm2-135m"
    assert prov["command"][2] == "--ruler-engine-option=api_key=<secret>" and prov["command"][4] == "<secret>"
    assert prov["git_commit"] is None  # pytester's folder is no repository


def test_provenance_has_the_git_commit_in_a_repository(pytester):
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false"]
    subprocess.run(["git", "init", "-q"], cwd=pytester.path, check=True, timeout=60)
    pytester.makepyfile(test_x="def test_x():\n    pass\n")
    subprocess.run([*git, "add", "test_x.py"], cwd=pytester.path, check=True, timeout=60)
    subprocess.run([*git, "commit", "-q", "-m", "x"], cwd=pytester.path, check=True, timeout=60)
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=pytester.path, capture_output=True, text=True, check=True, timeout=60).stdout.strip()
    run(pytester, *ARGS, "--ruler-only", "--ruler-report=r.json").assert_outcomes(passed=2)
    assert report(pytester)["provenance"]["git_commit"] == head


def test_report_readers_take_reports_with_and_without_the_new_fields(pytester, capsys):
    run(pytester, *ARGS, "--ruler-report=new.json").assert_outcomes(passed=2)
    new = report(pytester, "new.json")
    old = json.loads(json.dumps(new))
    del old["provenance"]
    for item in old["items"]:
        del item["predictions"]
    (pytester.path / "old.json").write_text(json.dumps(old))
    for name in ("new.json", "old.json"):
        path = str(pytester.path / name)
        assert cli_main(["report", path, "--no-plots", "--out", str(pytester.path / f"md-{name}")]) == 0
        assert cli_main(["gate", path, "--baseline", str(pytester.path / "old.json")]) == 0
        assert cli_main(["gate", path, "--require-effective-length=1k"]) == 0
    assert cli_main(["compare", str(pytester.path / "old.json"), str(pytester.path / "new.json")]) == 0
    # a run may take either as its baseline
    run(pytester, *ARGS, "--ruler-baseline=old.json").assert_outcomes(passed=3)  # and the verdict, a test of its own
    run(pytester, *ARGS, "--ruler-baseline=new.json").assert_outcomes(passed=3)
