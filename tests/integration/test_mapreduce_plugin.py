"""pytester runs of ``--ruler-mapreduce`` and the ``ruler_mapreduce`` fixture with the
scripted test engine (rule-based, not a model). Its window is set to 4K, so native
items at 16K are refused as over-length, and its map-reduce answers are those of a
perfect per-chunk reader: the plumbing (twins, report, summary, cache, xdist) is
what is tested here; tests/integration/test_real_model.py runs the real model."""

from __future__ import annotations

import pytest

from .helpers import SCRIPTED, XDIST, report, run

SMALL_WINDOW = [*SCRIPTED, "--ruler-engine-option=max_context=4096"]


@pytest.mark.parametrize("xdist", XDIST)
def test_twin_items_rescue_native_failures_side_by_side(pytester, xdist):
    result = run(pytester, *SMALL_WINDOW, "--ruler-tasks=niah_single_1,vt,cwe", "--ruler-lengths=16k", "--ruler-samples=2",
                 "--ruler-mapreduce", "--ruler-report=r.json", "-v", *xdist)
    result.assert_outcomes(passed=3, failed=3)
    out = result.stdout.str()
    lines = out.splitlines()
    assert any("ruler::vt[16384-seed0-mapreduce]" in ln and "PASSED" in ln for ln in lines)  # xdist puts [gwN] first
    assert any("ruler::vt[16384-seed0]" in ln and "FAILED" in ln for ln in lines)
    assert "map-reduce (LLM x MapReduce, chunked" in out  # the header may carry the grounding label
    assert "effective length: native <16K | map-reduce ≥16K" in out  # Table 3's notation
    rescue = next(ln for ln in lines if ln.startswith("map-reduce passes where native fails"))
    assert rescue.endswith("cwe@16K, niah_single_1@16K, vt@16K")
    assert "grounding: literal (hallucination filter:" in rescue  # the line says what code did to the records
    data = report(pytester)
    native = [i for i in data["items"] if i["mode"] == "native"]
    twins = [i for i in data["items"] if i["mode"] == "mapreduce"]
    assert len(native) == len(twins) == 3
    assert all(i["over_length"] == 2 and i["score"] == 0 for i in native)
    assert all(i["score"] == 100.0 and i["passed"] for i in twins)
    assert data["summary"]["native"]["effective_length"] is None
    assert data["summary"]["mapreduce"]["effective_length"] == 16384
    assert all(x["rescued"] for x in data["mapreduce_vs_native"])
    for twin in twins:
        mr = twin["mapreduce"]
        assert mr["window"] == 4096 and all(n >= 4 for n in mr["chunks"])
        assert twin["engine_calls"] == len(twin["calls"]) == sum(mr["calls_per_stage"].values())
        for call in twin["calls"]:
            assert {"sample", "stage", "round", "parts", "prompt_tokens", "parse", "confidence", "seconds", "output"} <= set(call)
            assert call["prompt_tokens"] + 128 <= 4096 or call["stage"] == "reduce"
        maps = [c for c in twin["calls"] if c["stage"] == "map"]
        assert all(c["parse"] == "ok" for c in maps) and {c["confidence"] for c in maps} <= {0.0, 5.0}
    assert {t["mapreduce"]["strategy"] for t in twins} == {"retrieve", "chain", "count"}
    for twin in twins:  # what code did, and the protocol as written, are in the report
        mr = twin["mapreduce"]
        assert mr["grounding"] == "literal"
        n = len([c for c in twin["calls"] if c["stage"] == "map"])
        assert mr["compliance"]["map"] == {"records": n, "four_fields": n, "confidence": n, "parse_failures": 0}
    # the model reduces niah; vt and cwe are combined in code
    niah = next(t for t in twins if t["task"] == "niah_single_1")
    assert niah["mapreduce"]["calls_per_stage"]["reduce"] == 2
    assert "reduce" not in next(t for t in twins if t["task"] == "vt")["mapreduce"]["calls_per_stage"]


def test_keyword_selects_the_twins(pytester):
    result = run(pytester, *SMALL_WINDOW, "--ruler-tasks=niah_single_1", "--ruler-lengths=8k", "--ruler-samples=1", "--ruler-mapreduce", "-k", "mapreduce", "-v")
    result.assert_outcomes(passed=1)
    assert "niah_single_1[8192-seed0-mapreduce] PASSED" in result.stdout.str()


