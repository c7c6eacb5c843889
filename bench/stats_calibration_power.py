"""Issue 38's rows of bench/stats_calibration.py ("power where it is missing"), kept apart for length.

- ``relative``: the rel:0.85 bound before (the base tested against F x its own upper bound at
  alpha/2) and after (the drop test from the base length up at the full alpha), on one 0/1 task at
  4K (base) and 8K: size where 8K's truth is exactly F x base, power where it is above.
- ``order_free``: coverage of the betting interval (now a function of the scores' multiset) and
  the share of shuffles that give the very same interval.
- ``claims``: the numbers docs/statistics.md states: how often some task's Eff.LB is above its
  truth when several tasks sit on the mark, and the samples per cell a gate needs for 80 % power.
- ``planned``: the planned verdict (``--ruler-stop-when-decided``) against the full run's on profiles
  with a length near or on the mark (bench/cost_to_verdict.py's simulation; issue 38 item 3).

Every rate carries its Monte Carlo standard error (``mc_se``), as the ``levels`` rows do.
"""

from __future__ import annotations

import time

import numpy as np

from stats_calibration import ALPHA, LENGTHS, THRESHOLD, _cell_draw, _mc

# --------------------------------------------------------------------------- issue 38: power where it is missing

REL_F, REL_LENGTHS = 0.85, (4096, 8192)


def _before_relative(cells: dict, info: dict) -> tuple:
    """The rel:F bound before issue 38, re-implemented: F x the base's upper bound at 1 - a/2 as the
    mark, and the absolute fixed sequence from the base length at 1 - a/2 (the base tests itself)."""
    from pytest_ruler.results.intervals import effective_length_bounds
    from pytest_ruler.results.stats import bounded_mean_interval

    def mark(strata):
        return min(REL_F * 100.0 * bounded_mean_interval(strata, 1 - ALPHA)[1], 100.0)

    L0 = info["base_length"]
    scores = {t: {L: 100.0 * float(np.mean(x)) for L, x in ls.items()} for t, ls in cells.items()}
    marks = {t: mark([ls[L0]]) for t, ls in cells.items()}
    total = effective_length_bounds(cells, scores, mark([ls[L0] for ls in cells.values()]), 1 - ALPHA / 2, task_thresholds=marks)[0]
    per_task = effective_length_bounds(cells, scores, 0.0, 1 - ALPHA / 2, task_thresholds=marks)[1]
    return total, per_task


