"""Secrets the user typed never reach a report, an error, the terminal or JUnit (issue 35, item 3).

A key inside ``--ruler-engine-option=extra_body={...}`` (at any depth) is sent to the server, as
asked, and masked everywhere pytest-ruler writes: the JSON report's ``provenance.command`` and the
item errors of a server that echoes the request (stub server on 127.0.0.1, answering the one-token
probe and refusing every completion with the request's fields in its message), the terminal and
the JUnit XML, with and without xdist. An unknown engine option is named with the valid names,
never with its value (the scripted engine: a rule-based stand-in, not a model).
"""

from __future__ import annotations

import json
import sys

import pytest

from ..servers.stub_openai import StubServer
from .helpers import SCRIPTED, XDIST, run

NESTED_TOKEN, PLAIN_KEY, SHAPED = "nested-tok-5cd21e07", "plain-key-9f31b8aa", "sk-proj-Qx7Lm2Vb9Nc4Zr8Tw1Ys"
EXTRA_BODY = json.dumps({"metadata": {"token": NESTED_TOKEN}, "api_key": PLAIN_KEY, "user": SHAPED, "top_k": 1})
SECRETS = (NESTED_TOKEN, PLAIN_KEY, SHAPED)


def _echoing(call):
    """A server that refuses every completion, quoting the request's fields (the probe passes)."""
    if call.route == "/v1/completions" and (call.body or {}).get("max_tokens") != 1:
        fields = {k: v for k, v in call.body.items() if k not in ("prompt", "model")}
        return 400, {"error": {"message": f"unsupported request fields {json.dumps(fields)}"}}
    return None


@pytest.mark.parametrize("xdist", XDIST)
def test_a_key_in_a_json_option_reaches_the_server_and_nothing_pytest_ruler_writes(pytester, monkeypatch, xdist):
    with StubServer(_echoing, models=[{"id": "smollm2-135m", "object": "model", "max_model_len": 4096}]) as server:
        args = ["--ruler-model=smollm2-135m", "--ruler-backend=openai", f"--ruler-base-url={server.base_url}",
                "--ruler-tokenizer=smollm2-135m", "--ruler-tasks=niah_single_1", "--ruler-lengths=1k", "--ruler-samples=1",
                "--ruler-no-cache", f"--ruler-engine-option=extra_body={EXTRA_BODY}", "--ruler-report=r.json", "--junitxml=j.xml"]
        monkeypatch.setattr(sys, "argv", ["pytest", *args])  # what provenance records: the process's command line
        result = run(pytester, *args, *xdist)
        sent = [c.body for c in server.posts() if c.body.get("max_tokens") != 1]
    assert sent and all(b["metadata"] == {"token": NESTED_TOKEN} and b["api_key"] == PLAIN_KEY for b in sent)  # as typed
    result.assert_outcomes(failed=1)
    out = result.stdout.str() + result.stderr.str()
    junit = (pytester.path / "j.xml").read_text()
    report = (pytester.path / "r.json").read_text()
    assert "unsupported request fields" in out and "unsupported request fields" in junit  # the echo is shown ...
    for secret in SECRETS:  # ... masked
        assert secret not in out and secret not in junit and secret not in report, secret
    command = json.loads(report)["provenance"]["command"]
    body = json.loads(command[9].partition("extra_body=")[2])
    assert body == {"metadata": {"token": "<secret>"}, "api_key": "<secret>", "user": "<secret>", "top_k": 1}


@pytest.mark.parametrize("option", ["api_key=sk-live-4e2b9c1d7a8f6e5d3c2b", "token=plain-value-7310"])
def test_an_unknown_engine_options_value_is_never_echoed(pytester, option):
    result = run(pytester, *SCRIPTED, "--ruler-tasks=vt", "--ruler-lengths=1k", f"--ruler-engine-option={option}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    name, _, value = option.partition("=")
    assert value not in err + result.stdout.str()
    assert f"scripted has no option {name!r}" in err and "known options: mode, max_context" in err


def test_a_bad_json_options_error_masks_the_keys_in_it(pytester):
    """A list where extra_body needs an object: the error shows the value, its keys' secrets masked."""
    value = json.dumps([{"headers": {"Authorization": f"Bearer {PLAIN_KEY}"}, "metadata": {"token": NESTED_TOKEN}}])
    result = run(pytester, "--ruler-model=smollm2-135m", "--ruler-backend=openai", "--ruler-base-url=http://127.0.0.1:9/v1",
                 "--ruler-tasks=vt", "--ruler-lengths=1k", f"--ruler-engine-option=extra_body={value}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert "extra_body must be a JSON object" in err and '"headers"' in err
    assert PLAIN_KEY not in err and NESTED_TOKEN not in err
