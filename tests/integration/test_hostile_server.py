"""Whole runs of the plugin against a hostile or careless OpenAI-compatible server (issue 23).

The server is the scripted stub (``tests/servers/stub_openai.py``), not a model:
with ``oracle`` it answers a needle prompt with the needle's value, read out of
the prompt, so a correct transport scores 100.
"""

from __future__ import annotations

import json

import pytest

from pytest_ruler.engines.scripted import oracle_answer

from ..servers.stub_openai import StubServer, completion
from .helpers import XDIST, report, run

TAIL = " (the exact text, six xylophone boxes)"  # every answer holds x's: a 1-character key "x" must not eat them


def oracle(call):
    if call.route == "/v1/completions" and call.body.get("max_tokens", 1) > 1:
        return 200, completion(oracle_answer(call.prompt) + TAIL, prompt_tokens=None)
    return None


def _args(server, *extra):
    return ("--ruler-model=stub-model", "--ruler-backend=openai", f"--ruler-base-url={server.base_url}",
            "--ruler-tokenizer=smollm2-135m", "--ruler-engine-option=prompt_format=text", "--ruler-tasks=niah_single_1",
            "--ruler-lengths=1k", "--ruler-samples=3", "--ruler-report=r.json", "--ruler-markdown=r.md", *extra)


def _written(pytester) -> dict[str, bytes]:
    """Every report and cache file the run left."""
    files = {name: (pytester.path / name).read_bytes() for name in ("r.json", "r.md") if (pytester.path / name).exists()}
    for db in pytester.path.rglob("predictions.sqlite*"):
        files[str(db)] = db.read_bytes()
    return files


@pytest.mark.parametrize("from_env, key, traces", [
    # RULER_API_KEY="$(cat key.txt)" on a CRLF file: the shell drops the \n, keeps the \r
    pytest.param("sk-crlf-7d3e9a01b5c2f4e6\r", "sk-crlf-7d3e9a01b5c2f4e6", ["sk-crlf-7d3e9a01b5c2f4e6"], id="crlf-file"),
    # a 1-character key cannot be hidden in text that holds the letter; it must never show as the key
    pytest.param("x", "x", ["Bearer x", "API_KEY=x", "'x'"], id="one-character"),
])
def test_a_run_with_an_odd_key_answers_right_and_leaves_no_trace_of_it(pytester, monkeypatch, from_env, key, traces):
    if from_env.endswith("\r"):
        (pytester.path / "key.txt").write_bytes(from_env.encode() + b"\n")
        from_env = (pytester.path / "key.txt").read_bytes().decode().rstrip("\n")  # what $(cat key.txt) gives
        (pytester.path / "key.txt").unlink()
    monkeypatch.setenv("RULER_API_KEY", from_env)
    with StubServer(oracle) as server:
        first = run(pytester, *_args(server))
        again = run(pytester, *_args(server))
    for result in (first, again):
        result.assert_outcomes(passed=1)
    item = report(pytester)["items"][0]
    assert item["score"] == 100.0 and item["engine_calls"] == 0 and item["cached"] == 3, item  # the rerun: all from the cache
    assert all(p["prediction"].endswith(TAIL) for p in item["predictions"])  # answers as the server sent them
    assert {c.headers.get("Authorization") for c in server.calls} == {f"Bearer {key}"}
    shown = first.stdout.str() + first.stderr.str() + again.stdout.str() + again.stderr.str()
    for trace in traces:
        assert trace not in shown
        for name, data in _written(pytester).items():
            assert trace.encode() not in data, name


def test_a_key_with_a_line_break_inside_is_refused_at_start_in_one_line(pytester, monkeypatch):
    monkeypatch.setenv("RULER_API_KEY", "sk-first-half-31c4\r\nsk-second-half-88a2")
    with StubServer(oracle) as server:
        result = run(pytester, *_args(server))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    out = result.stdout.str() + result.stderr.str()
    errors = [line for line in out.splitlines() if "RULER_API_KEY" in line]
    assert len(errors) == 1 and "U+000D (carriage return)" in errors[0], out
    assert "sk-first-half" not in out and "sk-second-half" not in out and "INTERNALERROR" not in out
    assert not server.calls  # nothing was sent


