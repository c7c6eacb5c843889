"""Mistakes knowable at start are refused there, once, not per item (issue 23): a dtype no
engine loads, a GPU this machine does not have, lengths too short for a task's smallest
prompt. Each run is a pytester run of the plugin; the scripted engine (a rule-based stand-in,
not a model) or a tiny model folder that is never loaded stands behind it."""

from __future__ import annotations

import json

import pytest

from .helpers import SCRIPTED, run


def _refused(result, needle):
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    err = result.stderr.str()
    assert needle in err and err.count("is invalid") == 1, err
    return err


def test_a_dtype_no_engine_loads_is_refused_at_start(pytester):
    result = run(pytester, *SCRIPTED, "--ruler-tasks=vt", "--ruler-lengths=1k", "--ruler-samples=1", "--ruler-dtype=float8")
    err = _refused(result, "--ruler-dtype='float8' is invalid: choose auto, float32, bfloat16 or float16")
    assert "quantization=" in err


def test_a_device_that_is_not_a_device_is_refused_at_start(pytester):
    result = run(pytester, *SCRIPTED, "--ruler-tasks=vt", "--ruler-lengths=1k", "--ruler-samples=1", "--ruler-device=gpu:7")
    _refused(result, "--ruler-device='gpu:7' is invalid: choose auto, cpu, cuda or cuda:N")


def test_a_gpu_this_machine_lacks_is_refused_before_the_model_is_read(pytester):
    """cuda:99 (no machine here has 100 GPUs) with a model folder whose weights are never loaded."""
    folder = pytester.path / "tiny"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"model_type": "llama", "max_position_embeddings": 2048}))
    (folder / "model.safetensors").write_bytes((2).to_bytes(8, "little") + b"{}")
    result = run(pytester, f"--ruler-model={folder}", "--ruler-tokenizer=smollm2-135m", "--ruler-backend=hf",
                 "--ruler-tasks=vt", "--ruler-lengths=1k", "--ruler-samples=1", "--ruler-device=cuda:99")
    err = _refused(result, "--ruler-device='cuda:99' is invalid:")
    assert "pass one of them, cuda or auto" in err or "use --ruler-device=cpu or auto" in err


def test_a_length_below_a_tasks_smallest_prompt_is_refused_at_start(pytester):
    """vt's fixed text and one chain need about 827 tokens with the embedded tokenizer: 200 can never hold it."""
    result = run(pytester, *SCRIPTED, "--ruler-tasks=niah_single_1,vt", "--ruler-lengths=200,1k", "--ruler-samples=1")
    err = _refused(result, "--ruler-lengths='200' is invalid: niah_single_1 needs at least ")
    assert "use 384 or more" in err
    result = run(pytester, *SCRIPTED, "--ruler-tasks=vt", "--ruler-lengths=300,600,1k", "--ruler-samples=1")
    err = _refused(result, "--ruler-lengths='300,600' is invalid: vt needs at least 8")
    assert "with the tokenizer smollm2-135m" in err and "or leave the task out with --ruler-tasks" in err


def test_lengths_that_fit_every_task_still_run(pytester):
    result = run(pytester, *SCRIPTED, "--ruler-tasks=vt,cwe", "--ruler-lengths=1k", "--ruler-samples=1")
    result.assert_outcomes(passed=1, failed=1)  # cwe scores 0 with the scripted oracle


# ---------------------------------------------------------------- knowable at start (issue 35, item 6)


def _markers():
    from pytest_ruler.tasks.tokenizer import load_tokenizer

    return load_tokenizer("smollm2-135m").count("<think></think>\n\n")


def test_a_think_budget_that_cannot_fit_the_context_is_refused_at_start(pytester):
    """At the longest length asked L, the answer call holds L (the prompt and the task's answer tokens),
    the thinking and its markers: L + budget + markers must fit the context. One over is refused,
    naming --ruler-think-budget and the budget that fits; that budget runs."""
    room = 2048 - 1024 - _markers()
    base = [*SCRIPTED, "--ruler-tasks=niah_single_1", "--ruler-lengths=512,1k", "--ruler-samples=1", "--ruler-max-model-len=2048"]
    err = _refused(run(pytester, *base, f"--ruler-think-budget={room + 1}"), f"--ruler-think-budget={room + 1} is invalid")
    assert f"give --ruler-think-budget={room} or less" in err and "keep lengths up to 512" in err
    assert "2048 tokens (--ruler-max-model-len)" in err
    err = _refused(run(pytester, *base, "--ruler-think-budget=100000"), "--ruler-think-budget=100000 is invalid")
    result = run(pytester, *base, f"--ruler-think-budget={room}", "--ruler-engine-option=mode=thinking", "--ruler-engine-option=think_tokens=50")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str() + result.stderr.str()


@pytest.mark.parametrize("mark", ["rel:1", "rel:1.0", "REL: 1"])
def test_rel_1_is_refused_with_the_reason(pytester, mark):
    """The base length's mark is its own score and the pass rule is strictly above: at rel:1 it never
    passes itself, so no length could be an effective length."""
    err = _refused(run(pytester, *SCRIPTED, "--ruler-tasks=vt", "--ruler-lengths=1k", f"--ruler-threshold={mark}"),
                   f"--ruler-threshold='{mark}' is invalid")
    assert "never passes itself" in err and "give F below 1" in err


def test_rel_1_is_refused_by_the_gate_command_too(tmp_path, capsys):
    from pytest_ruler.cli import main

    path = tmp_path / "r.json"
    path.write_text("{}")
    assert main(["gate", str(path), "--require-effective-length=1k", "--threshold", "rel:1"]) == 4
    err = capsys.readouterr().err
    assert "--threshold='rel:1' is invalid" in err and "never passes itself" in err
