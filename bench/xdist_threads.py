"""Benchmark: ``-n 2`` against ``-n 0`` on the hf engine, the same items, on this machine.

Before issue 33 each xdist worker's transformers engine kept torch's default thread count
(every core), so ``-n 2`` on 2 cores ran two engines of 2 threads each: 551 s against 175 s
for ``-n 0`` (3 tasks × 1K/2K × 3 samples, SmolLM2 on hf). Now each worker takes its share
of the cores (``pytest_ruler.engines.gpus.worker_threads``), unless ``OMP_NUM_THREADS`` or
``MKL_NUM_THREADS`` is set: this bench unsets both, so the plugin's own choice is measured.

Two arms, each a fresh ``pytest --ruler-only --ruler-backend=hf --ruler-no-cache`` process on
the embedded model (the same tasks, lengths and samples), ``n0`` with ``-n 0`` (one process)
and ``n2`` with ``-n 2``; rounds alternate which arm goes first. Recorded per run: the wall time, the
1-minute load average before and after, the exit status and each item's score (the arms
must agree: threads change speed, not answers). Per arm: the median wall time. The ratio
n2/n0 of the medians is written as null, with the reason, when the load average before the
runs differed by more than ``--load-tolerance`` (other work on the machine, not the arms,
would then be measured). ``--cooldown`` seconds pass before each run so that the previous
run's own load decays. The processor (model name, capability flags) goes with the figures.

    python bench/xdist_threads.py [--tasks niah_single_1,niah_single_2,vt] [--lengths 1k,2k] [--samples 3] [--rounds 1] [--before]

``--before`` adds the arm as it was before issue 33 (``n2_every_core``: ``-n 2`` with the hf engine's
``threads`` option at every core of this process), run in the same process as the other two.

JSON goes to ``bench/results/xdist_threads.json`` (``--out``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

ARMS = {"n0": ["-n", "0"], "n2": ["-n", "2"]}
# before issue 33: each worker's engine took every core (torch's default), which the hf engine's own
# `threads` option reproduces; measured in the same run as the other two (--before)
BEFORE = {"n2_every_core": ["-n", "2"]}


def arm_command(arm: str, report: Path, ns: argparse.Namespace) -> list[str]:
    return [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:hypothesispytest", "--ruler-only",
            f"--ruler-model={ns.model}", "--ruler-backend=hf", f"--ruler-tasks={ns.tasks}", f"--ruler-lengths={ns.lengths}",
            f"--ruler-samples={ns.samples}", "--ruler-no-cache", f"--ruler-report={report}", *{**ARMS, **BEFORE}[arm],
            *([f"--ruler-engine-option=threads={_cpus()}"] if arm in BEFORE else [])]


def _cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def run_arm(arm: str, work: Path, ns: argparse.Namespace) -> dict:
    report = work / f"{arm}.json"
    report.unlink(missing_ok=True)
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    env.update(HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false",
               PYTHONPATH=os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p))
    time.sleep(ns.cooldown)
    before = os.getloadavg()[0]
    t = time.monotonic()
    proc = subprocess.run(arm_command(arm, report, ns), cwd=work, env=env, capture_output=True, text=True)
    wall = time.monotonic() - t
    after = os.getloadavg()[0]
    (work / f"{arm}.log").write_text(proc.stdout + proc.stderr)
    if proc.returncode > 1 or not report.is_file():  # 1: some items failed, a result
        raise SystemExit(f"arm {arm} failed (exit {proc.returncode}):\n{(proc.stdout + proc.stderr)[-4000:]}")
    items = json.loads(report.read_text())["items"]
    scores = {f"{i['task']}@{i['length']}/{i['seed']}": i["score"] for i in items}
    return {"arm": arm, "wall_s": round(wall, 2), "load_before": round(before, 2), "load_after": round(after, 2),
            "exit": proc.returncode, "items": len(items), "scores": scores}


def summarize(runs: list[dict], tolerance: float) -> dict:
    """Per-arm medians, the ratio n2/n0 (or null and why), and whether the arms' scores agree."""
    arms = {arm: [r for r in runs if r["arm"] == arm] for arm in {**ARMS, **BEFORE}}
    medians = {arm: statistics.median(r["wall_s"] for r in rs) for arm, rs in arms.items() if rs}
    loads = [r["load_before"] for r in runs]
    spread = max(loads) - min(loads) if loads else 0.0
    ratio, why = None, None
    if len(medians) < 2:
        why = "an arm has no run"
    elif spread > tolerance:
        why = (f"the load average before the runs ranged over {spread:.2f} (from {min(loads):.2f} to {max(loads):.2f}), "
               f"more than --load-tolerance={tolerance}: other work, not the arms, would be measured; rerun on a quiet machine")
    else:
        ratio = round(medians["n2"] / medians["n0"], 3)
    before = round(medians["n2_every_core"] / medians["n0"], 3) if ratio is not None and "n2_every_core" in medians else None
    same = len({json.dumps(r["scores"], sort_keys=True) for r in runs}) == 1
    return {"median_wall_s": medians, "n2_over_n0": ratio, "n2_every_core_over_n0": before, "ratio_withheld_because": why,
            "load_before_spread": round(spread, 2), "same_scores_in_every_run": same}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--tasks", default="niah_single_1,niah_single_2,vt")
    ap.add_argument("--lengths", default="1k,2k")
    ap.add_argument("--samples", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=1, help="pairs of runs; each round swaps which arm goes first")
    ap.add_argument("--cooldown", type=float, default=60.0, help="seconds to wait before each run")
    ap.add_argument("--load-tolerance", type=float, default=1.0, help="largest spread of the pre-run load averages with a ratio")
    ap.add_argument("--before", action="store_true", help="also the arm as before issue 33: -n 2, each worker on every core")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "xdist_threads.json"))
    ns = ap.parse_args()

    from pytest_ruler.engines.processor import this_processor

    processor = this_processor().summary()
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count()
    print(f"processor: {processor['model']} ({', '.join(f for f, on in processor['flags'].items() if on) or 'no listed flags'}), "
          f"{cpus} CPUs for this process", flush=True)
    runs = []
    with tempfile.TemporaryDirectory(prefix="ruler-xdist-threads-") as tmp:
        work = Path(tmp)
        for r in range(ns.rounds):
            order = ["n0", "n2"] + (["n2_every_core"] if ns.before else [])
            for arm in (order if r % 2 == 0 else order[::-1]):
                got = run_arm(arm, work, ns)
                got["round"] = r
                runs.append(got)
                print(f"round {r} {arm}: wall {got['wall_s']:.1f} s, {got['items']} items, exit {got['exit']}, "
                      f"load {got['load_before']:.2f} -> {got['load_after']:.2f}", flush=True)
    summary = summarize(runs, ns.load_tolerance)
    shown = summary["n2_over_n0"] if summary["n2_over_n0"] is not None else f"null ({summary['ratio_withheld_because']})"
    print(f"median wall: {summary['median_wall_s']}; n2/n0: {shown}; n2 every core / n0: {summary['n2_every_core_over_n0']}; "
          f"same scores in every run: {summary['same_scores_in_every_run']}")
    result = {"schema": "pytest-ruler/bench-xdist-threads/1",
              "machine": {"python": platform.python_version(), "cpus": cpus, "processor": processor},
              "settings": vars(ns), "arms": {"n0": "-n 0 (one process)", "n2": "-n 2 (each worker its share of the cores)",
                                             "n2_every_core": "-n 2, each worker on every core (before issue 33: threads=<all>)"},
              "runs": runs, "summary": summary}
    out = Path(ns.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
