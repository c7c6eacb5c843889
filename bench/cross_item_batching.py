"""Benchmark: cross-item batching (--ruler-batch-items) on a real engine.

The same plugin command twice per setting, alternating, in fresh processes
without the cache; best wall time of each. Items are the smoke preset's tasks
at one length, so with N = number of tasks one engine call serves them all. ``ratio``
(N's best over 1's) is null, with ``ratio_withheld_because`` naming the loads, when the
machine's load can explain it (``bench/harness.py``).

    python bench/cross_item_batching.py [--model smollm2-135m] [--length 1k] [--samples 2] [--items 5]
                                        [--cooldown 0] [--load-tolerance 1.0]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from bench.harness import Arm, add_load_options, machine, pytest_command, ratio, run_arm  # noqa: E402


def run(name: str, args: list[str], cwd: str, cooldown: float) -> Arm:
    return run_arm(name, pytest_command(args, "r.json"), cwd=cwd, report="r.json", cooldown=cooldown)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--tasks", default="niah_single_1,niah_single_2,niah_multikey_2,vt,fwe")
    ap.add_argument("--length", default="1k")
    ap.add_argument("--samples", type=int, default=2)
    ap.add_argument("--items", type=int, default=5)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "cross_item_batching.json"))
    add_load_options(ap)
    ns = ap.parse_args()
    base = [f"--ruler-model={ns.model}", f"--ruler-tasks={ns.tasks}", f"--ruler-lengths={ns.length}", f"--ruler-samples={ns.samples}", "--ruler-no-cache", "--ruler-only"]
    best = {1: float("inf"), ns.items: float("inf")}
    scores = {}
    runs: list[Arm] = []
    with tempfile.TemporaryDirectory() as cwd:
        for _ in range(ns.repeats):
            for n in best:
                arm = run(f"batch_items_{n}", [*base, f"--ruler-batch-items={n}"], cwd, ns.cooldown)
                runs.append(arm)
                best[n] = min(best[n], arm.wall_s)
                scores[n] = sorted((i["task"], i["score"]) for i in arm.items)
    got = ratio(best[ns.items], best[1], runs, tolerance=ns.load_tolerance)
    out = {
        "model": ns.model, "tasks": ns.tasks, "length": ns.length, "samples_per_item": ns.samples,
        "wall_s_batch_items_1": round(best[1], 2), f"wall_s_batch_items_{ns.items}": round(best[ns.items], 2),
        "ratio": got.value, "ratio_withheld_because": got.reason, "same_scores": scores[1] == scores[ns.items],
        "runs": [arm.record() for arm in runs], "machine": machine(),
        "note": "wall time of the whole pytest process (model load included, same in both)",
    }
    print(json.dumps(out, indent=1))
    Path(ns.out).parent.mkdir(parents=True, exist_ok=True)
    Path(ns.out).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
