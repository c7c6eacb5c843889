"""Benchmark: a whole plugin run on the vllm engine (CPU build) by dtype, on this machine's processor.

Issue 33: vLLM's CPU engine ran bfloat16 by default, 5.7x slower than float32 on an AVX2-only
processor; ``--ruler-dtype=auto`` now means bfloat16 only where the processor computes it natively
(AVX512-BF16 or AMX), float32 otherwise (``pytest_ruler.engines.processor``). Arms, each a fresh
``pytest --ruler-only --ruler-backend=vllm --ruler-no-cache`` process over the same items:

    before    --ruler-dtype=bfloat16   what ``auto`` meant before issue 33, on every processor
    after     --ruler-dtype=auto       what ``auto`` means now (the run header says which and why)
    float32   --ruler-dtype=float32    the other dtype, for the ratio on this processor

A warm-up run (not timed) converts the embedded GGUF model into vLLM's folder first (once per
machine, about a minute: no arm's cost); rounds alternate the arms' order. Recorded per run: wall
seconds (engine start-up included: a user waits for it too), the 1-minute load average before and
after, the exit status, the dtype the report's ``engine`` names, each item's score. Per arm: the
median over rounds.
The ratios before/after and bfloat16/float32 are written as null, with the reason, when the load
before the runs ranged over more than ``--load-tolerance`` or a run started with it above the core
count (``bench/harness.py``'s rule). The processor goes with the figures.

    python bench/dtype_plugin.py [--tasks T1,...] [--lengths 1k] [--samples 10] [--arms before,after,float32]

JSON goes to ``bench/results/dtype_plugin.json`` (``--out``).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from bench.harness import add_load_options, load_reason, machine, pytest_command, run_arm  # noqa: E402

ARMS = {"before": "bfloat16", "after": "auto", "float32": "float32"}
SIX_TASKS = "niah_single_1,niah_single_2,niah_multikey_1,niah_multivalue,vt,fwe"


def dtype_arm(arm: str, work: Path, ns: argparse.Namespace) -> dict:
    report = work / f"{arm}.json"
    args = ["--ruler-only", f"--ruler-model={ns.model}", "--ruler-backend=vllm", f"--ruler-tasks={ns.tasks}",
            f"--ruler-lengths={ns.lengths}", f"--ruler-samples={ns.samples}", "--ruler-no-cache", f"--ruler-dtype={ARMS[arm]}"]
    got = run_arm(arm, pytest_command(args, report), cwd=work, env={"HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"},
                  report=report, cooldown=ns.cooldown)
    dtype = ((got.report or {}).get("engine") or {}).get("dtype")
    return {"arm": arm, "dtype_option": ARMS[arm], "dtype": dtype, **got.record(scores=got.scores("{task}@{length}"))}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--tasks", default=SIX_TASKS)
    ap.add_argument("--lengths", default="1k")
    ap.add_argument("--samples", type=int, default=10)
    ap.add_argument("--arms", default="before,after,float32")
    ap.add_argument("--rounds", type=int, default=2, help="each round runs every arm; odd rounds in reverse order")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "dtype_plugin.json"))
    add_load_options(ap, cooldown=30.0)
    ns = ap.parse_args()

    host = machine()
    processor = host["processor"]
    print(f"processor: {processor['model']} ({', '.join(f for f, on in processor['flags'].items() if on)})", flush=True)
    runs = []
    arms = ns.arms.split(",")
    with tempfile.TemporaryDirectory(prefix="ruler-dtype-") as tmp:
        # the first vllm run of a GGUF model converts it into a folder once (about a minute): not an arm's cost
        warm = run_arm("warm-up", pytest_command(["--ruler-only", f"--ruler-model={ns.model}", "--ruler-backend=vllm",
                                                  "--ruler-tasks=niah_single_1", "--ruler-lengths=1k", "--ruler-samples=1",
                                                  "--ruler-no-cache"]), cwd=tmp, ok_codes=None)
        print(f"warm-up (model conversion, not timed): exit {warm.rc}", flush=True)
        for r in range(ns.rounds):
            for arm in (arms if r % 2 == 0 else arms[::-1]):
                got = dtype_arm(arm, Path(tmp), ns)
                got["round"] = r
                runs.append(got)
                print(f"round {r} {arm} (dtype {got['dtype']}): wall {got['wall_s']:.1f} s, exit {got['exit']}, "
                      f"load {got['load_before']:.2f} -> {got['load_after']:.2f}", flush=True)
    wall = {arm: statistics.median(r["wall_s"] for r in runs if r["arm"] == arm) for arm in arms}
    loads = [r["load_before"] for r in runs]
    spread = max(loads) - min(loads)
    why = load_reason(runs, tolerance=ns.load_tolerance)  # bench/harness.py's rule over every run

    def ratio(a: str, b: str) -> float | None:
        return round(wall[a] / wall[b], 3) if why is None and a in wall and b in wall else None

    summary = {"wall_s": wall, "before_over_after": ratio("before", "after"), "bfloat16_over_float32": ratio("before", "float32"),
               "ratio_withheld_because": why, "load_before_spread": round(spread, 2)}
    print(json.dumps(summary))
    result = {"schema": "pytest-ruler/bench-dtype-plugin/1", "machine": host,
              "settings": vars(ns), "arms": ARMS, "runs": runs, "summary": summary}
    Path(ns.out).write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {ns.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
