"""Calibration of pytest-ruler's statistics, measured by simulation (issue 14, item 5).

No model and no engine: per-sample scores are simulated directly, with known true
accuracy, and fed to the very functions the plugin uses, as report items carrying
``sample_scores`` and ``sample_hashes``:

- the baseline comparison: :func:`pytest_ruler.results.baseline.compare` (paired exact
  McNemar / sign-flip permutation test when the items share prompt hashes; the items without hashes
  take the unpaired path, the one-sided two-proportion z-test with its Fisher fallback);
- the effective length's lower bound: :func:`pytest_ruler.results.summarize_results`
  (``effective_length_bound`` and ``per_task_effective_length_bound``, at 95 %).

The simulated model. Question ``q`` has a difficulty ``d_q ~ N(0, 1)``; a run answers it
right when ``theta - d_q + eps > 0`` with ``eps ~ N(0, sigma^2)`` drawn afresh per run
(sampling noise; ``sigma = 0.5``), so the accuracy is ``Phi(theta / sqrt(1 + sigma^2))``
and two runs of one model agree on most questions, as they do in practice. A fractional
task (partial credit, 4 needles per question) scores the share of needles answered,
each needle with its own difficulty. ``theta`` is set from the target accuracy.

Measured:

1. False alarms over A/A pairs (baseline and current the same model, same questions):
   the share of pairs flagged as a significant drop at alpha = 0.05 (goal <= alpha), for
   the paired test and for the unpaired one (the same data without hashes).
2. Power to detect a 5-point drop (85 % -> 80 %) at 100 and 500 samples, paired and
   unpaired.
3. Coverage of the effective length's 95 % lower bound: the share of runs whose bound
   does not exceed the true effective length (the longest L with the true score above
   the threshold at every tested length <= L; goal >= 95 %), per task and for the Total,
   including a length whose true score sits exactly on the threshold.

4. Issue 19 (``levels``): each function the plugin now uses against the one it replaced
   (``before``: the one-sample t-test, the t / Wilson cell intervals, the Total's z-test and
   z interval, re-implemented here as main had them; ``after``: ``results.stats`` as it is),
   fed the same simulated scores, at the cases that found the problems: a partial-credit
   length exactly at the threshold (size of the bound's test, goal <= alpha), scores near
   100 (coverage of the 95 % intervals, goal >= 0.95, and the share of zero-width ones),
   a 13-task Total at the threshold (size) and near 100 (coverage), and the power of each
   test where the truth is above the threshold. Each rate carries its Monte Carlo standard
   error ``sqrt(r (1 - r) / runs)`` and ``holds``: size <= alpha + 2 SE, coverage >= 0.95 - 2 SE.

5. Issue 38 (``issue38``, bench/stats_calibration_power.py): the rel:F bound's size and power
   before and after, the order-free betting interval's coverage, and the numbers the docs state
   (how often some task's Eff.LB is above its truth; samples a gate needs for 80 % power), and the
   planned verdict's agreement with the full run's (``issue38.planned``: --ruler-stop-when-decided on
   profiles near the mark). ``--only-issue38`` recomputes these rows alone and updates them in
   ``--out``; ``--only-planned`` the planned rows alone.

Rates carry a 95 % Wilson interval over the simulations (Monte Carlo error).

    python bench/stats_calibration.py [--sims 1000] [--level-runs 2000] [--issue38-runs 1000] [--only-issue38] [--seed 0]
        [--out bench/results/stats_calibration.json]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from scipy.stats import norm  # noqa: E402

from pytest_ruler.results import ItemResult, summarize_results  # noqa: E402
from pytest_ruler.results.baseline import compare  # noqa: E402

SIGMA = 0.5
ALPHA = 0.05
THRESHOLD = 85.6
LENGTHS = [4096, 8192, 16384, 32768, 65536, 131072]


def theta_for(accuracy: float) -> float:
    return math.sqrt(1 + SIGMA ** 2) * norm.ppf(accuracy)


def answers(rng: np.random.Generator, theta: float, difficulty: np.ndarray) -> np.ndarray:
    """Per question (rows) and needle (columns): right (1.0) or wrong (0.0); the score is the row mean."""
    return (theta - difficulty + rng.normal(0.0, SIGMA, difficulty.shape) > 0).astype(float).mean(axis=1)


def item(task: str, length: int, scores: np.ndarray, hashes: list[str] | None) -> dict:
    d = {"task": task, "length": length, "seed": 0, "mode": "native", "samples": len(scores),
         "score": 100.0 * float(scores.mean()), "threshold": THRESHOLD, "passed": True, "nulls": 0, "seconds": 0.0,
         "sample_scores": [float(s) for s in scores]}
    if hashes is not None:
        d["sample_hashes"] = hashes
    return d


def wilson(k: int, n: int) -> list[float]:
    z = norm.ppf(0.975)
    p = k / n
    c = (p + z * z / (2 * n)) / (1 + z * z / n)
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return [round(max(0.0, c - h), 4), round(min(1.0, c + h), 4)]


def rate(k: int, n: int) -> dict:
    return {"rate": round(k / n, 4), "ci95": wilson(k, n), "count": k, "sims": n}


def baseline_test(rng: np.random.Generator, sims: int, n: int, base_acc: float, cur_acc: float, needles: int) -> dict:
    """Share of simulated pairs that compare() flags as a significant drop, paired and unpaired."""
    flagged = {"paired": 0, "unpaired": 0}
    tests: dict[str, int] = {}
    hashes = [f"{i:016x}" for i in range(n)]
    tb, tc = theta_for(base_acc), theta_for(cur_acc)
    for _ in range(sims):
        difficulty = rng.normal(0.0, 1.0, (n, needles))
        b, c = answers(rng, tb, difficulty), answers(rng, tc, difficulty)
        for how, h in (("paired", hashes), ("unpaired", None)):
            [res] = compare({"items": [item("t", 8192, b, h)]}, [item("t", 8192, c, h)], alpha=ALPHA)
            flagged[how] += res.significant
            tests[res.test] = tests.get(res.test, 0) + 1
    return {how: rate(k, sims) for how, k in flagged.items()} | {"tests_used": tests}


def true_effective(truth: list[float]) -> int | None:
    out = None
    for L, p in zip(LENGTHS, truth):
        if round(100 * p, 9) <= THRESHOLD:
            break
        out = L
    return out


def bound_coverage(rng: np.random.Generator, sims: int, tasks: dict[str, tuple[list[float], int]], samples: int, seeds: int) -> dict:
    """Coverage of summarize_results' 95 % bounds over simulated runs with known true scores."""
    total_truth = [float(np.mean([tasks[t][0][i] for t in tasks])) for i in range(len(LENGTHS))]
    truth = {t: true_effective(curve) for t, (curve, _) in tasks.items()} | {"Total": true_effective(total_truth)}
    covered = {k: 0 for k in truth}
    exact = {k: 0 for k in truth}
    point_over = {k: 0 for k in truth}
    rank = {L: i for i, L in enumerate(LENGTHS)}
    for _ in range(sims):
        results = []
        for task, (curve, needles) in tasks.items():
            for L, p in zip(LENGTHS, curve):
                for seed in range(seeds):
                    s = answers(rng, theta_for(p), rng.normal(0.0, 1.0, (samples, needles)))
                    results.append(ItemResult(task=task, length=L, seed=seed, mode="native", samples=samples,
                                              score=100.0 * float(s.mean()), threshold=THRESHOLD, passed=True, nulls=0,
                                              seconds=0.0, sample_scores=tuple(float(x) for x in s)))
        summary = summarize_results(results, THRESHOLD)
        got = dict(summary["per_task_effective_length_bound"]) | {"Total": summary["effective_length_bound"]}
        point = dict(summary["per_task_effective_length"]) | {"Total": summary["effective_length"]}
        for k, true in truth.items():
            r_true = -1 if true is None else rank[true]
            r_got = -1 if got[k] is None else rank[got[k]]
            r_point = -1 if point[k] is None else rank[point[k]]
            covered[k] += r_got <= r_true
            exact[k] += r_got == r_true
            point_over[k] += r_point > r_true
    return {k: {"true_effective_length": truth[k], "coverage": rate(covered[k], sims),
                "bound_equals_truth": round(exact[k] / sims, 4),
                "point_estimate_above_truth": round(point_over[k] / sims, 4)} for k in truth}


