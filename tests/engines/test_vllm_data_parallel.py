"""One endpoint over several engines: vLLM's data-parallel server (``--data-parallel-size 2``, vLLM's
CPU build, the embedded model) is one OpenAI-compatible URL to the openai engine; the plugin's item
passes through it and both data-parallel ranks answer part of its requests (vLLM's own
``/metrics``, per engine). Marked slow: the server takes about three minutes to start on 2 CPU cores."""

from __future__ import annotations

import json
import re
import urllib.request

import pytest

from pytest_ruler.errors import RulerUsageError

from ..servers import vllm_server as launcher


def _requests_per_engine(base_url: str) -> dict[str, float]:
    """vLLM's ``vllm:request_success_total`` summed per ``engine`` label (a data-parallel rank)."""
    with urllib.request.urlopen(base_url.removesuffix("/v1") + "/metrics", timeout=30) as resp:
        text = resp.read().decode()
    counts: dict[str, float] = {}
    for line in text.splitlines():
        m = re.match(r'vllm:request_success_total\{([^}]*)\}\s+([0-9.e+]+)', line)
        if m:
            engine = re.search(r'engine="([^"]*)"', m[1])
            key = engine[1] if engine else "?"
            counts[key] = counts.get(key, 0.0) + float(m[2])
    return counts


@pytest.fixture(scope="module")
def dp_server(tmp_path_factory):
    why = launcher.missing()
    if why:
        pytest.skip(why)
    try:
        model_dir = launcher.embedded_model_dir()
    except RulerUsageError as exc:
        pytest.skip(str(exc))
    log = tmp_path_factory.mktemp("vllm-dp") / "server.log"
    with launcher.vllm_server(model_dir, served_name="smollm2-135m", max_model_len=2048, kv_cache_gib=1, startup_timeout=900,
                              extra_args=("--data-parallel-size", "2"), log_path=log) as url:
        yield url


@pytest.mark.slow
def test_a_data_parallel_server_is_one_endpoint_and_both_ranks_answer(dp_server, pytester):
    before = _requests_per_engine(dp_server)
    result = pytester.runpytest_subprocess(
        "-p", "no:hypothesispytest", "--ruler-model=smollm2-135m", "--ruler-backend=openai", f"--ruler-base-url={dp_server}",
        "--ruler-tasks=niah_single_1", "--ruler-lengths=1k", "--ruler-samples=8", "--ruler-no-cache", "--ruler-report=r.json",
        timeout=900,
    )
    report = json.loads((pytester.path / "r.json").read_text())
    item = report["items"][0]
    assert report["backend"] == "openai" and item["engine_calls"] == 8 and item["error"] is None, item
    assert item["score"] == 100.0, item["failures"]  # as through the one-engine server (test_openai_engine.py)
    result.assert_outcomes(passed=1)
    after = _requests_per_engine(dp_server)
    served = {e: after.get(e, 0.0) - before.get(e, 0.0) for e in after}
    assert sum(served.values()) >= 8 and len([e for e, n in served.items() if n > 0]) == 2, served
