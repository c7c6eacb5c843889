"""Benchmark: the engine's queue across items (issue 22) against one engine call per item.

A fake engine (the scripted test engine, not a model) with an artificial cost shaped like a
batching server's: each call costs ``--call-latency`` seconds, plus ``--step`` seconds per
``--slots`` prompts it holds (prompts decode side by side, ``slots`` at a time). The same
plugin command, in fresh processes without the prediction cache, alternating between
``--ruler-batch-items=1`` (one item per call: the old default) and the new default;
best wall time of each, whole run (start-up included: the same in both). Both runs must
give the same predictions, and with ``--ruler-sequential`` the same verdicts.

    python bench/engine_queue.py [--samples 10] [--call-latency 0.5] [--step 0.05] [--slots 32] [--repeats 2]

Writes bench/results/engine_queue.json; ``ratio`` is the new default's wall time over the baseline's,
null with ``ratio_withheld_because`` naming the loads when the machine's load can explain it
(``bench/harness.py``; ``--cooldown``, ``--load-tolerance``).
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

CONFTEST = """
import math, os, time
from pytest_ruler.engines.scripted import ScriptedEngine

class FakeLatencyEngine(ScriptedEngine):
    '''The scripted test engine with a batching server's cost: a fixed cost per call and one
    decode step per SLOTS prompts.'''
    name = "fake_latency"
    def generate(self, requests, on_result=None):
        n = len(requests)
        time.sleep(float(os.environ["FAKE_CALL_LATENCY"]) + float(os.environ["FAKE_STEP"]) * math.ceil(n / int(os.environ["FAKE_SLOTS"])))
        with open("calls.txt", "a") as f:
            f.write(f"{n}\\n")
        return super().generate(requests, on_result)

def pytest_ruler_register(registry):
    registry.engine("fake_latency", FakeLatencyEngine)
"""


def run(name: str, args: list[str], cwd: Path, env: dict, cooldown: float) -> tuple[Arm, list[int]]:
    calls = cwd / "calls.txt"
    calls.unlink(missing_ok=True)
    arm = run_arm(name, pytest_command(args, "r.json"), cwd=cwd, env=env, report="r.json", cooldown=cooldown)
    return arm, [int(n) for n in calls.read_text().split()]


def key(report: dict, *fields: str) -> list:
    return sorted(tuple(json.dumps(i[f], sort_keys=True) for f in ("task", "length", "seed", *fields)) for i in report["items"])


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tasks", default="niah_single_1,niah_single_2,niah_multikey_1,niah_multikey_2,niah_multivalue,vt,cwe,fwe")
    ap.add_argument("--lengths", default="1k,2k")
    ap.add_argument("--samples", type=int, default=10)
    ap.add_argument("--call-latency", type=float, default=0.5)
    ap.add_argument("--step", type=float, default=0.05)
    ap.add_argument("--slots", type=int, default=32)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "engine_queue.json"))
    add_load_options(ap)
    ns = ap.parse_args()
    env = {"FAKE_CALL_LATENCY": str(ns.call_latency), "FAKE_STEP": str(ns.step), "FAKE_SLOTS": str(ns.slots)}
    base = ["--ruler-model=smollm2-135m", "--ruler-backend=fake_latency", f"--ruler-tasks={ns.tasks}", f"--ruler-lengths={ns.lengths}",
            f"--ruler-samples={ns.samples}", "--ruler-no-cache", "--ruler-only"]
    settings = {"one_item_per_call": ["--ruler-batch-items=1"], "default": []}
    out: dict = {"engine": "fake_latency (the scripted test engine with an artificial cost, not a model)",
                 "cost": {"call_latency_s": ns.call_latency, "step_s": ns.step, "slots": ns.slots},
                 "tasks": ns.tasks, "lengths": ns.lengths, "samples_per_item": ns.samples}
    with tempfile.TemporaryDirectory() as tmp:
        cwd = Path(tmp)
        (cwd / "conftest.py").write_text(CONFTEST)
        for mode, extra in (("full", []), ("sequential", ["--ruler-sequential"])):
            best = {name: float("inf") for name in settings}
            seen: dict = {}
            runs: list[Arm] = []
            for _ in range(ns.repeats):
                for name, flags in settings.items():
                    arm, calls = run(name, [*base, *extra, *flags], cwd, env, ns.cooldown)
                    runs.append(arm)
                    best[name] = min(best[name], arm.wall_s)
                    seen[name] = (arm.report, calls)
            (one, one_calls), (new, new_calls) = seen["one_item_per_call"], seen["default"]
            got = ratio(best["default"], best["one_item_per_call"], runs, tolerance=ns.load_tolerance)
            out[mode] = {
                "items": len(new["items"]),
                "wall_s_one_item_per_call": round(best["one_item_per_call"], 2), "wall_s_default": round(best["default"], 2),
                "ratio": got.value, "ratio_withheld_because": got.reason, "runs": [arm.record() for arm in runs],
                "engine_calls_one_item_per_call": len(one_calls), "engine_calls_default": len(new_calls),
                "prompts_one_item_per_call": sum(one_calls), "prompts_default": sum(new_calls),
                "same_predictions": key(one, "predictions") == key(new, "predictions"),
                "same_verdicts": key(one, "passed", "samples", "stopped") == key(new, "passed", "samples", "stopped"),
            }
    out["machine"] = machine()
    out["note"] = "wall time of the whole pytest process, best of the repeats, runs alternating; ratio = default / one item per call"
    print(json.dumps(out, indent=1))
    Path(ns.out).parent.mkdir(parents=True, exist_ok=True)
    Path(ns.out).write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