# --------------------------------------------------------------------------- issue 19: levels


def _mc(hits: int, runs: int, goal: str) -> dict:
    r = hits / runs
    se = math.sqrt(max(r * (1 - r), 1e-12) / runs)
    holds = r <= ALPHA + 2 * se if goal == "size" else r >= 0.95 - 2 * se if goal == "coverage" else None
    return {"rate": round(r, 4), "mc_se": round(se, 4), "runs": runs, **({"holds": bool(holds)} if holds is not None else {})}


def _before_p(x: np.ndarray, thr: float) -> float:
    """main's mean_above_p: exact binomial for 0/1, t-test for partial credit, rounded binomial when flat."""
    from scipy import stats as st
    n = len(x)
    if np.all((x == 0) | (x == 1)) or np.all(x == x[0]):
        return float(st.binomtest(int(math.floor(x.mean() * n + 0.5)), n, thr, alternative="greater").pvalue)
    return float(st.ttest_1samp(x, thr, alternative="greater").pvalue)


def _before_cell(x: np.ndarray) -> tuple[float, float]:
    """main's cell interval: Wilson for 0/1, mean +- t * SE clipped for partial credit."""
    from scipy import stats as st
    n, m = len(x), float(x.mean())
    if np.all((x == 0) | (x == 1)):
        z = norm.ppf(0.975)
        c = (m + z * z / (2 * n)) / (1 + z * z / n)
        h = z * math.sqrt(m * (1 - m) / n + z * z / (4 * n * n)) / (1 + z * z / n)
        return (0.0 if m == 0 else max(0.0, c - h)), (1.0 if m == 1 else min(1.0, c + h))
    h = st.t.ppf(0.975, n - 1) * x.std(ddof=1) / math.sqrt(n)
    return max(0.0, m - h), min(1.0, m + h)


