"""Benchmark: what ``--ruler-sequential`` saves, and how often it agrees with the full run.

Simulated items (no model): each item's per-sample scores are a seeded Bernoulli stream
with a known true accuracy ``p``; the threshold is RULER's 85.6. For every (p, samples)
the same streams are judged twice, in this process:

- full (the baseline): all samples, pass when the mean reaches the threshold;
- sequential: ``run.sequential.SequentialTest`` fed in the plugin's batches
  (``batch_size(samples)``), stopping at the first clear verdict, else at the end
  and judged like the full run.

Reported per cell and overall: samples used / samples (saving = 1 - ratio), the share
of verdicts identical to the full run, and the error rate of early verdicts (an early
"pass" when p < threshold or an early "fail" when p >= threshold; goal <= ALPHA).
The true accuracies span the range a release sees: clear failures (long lengths),
clear passes (short lengths) and items near the threshold.

    python bench/sequential.py [--items 200] [--out bench/results/sequential.json]
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

ACCURACIES = (0.0, 0.2, 0.5, 0.7, 0.8, 0.85, 0.856, 0.9, 0.95, 0.99, 1.0)
SAMPLES = (20, 100, 500)


def judge(p: float, n: int, seed: int, p0: float) -> dict:
    from pytest_ruler.run.sequential import SequentialTest, batch_size

    rng = random.Random(seed)
    scores = [1.0 if rng.random() < p else 0.0 for _ in range(n)]
    full = sum(scores) / n >= p0
    test, used, size = SequentialTest(p0), 0, batch_size(n)
    for i in range(0, n, size):  # the runner's loop: whole batches, stop after the deciding one
        used = min(n, i + size)
        if test.update(scores[i:used]):
            break
    early = test.decision if used < n else None
    verdict = (early == "pass") if early else sum(scores[:used]) / used >= p0
    wrong_early = early is not None and ((early == "pass") != (p >= p0))
    return {"used": used, "same": verdict == full, "early": early is not None, "wrong_early": wrong_early}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--items", type=int, default=200, help="simulated items per (accuracy, samples) cell")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "sequential.json"))
    ns = ap.parse_args()
    from pytest_ruler.run.sequential import ALPHA

    p0 = 0.856
    started = time.perf_counter()
    cells, total_used, total_full, same, early, wrong = [], 0, 0, 0, 0, 0
    for n in SAMPLES:
        for p in ACCURACIES:
            rows = [judge(p, n, seed, p0) for seed in range(ns.items)]
            used = sum(r["used"] for r in rows)
            cells.append({"samples": n, "p": p, "used_ratio": round(used / (n * ns.items), 3),
                          "identical": round(sum(r["same"] for r in rows) / ns.items, 3),
                          "early": round(sum(r["early"] for r in rows) / ns.items, 3),
                          "wrong_early": round(sum(r["wrong_early"] for r in rows) / ns.items, 4)})
            total_used += used
            total_full += n * ns.items
            same += sum(r["same"] for r in rows)
            early += sum(r["early"] for r in rows)
            wrong += sum(r["wrong_early"] for r in rows)
    items = len(cells) * ns.items
    result = {
        "threshold": p0, "alpha": ALPHA, "items_per_cell": ns.items, "accuracies": ACCURACIES, "samples": SAMPLES,
        "baseline": "the full run of the same streams (all samples), in this process",
        "samples_used_ratio": round(total_used / total_full, 3), "saved": round(1 - total_used / total_full, 3),
        "identical_verdicts": round(same / items, 4), "early_stops": round(early / items, 3),
        "wrong_early_verdicts": round(wrong / items, 4), "wrong_among_early": round(wrong / max(early, 1), 4),
        "goals": {"saved": ">= 0.40", "identical_verdicts": ">= 0.95", "wrong_early_verdicts": f"<= {ALPHA}"},
        "seconds": round(time.perf_counter() - started, 1), "cells": cells,
    }
    Path(ns.out).parent.mkdir(parents=True, exist_ok=True)
    Path(ns.out).write_text(json.dumps(result, indent=1) + "\n")
    print(f"{'samples':>7} {'p':>6} {'used':>6} {'same':>6} {'early':>6} {'wrong':>6}")
    for c in cells:
        print(f"{c['samples']:>7} {c['p']:>6} {c['used_ratio']:>6} {c['identical']:>6} {c['early']:>6} {c['wrong_early']:>6}")
    print(f"overall: {result['saved']:.0%} of samples saved, {result['identical_verdicts']:.1%} identical verdicts, "
          f"{result['wrong_early_verdicts']:.2%} wrong early verdicts (alpha {ALPHA}); wrote {ns.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