def test_a_rerun_resumes_from_the_cache(pytester):
    args = [*SMALL_WINDOW, "--ruler-tasks=niah_single_1,fwe", "--ruler-lengths=8k", "--ruler-samples=2", "--ruler-mapreduce", "--ruler-only"]
    run(pytester, *args, "--ruler-report=a.json")
    run(pytester, *args, "--ruler-report=b.json")
    a, b = report(pytester, "a.json"), report(pytester, "b.json")
    twins_a = {i["task"]: i for i in a["items"] if i["mode"] == "mapreduce"}
    twins_b = {i["task"]: i for i in b["items"] if i["mode"] == "mapreduce"}
    for task in twins_a:
        assert twins_a[task]["engine_calls"] > 0
        assert twins_b[task]["engine_calls"] == 0 and twins_b[task]["cached"] == 2
        assert twins_b[task]["score"] == twins_a[task]["score"] == 100.0
        assert all(c["cached"] for c in twins_b[task]["calls"])


@pytest.mark.parametrize("xdist", XDIST)
def test_malformed_map_output_is_counted_and_kept_not_a_crash(pytester, xdist):
    result = run(pytester, *SMALL_WINDOW, "--ruler-engine-option=mode=echo", "--ruler-tasks=niah_single_1", "--ruler-lengths=8k",
                 "--ruler-samples=2", "--ruler-mapreduce", "-k", "mapreduce", "--ruler-report=r.json", *xdist)
    result.assert_outcomes(failed=1)
    assert "every part answered NO INFORMATION" in result.stdout.str()
    [twin] = [i for i in report(pytester)["items"] if i["mode"] == "mapreduce"]
    maps = [c for c in twin["calls"] if c["stage"] == "map"]
    assert twin["mapreduce"]["malformed"] == len(maps) > 0
    assert all(c["parse"] != "ok" and c["output"] for c in maps)  # the raw output is kept


def test_the_fixture_gates_on_map_reduce_rescuing_native(pytester):
    pytester.makepyfile(
        """
        def test_rescued_at_8k(ruler_mapreduce):
            native, chunked = ruler_mapreduce.check_rescue("niah_single_1", "8k", samples=2, chunk_tokens=1024, parallel=3)
            assert native.over_length == 2 and chunked.passed
            assert chunked.mapreduce["config"]["chunk_tokens"] == 1024
            assert max(c["parse"] == "ok" for c in chunked.calls)

        def test_nothing_to_rescue_at_2k(ruler_mapreduce):
            ruler_mapreduce.check_rescue("niah_single_1", "2k", samples=1)

        def test_bad_option(ruler_mapreduce):
            ruler_mapreduce.run("niah_single_1", "8k", samples=1, chunk_size=5)
        """
    )
    result = run(pytester, *SMALL_WINDOW, "--ruler-lengths=2k", "--ruler-report=r.json", "-k", "test_")  # the user tests, not the standard suite
    result.assert_outcomes(passed=1, failed=2)
    out = result.stdout.str()
    assert "native context passes (100.0 > 85.6): nothing to rescue at this length" in out
    assert "unknown option" in out and "chunk_tokens" in out
    modes = sorted(i["mode"] for i in report(pytester)["items"])
    assert modes == ["mapreduce", "mapreduce", "native", "native"]


@pytest.mark.parametrize(
    "option, fix",
    [
        ("--ruler-mapreduce-overlap=5000", "keep the overlap under half the chunk"),
        ("--ruler-mapreduce-chunk=12q", "--ruler-mapreduce-chunk"),
        ("--ruler-mapreduce-rounds=-1", "--ruler-mapreduce-rounds"),
    ],
)
def test_bad_mapreduce_options_are_refused_at_start(pytester, option, fix):
    result = run(pytester, *SMALL_WINDOW, "--ruler-mapreduce", option)
    assert result.ret == 4
    assert fix in result.stderr.str() + result.stdout.str()


def test_a_window_too_small_for_a_map_prompt_names_the_option(pytester):
    result = run(pytester, *SMALL_WINDOW, "--ruler-tasks=niah_single_1", "--ruler-lengths=8k", "--ruler-samples=1",
                 "--ruler-mapreduce", "--ruler-mapreduce-window=200", "-k", "mapreduce")
    result.assert_outcomes(failed=1)
    assert "--ruler-mapreduce-window=200 is invalid" in result.stdout.str()


