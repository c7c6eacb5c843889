"""Saved reports are checked down to their samples (issue 35, item 2), as users meet it: the
``pytest-ruler`` commands refuse a shard whose item says 100 over sample scores of 0, and a report
whose predictions were replaced with its scores left at 1, in one line naming the file, the item
and the field; an honest report of every family (a run of the plugin with test engines, not
models) is read by every command. Before this, both edited reports were merged and gated PASSED."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_ruler.cli import main
from pytest_ruler.results.report import Report

from ..ruler2_data import write_ruler2_data
from .helpers import SCRIPTED, report, run

DATA = Path(__file__).parent.parent / "data"

# a test engine (not a model): the scripted oracle's answer for one prompt in three, else a slice of the
# prompt's end (its length set by the prompt's checksum), so cwe, fwe, qa and RULERv2's soft matches earn
# partial credit, and niah and vt both pass and fail
QUOTING = '''
import zlib

from pytest_ruler.engines.base import Completion
from pytest_ruler.engines.scripted import ScriptedEngine


class Quoting(ScriptedEngine):
    name = "quoting"

    @staticmethod
    def describe(config):
        return {"engine": "quoting (test engine, not a model)"}

    def generate(self, requests, on_result=None):
        out = []
        for i, (r, c) in enumerate(zip(requests, super().generate(requests))):
            crc = zlib.crc32(r.prompt.encode())
            text = c.text if c.text and crc % 3 else r.prompt[-(60 + crc % 900):]
            out.append(Completion(text, c.prompt_tokens, c.completion_tokens, c.finish_reason))
            if on_result:
                on_result(i, out[-1])
        return out


def pytest_ruler_register(registry):
    registry.engine("quoting", Quoting)
'''


def _gate(path: Path, *more: str) -> int:
    return main(["gate", str(path), "--require-effective-length=1k", *more])


def _one_error_line(capsys) -> str:
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("pytest-ruler: error: "), captured.err
    assert "Traceback" not in captured.err + captured.out and "ruler verdict" not in captured.out
    return lines[0]


def _forge(path: Path, edit) -> None:
    """Edit a saved report's items as a careful forger would: the stored summary made to agree with them."""
    data = json.loads(path.read_text())
    for item in data["items"]:
        edit(item)
    data["summary"] = Report.from_dict(data).to_dict()["summary"]
    path.write_text(json.dumps(data))


def test_merge_and_gate_refuse_a_shard_that_says_100_over_samples_of_0(pytester, capsys):
    base = [*SCRIPTED, "--ruler-tasks=niah_single_1,vt", "--ruler-lengths=1k", "--ruler-samples=3", "--ruler-no-cache",
            "--ruler-engine-option=mode=empty"]
    for k in (1, 2):
        run(pytester, *base, f"--ruler-shard={k}/2", f"--ruler-report=s{k}.json")
    # s1: a shard with items (which shard runs which item is the node id's hash)
    s1, s2 = sorted((pytester.path / f"s{k}.json" for k in (1, 2)), key=lambda p: not json.loads(p.read_text())["items"])
    item = json.loads(s1.read_text())["items"][0]
    assert item["sample_scores"] == [0.0, 0.0, 0.0] and item["score"] == 0.0  # the premise: an honest 0
    _forge(s1, lambda it: it.update(score=100.0, passed=True))
    label = f"{item['task']}[1024-seed0]"
    capsys.readouterr()
    assert main(["merge", str(s1), str(s2), "--out", str(pytester.path / "m.json")]) == 2
    line = _one_error_line(capsys)
    assert f"SHARD.json='{s1}' is invalid: item {label}: score 100.0 but its sample_scores give 0.0" in line
    assert not (pytester.path / "m.json").exists()
    assert _gate(s1) == 4
    assert f"REPORT.json='{s1}' is invalid: item {label}: score 100.0 but its sample_scores give 0.0" in _one_error_line(capsys)
    assert main(["report", str(s1), "--no-plots"]) == 2
    assert f"item {label}: score 100.0" in _one_error_line(capsys)


def test_gate_and_compare_refuse_predictions_replaced_with_their_scores_left_at_1(pytester, capsys):
    run(pytester, *SCRIPTED, "--ruler-tasks=niah_single_1,vt", "--ruler-lengths=1k,2k", "--ruler-samples=2",
        "--ruler-report=r.json")
    path = pytester.path / "r.json"
    capsys.readouterr()
    assert _gate(path) == 0 and all(s == 1.0 for it in report(pytester)["items"] for s in it["sample_scores"])

    def no_idea(item):
        for rec in item["predictions"]:
            rec["prediction"] = "I have no idea"

    _forge(path, no_idea)
    capsys.readouterr()
    assert _gate(path) == 4
    line = _one_error_line(capsys)
    assert f"REPORT.json='{path}' is invalid: item niah_single_1[1024-seed0]: sample_scores[0] is 1.0 but its prediction " \
           "'I have no idea' scores 0.0 against its answers" in line and "by the task's metric 'all'" in line
    assert main(["compare", str(path), str(path)]) == 2
    assert "OLD.json=" in _one_error_line(capsys)


def test_an_honest_report_of_every_family_is_read_by_every_command(pytester, capsys):
    pytester.makeconftest(QUOTING)
    for name in ("essays_mini.txt", "squad_mini.json", "hotpotqa_mini.json"):
        (pytester.path / name).write_bytes((DATA / name).read_bytes())
    ruler2 = write_ruler2_data(pytester.path / "ruler2")
    common = ["--ruler-model=smollm2-135m", "--ruler-backend=quoting", "--ruler-no-cache", "--ruler-chat-template=none",
              "--ruler-lengths=1k", "--ruler-samples=3", "--ruler-threshold=0", "--ruler-essays=essays_mini.txt",
              "--ruler-squad=squad_mini.json", f"--ruler-mmlu={ruler2['mmlu']}", f"--ruler-hotpotqa-train={ruler2['hotpotqa_train']}"]
    # the paper's 13 tasks with a depth sweep in an order that is not sorted, their map-reduce twins; RULERv2's 12
    run(pytester, *common, "--ruler-tasks=all", "--ruler-hotpotqa=hotpotqa_mini.json", "--ruler-depths=0.8,0.2",
        "--ruler-mapreduce", "--ruler-report=paper.json")
    run(pytester, *common, "--ruler-tasks=ruler2", "--ruler-lengths=4k", f"--ruler-hotpotqa={ruler2['hotpotqa']}",
        "--ruler-report=v2.json")
    items = [it for name in ("paper.json", "v2.json") for it in report(pytester, name)["items"] if it["error"] is None]
    scored = {it["task"] for it in items if it["predictions"]}
    assert len(scored) == 25, sorted(scored)  # the premise: every task ran and kept its predictions ...
    assert any(0 < s < 1 for it in items for s in it["sample_scores"])  # ... with partial credit, where rounding shows
    assert any(it["depth_scores"] for it in items) and any(it["mode"] == "mapreduce" and it["predictions"] for it in items)
    for name in ("paper.json", "v2.json"):
        path = pytester.path / name
        capsys.readouterr()
        assert _gate(path) in (0, 1), capsys.readouterr().err
        assert main(["report", str(path), "--no-plots"]) == 0, capsys.readouterr().err
        assert main(["compare", str(path), str(path)]) == 0, capsys.readouterr().err
