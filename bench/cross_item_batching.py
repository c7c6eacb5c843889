"""Benchmark: cross-item batching (--ruler-batch-items) on a real engine.

The same plugin command twice per setting, alternating, in fresh processes
without the cache; best wall time of each. Items are the smoke preset's tasks
at one length, so with N = number of tasks one engine call serves them all.

    python bench/cross_item_batching.py [--model smollm2-135m] [--length 1k] [--samples 2] [--items 5]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run(args: list[str], cwd: str) -> tuple[float, dict]:
    report = Path(cwd) / "r.json"
    t = time.perf_counter()
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:hypothesispytest", "-p", "no:cacheprovider", *args, f"--ruler-report={report}"],
                   cwd=cwd, capture_output=True, text=True)
    return time.perf_counter() - t, json.loads(report.read_text())


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--tasks", default="niah_single_1,niah_single_2,niah_multikey_2,vt,fwe")
    ap.add_argument("--length", default="1k")
    ap.add_argument("--samples", type=int, default=2)
    ap.add_argument("--items", type=int, default=5)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "cross_item_batching.json"))
    ns = ap.parse_args()
    base = [f"--ruler-model={ns.model}", f"--ruler-tasks={ns.tasks}", f"--ruler-lengths={ns.length}", f"--ruler-samples={ns.samples}", "--ruler-no-cache", "--ruler-only"]
    best = {1: float("inf"), ns.items: float("inf")}
    scores = {}
    with tempfile.TemporaryDirectory() as cwd:
        for _ in range(ns.repeats):
            for n in best:
                seconds, report = run([*base, f"--ruler-batch-items={n}"], cwd)
                best[n] = min(best[n], seconds)
                scores[n] = sorted((i["task"], i["score"]) for i in report["items"])
    out = {
        "model": ns.model, "tasks": ns.tasks, "length": ns.length, "samples_per_item": ns.samples,
        "wall_s_batch_items_1": round(best[1], 2), f"wall_s_batch_items_{ns.items}": round(best[ns.items], 2),
        "ratio": round(best[ns.items] / best[1], 3), "same_scores": scores[1] == scores[ns.items],
        "note": "wall time of the whole pytest process (model load included, same in both)",
    }
    print(json.dumps(out, indent=1))
    Path(ns.out).parent.mkdir(parents=True, exist_ok=True)
    Path(ns.out).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
