"""The syrupy extension: a JSON snapshot of the stable, rounded summary, accepted with
``--snapshot-update`` (pytester runs in-process with a fake report; no model)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytest.importorskip("syrupy")

from pytest_ruler.report.build import build_report  # noqa: E402
from pytest_ruler.run.session import ItemResult  # noqa: E402
from pytest_ruler.report.snapshot import RulerSummaryExtension, ruler_snapshot_data  # noqa: E402

SCORES = {("niah_single_1", 4096): 100.0, ("niah_single_1", 8192): 96.04, ("qa_1", 4096): 80.0, ("qa_1", 8192): 41.2}
VOLATILE = ("seconds", "cached", "engine_calls", "failures", "reasons", "prompt_tokens", "errors", "over_length")


def fake_report(scores=SCORES, *, seconds=1.5, cached=0, mapreduce=False, backend="scripted"):
    results = []
    modes = ("native", "mapreduce") if mapreduce else ("native",)
    for mode in modes:
        for (task, length), score in scores.items():
            for seed in (0, 1):
                results.append(ItemResult(
                    task=task, length=length, seed=seed, mode=mode, samples=10,
                    score=score - (0.5 if mode == "mapreduce" else 0.0), threshold=85.6, passed=score > 85.6,
                    nulls=0, seconds=seconds + seed, cached=cached, engine_calls=3 - cached,
                    failures=({"pred": f"x{seconds}", "answer": ["1"]},) if score < 85.6 else (),
                    reasons=(f"took {seconds}s",),
                ))
    return build_report(model="acme/tiny", backend=backend, tokenizer="tok", haystack_corpus="essays",
                        threshold=85.6, results=results)


# ----------------------------------------------------------------- the pure subset


def test_snapshot_data_is_the_stable_subset():
    data = ruler_snapshot_data(fake_report())
    assert list(data) == ["schema", "model", "haystack_corpus", "threshold", "native"]
    native = data["native"]
    assert list(native) == ["tasks", "per_length", "avg", "wavg_inc", "wavg_dec", "effective_length",
                            "per_task_effective_length"]
    assert native["tasks"] == {"niah_single_1": {"4096": 100.0, "8192": 96.0}, "qa_1": {"4096": 80.0, "8192": 41.2}}
    assert list(native["per_length"]) == ["4096", "8192"]  # numeric order
    assert native["effective_length"] == 4096
    assert native["per_task_effective_length"] == {"niah_single_1": 8192, "qa_1": None}
    text = json.dumps(data)
    for key in VOLATILE + ("backend", "tokenizer", "items"):
        assert f'"{key}"' not in text


def test_snapshot_data_ignores_volatile_fields_and_rounds():
    a = ruler_snapshot_data(fake_report())
    b = ruler_snapshot_data(fake_report(seconds=99.0, cached=3, backend="vllm"))
    c = ruler_snapshot_data(fake_report({**SCORES, ("niah_single_1", 8192): 96.01}))
    assert a == b == c
    assert ruler_snapshot_data(fake_report({**SCORES, ("niah_single_1", 8192): 62.0})) != a


def test_snapshot_data_shapes():
    report = fake_report(mapreduce=True)
    data = ruler_snapshot_data(report)
    assert set(data) >= {"native", "mapreduce"}
    assert data["mapreduce"]["tasks"]["qa_1"]["4096"] == 79.5
    assert ruler_snapshot_data(data) == data  # idempotent
    from_summary = ruler_snapshot_data(report["summary"])
    assert from_summary["native"] == {k: v for k, v in data["native"].items() if k != "tasks"}
    one_mode = ruler_snapshot_data(report["summary"]["native"])
    assert one_mode["native"] == from_summary["native"]
    from pytest_ruler.errors import RulerUsageError

    with pytest.raises(RulerUsageError):
        ruler_snapshot_data({"something": 1})
    with pytest.raises(RulerUsageError):
        ruler_snapshot_data([1, 2])


def test_a_saved_report_snapshots_as_its_dict(tmp_path):
    """The typed report of the one reader (results.saved.read_report) and the JSON dict give one subset."""
    from pytest_ruler.results.saved import read_report

    path = tmp_path / "ruler.json"
    path.write_text(json.dumps(fake_report(mapreduce=True)))
    report = read_report(path)
    assert ruler_snapshot_data(report) == ruler_snapshot_data(json.loads(path.read_text()))
    assert ruler_snapshot_data(report)["mapreduce"]["tasks"]["qa_1"]["4096"] == 79.5


def test_a_report_whose_summary_disagrees_with_its_items_is_refused():
    """A dict goes through the one check (results.saved.check_report): an edited summary is not snapshotted."""
    from pytest_ruler.errors import RulerUsageError

    edited = fake_report()
    edited["summary"]["native"]["effective_length"] = 8192  # its items give 4096
    with pytest.raises(RulerUsageError, match="summary disagrees with its items"):
        ruler_snapshot_data(edited)
    with pytest.raises(RulerUsageError, match="schema"):
        ruler_snapshot_data({k: v for k, v in fake_report().items() if k != "schema"})


def test_extension_serializes_sorted_json():
    text = RulerSummaryExtension().serialize(fake_report())
    assert text.endswith("\n")
    assert json.loads(text) == json.loads(json.dumps(ruler_snapshot_data(fake_report())))
    assert text.index('"4096"') < text.index('"8192"')


def test_nothing_imports_the_snapshot_module():
    code = ("import sys, pytest_ruler, pytest_ruler.plugin, pytest_ruler.report.build, pytest_ruler.results.baseline, "
            "pytest_ruler.plugin.terminal, pytest_ruler.cli; "
            "print(sorted(m for m in ('pytest_ruler.report.snapshot', 'syrupy') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[]"


# ----------------------------------------------------------------- syrupy round trip

TEST_FILE = """
import json
from pathlib import Path