def relative_rows(rng: np.random.Generator, runs: int) -> list[dict]:
    """rel:0.85 at 4K (base) and 8K: size where 8K's truth is exactly F x base (a bound reaching 8K is
    above the truth), power where 8K holds more than F x base (the bound reaches 8K). One task (0/1:
    the exact test; partial credit, 4 needles: betting), or the Total of 4 identical 0/1 tasks."""
    from pytest_ruler.results.intervals import relative_bounds

    out, info = [], {"fraction": REL_F, "base_length": REL_LENGTHS[0]}
    cases = [(20, 0.95, None), (20, 0.95, 0.0), (20, 0.95, 5.0), (20, 0.95, 10.0), (100, 0.80, None), (100, 0.80, 0.0),
             (100, 0.80, 5.0), (100, 0.80, 10.0), (50, 0.95, 5.0), (50, 0.95, 10.0), (50, 0.80, None, 4), (50, 0.80, 0.0, 4),
             (20, 0.95, None, 1, 4), (20, 0.95, 0.0, 1, 4), (20, 0.95, 10.0, 1, 4)]
    for n, base, drop, *more in cases:
        needles, tasks = (more + [1, 1])[:2] if len(more) < 2 else more
        second = REL_F * base if drop is None else base - drop / 100
        hit, none = {"before": 0, "after": 0}, {"before": 0, "after": 0}
        r = runs if tasks == 1 else max(100, runs // 4)
        for _ in range(r):
            cells = {f"t{t}": {L: list(_cell_draw(rng, a, n, needles)) for L, a in zip(REL_LENGTHS, (base, second))} for t in range(tasks)}
            scores = {t: {L: 100.0 * float(np.mean(x)) for L, x in ls.items()} for t, ls in cells.items()}
            before, after = _before_relative(cells, info), relative_bounds(cells, scores, info, 1 - ALPHA)
            for k, (total, per_task) in (("before", before), ("after", after)):
                got = per_task["t0"] if tasks == 1 else total
                hit[k] += got == REL_LENGTHS[1]
                none[k] += got is None
        measure = "size" if drop is None else "power"
        what = f"{'0/1' if needles == 1 else 'partial credit'}{'' if tasks == 1 else f', Total of {tasks} tasks'}"
        out.append({"case": f"rel:{REL_F:g} bound, {what}, base {100 * base:g}, 8K at {100 * second:.4g}", "n": n, "measure": measure,
                    **{k: _mc(v, r, measure) for k, v in hit.items()}, "bound_none": {k: round(v / r, 4) for k, v in none.items()}})
    return out


def order_free_rows(rng: np.random.Generator, runs: int) -> list[dict]:
    """The betting interval after issue 38: coverage (goal >= 0.95) on partial-credit cells and a 13-task
    Total, and whether a shuffle of the same scores gives the same interval (it must, every time)."""
    from pytest_ruler.results.stats import bounded_mean_interval

    x = [1.0] * 50 + [0.0] * 50
    shuffled = list(np.random.default_rng(0).permutation(x))
    out: list[dict] = [{"case": "50 ones then 50 zeros vs shuffled", "ordered": [round(v, 4) for v in bounded_mean_interval([x])],
                        "shuffled": [round(v, 4) for v in bounded_mean_interval([shuffled])],
                        "before": {"ordered": [0.487, 0.634], "shuffled": [0.365, 0.633]}}]
    kinds, offsets = [1] * 10 + [4] * 3, np.linspace(-1, 1, 13)
    for label, accs, needles, n in (("cell, partial credit, true 95", [0.95], [4], 20), ("cell, partial credit, true 95", [0.95], [4], 100),
                                    ("cell, partial credit, true 60", [0.60], [4], 50),
                                    ("13-task Total, true 85.6", list(0.856 + 0.08 * offsets), kinds, 20),
                                    ("13-task Total, true 99", list(0.99 + 0.009 * offsets), kinds, 20)):
        truth, r = float(np.mean(accs)), max(100, runs // (4 if len(accs) > 1 else 1))
        cov = same = 0
        for _ in range(r):
            cells = [list(_cell_draw(rng, a, n, k)) for a, k in zip(accs, needles)]
            lo, hi = bounded_mean_interval(cells)
            cov += lo <= truth <= hi
            same += bounded_mean_interval([list(rng.permutation(c)) for c in cells]) == (lo, hi)
        out.append({"case": label, "n": n, "measure": "coverage", "after": _mc(cov, r, "coverage"), "same_when_shuffled": round(same / r, 4)})
    return out


def claims_rows(rng: np.random.Generator, runs: int) -> list[dict]:
    """The numbers docs/statistics.md states: the per-task Eff.LB is per task, not simultaneous (the share
    of runs where some task's bound is above its truth), and the samples a gate needs for 80 % power."""
    from scipy.stats import binom

    from pytest_ruler.results.intervals import effective_length_bounds
    from pytest_ruler.results.stats import bounded_mean_p, mean_above_p

    thr, out = THRESHOLD / 100, []
    lengths = LENGTHS[:3]
    for tasks_on in (1, 4, 13):  # 13 tasks at 95, 90 then 85.6 (on the mark); tasks_on of them on it, the rest at 90
        curves = [[0.95, 0.90, 0.856 if t < tasks_on else 0.90] for t in range(13)]
        some = each = 0
        for _ in range(runs):
            cells = {f"t{t}": {L: list(_cell_draw(rng, a, 100, 1)) for L, a in zip(lengths, c)} for t, c in enumerate(curves)}
            scores = {t: {L: 100.0 * float(np.mean(x)) for L, x in ls.items()} for t, ls in cells.items()}
            per_task = effective_length_bounds(cells, scores, THRESHOLD)[1]
            over = [per_task[f"t{t}"] == lengths[2] for t in range(tasks_on)]
            some += any(over)
            each += over[0]
        out.append({"case": f"per-task Eff.LB, 13 0/1 tasks, {tasks_on} with 16K on the mark", "n": 100, "measure": "size",
                    "one_task": _mc(each, runs, "size"), "some_task": _mc(some, runs, "")})
    # one 0/1 task at a true 95 against 85.6: exact power of the binomial test (no Monte Carlo)
    power = {}
    for n in range(20, 101, 5):
        ks = np.arange(n + 1)
        power[n] = round(float(sum(binom.pmf(k, n, 0.95) for k in ks if mean_above_p([1.0] * k + [0.0] * (n - k), thr) <= ALPHA)), 4)
    out.append({"case": "one 0/1 task, true 95, exact binomial test vs 85.6", "measure": "power (exact)", "by_n": power,
                "n_for_80": min((n for n, p in power.items() if p >= 0.8), default=None)})
    accs = list(0.95 + 0.04 * np.linspace(-1, 1, 13))
    kinds = [1] * 10 + [4] * 3
    by_n = {}
    for n in (5, 8, 10, 12, 15, 20):
        r = max(100, runs // 2)
        hits = sum(bounded_mean_p([list(_cell_draw(rng, a, n, k)) for a, k in zip(accs, kinds)], thr) <= ALPHA for _ in range(r))
        by_n[n] = _mc(hits, r, "")
    out.append({"case": "13-task Total, true 95 (tasks 91-99), stratified betting test vs 85.6", "measure": "power", "by_n": by_n,
                "n_for_80": min((n for n, v in by_n.items() if v["rate"] >= 0.8), default=None)})
    return out


def issue38(seed: int, runs: int) -> dict:
    t0 = time.perf_counter()
    rows = {"relative": relative_rows(np.random.default_rng(seed + 38), runs),
            "order_free": order_free_rows(np.random.default_rng(seed + 39), runs),
            "claims": claims_rows(np.random.default_rng(seed + 40), max(100, runs // 4)),
            "planned": planned_rows(seed + 41, max(50, runs // 10))}
    return {**rows, "runs": runs, "seconds": round(time.perf_counter() - t0, 1)}


def planned_rows(seed: int, runs: int) -> dict:
    """Issue 38 item 3: the planned verdict (``--ruler-stop-when-decided``) against the full run's on
    the profiles with a length near or on the mark: bench/cost_to_verdict.py's simulation (the plan by
    run.decided, every verdict by results.gate), its agreement columns. ``same_answers``: the planned
    run on the full run's own answers (the planning's error); ``fresh``: a planned rerun with new
    answers, beside ``full_vs_full``, two full runs (the verdict's own run-to-run noise)."""
    from cost_to_verdict import simulate

    sim = simulate(runs, 20, seed, profiles=("near_mark", "on_mark", "dip_recover"))
    keep = {"disagreement_same_answers": "same_answers", "disagreement_planned_fresh_vs_full": "fresh",
            "disagreement_full_vs_full": "full_vs_full", "planned_false_pass_vs_truth": "planned_false_pass",
            "planned_false_fail_vs_truth": "planned_false_fail", "full_false_pass_vs_truth": "full_false_pass"}
    rows = [{"case": f"{r['profile']}, {r['rule']} gate at {r['gate']} (true: {r['true_verdict']})", "n": r["samples"],
             "measure": "disagreement", **{short: _mc(r[k]["count"], r[k]["runs"], "") for k, short in keep.items()},
             "tokens_planned_to_full_sequential": r["tokens_planned_to_full_sequential"]["mean"]} for r in sim["rows"]]
    return {"rows": rows, "true_totals": {k: v["true_totals"] for k, v in sim["profiles"].items() if k in ("near_mark", "on_mark", "dip_recover")},
            "runs": runs, "seconds": sim["seconds"]}
