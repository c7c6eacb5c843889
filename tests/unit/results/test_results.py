"""The core's results: one aggregation with errors as missing evidence, and the gate."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from pytest_ruler.results.aggregate import summarize
from pytest_ruler.results import ItemResult, gate, summarize_results

LENGTHS = [1024, 2048, 4096, 8192]
TASKS = ["niah_single_1", "vt", "cwe"]


def item(task, length, score, seed=0, error=None, mode="native"):
    return ItemResult(task=task, length=length, seed=seed, mode=mode, samples=10, score=score, threshold=85.6,
                      passed=error is None and score >= 85.6, nulls=0, seconds=0.0, error=error)


cells = st.dictionaries(
    st.tuples(st.sampled_from(TASKS), st.sampled_from(LENGTHS)),
    st.tuples(st.floats(0, 100), st.booleans()),  # (score, errored)
    min_size=1,
)


@given(cells)
def test_no_effective_length_at_or_past_an_errored_length(c):
    results = [item(t, L, s, error="boom" if bad else None) for (t, L), (s, bad) in c.items()]
    summary = summarize_results(results, 85.6)
    bad_lengths = sorted({L for (t, L), (_, bad) in c.items() if bad})
    assert summary["errors"] == len([1 for _, bad in c.values() if bad])
    assert summary["errored_lengths"] == bad_lengths
    if bad_lengths:
        eff = summary["effective_length"]
        assert eff is None or eff < bad_lengths[0]
        assert summary["avg"] is None and summary["wavg_inc"] is None
        assert not set(map(int, summary["per_length"])) & set(bad_lengths)
        for task in {t for (t, L), (_, bad) in c.items() if bad}:
            first = min(L for (t2, L), (_, bad) in c.items() if bad and t2 == task)
            e = summary["per_task_effective_length"][task]
            assert e is None or e < first


@given(cells)
def test_without_errors_it_is_the_papers_aggregation(c):
    results = [item(t, L, s) for (t, L), (s, _) in c.items()]
    ours = summarize_results(results, 85.6)
    by_task: dict = {}
    for (t, L), (s, _) in c.items():
        by_task.setdefault(t, {})[L] = s
    # the Total (and what is computed from it) is over the tasks tested at every length;
    # each task keeps its own per-task effective length
    lengths = {L for ls in by_task.values() for L in ls}
    common = {t: ls for t, ls in by_task.items() if set(ls) == lengths}
    assert ours["total_tasks"] == sorted(common)
    assert ours["partial_tasks"] == {t: sorted(ls) for t, ls in sorted(by_task.items()) if t not in common}
    assert ours["per_task_effective_length"] == summarize(by_task, threshold=85.6).per_task_effective_length
    if common:
        paper = summarize(common, threshold=85.6).to_dict()
        for key in ("per_length", "avg", "wavg_inc", "wavg_dec", "effective_length"):
            assert ours[key] == paper[key]
    else:
        assert ours["per_length"] == {} and ours["effective_length"] is None
    assert ours["errors"] == 0


def _report(results, **extra):
    report = {"threshold": 85.6, "complete": True, "items": [r.to_dict() for r in results],
              "summary": {"native": summarize_results(results, 85.6), "mapreduce": summarize_results(results, 85.6, "mapreduce")}}
    report.update(extra)
    return report


def test_gate_passes_fails_and_names_the_shortfall():
    results = [item("vt", 1024, 100), item("vt", 2048, 40)]
    assert gate(_report(results), required=1024).passed is True
    v = gate(_report(results), required=2048)
    assert v.passed is False and v.failures == ["effective length 1K < required 2K at threshold 85.6"]
    assert v.lines() == [("gate FAILED: effective length 1K (required 2K) at threshold 85.6", "red"),
                         ("ruler verdict: FAILED \u2014 effective length 1K < required 2K at threshold 85.6", "red")]


def test_gate_never_passes_on_missing_evidence():
    ok = [item("vt", 1024, 100)]
    errored = ok + [item("cwe", 1024, 0, error="RuntimeError: boom")]
    v = gate(_report(errored), required=1024)
    assert v.passed is False and v.failures == ["1 item errored (cwe @ 1K): no verdict rests on missing evidence"]
    v = gate(_report(ok, complete=False, interrupted=True, items_finished=1, items_expected=3), required=1024)
    assert v.passed is None and v.failures == [] and v.fields["gate"]["reason"] == "interrupted after 1 of 3 items; effective length is not established"
    v = gate(_report(ok, complete=False, interrupted=False, items_finished=1, items_expected=3), required=1024)
    assert v.passed is False and "stopped after 1 of 3 items" in v.failures[0]
    v = gate(_report([]), required=1024)
    assert v.passed is False and "no RULER item produced a result" in v.failures[0]


def test_gate_checks_map_reduce_separately():
    results = [item("vt", 1024, 0), item("vt", 1024, 100, mode="mapreduce")]
    v = gate(_report(results), required=1024, mapreduce_required=1024)
    assert v.fields["gate"]["passed"] is False and v.fields["mapreduce_gate"]["passed"] is True
