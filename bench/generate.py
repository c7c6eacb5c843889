"""Benchmark: sample generation speed against its floor.

For each task and length it reports seconds per sample (best of --repeats
runs, as the floor is; steady state: the
first sample of a task, which pays one-time costs like counting the essay
corpus, is reported separately) and the ratio to the floor — one tokenizer
pass over the final prompt, timed in the same process on the same samples.
Start-up is measured in a fresh process: import, tokenizer load (cached) and
the first sample.

    python bench/generate.py [--lengths 4k,32k,128k] [--samples 3] [--out bench/results/generate.json]

The JSON output has one row per (task, length) and a summary with the worst
ratio at the longest length.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

OFFLINE = ["niah_single_1", "niah_single_2", "niah_single_3", "niah_multikey_1", "niah_multikey_2",
           "niah_multikey_3", "niah_multivalue", "niah_multiquery", "vt", "cwe", "fwe"]

STARTUP = """
import time, sys
t0 = time.perf_counter()
from pytest_ruler.tasks.tokenizer import load_tokenizer
from pytest_ruler.tasks import GenerationContext, generate_samples
tok = load_tokenizer('smollm2-135m')
t1 = time.perf_counter()
generate_samples(sys.argv[1], 4096, samples=1, ctx=GenerationContext(tok))
t2 = time.perf_counter()
print(t1 - t0, t2 - t0)
"""


def startup(task: str) -> dict[str, float]:
    runs = []
    for _ in range(3):
        t = time.perf_counter()
        out = subprocess.run([sys.executable, "-c", STARTUP, task], capture_output=True, text=True, cwd=ROOT, check=True).stdout.split()
        runs.append((float(out[0]), float(out[1]), time.perf_counter() - t))
    best = min(runs, key=lambda r: r[1])
    return {"tokenizer_load_s": round(best[0], 3), "first_sample_s": round(best[1], 3), "process_wall_s": round(best[2], 3)}


def floor_seconds(tok, samples) -> float:
    """Median time of one tokenizer pass over each final prompt."""
    times = []
    for s in samples:
        text = s.input + s.answer_prefix
        best = float("inf")
        for _ in range(3):
            t = time.perf_counter()
            tok.count(text)
            best = min(best, time.perf_counter() - t)
        times.append(best)
    return statistics.median(times)


def main() -> int:
    from pytest_ruler.lengths import parse_lengths
    from pytest_ruler.tasks import GenerationContext, generate_samples
    from pytest_ruler.tasks.tokenizer import load_tokenizer

    ap = argparse.ArgumentParser()
    ap.add_argument("--lengths", default="4k,32k,128k")
    ap.add_argument("--samples", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--tasks", default=",".join(OFFLINE))
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "generate.json"))
    ns = ap.parse_args()
    lengths = parse_lengths(ns.lengths)
    tasks = ns.tasks.split(",")

    tok = load_tokenizer("smollm2-135m")
    rows = []
    for task in tasks:
        ctx = GenerationContext(tok)
        t = time.perf_counter()
        generate_samples(task, lengths[0], samples=1, ctx=ctx, seed=99)
        first = time.perf_counter() - t
        for length in lengths:
            per_sample = float("inf")
            for _ in range(ns.repeats):  # best of N, as for the floor: the machine is shared and noisy
                t = time.perf_counter()
                samples = generate_samples(task, length, samples=ns.samples, ctx=ctx)
                per_sample = min(per_sample, (time.perf_counter() - t) / ns.samples)
            floor = floor_seconds(tok, samples)
            row = {
                "task": task,
                "length": length,
                "seconds_per_sample": round(per_sample, 4),
                "floor_seconds": round(floor, 4),
                "ratio_to_floor": round(per_sample / floor, 2),
                "passes": [s.metadata["passes"] for s in samples],
                "fill": min(s.metadata["fill"] for s in samples),
                "first_sample_in_process_s": round(first, 3) if length == lengths[0] else None,
            }
            rows.append(row)
            print(f"{task:<16} {length:>7}  {per_sample:7.3f} s/sample  floor {floor:6.3f} s  ratio {row['ratio_to_floor']:5.2f}  passes {row['passes']}  fill {row['fill']}", flush=True)
    start = startup("niah_single_2")
    print(f"start-up (fresh process, niah_single_2 at 4K): tokenizer {start['tokenizer_load_s']} s, first sample at {start['first_sample_s']} s")
    longest = max(lengths)
    at_longest = [r for r in rows if r["length"] == longest]
    summary = {
        "longest_length": longest,
        "max_ratio_at_longest": max(r["ratio_to_floor"] for r in at_longest),
        "median_ratio_at_longest": statistics.median(r["ratio_to_floor"] for r in at_longest),
        "startup": start,
        "goal": {"ratio_at_128k": 1.5, "first_sample_s": 2.0},
    }
    print(json.dumps(summary))
    out = Path(ns.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"machine": {"python": platform.python_version(), "platform": platform.platform(), "cpus": __import__("os").cpu_count()},
                               "rows": rows, "summary": summary}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
