"""The examples/ folder runs as documented (plumbing only: the scripted test engine,
not a model, held to the embedded model's 8K window so the map-reduce example has
something to rescue). Each documented ``pytest ...`` command is read from the
example's own docstring, so a command that stops working fails here."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .helpers import run

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
# the scripted engine in place of the embedded model: the same tokenizer, its 8K window
AS_EMBEDDED = ["--ruler-backend=scripted", "--ruler-engine-option=max_context=8192", "--ruler-no-cache"]


def documented_commands() -> list[tuple[str, list[str]]]:
    """(file, pytest arguments) of every ``pytest ...`` line in an example's docstring."""
    found = []
    for f in sorted(EXAMPLES.glob("*.py")):
        for line in f.read_text().splitlines():
            if re.match(r"\s+pytest ", line):
                found.append((f.name, shlex.split(line)[1:]))
    return found


def test_every_example_file_with_tests_documents_its_command():
    documented = {name for name, _ in documented_commands()}
    assert {"conftest.py", "test_quickstart.py", "test_mapreduce.py"} <= documented


@pytest.mark.parametrize("name,args", documented_commands(), ids=[f"{n}:{' '.join(a)}" for n, a in documented_commands()])
def test_the_documented_commands_pass_on_the_scripted_engine(pytester, name, args):
    examples = pytester.path / "examples"
    shutil.copytree(EXAMPLES, examples, ignore=shutil.ignore_patterns("__pycache__"))
    result = run(pytester, *args, *AS_EMBEDDED)
    out = result.stdout.str()
    assert result.ret == pytest.ExitCode.OK, out
    assert "RULER FAILED" not in out and "RULER ERROR" not in out
    if "test_mapreduce.py" in " ".join(args) or args[0] == "examples":
        rescue = next(ln for ln in out.splitlines() if ln.startswith("map-reduce passes where native fails"))
        assert "(grounding: literal (hallucination filter:" in rescue and rescue.endswith("): niah_single_1@12K")


def test_the_whole_folder_runs_every_user_test(pytester):
    shutil.copytree(EXAMPLES, pytester.path / "examples", ignore=shutil.ignore_patterns("__pycache__"))
    result = run(pytester, "examples", "--ruler-model=smollm2-135m", "--ruler-tasks=niah_single_1", "--ruler-lengths=1k",
                 "--ruler-samples=3", *AS_EMBEDDED)
    result.assert_outcomes(passed=5)  # four user tests and the suite's one item


