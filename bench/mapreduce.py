"""Benchmark: LLM×MapReduce against native inference at a length where both can pass.

One process, one engine, the same samples, no cache: the native item and its
map-reduce twin alternate ``--repeats`` times; the best wall time of each is
kept. Reported: wall seconds, engine calls, prompt and generated tokens, the
scores, and the ratio map-reduce / native (the baseline, run in the same process).

    python bench/mapreduce.py [--model smollm2-135m] [--task niah_single_1] [--length 8k]
                              [--samples 3] [--chunk 2k] [--repeats 1]

On a 2-core CPU the quadratic part of attention is small at 8K, so chunking
mostly adds work (each chunk repeats the prompt text; map outputs are decoded);
the paper's speed-up comes from long inputs on GPUs. The numbers say how much.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pytest_ruler.config import RulerConfig  # noqa: E402
from pytest_ruler.lengths import parse_length  # noqa: E402
from pytest_ruler.mapreduce import MapReduceConfig  # noqa: E402
from pytest_ruler.session import RulerSession  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--backend", default="hf")
    ap.add_argument("--task", default="niah_single_1")
    ap.add_argument("--length", default="8k")
    ap.add_argument("--samples", type=int, default=3)
    ap.add_argument("--chunk", default="2k")
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "mapreduce.json"))
    ns = ap.parse_args()
    length = parse_length(ns.length, "--length")
    mr = MapReduceConfig(chunk_tokens=parse_length(ns.chunk, "--chunk"))
    config = RulerConfig(model=ns.model, backend=ns.backend, samples=ns.samples, no_cache=True, mapreduce=True, mapreduce_config=mr)
    session = RulerSession(config, cache_dir=None)
    t = time.perf_counter()
    session.engine  # load once, outside the timings
    load_s = time.perf_counter() - t
    best: dict[str, dict] = {}
    for _ in range(ns.repeats):
        for mode in ("native", "mapreduce"):
            started = time.perf_counter()
            if mode == "native":
                r = session.run_item(ns.task, length, 0)
            else:
                r = session.run_mapreduce_item(ns.task, length, 0)
            wall = time.perf_counter() - started
            if mode not in best or wall < best[mode]["wall_s"]:
                completion = r.mapreduce.get("completion_tokens") if mode == "mapreduce" else None
                best[mode] = {
                    "wall_s": round(wall, 2),
                    "score": r.score,
                    "engine_calls": r.engine_calls,
                    "prompt_tokens": r.prompt_tokens,
                    "completion_tokens": completion,
                    "over_length": r.over_length,
                }
                if mode == "mapreduce":
                    best[mode]["calls_per_stage"] = r.mapreduce["calls_per_stage"]
                    best[mode]["chunks_per_sample"] = r.mapreduce["chunks"]
    session.close()
    out = {
        "model": ns.model,
        "backend": ns.backend,
        "task": ns.task,
        "length": length,
        "samples": ns.samples,
        "chunk_tokens": mr.chunk_tokens,
        "engine_load_s": round(load_s, 2),
        "native": best["native"],
        "mapreduce": best["mapreduce"],
        "ratio_wall_mapreduce_over_native": round(best["mapreduce"]["wall_s"] / best["native"]["wall_s"], 3),
        "ratio_prompt_tokens_mapreduce_over_native": round(best["mapreduce"]["prompt_tokens"] / best["native"]["prompt_tokens"], 3),
        "both_pass": best["native"]["score"] >= 85.6 and best["mapreduce"]["score"] >= 85.6,
    }
    print(json.dumps(out, indent=1))
    Path(ns.out).parent.mkdir(parents=True, exist_ok=True)
    Path(ns.out).write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