from pytest_ruler.report.snapshot import RulerSummaryExtension


def test_ruler_summary(snapshot):
    report = json.loads((Path(__file__).parent / "report.json").read_text())
    assert report == snapshot(extension_class=RulerSummaryExtension)
"""


TYPED_TEST_FILE = """
from pathlib import Path

from pytest_ruler.report.snapshot import RulerSummaryExtension
from pytest_ruler.results.saved import read_report


def test_ruler_summary(snapshot):
    assert read_report(Path(__file__).parent / "report.json") == snapshot(extension_class=RulerSummaryExtension)
"""


def run(pytester, *args):
    return pytester.runpytest("-p", "no:hypothesispytest", "-p", "no:cacheprovider", *args)


def snapshot_file(pytester):
    files = list((pytester.path / "__snapshots__").rglob("*.json"))
    assert len(files) == 1, files
    return files[0]


def test_snapshot_update_round_trip(pytester, monkeypatch):
    # Under an outer `-n N` the in-process inner run inherits the worker's environment,
    # and syrupy (which reads PYTEST_XDIST_WORKER) would then act as a worker: defer its
    # writes and print no summary.
    for var in ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_XDIST_TESTRUNUID"):
        monkeypatch.delenv(var, raising=False)
    pytester.makepyfile(test_ruler=TEST_FILE)
    report_json = pytester.path / "report.json"

    def write(report):
        report_json.write_text(json.dumps(report))

    write(fake_report())
    # without a stored snapshot the assertion fails
    run(pytester).assert_outcomes(failed=1)

    # 1. --snapshot-update writes the stable subset as a .json snapshot
    result = run(pytester, "--snapshot-update")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*1 snapshot generated*"])
    path = snapshot_file(pytester)
    assert path.name == "test_ruler_summary.json" and path.parent.name == "test_ruler"
    stored = json.loads(path.read_text())
    assert stored == json.loads(json.dumps(ruler_snapshot_data(fake_report())))
    assert stored["native"]["tasks"]["niah_single_1"]["8192"] == 96.0
    assert "seconds" not in path.read_text() and "items" not in stored

    # 2. the same report passes
    run(pytester).assert_outcomes(passed=1)

    # 3. volatile fields and sub-rounding noise do not fail (96.04 -> 96.01 moves no
    #    rounded value here; a change across a .x5 boundary would, as with any rounding)
    write(fake_report({**SCORES, ("niah_single_1", 8192): 96.01}, seconds=42.0, cached=3, backend="vllm"))
    run(pytester).assert_outcomes(passed=1)

    # 4. a changed score fails, with a diff naming the value
    write(fake_report({**SCORES, ("niah_single_1", 8192): 62.0}))
    result = run(pytester)
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "62.0" in out and "96.0" in out
    assert json.loads(path.read_text()) == stored  # untouched without --snapshot-update

    # 5. --snapshot-update accepts the new baseline; then it passes
    result = run(pytester, "--snapshot-update")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*1 snapshot updated*"])
    assert json.loads(path.read_text())["native"]["tasks"]["niah_single_1"]["8192"] == 62.0
    run(pytester).assert_outcomes(passed=1)


def test_the_docstrings_usage_snapshots_the_typed_report(pytester, monkeypatch):
    """``read_report(path) == snapshot(...)`` (the module docstring's usage): stored, then matched, then a change fails."""
    for var in ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_XDIST_TESTRUNUID"):
        monkeypatch.delenv(var, raising=False)
    pytester.makepyfile(test_ruler=TYPED_TEST_FILE)
    report_json = pytester.path / "report.json"
    report_json.write_text(json.dumps(fake_report()))
    run(pytester, "--snapshot-update").assert_outcomes(passed=1)
    assert json.loads(snapshot_file(pytester).read_text()) == json.loads(json.dumps(ruler_snapshot_data(fake_report())))
    run(pytester).assert_outcomes(passed=1)
    report_json.write_text(json.dumps(fake_report({**SCORES, ("niah_single_1", 8192): 62.0})))
    run(pytester).assert_outcomes(failed=1)
