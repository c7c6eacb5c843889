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
runs differed by more than ``--load-tolerance`` or a run started with it above the core count
(other work on the machine, not the arms, would then be measured: ``bench/harness.py``'s rule). ``--cooldown`` seconds pass before each run so that the previous
run's own load decays. The processor (model name, capability flags) goes with the figures.

    python bench/xdist_threads.py [--tasks niah_single_1,niah_single_2,vt] [--lengths 1k,2k] [--samples 3] [--rounds 1] [--before]

``--before`` adds the arm as it was before issue 33 (``n2_every_core``: ``-n 2`` with the hf engine's
``threads`` option at every core of this process), run in the same process as the other two.

JSON goes to ``bench/results/xdist_threads.json`` (``--out``).
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
from bench.harness import add_load_options, cpus, machine, pytest_command, ratio, run_arm  # noqa: E402

ARMS = {"n0": ["-n", "0"], "n2": ["-n", "2"]}
# before issue 33: each worker's engine took every core (torch's default), which the hf engine's own
# `threads` option reproduces; measured in the same run as the other two (--before)
BEFORE = {"n2_every_core": ["-n", "2"]}
# before the cores followed the work (engines/core_share.py): each worker kept its fixed share to the
# end; a user-set `threads` turns the sharing off, so threads=<cpus // 2> reproduces it (--fixed-share)
FIXED = {"n2_fixed_share": ["-n", "2"]}


def arm_command(arm: str, report: Path, ns: argparse.Namespace) -> list[str]:
    args = ["--ruler-only", f"--ruler-model={ns.model}", "--ruler-backend=hf", f"--ruler-tasks={ns.tasks}",
            f"--ruler-lengths={ns.lengths}", f"--ruler-samples={ns.samples}", "--ruler-no-cache"]
    threads = cpus() if arm in BEFORE else max(1, cpus() // 2) if arm in FIXED else None
    return pytest_command([*args, *{**ARMS, **BEFORE, **FIXED}[arm], *([f"--ruler-engine-option=threads={threads}"] if threads else [])],
                          report)


def xdist_arm(arm: str, work: Path, ns: argparse.Namespace) -> dict:
    report = work / f"{arm}.json"
    got = run_arm(arm, arm_command(arm, report, ns), cwd=work, env={"HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"},
                  unset=("OMP_NUM_THREADS", "MKL_NUM_THREADS"), report=report, cooldown=ns.cooldown)
    return got.record(items=len(got.items), scores=got.scores())


def summarize(runs: list[dict], tolerance: float, cores: int | None = None) -> dict:
    """Per-arm medians, the ratio n2/n0 (or null and why: bench/harness.py's load rule over every run),
    and whether the arms' scores agree."""
    arms = {arm: [r for r in runs if r["arm"] == arm] for arm in {**ARMS, **BEFORE, **FIXED}}
    medians = {arm: statistics.median(r["wall_s"] for r in rs) for arm, rs in arms.items() if rs}
    loads = [r["load_before"] for r in runs]
    spread = max(loads) - min(loads) if loads else 0.0
    main_ratio, before, fixed, why = None, None, None, None
    if "n2" not in medians or "n0" not in medians:
        why = "an arm has no run"
    else:
        got = ratio(medians["n2"], medians["n0"], runs, cores=cores, tolerance=tolerance)
        main_ratio, why = got.value, got.reason
        if "n2_every_core" in medians:
            before = ratio(medians["n2_every_core"], medians["n0"], runs, cores=cores, tolerance=tolerance).value
        if "n2_fixed_share" in medians:
            fixed = ratio(medians["n2_fixed_share"], medians["n0"], runs, cores=cores, tolerance=tolerance).value
    same = len({json.dumps(r["scores"], sort_keys=True) for r in runs}) == 1
    return {"median_wall_s": medians, "n2_over_n0": main_ratio, "n2_every_core_over_n0": before, "n2_fixed_share_over_n0": fixed,
            "ratio_withheld_because": why,
            "load_before_spread": round(spread, 2), "same_scores_in_every_run": same}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--tasks", default="niah_single_1,niah_single_2,vt")
    ap.add_argument("--lengths", default="1k,2k")
    ap.add_argument("--samples", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=1, help="pairs of runs; each round swaps which arm goes first")
    ap.add_argument("--before", action="store_true", help="also the arm as before issue 33: -n 2, each worker on every core")
    ap.add_argument("--fixed-share", action="store_true",
                    help="also -n 2 with each worker's share fixed to the end (before the cores followed the work)")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "xdist_threads.json"))
    add_load_options(ap, cooldown=60.0)
    ns = ap.parse_args()

    host = machine()
    processor = host["processor"]
    print(f"processor: {processor['model']} ({', '.join(f for f, on in processor['flags'].items() if on) or 'no listed flags'}), "
          f"{host['cpus']} CPUs for this process", flush=True)
    runs = []
    with tempfile.TemporaryDirectory(prefix="ruler-xdist-threads-") as tmp:
        work = Path(tmp)
        for r in range(ns.rounds):
            order = ["n0", "n2"] + (["n2_fixed_share"] if ns.fixed_share else []) + (["n2_every_core"] if ns.before else [])
            for arm in (order if r % 2 == 0 else order[::-1]):
                got = xdist_arm(arm, work, ns)
                got["round"] = r
                runs.append(got)
                print(f"round {r} {arm}: wall {got['wall_s']:.1f} s, {got['items']} items, exit {got['exit']}, "
                      f"load {got['load_before']:.2f} -> {got['load_after']:.2f}", flush=True)
    summary = summarize(runs, ns.load_tolerance)
    shown = summary["n2_over_n0"] if summary["n2_over_n0"] is not None else f"null ({summary['ratio_withheld_because']})"
    print(f"median wall: {summary['median_wall_s']}; n2/n0: {shown}; n2 every core / n0: {summary['n2_every_core_over_n0']}; "
          f"n2 fixed share / n0: {summary['n2_fixed_share_over_n0']}; "
          f"same scores in every run: {summary['same_scores_in_every_run']}")
    result = {"schema": "pytest-ruler/bench-xdist-threads/1",
              "machine": host,
              "settings": vars(ns), "arms": {"n0": "-n 0 (one process)", "n2": "-n 2 (each worker its share of the cores, and its finished peers' cores)",
                                             "n2_fixed_share": "-n 2, each worker its fixed share to the end (threads=<cpus // 2>)",
                                             "n2_every_core": "-n 2, each worker on every core (before issue 33: threads=<all>)"},
              "runs": runs, "summary": summary}
    out = Path(ns.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
