"""The baseline's terminal lines (results.regressions.summarize_regressions): the cells worth
reading, each on a short line, and the unchanged rest summed up in one (issue 34: 78 lines of
222 characters on the paper preset, one per cell, unchanged cells included)."""

from __future__ import annotations

from pytest_ruler.results.baseline import compare
from pytest_ruler.results.regressions import CHANGED_SHOWN, NOISE_POINTS, summarize_regressions
from pytest_ruler.results.table import TASK_ORDER

PAPER_LENGTHS = (4096, 8192, 16384, 32768, 65536, 131072)
N = 24  # questions per cell


def qitem(task, length, scores):
    """A report item with per-sample scores and prompt hashes (question i of a cell is q<i>)."""
    return {"task": task, "length": length, "seed": 0, "mode": "native", "samples": len(scores),
            "score": 100.0 * sum(scores) / len(scores), "threshold": 85.6, "passed": True, "nulls": 0, "seconds": 1.0,
            "sample_scores": list(scores), "sample_hashes": [f"{task}-{length}-q{i}" for i in range(len(scores))]}


def answers(right, n=N):
    return [1.0] * right + [0.0] * (n - right)


def paper_preset(current_changes, baseline_changes=None):
    """78 cells (13 tasks x 6 lengths), every question right unless a change says otherwise:
    ``{(task, length): right answers}``."""
    base, cur = [], []
    for task in TASK_ORDER:
        for length in PAPER_LENGTHS:
            base.append(qitem(task, length, answers((baseline_changes or {}).get((task, length), N))))
            cur.append(qitem(task, length, answers(current_changes.get((task, length), N))))
    return compare({"schema": "pytest-ruler/1", "items": base}, cur)


def test_the_paper_preset_lists_the_changed_cells_and_sums_up_the_rest_in_one_line():
    comps = paper_preset({("niah_multikey_2", 8192): 12,  # 100 -> 50: a significant drop
                          ("vt", 4096): 24,  # 50 -> 100 (below): a significant gain
                          ("cwe", 16384): 22,  # -8.3 points: more than the noise, not significant
                          ("qa_1", 4096): 23},  # -4.2 points: noise
                         baseline_changes={("vt", 4096): 12})
    assert len(comps) == 78
    passed, lines = summarize_regressions(comps)
    assert not passed
    assert lines[0].startswith("baseline: 78 cells compared, 1 significant drop, 1 significant gain (paired on the shared questions")
    assert lines[1:] == [
        "niah_multikey_2 @ 8K: 100.0 → 50.0 (−50.0, n=24/24; paired: 12 lost, 0 gained), p=0.0190 — significant drop",
        "vt @ 4K: 50.0 → 100.0 (+50.0, n=24/24; paired: 0 lost, 12 gained), p=0.0190 — significant gain",
        "cwe @ 16K: 100.0 → 91.7 (−8.3, n=24/24; paired: 2 lost, 0 gained), p=1.0000 — not significant",
        "baseline: 75 other cells unchanged (change under 5 points, none significant)",
    ]
    assert all(len(line) <= 120 for line in lines[1:])


def test_an_unchanged_run_is_two_lines():
    passed, lines = summarize_regressions(paper_preset({}))
    assert passed
    assert lines[1:] == ["baseline: 78 other cells unchanged (change under 5 points, none significant)"]
    assert "0 significant drops (" in lines[0] and "gain" not in lines[0]  # no gain: not mentioned


def test_changed_cells_past_the_shown_ones_are_counted_in_the_summary_line():
    tasks = TASK_ORDER[:CHANGED_SHOWN + 3]  # each -8.3 points, none significant
    passed, lines = summarize_regressions(paper_preset({(t, 4096): 22 for t in tasks}))
    assert passed
    listed = [line for line in lines if line.endswith("— not significant")]
    assert len(listed) == CHANGED_SHOWN and len(lines) == 1 + CHANGED_SHOWN + 1
    assert lines[-1] == (f"baseline: {78 - CHANGED_SHOWN} other cells: 65 unchanged (change under {NOISE_POINTS:g} points, "
                         "none significant), 3 more changed by 5 points or more, not significant")


def test_a_significant_drop_under_the_minimum_drop_is_listed_as_ignored():
    base = [qitem("vt", 4096, answers(1000, 1000))]
    cur = [qitem("vt", 4096, answers(970, 1000))]  # -3 points over 1000 questions: 30 lost, p = 2^-30
    [c] = comps = compare({"items": base}, cur, min_drop=5.0)
    assert not c.significant and c.p_value < 0.05 and abs(c.delta) < NOISE_POINTS
    passed, lines = summarize_regressions(comps)
    assert passed and lines[1].endswith("— significant but under the minimum drop of 5 points, ignored")
    assert len(lines) == 2  # nothing else to sum up


def test_cells_not_compared_are_one_line_per_reason():
    base = [qitem("vt", L, answers(N)) for L in PAPER_LENGTHS]
    cur = [qitem("vt", 4096, answers(N))] + [qitem(t, 4096, answers(N)) for t in TASK_ORDER[:12]]
    _, lines = summarize_regressions(compare({"items": base}, cur))
    assert lines[-2:] == [  # in the comparison's order (results.baseline.compare)
        "11 cells not compared (missing in baseline): cwe @ 4K, fwe @ 4K, niah_multikey_1 @ 4K, niah_multikey_2 @ 4K, "
        "niah_multikey_3 @ 4K, niah_multiquery @ 4K, niah_multivalue @ 4K, niah_single_1 @ 4K, niah_single_2 @ 4K, "
        "niah_single_3 @ 4K and 1 more",
        "5 cells not compared (missing in current run): vt @ 8K, vt @ 16K, vt @ 32K, vt @ 64K, vt @ 128K",
    ]