def _before_total(cells: list[np.ndarray], thr: float) -> tuple[float, tuple[float, float]]:
    """main's Total: z-test with the Laplace variance for flat cells; z interval of the plug-in SE."""
    k, var, var_ci = len(cells), 0.0, 0.0
    for x in cells:
        n, v = len(x), float(x.var(ddof=1))
        var_ci += v / n
        if v == 0.0:
            lap = (n * float(x.mean()) + 1) / (n + 2)
            v = lap * (1 - lap)
        var += v / n
    mean = float(np.mean([x.mean() for x in cells]))
    p = float(norm.sf((mean - thr) / (math.sqrt(var) / k)))
    h = norm.ppf(0.975) * math.sqrt(var_ci) / k
    return p, (max(0.0, mean - h), min(1.0, mean + h))


def _cell_draw(rng: np.random.Generator, acc: float, n: int, needles: int) -> np.ndarray:
    return answers(rng, theta_for(acc), rng.normal(0.0, 1.0, (n, needles)))


def levels(rng: np.random.Generator, runs: int) -> list[dict]:
    """Issue 19's cases, before and after (see the module docstring, item 4)."""
    from pytest_ruler.results.stats import bounded_mean_interval, bounded_mean_p, clopper_pearson, mean_above_p

    thr, out = THRESHOLD / 100, []

    def after_cell(x: np.ndarray) -> tuple[float, float]:
        if np.all((x == 0) | (x == 1)):
            return clopper_pearson(int(round(x.sum())), len(x))
        return bounded_mean_interval([x])

    # per-task bound's test: size on the threshold, power above it (partial credit, 4 needles)
    for acc, measure in ((0.856, "size"), (0.95, "power")):
        for n in (20, 50, 100, 500):
            r = max(200, runs // (5 if n == 500 else 1))
            hit = {"before": 0, "after": 0}
            for _ in range(r):
                x = _cell_draw(rng, acc, n, 4)
                hit["before"] += _before_p(x, thr) <= ALPHA
                hit["after"] += mean_above_p(list(x), thr) <= ALPHA
            out.append({"case": f"task bound test, partial credit, true {100 * acc:g}", "n": n, "measure": measure,
                        **{k: _mc(v, r, measure) for k, v in hit.items()}})
    # cell intervals near 100: coverage and zero-width share
    for needles, accs in ((4, (0.95, 0.99)), (1, (0.99, 0.995))):
        for acc in accs:
            for n in (20, 100):
                cov = {"before": 0, "after": 0}
                flat = {"before": 0, "after": 0}
                for _ in range(runs):
                    x = _cell_draw(rng, acc, n, needles)
                    for k, (lo, hi) in (("before", _before_cell(x)), ("after", after_cell(x))):
                        cov[k] += lo <= acc <= hi
                        flat[k] += hi - lo <= 0
                out.append({"case": f"cell interval, {'0/1' if needles == 1 else 'partial credit'}, true {100 * acc:g}",
                            "n": n, "measure": "coverage", **{k: _mc(v, runs, "coverage") for k, v in cov.items()},
                            "zero_width": {k: round(v / runs, 4) for k, v in flat.items()}})
    # a 13-task Total: 10 tasks with 0/1 scores, 3 with partial credit
    kinds = [1] * 10 + [4] * 3
    offsets = np.linspace(-1, 1, 13)
    for label, centre, spread, measure in (("at the threshold 85.6", 0.856, 0.08, "size"), ("near 100 (99)", 0.99, 0.009, "coverage"),
                                           ("above the threshold (90)", 0.90, 0.06, "power")):
        accs = centre + spread * offsets  # mean exactly centre
        for n in (20, 50):
            r = max(200, runs // 4)
            hit = {"before": 0, "after": 0}
            flat = {"before": 0, "after": 0}
            for _ in range(r):
                cells = [_cell_draw(rng, a, n, k) for a, k in zip(accs, kinds)]
                bp, bci = _before_total(cells, thr)
                if measure == "coverage":
                    lo, hi = bounded_mean_interval(cells)
                    hit["before"] += bci[0] <= centre <= bci[1]
                    hit["after"] += lo <= centre <= hi
                    flat["before"] += bci[1] - bci[0] <= 0
                    flat["after"] += hi - lo <= 0
                else:
                    hit["before"] += bp <= ALPHA
                    hit["after"] += bounded_mean_p(cells, thr) <= ALPHA
            row = {"case": f"13-task Total {label}", "n": n, "measure": measure, **{k: _mc(v, r, measure) for k, v in hit.items()}}
            if measure == "coverage":
                row["zero_width"] = {k: round(v / r, 4) for k, v in flat.items()}
            out.append(row)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sims", type=int, default=1000, help="simulations per configuration (>= 200)")
    ap.add_argument("--level-runs", type=int, default=2000, help="runs per issue-19 case (>= 200)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "stats_calibration.json"))
    ap.add_argument("--issue38-runs", type=int, default=1000, help="runs per issue-38 row (>= 100)")
    ap.add_argument("--only-issue38", action="store_true", help="compute only the issue-38 rows and update them in --out")
    ap.add_argument("--only-planned", action="store_true", help="compute only issue38.planned (the planned verdict's agreement) and update it in --out")
    ns = ap.parse_args()
    from stats_calibration_power import issue38, planned_rows

    if ns.only_planned:
        out = json.loads(Path(ns.out).read_text()) if Path(ns.out).exists() else {}
        out.setdefault("issue38", {})["planned"] = planned_rows(ns.seed + 41, max(50, ns.issue38_runs // 10))
        Path(ns.out).write_text(json.dumps(out, indent=1) + "\n")
        print(json.dumps(out["issue38"]["planned"], indent=1))
        return 0

    if ns.only_issue38:
        out = json.loads(Path(ns.out).read_text()) if Path(ns.out).exists() else {}
        out["issue38"] = issue38(ns.seed, max(100, ns.issue38_runs))
        Path(ns.out).write_text(json.dumps(out, indent=1) + "\n")
        print(json.dumps(out["issue38"], indent=1))
        return 0
    rng = np.random.default_rng(ns.seed)
    t0 = time.perf_counter()
    sims, cov_sims = ns.sims, max(200, ns.sims // 2)
    level_rows = levels(np.random.default_rng(ns.seed + 19), max(200, ns.level_runs))
    t_levels = time.perf_counter() - t0

    baseline = []
    for label, needles in (("0/1 scores", 1), ("partial credit, 4 needles", 4)):
        for n in (100, 500):
            for kind, cur in (("A/A false alarms", 0.85), ("power, 85 -> 80", 0.80)):
                r = baseline_test(rng, sims, n, 0.85, cur, needles)
                baseline.append({"scores": label, "samples": n, "measure": kind, **r})

    curves = {  # true scores per length (4K..128K); threshold 85.6
        "steady": ([0.99, 0.97, 0.95, 0.92, 0.88, 0.70], 1),
        "near_threshold": ([0.95, 0.90, 0.87, 0.86, 0.80, 0.60], 1),
        "on_threshold": ([0.95, 0.90, 0.856, 0.95, 0.95, 0.95], 1),
        "partial_credit": ([0.98, 0.95, 0.91, 0.84, 0.75, 0.50], 4),
    }
    coverage = {
        "100 samples, 1 seed": bound_coverage(rng, cov_sims, curves, 100, 1),
        "25 samples x 2 seeds": bound_coverage(rng, cov_sims, curves, 25, 2),
    }
    out = {
        "method": "simulated per-sample scores fed to results.baseline.compare and results.summarize_results (no engine)",
        "model": f"answer right iff theta - d_q + eps > 0, d_q ~ N(0,1) per question (per needle), eps ~ N(0, {SIGMA}^2) per run",
        "alpha": ALPHA, "threshold": THRESHOLD, "lengths": LENGTHS, "sims": sims, "coverage_sims": cov_sims,
        "seed": ns.seed, "baseline": baseline, "true_curves": {k: v[0] for k, v in curves.items()},
        "bound_coverage": coverage, "levels": level_rows, "levels_seconds": round(t_levels, 1),
        "issue38": issue38(ns.seed, max(100, ns.issue38_runs)),
        "seconds": round(time.perf_counter() - t0, 1),
    }
    Path(ns.out).parent.mkdir(parents=True, exist_ok=True)
    Path(ns.out).write_text(json.dumps(out, indent=1) + "\n")

    print(f"baseline test, alpha={ALPHA}, {sims} simulated pairs each (rate [95% CI])")
    print(f"{'scores':<27}{'n':>5}  {'measure':<18}{'paired':>22}{'unpaired':>22}")
    for r in baseline:
        cells = [f"{r[h]['rate']:.3f} [{r[h]['ci95'][0]:.3f},{r[h]['ci95'][1]:.3f}]" for h in ("paired", "unpaired")]
        print(f"{r['scores']:<27}{r['samples']:>5}  {r['measure']:<18}{cells[0]:>22}{cells[1]:>22}")
    print(f"\neffective length's 95% lower bound, {cov_sims} simulated runs each (goal: coverage >= 0.95)")
    print(f"{'design':<22}{'curve':<16}{'true eff.':>10}{'coverage [95% CI]':>26}{'bound = truth':>15}{'point > truth':>15}")
    for design, rows in coverage.items():
        for k, r in rows.items():
            c = r["coverage"]
            true = r["true_effective_length"]
            print(f"{design:<22}{k:<16}{(str(true // 1024) + 'K') if true else '<4K':>10}"
                  f"{c['rate']:>10.3f} [{c['ci95'][0]:.3f},{c['ci95'][1]:.3f}]"
                  f"{r['bound_equals_truth']:>15.3f}{r['point_estimate_above_truth']:>15.3f}")
    print(f"\nissue 19: before (main's t / Wilson / z) -> after (Clopper-Pearson / betting); rate (MC SE); "
          f"goal: size <= {ALPHA} + 2 SE, coverage >= 0.95 - 2 SE")
    for r in level_rows:
        b, a = r["before"], r["after"]
        zw = f"  zero width {r['zero_width']['before']:.3f} -> {r['zero_width']['after']:.3f}" if "zero_width" in r else ""
        ok = "" if "holds" not in a else ("  holds" if a["holds"] else "  FAILS")
        print(f"{r['case']:<48}{r['n']:>5}  {r['measure']:<9}{b['rate']:.3f} ({b['mc_se']:.3f}) -> {a['rate']:.3f} ({a['mc_se']:.3f}){ok}{zw}")
    print(f"\nwrote {ns.out} ({out['seconds']} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