@pytest.mark.parametrize("required, ok", [("16k", True), ("32k", False)])
def test_the_map_reduce_gate(pytester, required, ok):
    result = run(pytester, *SMALL_WINDOW, "--ruler-tasks=niah_single_1", "--ruler-lengths=16k", "--ruler-samples=1", "--ruler-only",
                 f"--ruler-require-mapreduce-effective-length={required}", "-k", "mapreduce", "--ruler-report=r.json")
    out = result.stdout.str()
    gate = report(pytester)["mapreduce_gate"]
    assert gate["effective_length"] == 16384 and gate["passed"] is ok
    if ok:
        assert result.ret == 0 and "gate PASSED: map-reduce effective length 16K (required 16K)" in out
    else:
        assert result.ret == 1 and "gate FAILED: map-reduce effective length 16K (required 32K) at threshold 85.6" in out


def test_a_know_nothing_reader_reaches_the_reduce_unfiltered_and_the_report_says_what_code_did(pytester):
    """The scripted engine's know-nothing stand-in (not a model) lists every value of a chunk:
    the literal grounding keeps them all (they are in the chunk). Its reduce joins every value it
    is shown, and RULER's recall-only metric scores that 100: the report must say how."""
    result = run(pytester, *SMALL_WINDOW, "--ruler-engine-option=mode=know_nothing", "--ruler-tasks=niah_multikey_2",
                 "--ruler-lengths=16k", "--ruler-samples=1", "--ruler-mapreduce", "-k", "mapreduce",
                 "--ruler-report=r.json", "--ruler-markdown=r.md")
    [twin] = [i for i in report(pytester)["items"] if i["mode"] == "mapreduce"]
    maps = [c for c in twin["calls"] if c["stage"] == "map"]
    assert len(maps) >= 4 and all(c["dropped"] == [] for c in maps)  # nothing listed was missing from its chunk
    assert all(len(c["answer"].split(", ")) > 20 for c in maps)  # every value of the chunk, distractors included
    assert twin["mapreduce"]["grounding"] == "literal"
    md = (pytester.path / "r.md").read_text()
    assert "Map-reduce grounding: literal (hallucination filter:" in md
    assert "| niah_multikey_2 | 16K | retrieve | literal |" in md


def test_check_rescue_carries_the_grounding_label(pytester):
    pytester.makepyfile(
        """
        def test_rescued(ruler_mapreduce, record_property):
            native, chunked = ruler_mapreduce.check_rescue("niah_single_1", "8k", samples=1, chunk_tokens=1024)

        def test_not_rescued(ruler_mapreduce):
            ruler_mapreduce.check_rescue("niah_single_1", "8k", samples=1, chunk_tokens=1024, verify=False, threshold=101)
        """
    )
    result = run(pytester, *SMALL_WINDOW, "--ruler-lengths=2k", "-k", "test_", "-rA", "--junitxml=j.xml")
    result.assert_outcomes(passed=1, failed=1)
    out = result.stdout.str()
    assert "map-reduce passes where native fails (niah_single_1 at 8192); grounding: literal (hallucination filter:" in out
    assert "map-reduce grounding: none (no filter: records used as the model wrote them)" in out
    assert 'name="ruler_mapreduce_grounding" value="grounding: literal' in (pytester.path / "j.xml").read_text()


@pytest.mark.slow
def test_real_model_records_what_code_did_and_the_protocol_it_wrote(pytester):
    """The embedded model (a real model, on CPU), held to a 2K window at 4K: whatever it
    scores, the twin says how it was graded (grounding) and how often the model wrote the
    protocol's fields, and the counts agree with the per-call records."""
    args = ["-p", "no:hypothesispytest", "--ruler-model=smollm2-135m", "--ruler-backend=hf", "--ruler-tasks=niah_multikey_2", "--ruler-lengths=4k",
            "--ruler-samples=1", "--ruler-max-model-len=2048", "--ruler-mapreduce", "--ruler-mapreduce-chunk=1k",
            "-k", "mapreduce", "--ruler-report=r.json", "--ruler-markdown=r.md"]
    pytester.runpytest_subprocess(*args, timeout=900)
    [twin] = [i for i in report(pytester)["items"] if i["mode"] == "mapreduce"]
    mr = twin["mapreduce"]
    maps = [c for c in twin["calls"] if c["stage"] == "map"]
    assert mr["grounding"] == "literal" and len(maps) >= 4
    comp = mr["compliance"]["map"]
    assert comp["records"] == len(maps)
    assert comp["four_fields"] == sum(c["parse"] == "ok" or c["parse"] == "unreadable Confidence Score" for c in maps)
    assert comp["confidence"] == sum(c["confidence"] is not None for c in maps)
    assert "Map-reduce grounding: literal" in (pytester.path / "r.md").read_text()
