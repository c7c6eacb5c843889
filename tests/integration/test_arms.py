"""--ruler-arm and --ruler-noninferiority-margin (issue 39): pytester runs of the plugin with the
scripted test engine (a stand-in, not a model). The candidate arm is the scripted oracle made blind above
1500 tokens (``blind_above``): perfect at 1K, empty at 2K, so it must be refuted at 2K only."""

from __future__ import annotations

import pytest

from .helpers import SCRIPTED, XDIST, report, run

TWO_LENGTHS = [*SCRIPTED, "--ruler-tasks=niah_single_1", "--ruler-lengths=1k,2k", "--ruler-only", "--ruler-report=r.json"]


@pytest.mark.parametrize("xdist", XDIST)
def test_an_arm_worse_at_long_lengths_fails_naming_the_arm_and_its_cells(pytester, xdist, capsys):
    result = run(pytester, *TWO_LENGTHS, "--ruler-markdown=r.md", "--ruler-samples=12", "--ruler-arm=ref", "--ruler-arm=cand:blind_above=1500",
                 "--ruler-noninferiority-margin=10", "-v", *xdist)
    out = result.stdout.str()
    assert result.ret == 1, out
    for nodeid in ("niah_single_1[1024-seed0-arm=ref]", "niah_single_1[1024-seed0-arm=cand]",
                   "niah_single_1[2048-seed0-arm=ref]", "niah_single_1[2048-seed0-arm=cand]"):
        assert nodeid in out
    verdict = [line for line in out.splitlines() if line.startswith("ruler verdict:")]
    assert verdict and "FAILED" in verdict[-1] and "arm cand" in verdict[-1] and "niah_single_1 @ 2K" in verdict[-1]
    assert "niah_single_1 @ 1K" not in verdict[-1]
    assert "arm cand:" in out and "arm ref (the reference):" in out  # Table 3 per arm
    data = report(pytester)
    assert {it["arm"] for it in data["items"]} == {"ref"} and len(data["items"]) == 2
    arms = data["arms"]
    assert arms["reference"] == "ref" and arms["margin"] == 10.0
    cand = arms["arms"][1]
    assert cand["name"] == "cand" and cand["status"] == "failed" and len(cand["items"]) == 2
    cells = {c["length"]: c for c in cand["cells"]}
    assert cells[2048]["status"] == "refuted" and cells[2048]["lost"] == 12 and cells[2048]["gained"] == 0
    assert cells[2048]["reference_score"] == 100.0 and cells[2048]["arm_score"] == 0.0
    assert len(cells[2048]["lost_examples"]) == 2 and cells[2048]["lost_examples"][0]["arm_prediction"] == ""
    assert cells[1024]["status"] != "refuted" and cells[1024]["difference"] == 0.0
    assert data["verdict"]["status"] == "failed" and data["verdict"]["exit_status"] == 1
    assert cand["engine"]["options"]["blind_above"] == 1500
    from pytest_ruler.report.schema import build_schema, validate_report

    assert validate_report(data, strict=True, schema=build_schema()) == []
    assert "## Arms" in (pytester.path / "r.md").read_text() and "| niah_single_1 | 2K | native | 100.0 | 0.0 |" in (pytester.path / "r.md").read_text()
    from pytest_ruler.cli import main

    assert main(["gate", str(pytester.path / "r.json")]) == 1  # the saved report is judged as the run was
    assert verdict[-1] in capsys.readouterr().out


@pytest.mark.parametrize("xdist", XDIST)
def test_identical_arms_pass(pytester, xdist):
    result = run(pytester, *TWO_LENGTHS, "--ruler-samples=3", "--ruler-arm=a", "--ruler-arm=b", *xdist)
    out = result.stdout.str()
    assert result.ret == 0, out
    assert "ruler verdict: PASSED" in out and "arm b: no significant drop against a" in out
    cells = report(pytester)["arms"]["arms"][1]["cells"]
    assert [c["difference"] for c in cells] == [0.0, 0.0] and all(c["lost"] == c["gained"] == 0 for c in cells)


def test_identical_arms_show_noninferiority_with_enough_samples_and_few_samples_decide_nothing(pytester):
    args = [*SCRIPTED, "--ruler-tasks=niah_single_1", "--ruler-lengths=1k", "--ruler-only", "--ruler-report=r.json",
            "--ruler-arm=a", "--ruler-arm=b", "--ruler-noninferiority-margin=20"]
    result = run(pytester, *args, "--ruler-samples=3")
    assert result.ret == 2, result.stdout.str()
    assert "non-inferiority to a (margin 20 points) not shown at niah_single_1 @ 1K" in result.stdout.str()
    result = run(pytester, *args, "--ruler-samples=40")
    assert result.ret == 0, result.stdout.str()
    assert "arm b is non-inferior to a (margin 20 points)" in result.stdout.str()


def test_bad_arms_are_refused_at_start(pytester):
    result = run(pytester, *SCRIPTED, "--ruler-arm=only")
    assert result.ret == 4 and "two arms at least" in result.stderr.str()
    result = run(pytester, *SCRIPTED, "--ruler-arm=a", "--ruler-arm=b:no_such=1")
    assert result.ret == 4 and "(b)" in result.stderr.str()
