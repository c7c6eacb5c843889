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

Rates carry a 95 % Wilson interval over the simulations (Monte Carlo error).

    python bench/stats_calibration.py [--sims 1000] [--seed 0] [--out bench/results/stats_calibration.json]
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


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sims", type=int, default=1000, help="simulations per configuration (>= 200)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "stats_calibration.json"))
    ns = ap.parse_args()
    rng = np.random.default_rng(ns.seed)
    t0 = time.perf_counter()
    sims, cov_sims = ns.sims, max(200, ns.sims // 2)

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
        "bound_coverage": coverage, "seconds": round(time.perf_counter() - t0, 1),
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
    print(f"\nwrote {ns.out} ({out['seconds']} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
