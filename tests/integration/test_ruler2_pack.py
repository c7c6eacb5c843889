"""The RULERv2 pack in a run (its table rows and group score) and the relative mark rel:F end to end:
items re-judged at the run's end, the mark in the table header and the gate line, the same report
gated both ways by ``pytest-ruler gate --threshold``. Runs use scripted test engines, not a model."""

from __future__ import annotations

import pytest

from pytest_ruler.cli import main

from .helpers import XDIST, report, run

# a test engine whose reading fades with the prompt's size: every prompt right at 1K, 3 of 4 at 2K,
# 1 of 4 at 4K (by the prompt's tokens; one item's 4 samples per engine call), the others answered with nothing
FADING = '''
from pytest_ruler.engines.scripted import ScriptedEngine
from pytest_ruler.engines.base import Completion


class Fading(ScriptedEngine):
    name = "fading"

    @staticmethod
    def describe(config):
        return {"engine": "fading (test engine, not a model)"}

    def generate(self, requests, on_result=None):
        out = super().generate(requests)
        kept = []
        for i, (r, c) in enumerate(zip(requests, out)):
            size = len(r.prompt_ids)
            right = size < 1500 or (size < 3000 and i % 4 != 3) or (size >= 3000 and i % 4 == 0)
            kept.append(c if right else Completion("", c.prompt_tokens, 0, "stop"))
        for i, c in enumerate(kept):
            if on_result:
                on_result(i, c)
        return kept


def pytest_ruler_register(registry):
    registry.engine("fading", Fading)
'''
ENGINE = ["--ruler-model=smollm2-135m", "--ruler-backend=fading", "--ruler-no-cache", "--ruler-chat-template=none",
          "--ruler-tasks=ruler2:*_basic", "--ruler-lengths=1k,2k,4k", "--ruler-samples=4", "--ruler-batch-size=4",
          "--ruler-batch-items=1"]


@pytest.mark.parametrize("xdist", XDIST)
def test_pack_rows_and_group_score(pytester, xdist):
    pytester.makeconftest(FADING)
    result = run(pytester, *ENGINE, "--ruler-report=r.json", *xdist)
    out = result.stdout.str()
    data = report(pytester)
    scores = {(i["task"], i["length"]): i["score"] for i in data["items"]}
    assert scores[("mk_niah_basic", 1024)] == scores[("mv_niah_basic", 1024)] == 100.0
    assert scores[("mk_niah_basic", 2048)] == 75.0 and scores[("mk_niah_basic", 4096)] == 25.0
    rows = {line.split()[0]: line for line in out.splitlines() if line.startswith(("mk_niah_basic", "mv_niah_basic", "ruler2 ("))}
    assert set(rows) == {"mk_niah_basic", "mv_niah_basic", "ruler2"}
    assert "ruler2 (2/12 tasks)" in out
    assert rows["ruler2"].split()[3:6] == ["100.0", "75.0", "25.0"]
    # absolute 85.6: only 1K passes; the glob also takes qa_basic, skipped without its data and saying which
    result.assert_outcomes(passed=2, failed=4, skipped=3)
    assert "--ruler-hotpotqa-train" in out


@pytest.mark.parametrize("xdist", XDIST)
def test_relative_mark_in_a_run(pytester, xdist):
    pytester.makeconftest(FADING)
    result = run(pytester, *ENGINE, "--ruler-threshold=rel:0.7", "--ruler-require-effective-length=2k", "--ruler-report=r.json", *xdist)
    out = result.stdout.str()
    data = report(pytester)
    assert data["relative_threshold"]["fraction"] == 0.7 and data["relative_threshold"]["base_score"] == 100.0
    assert data["threshold"] == pytest.approx(70.0)
    assert {(i["length"], i["passed"]) for i in data["items"]} == {(1024, True), (2048, True), (4096, False)}
    assert data["summary"]["native"]["effective_length"] == 2048
    assert "rel:0.7 of 100.0 at 1K = 70.0" in out  # the table header and the gate line
    assert "gate PASSED: effective length 2K (required 2K) at threshold rel:0.7 of 100.0 at 1K = 70.0" in out
    # with a gate the gate decides: the 4K items fall below the resolved mark (their JSON says so) and fail nothing alone
    assert "below the relative mark" not in out and "ruler verdict: PASSED" in out
    assert result.ret == 0


def test_relative_mark_in_shards_is_resolved_at_merge(pytester, capsys):
    """A shard holds a share of the items: it re-judges nothing against a mark resolved on that share;
    its items pass at run time on a score above 0, and the merged report is judged on every item."""
    pytester.makeconftest(FADING)
    for k in (1, 2):
        result = run(pytester, *ENGINE, "--ruler-threshold=rel:0.7", f"--ruler-shard={k}/2", f"--ruler-report=s{k}.json")
        out = result.stdout.str()
        assert "below the relative mark" not in out
        assert "rel:0.7 (resolved at merge" in out
        assert report(pytester, f"s{k}.json")["relative_threshold"]["resolved_at"] == "merge"
        assert result.ret == 2  # under rel:F a shard's marks are resolved at merge: not decided
    assert {i["length"] for k in (1, 2) for i in report(pytester, f"s{k}.json")["items"]} == {1024, 2048, 4096}
    assert main(["merge", str(pytester.path / "s1.json"), str(pytester.path / "s2.json"), "--out", str(pytester.path / "m.json")]) == 0
    merged = report(pytester, "m.json")
    assert "resolved_at" not in merged["relative_threshold"] and merged["relative_threshold"]["base_score"] == 100.0
    assert {(i["length"], i["passed"]) for i in merged["items"]} == {(1024, True), (2048, True), (4096, False)}


def test_the_same_saved_report_gated_both_ways(pytester, capsys):
    pytester.makeconftest(FADING)
    run(pytester, *ENGINE, "--ruler-report=r.json")
    path = str(pytester.path / "r.json")
    assert main(["gate", path, "--require-effective-length=2k"]) == 1
    absolute = capsys.readouterr().out
    assert main(["gate", path, "--require-effective-length=2k", "--threshold", "rel:0.7"]) == 0
    relative = capsys.readouterr().out
    assert "gate FAILED: effective length 1K (required 2K) at threshold 85.6" in absolute
    assert "gate PASSED: effective length 2K (required 2K) at threshold rel:0.7 of 100.0 at 1K = 70.0" in relative
    assert main(["gate", path, "--require-effective-length=2k", "--threshold", "rel:2"]) == 4  # a usage error


@pytest.mark.parametrize(("args", "said"), [
    (["--ruler-mmlu=nowhere"], "--ruler-mmlu"),
    (["--ruler-hotpotqa-train=nowhere.json"], "--ruler-hotpotqa-train"),
    (["--ruler-threshold=rel:0.85", "--ruler-sequential"], "--ruler-sequential"),
    (["--ruler-threshold=rel:1.2"], "rel:F with F in (0, 1)"),
])
def test_start_up_refusals(pytester, args, said):
    result = run(pytester, "--ruler-model=smollm2-135m", "--ruler-backend=scripted", "--ruler-tasks=ruler2", "--ruler-lengths=4k", *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert said in result.stderr.str() and result.stderr.str().count(said) <= 2
