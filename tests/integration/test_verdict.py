"""A verdict you can trust (issue 9): pytester runs of the plugin with test engines
(the scripted engine and a conftest engine built on it, stand-ins, not models).

- errored items count: ``ERR`` cells, a failing gate, ``error`` in the JSON, also
  when an xdist worker crashes;
- knowable mistakes are refused once, at start (exit 4, one ``ERROR:`` line);
- one failing engine load gives one message;
- reports survive a failing end of run and Ctrl-C (``complete: false``);
- a corrupt or unusable cache is recovered from;
- samples are generated lazily; a hung server says what it waits for;
- the API key never reaches any output;
- ``--ruler-only`` reports what it deselected.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ..servers.stub_openai import StubServer, completion
from .helpers import SCRIPTED, XDIST, report, run

# A test engine for plumbing tests (not a model): the scripted oracle, except that
# prompts of the vt task make it fail in the way FLAKY_ACTION says.
FLAKY_CONFTEST = '''
import os
from pytest_ruler.engines.scripted import ScriptedEngine


class FlakyEngine(ScriptedEngine):
    name = "flaky"

    @staticmethod
    def describe(config):
        return {"engine": "flaky (test engine, not a model)"}

    def generate(self, requests, on_result=None):
        if any("VAR " in r.prompt for r in requests):
            action = os.environ.get("FLAKY_ACTION", "raise")
            if action == "raise":
                raise RuntimeError("CUDA error: an illegal memory access was encountered")
            if action == "crash":
                os._exit(3)
            if action == "interrupt":
                raise KeyboardInterrupt
        return super().generate(requests, on_result)


def pytest_ruler_register(registry):
    registry.engine("flaky", FlakyEngine)
'''
FLAKY = ["--ruler-model=smollm2-135m", "--ruler-backend=flaky", "--ruler-tasks=niah_single_1,vt", "--ruler-samples=2"]


def _one_error_line(result, *words):
    err = result.stderr.str()
    lines = [ln for ln in err.splitlines() if ln.startswith("ERROR:")]
    assert len(lines) == 1, err
    for w in words:
        assert w in lines[0], lines[0]
    assert "Traceback" not in err and "INTERNALERROR" not in err
    return lines[0]


# ---------------------------------------------------------------- 1. errors count


@pytest.mark.parametrize("xdist", XDIST)
def test_an_errored_item_is_a_failing_cell_and_fails_the_gate(pytester, monkeypatch, xdist):
    pytester.makeconftest(FLAKY_CONFTEST)
    monkeypatch.setenv("FLAKY_ACTION", "raise")
    result = run(pytester, *FLAKY, "--ruler-lengths=1k", "--ruler-require-effective-length=1k", "--ruler-report=r.json", "--junitxml=j.xml", *xdist)
    out = result.stdout.str()
    result.assert_outcomes(passed=1, failed=2)  # niah passed; vt errored; the verdict (ruler::verdict) failed
    assert result.ret == 1
    assert out.splitlines()[-1].startswith("=") and "2 failed" in out.splitlines()[-1]
    assert "FAILED ruler::verdict - ruler verdict: FAILED" in out
    vt_row = next(ln for ln in out.splitlines() if ln.startswith("vt "))
    assert "ERR" in vt_row
    total = next(ln for ln in out.splitlines() if ln.startswith("Total"))
    assert "ERR" in total and "n/a" in total
    assert "vt[1024-seed0]: RuntimeError: CUDA error: an illegal memory access was encountered" in out
    assert "gate FAILED: 1 item errored; effective length is not established" in out
    assert "gate PASSED" not in out
    data = report(pytester)
    vt = next(i for i in data["items"] if i["task"] == "vt")
    assert vt["error"] == "RuntimeError: CUDA error: an illegal memory access was encountered" and vt["passed"] is False
    assert next(i for i in data["items"] if i["task"] == "niah_single_1")["error"] is None
    native = data["summary"]["native"]
    assert native["errors"] == 1 and native["errored_lengths"] == [1024]
    assert native["effective_length"] is None and native["avg"] is None and "1024" not in native["per_length"]
    assert data["gate"]["passed"] is False and "errored" in data["gate"]["reason"]
    assert data["complete"] is True
    assert "ruler_error" in (pytester.path / "j.xml").read_text()
    # the item's own failure is the RULER message, not pytest internals
    assert "vt at 1024 tokens (seed 0): ERROR: RuntimeError: CUDA error" in out
    assert "Traceback" not in out and "site-packages" not in out and "_pytest/" not in out


def test_effective_length_stops_below_an_errored_length(pytester, monkeypatch):
    pytester.makeconftest(FLAKY_CONFTEST)
    monkeypatch.setenv("FLAKY_ACTION", "raise")
    # vt errors at every length; niah passes at both: niah's own effective length is 2K,
    # the overall one is not established past 1K, where the first error is
    run(pytester, *FLAKY, "--ruler-lengths=1k,2k", "--ruler-report=r.json")
    native = report(pytester)["summary"]["native"]
    assert native["per_task_effective_length"] == {"niah_single_1": 2048, "vt": None}
    assert native["errored_lengths"] == [1024, 2048] and native["effective_length"] is None


def test_a_crashed_xdist_worker_leaves_an_errored_item(pytester, monkeypatch):
    pytester.makeconftest(FLAKY_CONFTEST)
    monkeypatch.setenv("FLAKY_ACTION", "crash")
    result = run(pytester, *FLAKY, "--ruler-lengths=1k", "--ruler-require-effective-length=1k", "--ruler-report=r.json", "-n", "2")
    out = result.stdout.str()
    assert result.ret == 1
    data = report(pytester)
    vt = [i for i in data["items"] if i["task"] == "vt"]
    assert len(vt) == 1 and "crashed while running" in vt[0]["error"] and "ruler::vt[1024-seed0]'" in vt[0]["error"]
    assert data["summary"]["native"]["errors"] == 1 and data["gate"]["passed"] is False
    assert "ERR" in next(ln for ln in out.splitlines() if ln.startswith("vt "))
    assert "gate FAILED" in out and data["complete"] is True


def test_map_reduce_calls_the_engine_could_not_answer_make_the_twin_errored(pytester):
    run(pytester, *SCRIPTED, "--ruler-engine-option=mode=error", "--ruler-tasks=niah_single_1", "--ruler-lengths=2k", "--ruler-samples=1",
        "--ruler-mapreduce", "--ruler-mapreduce-window=1k", "--ruler-report=r.json")
    data = report(pytester)
    twin = next(i for i in data["items"] if i["mode"] == "mapreduce")
    assert "map-reduce engine calls got no answer" in twin["error"] and not twin["passed"]
    assert data["summary"]["mapreduce"]["errors"] == 1


def test_a_skipped_item_does_not_make_the_run_incomplete(pytester):
    result = run(pytester, *SCRIPTED, "--ruler-tasks=niah_single_1,qa_1", "--ruler-lengths=1k", "--ruler-samples=1", "--ruler-report=r.json")
    result.assert_outcomes(passed=1, skipped=1)  # qa_1 has no SQuAD file here
    assert report(pytester)["complete"] is True and "interrupted" not in result.stdout.str()


def test_samples_the_engine_could_not_answer_make_the_item_errored(pytester):
    result = run(pytester, *SCRIPTED, "--ruler-engine-option=mode=error", "--ruler-tasks=niah_single_1", "--ruler-lengths=1k",
                 "--ruler-samples=2", "--ruler-threshold=0", "--ruler-report=r.json")
    result.assert_outcomes(failed=1)  # threshold 0 would pass any score: an error is not a score
    item = report(pytester)["items"][0]
    assert item["error"].startswith("2 of 2 samples got no answer from the engine") and not item["passed"]


# ---------------------------------------------------------------- 2. refused once, at start


def _essays_binary(p: Path) -> list[str]:
    (p / "essays.txt").write_bytes(bytes(range(256)) * 40)
    return ["--ruler-tasks=niah_single_1", "--ruler-essays=essays.txt"]


def _squad_not_json(p: Path) -> list[str]:
    (p / "squad.json").write_text("<html>not json</html>")
    return ["--ruler-tasks=qa_1", "--ruler-squad=squad.json"]


def _hotpot_wrong_shape(p: Path) -> list[str]:
    (p / "hotpot.json").write_text(json.dumps({"data": []}))
    return ["--ruler-tasks=qa_2", "--ruler-hotpotqa=hotpot.json"]


def _baseline_corrupt(p: Path) -> list[str]:
    (p / "old.json").write_text('{"schema": "pytest-ruler/1", "items": [')
    return ["--ruler-baseline=old.json"]


def _baseline_wrong_shape(p: Path) -> list[str]:
    (p / "old.json").write_text(json.dumps({"schema": "other/9", "items": []}))
    return ["--ruler-baseline=old.json"]


def _report_is_a_directory(p: Path) -> list[str]:
    (p / "out").mkdir()
    return ["--ruler-report=out"]


def _markdown_is_a_directory(p: Path) -> list[str]:
    (p / "md").mkdir()
    return ["--ruler-markdown=md"]


def _chat_template_binary(p: Path) -> list[str]:
    (p / "tpl.jinja").write_bytes(b"\xff\xfe\x00{{ messages }}\x80\x81")
    return ["--ruler-chat-template=tpl.jinja"]


def _chat_template_broken(p: Path) -> list[str]:
    (p / "tpl.jinja").write_text("{% for m in messages %}{{ m.content }")
    return ["--ruler-chat-template=tpl.jinja"]


def _length_over_context(p: Path) -> list[str]:
    return ["--ruler-lengths=10000k", "--ruler-engine-option=max_context=131072"]


def _length_leaves_no_room(p: Path) -> list[str]:
    return ["--ruler-tasks=vt", "--ruler-lengths=30"]


def _unreachable_server(p: Path) -> list[str]:
    import socket

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return ["--ruler-backend=openai", f"--ruler-base-url=http://127.0.0.1:{port}/v1", "--ruler-tokenizer=smollm2-135m"]


def _broken_model_folder(p: Path) -> list[str]:
    folder = p / "model"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"max_position_embeddings": 4096}))
    (folder / "model.safetensors").write_bytes(b"\x00\x10\x00\x00\x00\x00\x00\x00{\"a\"")  # cut short
    return ["--ruler-backend=hf", "--ruler-tokenizer=smollm2-135m", f"--ruler-model={folder}"]


START_MISTAKES = {
    "essays-binary": (_essays_binary, "--ruler-essays"),
    "squad-not-json": (_squad_not_json, "--ruler-squad"),
    "hotpotqa-wrong-shape": (_hotpot_wrong_shape, "--ruler-hotpotqa"),
    "baseline-corrupt": (_baseline_corrupt, "--ruler-baseline"),
    "baseline-wrong-schema": (_baseline_wrong_shape, "--ruler-baseline"),
    "report-is-directory": (_report_is_a_directory, "--ruler-report"),
    "markdown-is-directory": (_markdown_is_a_directory, "--ruler-markdown"),
    "chat-template-binary": (_chat_template_binary, "--ruler-chat-template"),
    "chat-template-broken": (_chat_template_broken, "--ruler-chat-template"),
    "length-over-context": (_length_over_context, "--ruler-lengths"),
    "length-no-room": (_length_leaves_no_room, "--ruler-lengths"),
    "server-unreachable": (_unreachable_server, "--ruler-base-url"),
    "model-folder-broken": (_broken_model_folder, "--ruler-model"),
}


@pytest.mark.parametrize("case", list(START_MISTAKES))
def test_knowable_mistakes_are_refused_once_at_start(pytester, case):
    make, parameter = START_MISTAKES[case]
    args = [*SCRIPTED, "--ruler-tasks=niah_single_1", "--ruler-lengths=1k", "--ruler-samples=1", "--ruler-report=r.json"]
    extra = make(pytester.path)
    args += extra
    if any(a.startswith("--ruler-backend=") for a in extra):
        args.remove("--ruler-backend=scripted")
    if "--ruler-report=out" in extra:
        args.remove("--ruler-report=r.json")
    started = time.perf_counter()
    result = run(pytester, *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert time.perf_counter() - started < 30
    _one_error_line(result, parameter)
    assert "RULER" not in result.stdout.str()  # no item ran
    assert not any(pytester.path.glob("*.tmp"))


def test_a_length_over_the_context_is_allowed_with_mapreduce(pytester):
    result = run(pytester, *SCRIPTED, "--ruler-tasks=niah_single_1", "--ruler-lengths=2k", "--ruler-samples=1",
                 "--ruler-engine-option=max_context=1500", "--ruler-mapreduce", "--ruler-mapreduce-window=1k", "--ruler-report=r.json")
    assert result.ret in (0, 1)
    native = next(i for i in report(pytester)["items"] if i["mode"] == "native")
    assert native["over_length"] == 1 and native["error"] is None  # the model cannot take it: a fail, not an error


@pytest.mark.parametrize("xdist", XDIST)
def test_preset_lengths_over_the_context_fail_without_building_a_prompt(pytester, xdist):
    # the user typed no lengths: the smoke preset's 4K is over this context, which is a
    # result (the model cannot take it), said once at start, not a usage error
    result = run(pytester, *SCRIPTED, "--ruler-preset=smoke", "--ruler-tasks=niah_single_1", "--ruler-samples=2",
                 "--ruler-engine-option=max_context=1500", "--ruler-report=r.json", *xdist)
    result.assert_outcomes(passed=1, failed=1)
    out = result.stdout.str()
    assert out.count("4K exceeds smollm2-135m's context of 1500 tokens") == 1
    long = next(i for i in report(pytester)["items"] if i["length"] == 4096)
    assert long["over_length"] == 2 and long["prompt_tokens"] == 0 and long["error"] is None
    assert "no prompt built" in long["reasons"][0]


# ---------------------------------------------------------------- 3. one failure, one message


def test_a_failing_engine_load_is_reported_once(pytester):
    result = run(pytester, *SCRIPTED, "--ruler-engine-option=fail_load=no GPU memory left", "--ruler-tasks=niah_single_1,vt,cwe,fwe,niah_single_2",
                 "--ruler-lengths=1k,2k", "--ruler-samples=1", "--ruler-report=r.json")
    out = result.stdout.str()
    result.assert_outcomes(failed=10)
    assert out.count("scripted engine told to fail at load: no GPU memory left") >= 1
    assert out.count("failed to load earlier in this run; its reason is on the first errored item") >= 9
    assert "Traceback" not in out and "site-packages" not in out
    assert len(out.splitlines()) <= 120, len(out.splitlines())
    assert report(pytester)["summary"]["native"]["errors"] == 10


# ---------------------------------------------------------------- 4. reports survive every ending


def test_a_failing_end_of_run_step_still_writes_the_reports(pytester):
    pytester.makeconftest("def pytest_ruler_summary(config, report):\n    raise RuntimeError('boom in a summary hook')\n")
    result = run(pytester, *SCRIPTED, "--ruler-tasks=niah_single_1", "--ruler-lengths=1k", "--ruler-samples=1", "--ruler-report=r.json", "--junitxml=j.xml")
    assert result.ret == 1
    assert "RULER ERROR: pytest_ruler_summary hook: RuntimeError: boom in a summary hook" in result.stdout.str()
    assert report(pytester)["items"][0]["passed"] is True
    assert (pytester.path / "j.xml").is_file()
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()


def test_ctrl_c_writes_a_partial_report_and_no_verdict(pytester, monkeypatch):
    pytester.makeconftest(FLAKY_CONFTEST)
    monkeypatch.setenv("FLAKY_ACTION", "interrupt")
    # in-process pytester re-raises a Ctrl-C in the outer run unless told not to
    # one item at a time: the Ctrl-C comes in vt's own engine call, after niah_single_1 finished
    result = pytester.runpytest("-p", "no:hypothesispytest", *FLAKY, "--ruler-lengths=1k", "--ruler-require-effective-length=1k",
                                "--ruler-report=r.json", "--ruler-batch-items=1", no_reraise_ctrlc=True)
    out = result.stdout.str()
    assert result.ret == pytest.ExitCode.INTERRUPTED
    assert "interrupted after 1 of 2 items" in out
    assert "gate NOT DECIDED" in out and "gate PASSED" not in out and "gate FAILED" not in out
    data = report(pytester)
    assert data["complete"] is False and data["items_expected"] == 2 and data["items_finished"] == 1
    assert data["gate"]["passed"] is None


def _rows(db: Path) -> int:
    try:
        with sqlite3.connect(db) as conn:
            return conn.execute("SELECT COUNT(*) FROM completions").fetchone()[0]
    except sqlite3.Error:
        return 0


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL], ids=["ctrl-c", "sigterm", "kill-9"])
def test_a_signal_mid_run_loses_no_finished_prediction(pytester, sig):
    # one item at a time: the signal comes in the second item's call, after the first finished
    # (tests/integration/test_queue_plugin.py interrupts a call that several items share)
    args = [sys.executable, "-m", "pytest", "-p", "no:hypothesispytest", "-p", "no:cacheprovider", *SCRIPTED, "--ruler-only",
            "--ruler-tasks=niah_single_1", "--ruler-lengths=1k,2k", "--ruler-samples=4", f"--ruler-cache-dir={pytester.path / 'cache'}",
            "--ruler-batch-items=1"]
    db = pytester.path / "cache" / "predictions.sqlite"
    # a shell's background job starts with SIGINT ignored, and Python then installs no Ctrl-C
    # handler: give the run the default disposition a terminal would
    proc = subprocess.Popen([*args, "--ruler-engine-option=delay=1.0", "--ruler-report=first.json"], cwd=pytester.path,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 120
    while _rows(db) < 5 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    proc.send_signal(sig)
    out, _ = proc.communicate(timeout=60)
    kept = _rows(db)
    assert 5 <= kept < 8, out
    if sig in (signal.SIGINT, signal.SIGTERM):  # a partial report, marked as such (SIGTERM: a cancelled CI job)
        first = json.loads((pytester.path / "first.json").read_text())
        assert first["complete"] is False, out
        assert "interrupted after" in out
    again = subprocess.run([*args, "--ruler-report=second.json"], cwd=pytester.path, capture_output=True, text=True, timeout=120)
    second = json.loads((pytester.path / "second.json").read_text())
    assert second["complete"] is True, again.stdout
    assert sum(i["cached"] for i in second["items"]) == kept  # nothing finished is recomputed
    assert sum(i["engine_calls"] for i in second["items"]) == 8 - kept


# ---------------------------------------------------------------- 5. cache faults


@pytest.mark.parametrize("content", [b"this is not sqlite" * 100, b"SQLite format 3\x00" + b"\x07" * 5000], ids=["not-a-database", "malformed"])
def test_a_corrupt_cache_is_moved_aside_and_the_run_goes_on(pytester, content):
    cache = pytester.path / "cache"
    cache.mkdir()
    (cache / "predictions.sqlite").write_bytes(content)
    result = run(pytester, *SCRIPTED, "--ruler-tasks=niah_single_1", "--ruler-lengths=1k", "--ruler-samples=2", f"--ruler-cache-dir={cache}", "--ruler-report=r.json")
    result.assert_outcomes(passed=1)
    out = result.stdout.str()
    aside = list(cache.glob("predictions.sqlite.corrupt-*"))
    assert len([a for a in aside if not a.name.endswith(("-wal", "-shm"))]) == 1
    assert out.count("was corrupt") == 1 and str(cache / "predictions.sqlite") in out and aside[0].name in out
    assert _rows(cache / "predictions.sqlite") == 2
    assert "was corrupt" in report(pytester)["warnings"][0]


def test_an_unusable_cache_folder_means_no_cache_and_one_warning(pytester):
    (pytester.path / "afile").write_text("not a folder")
    result = run(pytester, *SCRIPTED, "--ruler-tasks=niah_single_1,vt", "--ruler-lengths=1k", "--ruler-samples=1", "--ruler-cache-dir=afile/cache")
    result.assert_outcomes(passed=2)
    assert result.stdout.str().count("running without the prediction cache") == 1


# ---------------------------------------------------------------- 6. size guards


def test_samples_are_generated_in_the_batches_the_engine_consumes(monkeypatch, tmp_path):
    from pytest_ruler.run import runner as runner_mod, session as session_mod
    from pytest_ruler.run_config import RulerConfig
    from pytest_ruler.engines.scripted import ScriptedEngine

    monkeypatch.setattr(runner_mod, "SAMPLES_PER_CALL", 3)
    rs = session_mod.RulerSession(RulerConfig(model="smollm2-135m", backend="scripted", samples=7), tmp_path)
    generated: list[int] = []
    seen: list[tuple[int, int]] = []  # (samples generated so far, batch size) at each engine call
    import pytest_ruler.tasks as tasks_mod

    real_iter = tasks_mod.iter_samples

    def counting_iter(*a, **kw):
        for s in real_iter(*a, **kw):
            generated.append(s.index)
            yield s

    monkeypatch.setattr(tasks_mod, "iter_samples", counting_iter)
    real_generate = ScriptedEngine.generate

    def watching_generate(self, requests, on_result=None):
        seen.append((len(generated), len(requests)))
        return real_generate(self, requests, on_result)

    monkeypatch.setattr(ScriptedEngine, "generate", watching_generate)
    result = rs.run_item("niah_single_1", 1024)
    assert seen == [(3, 3), (6, 3), (7, 1)]  # the engine had the first batch before sample 4 existed
    assert result.samples == 7 and result.score == 100.0 and len(rs.cache) == 7
    rs.close()


def test_a_mapreduce_twin_answers_the_samples_its_native_item_generated(monkeypatch, tmp_path):
    from pytest_ruler.mapreduce import MapReduceConfig
    from pytest_ruler.run_config import RulerConfig
    from pytest_ruler.run import runner as runner_mod, session as session_mod
    import pytest_ruler.tasks as tasks_mod

    config = RulerConfig(model="smollm2-135m", backend="scripted", samples=2, mapreduce=True,
                         mapreduce_config=MapReduceConfig(chunk_tokens=512))
    rs = session_mod.RulerSession(config, tmp_path)
    made: list[tuple[str, int]] = []
    real_generate, real_iter = tasks_mod.generate_samples, tasks_mod.iter_samples

    def counting_generate(spec, length, **kw):
        made.append((spec.name, length))
        return real_generate(spec, length, **kw)

    def counting_iter(spec, length, **kw):  # the native item's lazy batches
        made.append((spec.name, length))
        return real_iter(spec, length, **kw)

    monkeypatch.setattr(tasks_mod, "generate_samples", counting_generate)
    monkeypatch.setattr(tasks_mod, "iter_samples", counting_iter)
    native = rs.run_item("niah_single_1", 1024)
    twin = rs.run_mapreduce_item("niah_single_1", 1024)
    assert made == [("niah_single_1", 1024)]  # generated once, for both modes
    assert (native.samples, twin.samples) == (2, 2) and twin.mode == "mapreduce"
    assert not rs.shared.held  # handed over, not kept
    again = rs.run_mapreduce_item("niah_single_1", 1024)  # nothing left to share: generated afresh
    assert made == [("niah_single_1", 1024)] * 2 and again.score == twin.score
    rs.close()


def test_a_silent_server_is_announced_while_waiting(monkeypatch):
    from pytest_ruler.engines import openai as oa
    from pytest_ruler.engines.base import EngineConfig, GenerationRequest

    def slow(call):
        if call.route == "/v1/completions" and isinstance(call.prompt, list) and len(call.prompt) > 2:
            time.sleep(1.0)
        return None

    monkeypatch.setattr(oa, "WAIT_NOTICE", 0.3)
    with StubServer(slow) as server:
        engine = oa.OpenAIEngine(EngineConfig(model="stub-model", backend="openai", base_url=server.base_url, tokenizer="smollm2-135m"))
        said: list[str] = []
        engine.on_wait = said.append
        out = engine.generate([GenerationRequest("x", (1, 2, 3, 4), 4)])
    assert out[0].text == "ok"
    assert said and said[0].startswith(f"ruler: waiting for the server at {server.base_url}: 1 request in flight")


def test_default_timeouts_grow_with_the_prompt():
    from pytest_ruler.engines import openai as oa

    engine = oa.OpenAIEngine.__new__(oa.OpenAIEngine)
    engine.timeout = None
    assert engine._timeout_for(4096) < engine._timeout_for(131072)
    assert engine._timeout_for(0) == oa._BASE_TIMEOUT
    engine.timeout = 7.0
    assert engine._timeout_for(131072) == 7.0


# ---------------------------------------------------------------- 7. secrets


SECRET = "sk-live-ECHOED-4f9a7c2e1b"


@pytest.mark.parametrize("xdist", XDIST)
def test_an_api_key_echoed_by_the_server_is_never_written_or_printed(pytester, monkeypatch, xdist):
    def echo(call):
        if call.route == "/v1/completions":
            return 200, completion(f" the key is {SECRET} and {SECRET}", prompt_tokens=None)
        return None

    monkeypatch.setenv("RULER_API_KEY", SECRET)
    with StubServer(echo, models=[{"id": "stub-model", "max_model_len": 4096, "root": f"/models/{SECRET}"}]) as server:
        result = run(pytester, "--ruler-model=stub-model", "--ruler-backend=openai", f"--ruler-base-url={server.base_url}",
                     "--ruler-tokenizer=smollm2-135m", "--ruler-tasks=niah_single_1", "--ruler-lengths=1k", "--ruler-samples=2",
                     "--ruler-report=r.json", "--ruler-markdown=r.md", "--junitxml=j.xml", "-rA", *xdist)
    out = result.stdout.str() + result.stderr.str()
    result.assert_outcomes(failed=1)
    assert SECRET not in out and "<secret>" in out
    for name in ("r.json", "r.md", "j.xml"):
        text = (pytester.path / name).read_text()
        assert SECRET not in text, name
    assert "the key is <secret>" in (pytester.path / "r.json").read_text()
    for db in pytester.path.rglob("predictions.sqlite*"):
        assert SECRET.encode() not in db.read_bytes()


# ---------------------------------------------------------------- 8. --ruler-only counts


def test_ruler_only_reports_what_it_deselected(pytester):
    pytester.makepyfile("def test_a():\n    pass\n\ndef test_b():\n    pass\n\ndef test_c():\n    pass\n")
    result = run(pytester, *SCRIPTED, "--ruler-tasks=niah_single_1,vt", "--ruler-lengths=1k", "--ruler-samples=1", "--ruler-only")
    result.assert_outcomes(passed=2, deselected=3)
    assert "collected 5 items / 3 deselected / 2 selected" in result.stdout.str()
    listed = run(pytester, *SCRIPTED, "--ruler-tasks=niah_single_1,vt", "--ruler-lengths=1k", "--ruler-only", "--collect-only", "-q")
    assert "2/5 tests collected (3 deselected)" in listed.stdout.str()
