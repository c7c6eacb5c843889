"""Benchmark: shards 1/2 and 2/2 of a real-model run, merged, against the unsharded run.

Three fresh ``pytest --ruler-only`` processes on the embedded model (SmolLM2-135M, the
transformers engine on CPU), same tasks, lengths, samples and settings, no prediction cache
(each generates every answer it reports):

- ``whole`` (the baseline): the unsharded run;
- ``shard1``, ``shard2``: ``--ruler-shard=1/2`` and ``--ruler-shard=2/2``, one after the other
  (one machine here; on two machines they run at once).

Then ``pytest-ruler merge`` of the two shard reports, and ``pytest-ruler gate`` on the merged
and on the whole report. Reported: whether the merged report equals the unsharded one (the
same item set; per item the same predictions, per-sample scores and score; the same summary,
Table 3 and effective lengths; the same gate line), the item split, each arm's wall time, and
two ratios against the whole run: the shards' sum (measured: the cost of two processes on one
machine) and the slower shard (computed: the wall time two machines would take, start-up
included). The 1-minute load average at each arm's start and end is recorded, and both ratios
are written as null, with ``ratio_withheld_because`` naming the loads, when the machine's load
can explain them (``bench/harness.py``'s rule: an arm started above the core count, or the arms'
start loads differ by more than ``--load-tolerance``); on a shared machine the wall times then say
nothing about speed-up. ``--ruler-batch-size=1``: each prompt is generated alone, so an answer does not
depend on which other prompts shared its batch (padding in a CPU batch can change a greedy
answer; a shard's batches hold other prompts than the whole run's).

    python bench/shards.py [--tasks niah_single_1,niah_multikey_1] [--lengths 512,1024] [--samples 3]
                           [--cooldown 0] [--load-tolerance 1.0] [--out bench/results/shards.json]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from bench.harness import add_load_options, machine, pytest_command, ratio, run_arm  # noqa: E402


def pytest_arm(name: str, work: Path, ns, *extra: str) -> dict:
    report = work / f"{name}.json"
    args = ["--ruler-only", "--ruler-model=smollm2-135m", "--ruler-backend=hf", f"--ruler-tasks={ns.tasks}",
            f"--ruler-lengths={ns.lengths}", f"--ruler-samples={ns.samples}", "--ruler-no-cache", "--ruler-batch-size=1", *extra]
    arm = run_arm(name, pytest_command(args, report), cwd=work, env={"HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"},
                  report=report, cooldown=ns.cooldown)
    return {"wall_s": round(arm.wall_s, 1), "rc": arm.rc, "report": arm.report, "arm": arm,
            "load_1min": [round(arm.load_before, 1), round(arm.load_after, 1)]}


def cli(work: Path, *args: str) -> tuple[int, str]:
    proc = subprocess.run([sys.executable, "-m", "pytest_ruler.cli", *args], cwd=work, capture_output=True, text=True)
    return proc.returncode, (proc.stdout + proc.stderr).strip()


def item_view(item: dict) -> dict:
    """An item as compared: every field but the wall time."""
    return {k: v for k, v in item.items() if k != "seconds"}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tasks", default="niah_single_1,niah_multikey_1")
    ap.add_argument("--lengths", default="512,1024")
    ap.add_argument("--samples", type=int, default=3)
    ap.add_argument("--required", default="512", help="the gate asked of both reports")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "shards.json"))
    add_load_options(ap)
    ns = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="ruler-shards-"))
    arms = {"whole": pytest_arm("whole", work, ns)}
    for k in (1, 2):
        arms[f"shard{k}"] = pytest_arm(f"shard{k}", work, ns, f"--ruler-shard={k}/2")
    rc, merge_out = cli(work, "merge", "shard1.json", "shard2.json", "--out", "merged.json")
    if rc:
        raise SystemExit(f"merge failed: {merge_out}")
    merged = json.loads((work / "merged.json").read_text())
    whole = arms["whole"]["report"]
    gates = {name: cli(work, "gate", f"{name}.json", f"--require-effective-length={ns.required}")
             for name in ("whole", "merged", "shard1")}
    by_cell = lambda data: {(i["mode"], i["task"], i["length"], i["seed"]): i for i in data["items"]}
    a, b = by_cell(whole), by_cell(merged)
    differ = sorted(f"{c[1]}@{c[2]}" for c in set(a) & set(b) if item_view(a[c]) != item_view(b[c]))
    split = {name: sorted(f"{i['task']}@{i['length']}" for i in arms[name]["report"]["items"]) for name in ("shard1", "shard2")}
    walls = {name: arm["wall_s"] for name, arm in arms.items()}
    runs = [arm["arm"] for arm in arms.values()]  # both ratios compare the same three runs
    summed = ratio(walls["shard1"] + walls["shard2"], walls["whole"], runs, tolerance=ns.load_tolerance, digits=2)
    slower = ratio(max(walls["shard1"], walls["shard2"]), walls["whole"], runs, tolerance=ns.load_tolerance, digits=2)
    result = {
        "bench": "shards", "model": "smollm2-135m", "backend": "hf (CPU)", "tasks": ns.tasks.split(","), "lengths": ns.lengths,
        "samples": ns.samples, "items": len(whole["items"]), "split": split,
        "equal": {
            "item_set": set(a) == set(b),
            "items_differing": differ,
            "predictions": all(a[c]["predictions"] == b[c]["predictions"] for c in set(a) & set(b)),
            "sample_scores": all(a[c]["sample_scores"] == b[c]["sample_scores"] for c in set(a) & set(b)),
            "summary": whole["summary"] == merged["summary"],
            "effective_length": merged["summary"]["native"]["effective_length"] == whole["summary"]["native"]["effective_length"],
            "gate_line": gates["whole"][1] == gates["merged"][1],
        },
        "effective_length": whole["summary"]["native"]["effective_length"],
        "gate": {name: {"exit": code, "line": text} for name, (code, text) in gates.items()},
        "merge": merge_out,
        "wall_s": walls,
        "load_1min_at_start_and_end": {name: arm["load_1min"] for name, arm in arms.items()},
        "ratio_shards_sum_vs_whole": summed.value,
        "ratio_slower_shard_vs_whole_computed": slower.value,
        "ratio_withheld_because": summed.reason,
        "machine": machine(),
        "note": "shards ran one after the other on one machine; the slower-shard ratio is computed, not measured on two machines",
        "work_dir": str(work),
    }
    Path(ns.out).parent.mkdir(parents=True, exist_ok=True)
    Path(ns.out).write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({k: result[k] for k in ("items", "split", "equal", "gate", "wall_s", "load_1min_at_start_and_end",
                                             "ratio_shards_sum_vs_whole",
                                             "ratio_slower_shard_vs_whole_computed", "ratio_withheld_because")}, indent=2))
    return 0 if all(v if isinstance(v, bool) else not v for v in result["equal"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