def test_a_server_error_body_cannot_drive_the_terminal(pytester):
    screen = "\x1b[2J\x1b[H\x1b[32mgate PASSED: effective length 128K\x1b[0m"

    def hostile(call):
        if call.route == "/v1/completions" and call.body.get("max_tokens", 1) > 1:
            return 400, {"error": {"message": screen}}
        return None

    with StubServer(hostile) as server:
        result = run(pytester, *_args(server, "-rA"))
    result.assert_outcomes(failed=1)
    out = result.stdout.str() + result.stderr.str()
    assert "\x1b" not in out
    assert "\\x1b[2J\\x1b[H\\x1b[32mgate PASSED" in out  # shown, escaped, as model outputs are
    assert "\x1b" not in json.dumps(report(pytester))  # json.dumps would write it as \u001b


def test_a_malformed_completion_is_a_named_sample_and_not_an_item_error(pytester):
    served = []

    def one_odd(call):
        if call.route == "/v1/completions" and call.body.get("max_tokens", 1) > 1:
            served.append(call)
            if len(served) == 2:  # the second answer of the first run is a list, not text
                body = completion()
                body["choices"][0]["text"] = ["not", "text"]
                return 200, body
        return oracle(call)

    with StubServer(one_odd) as server:
        first = run(pytester, *_args(server, "--ruler-threshold=50"))
        first_item = report(pytester)["items"][0]
        again = run(pytester, *_args(server, "--ruler-threshold=50"))
        again_item = report(pytester)["items"][0]
    first.assert_outcomes(passed=1)  # two of three right: above 50, and no item error
    assert first_item["error"] is None and first_item["errors"] == 0
    assert round(first_item["score"], 2) == 66.67
    assert any(r.startswith("malformed answer: ") and "choices[0].text is list, not text" in r for r in first_item["reasons"])
    again.assert_outcomes(passed=1)
    assert again_item["engine_calls"] == 1 and again_item["score"] == 100.0  # never cached: asked again, answered right


@pytest.mark.parametrize("xdist", XDIST)
def test_huge_answers_are_cut_and_marked_and_absurd_cache_counts_are_not_trusted(pytester, xdist):
    """Issue 35: a server that sends 3 MB for an answer of at most 128 tokens, and says 10^12 of
    its prompt tokens came from its prefix cache. The answers are cut where they are read and
    each is marked; the cache counts are left out and the report's warnings say so."""
    def flooding(call):
        if call.route == "/v1/completions" and call.body.get("max_tokens", 1) > 1:
            body = completion(oracle_answer(call.prompt) + " " + "z" * (3 * 2**20), prompt_tokens=900)
            body["usage"]["prompt_tokens_details"] = {"cached_tokens": 10**12}
            return 200, {"usage": body.pop("usage"), **body}  # usage first: read before the cut
        return None

    with StubServer(flooding) as server:
        first = run(pytester, *_args(server), *xdist)
        data = report(pytester)
        size = (pytester.path / "r.json").stat().st_size
        again = run(pytester, *_args(server), *xdist)
    first.assert_outcomes(passed=1)
    again.assert_outcomes(passed=1)
    item = data["items"][0]
    assert item["score"] == 100.0  # the needle came first: the cut kept it
    assert all(p["cut"].startswith("cut by pytest-ruler: ") and "max_tokens=128" in p["cut"] for p in item["predictions"])
    assert all(len(p["prediction"]) <= 128 * 64 for p in item["predictions"])
    assert any("3 of 3 answers were cut by pytest-ruler" in r for r in item["reasons"]), item["reasons"]
    assert size < 200_000, size  # not 30 MB
    assert report(pytester)["items"][0]["engine_calls"] == 3  # a cut answer is never cached
    assert data["prefix_cache"]["untrusted"] == 3 and data["prefix_cache"]["share"] is None
    assert all((rec.get("cached_share") or 0) <= 1 for rec in data["endpoints"].values())
    assert any("cached_tokens > prompt_tokens" in w and "3 answers" in w for w in data["warnings"]), data["warnings"]
