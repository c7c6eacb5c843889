"""A/A and power of the arms' statistics (issue 39): simulation, no model.

    python bench/noninferiority_power.py --out bench/results/arms/noninferiority_power.json

1. A/A false alarms: two arms that are the same model, sampled independently per question (a
   non-deterministic engine: each question right with its own probability, the same in both arms),
   one cell. Without a margin a false alarm is a significant drop (the paired drop test, results.arms);
   with margin D it is "refuted" (the run fails). Rate over ``--sims`` cells, with its Monte Carlo error.
2. Samples needed to show non-inferiority at D = 2, 5, 10 points: the smallest n (on a grid) at which
   "shown" comes out in at least 80 % of simulated cells, for (a) identical deterministic arms (every
   question scored the same by both: no flips) and (b) the A/A arms of 1.
Statistics only: timings are not measured. Fixed seed.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pytest_ruler.results.noninferiority import noninferiority  # noqa: E402
from pytest_ruler.results.stats import paired_less  # noqa: E402

ALPHA = 0.05


def _aa_pairs(rng, n: int):
    p = rng.beta(4, 1.5, n)  # per-question difficulty: mean about 0.73
    return list((rng.random(n) < p).astype(float)), list((rng.random(n) < p).astype(float))


def false_alarms(rng, sims: int, n: int, margins) -> dict:
    out = {}
    drops = sum(paired_less(*_aa_pairs(rng, n)).p_value < ALPHA for _ in range(sims))
    out["no margin (drop test)"] = _rate(drops, sims)
    for d in margins:
        refuted = sum(noninferiority(*_aa_pairs(rng, n), d).p_refuted < ALPHA for _ in range(sims))
        out[f"margin {d:g} (refuted)"] = _rate(refuted, sims)
    return out


def _rate(hits: int, sims: int) -> dict:
    rate = hits / sims
    return {"rate": rate, "mc_error": math.sqrt(max(rate * (1 - rate), ALPHA * (1 - ALPHA)) / sims), "sims": sims}


def needed(rng, margin: float, kind: str, sims: int, grid) -> int | None:
    for n in grid:
        shown = 0
        for _ in range(sims):
            if kind == "identical":
                ref = list((rng.random(n) < 0.73).astype(float))
                arm = ref
            else:
                ref, arm = _aa_pairs(rng, n)
            shown += noninferiority(ref, arm, margin).p_shown < ALPHA
        if shown / sims >= 0.8:
            return n
    return None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sims", type=int, default=400)
    ap.add_argument("--n", type=int, default=100, help="pairs per cell for the A/A false-alarm rate")
    ap.add_argument("--out", type=Path)
    a = ap.parse_args()
    rng = np.random.default_rng(39)
    margins = (2.0, 5.0, 10.0)
    grid = (10, 20, 30, 40, 60, 80, 100, 150, 200, 300, 400, 600, 800, 1200, 1600)
    result = {
        "alpha": ALPHA, "seed": 39,
        "aa_false_alarms": {"pairs": a.n, **false_alarms(rng, a.sims, a.n, margins)},
        "pairs_needed_to_show_80pct": {
            kind: {f"{d:g}": needed(rng, d, kind, max(50, a.sims // 8), grid) for d in margins}
            for kind in ("identical", "aa_independent")},
        "grid": list(grid),
    }
    text = json.dumps(result, indent=2)
    print(text)
    if a.out:
        a.out.parent.mkdir(parents=True, exist_ok=True)
        a.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
