"""One context length: the start-up check reads the number the engine runs with.

The example from the issue: a llama.cpp server reports no context, the user declares it
with ``--ruler-engine-option=max_context=8192``; a length over it is refused at start-up
(one error line, nothing sent to the server), not failed item by item at run time.
The server is the stub (tests/servers/stub_openai.py), answering as llama.cpp's does.
"""

from __future__ import annotations

import pytest

from ..servers.stub_openai import StubServer
from .helpers import report, run

LLAMA_CPP_MODELS = [{"id": "smollm2-135m", "object": "model", "owned_by": "llamacpp"}]  # no max_model_len


def _openai(server: StubServer) -> list[str]:
    return ["--ruler-model=smollm2-135m", "--ruler-backend=openai", f"--ruler-base-url={server.base_url}",
            "--ruler-tokenizer=smollm2-135m", "--ruler-tasks=niah_single_1", "--ruler-samples=1", "--ruler-no-cache"]


def test_a_declared_context_over_a_silent_server_refuses_longer_lengths_at_start(pytester):
    with StubServer(models=LLAMA_CPP_MODELS) as server:
        result = run(pytester, *_openai(server), "--ruler-engine-option=max_context=8192", "--ruler-lengths=16k")
        posts = server.posts()
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    err = result.stderr.str()
    assert "--ruler-lengths" in err and "16K" in err and "8192 tokens (--ruler-engine-option max_context)" in err
    assert posts == []  # refused before any request


def test_within_the_declared_context_the_run_goes_ahead(pytester):
    with StubServer(models=LLAMA_CPP_MODELS) as server:
        result = run(pytester, *_openai(server), "--ruler-engine-option=max_context=8192", "--ruler-lengths=4k", "--ruler-report=r.json")
        posts = server.posts()
    assert result.ret in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED), result.stdout.str()
    [item] = report(pytester)["items"]
    assert item["over_length"] == 0 and item["error"] is None
    assert any(len(p.prompt or ()) > 3000 for p in posts)  # the 4K prompt reached the server (besides the probe)


# ------------------------------------------------------------ knowable at start (issue 35, item 6)

STUB_MODEL = {"id": "smollm2-135m", "object": "model", "root": "/srv/models/stub"}


@pytest.mark.parametrize("said", [None, -1, "abc", 10**12, 0, True], ids=["missing", "-1", "abc", "1e12", "0", "true"])
def test_a_server_with_no_usable_context_length_is_refused_at_start_naming_the_option(pytester, said):
    """GET /models gives no context length, or one that is none (the tokenizer gives none either):
    one error at start naming --ruler-max-model-len and how to give it, nothing sent, no item run."""
    model = {**STUB_MODEL, **({} if said is None else {"max_model_len": said})}
    with StubServer(models=[model]) as server:
        result = run(pytester, *_openai(server), "--ruler-lengths=1k")
        posts = server.posts()
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    err = result.stderr.str()
    assert err.count("is invalid") == 1, err
    assert "--ruler-max-model-len=N" in err and "vLLM's --max-model-len" in err, err
    if said is None:
        assert "GET /models gives no max_model_len" in err
    else:
        assert err.startswith("ERROR: the server's max_model_len=") and "no context length" in err
    assert posts == [] and "collected" not in result.stdout.str()


@pytest.mark.parametrize("given", ["--ruler-max-model-len=4096", "--ruler-engine-option=max_context=4096"])
def test_a_given_context_overrides_a_servers_unusable_one(pytester, given):
    with StubServer(models=[{**STUB_MODEL, "max_model_len": -1}]) as server:
        result = run(pytester, *_openai(server), "--ruler-lengths=1k", given, "--ruler-report=r.json")
    assert result.ret in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED), result.stderr.str()
    [item] = report(pytester)["items"]
    assert item["error"] is None and item["over_length"] == 0