def test_custom_task_script_makes_a_missing_output_folder(tmp_path):
    out = tmp_path / "out" / "custom.jsonl"
    done = subprocess.run([sys.executable, str(EXAMPLES / "custom_task.py"), str(out)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    lines = out.read_text().splitlines()
    assert len(lines) == 5 and done.stdout.strip() == f"wrote 5 samples of niah_8keys to {out}"


def test_the_readme_own_tests_example_runs_as_written(pytester):
    """The README's *Your own tests* block and its command: only those tests run (--ruler-no-suite)."""
    section = (EXAMPLES.parent / "README.md").read_text().split("## Your own tests", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    command = re.search(r"```bash\n(pytest [^\n#]*)", section).group(1)
    name = re.search(r"# (\S+\.py)", code).group(1)
    (pytester.path / name).write_text(code)
    args = shlex.split(command)[1:]
    assert args[0] == name and "--ruler-no-suite" in args
    result = run(pytester, *args, *AS_EMBEDDED, "--ruler-report=r.json")
    result.assert_outcomes(passed=2)
    assert "ruler::" not in result.stdout.str()
    items = json.loads((pytester.path / "r.json").read_text())["items"]
    assert max(i["length"] for i in items) <= 8192  # within the embedded model's window


def _workflow_commands(name: str) -> dict[str, list[str]]:
    """{job: the shell lines of its ``run:`` steps} of an example workflow."""
    yaml = pytest.importorskip("yaml")
    jobs = yaml.safe_load((EXAMPLES / name).read_text())["jobs"]
    return {job: [ln.strip() for step in spec["steps"] if "run" in step for ln in step["run"].splitlines() if ln.strip()]
            for job, spec in jobs.items()}


def test_the_sharded_workflow_runs_as_written(pytester, monkeypatch, capsys, tmp_path):
    """examples/ruler-sharded-gate.yml: each matrix shard's pytest command, then the gate job's merge,
    gate and report commands, as written (the scripted engine at 1K/2K in place of vLLM and the paper
    preset); the merged report's verdict and step summary are the unsharded run's."""
    from pytest_ruler.cli import main

    commands = _workflow_commands("ruler-sharded-gate.yml")
    shard_cmd = next(c for c in commands["shard"] if c.startswith("pytest "))
    small = ["--ruler-tasks=niah_single_1,vt,cwe", "--ruler-lengths=1k,2k", "--ruler-samples=1", *AS_EMBEDDED]
    command, _, tolerated = shard_cmd.partition(" || ")
    assert tolerated == "[ $? -eq 2 ]"  # a shard that measured its share is "not decided": the job passes on 2
    for k in range(1, 5):
        line = command.replace("${{ vars.MODEL_PATH }}", "smollm2-135m").replace("${{ matrix.shard }}", str(k))
        args = [a for a in shlex.split(line)[1:] if a not in ("-n", "auto")]  # one process here (a GPU slot each there)
        assert f"--ruler-shard={k}/4" in args
        shard = run(pytester, *args, *small)
        assert shard.ret == 2, shard.stdout.str()  # cwe fails under the oracle: measured (xfailed), never a failure here
        assert "ruler verdict: NOT DECIDED" in shard.stdout.str()
    whole = run(pytester, "--ruler-model=smollm2-135m", "--ruler-only", "--ruler-report=whole.json", *small)
    capsys.readouterr()  # the in-process runs echo their output here: only the gate job's is read below
    monkeypatch.chdir(pytester.path)
    gate_job = commands["gate"]
    assert [c.split()[:2] for c in gate_job if c.startswith("pytest-ruler")] == [["pytest-ruler", "merge"], ["pytest-ruler", "gate"],
                                                                                  ["pytest-ruler", "report"]]
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    codes = {}
    for line in gate_job:
        words = shlex.split(line)
        if words[0] != "pytest-ruler":
            continue
        words = [str(p.name) for w in words[1:] for p in (sorted(pytester.path.glob(w)) if "*" in w else [Path(w)])]
        codes[words[0]] = main(words)
    out = capsys.readouterr().out
    assert codes["merge"] == 0 and codes["report"] == 0 and (pytester.path / "report" / "ruler.md").is_file()
    merged, unsharded = json.loads((pytester.path / "ruler.json").read_text()), json.loads((pytester.path / "whole.json").read_text())
    assert merged["summary"] == unsharded["summary"] and len(merged["items"]) == 6 and merged["shards"]["missing"] == []
    # the gate asks 64K of a 1K/2K run: it fails, and says so on the merged run's step summary
    gate_lines = [ln for ln in out.splitlines() if ln.startswith(("gate ", "ruler verdict:"))]
    assert codes["gate"] == 1 and len(gate_lines) == 2 and gate_lines[0].startswith("gate FAILED: effective length")
    assert gate_lines[1].startswith("ruler verdict: FAILED")
    assert "## Effective context length" in summary.read_text() and "## Verdict\n\n**FAILED**" in summary.read_text()
    monkeypatch.delenv("GITHUB_STEP_SUMMARY")
    assert whole.ret == pytest.ExitCode.TESTS_FAILED and main(["gate", "whole.json", "--require-effective-length=64k"]) == 1
    assert [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith(("gate ", "ruler verdict:"))] == gate_lines


def test_the_release_workflow_keeps_the_prediction_cache_it_runs_with():
    """examples/ruler-release-gate.yml: actions/cache restores the folder the job's pytest writes its
    predictions to (RULER_PREDICTIONS_DIR, in the workspace), not pytest's .pytest_cache."""
    yaml = pytest.importorskip("yaml")
    job = yaml.safe_load((EXAMPLES / "ruler-release-gate.yml").read_text())["jobs"]["ruler"]
    folder = job["env"]["RULER_PREDICTIONS_DIR"]
    assert folder.startswith("${{ github.workspace }}/")
    cache = next(step for step in job["steps"] if str(step.get("uses", "")).startswith("actions/cache"))
    paths = cache["with"]["path"].split()
    assert folder.removeprefix("${{ github.workspace }}/") in paths and not any(".pytest_cache" in p for p in paths)
    runs = [step for step in job["steps"] if "pytest " in step.get("run", "")]
    assert runs and not any("--ruler-cache-dir" in step["run"] or "--ruler-no-cache" in step["run"] for step in runs)


@pytest.mark.parametrize("name", ["ruler-release-gate.yml", "ruler-sharded-gate.yml"])
def test_the_workflows_install_pytest_ruler_from_its_repository(name):
    """No release is on PyPI: every ``pip install`` of pytest-ruler in an example workflow names the
    repository's git URL (one workflow-level variable), never the bare package name."""
    yaml = pytest.importorskip("yaml")
    workflow = yaml.safe_load((EXAMPLES / name).read_text())
    assert workflow["env"]["PYTEST_RULER_URL"].startswith("git+https://")
    installs = [ln for lines in _workflow_commands(name).values() for ln in lines if ln.startswith("pip install")]
    assert installs and all(re.fullmatch(r'pip install "pytest-ruler(\[[a-z,]+\])? @ \$PYTEST_RULER_URL"', ln) for ln in installs), installs


def test_the_readme_workflow_excerpt_is_the_release_workflow():
    """The README's ``yaml`` block is an excerpt of examples/ruler-release-gate.yml: each of its lines
    (comments aside) is a line of the workflow, so the excerpt cannot drift from the file the tests run."""
    block = re.search(r"```yaml\n(.*?)```", (EXAMPLES.parent / "README.md").read_text(), re.S).group(1)
    workflow = {ln.split("  #")[0].strip() for ln in (EXAMPLES / "ruler-release-gate.yml").read_text().splitlines()}
    excerpt = [ln.split("  #")[0].strip() for ln in block.splitlines() if ln.strip() and not ln.strip().startswith("#")]
    assert len(excerpt) > 10 and [ln for ln in excerpt if ln not in workflow] == []
