"""Benchmark: the same RULER prompts through ``hf`` and ``vllm`` on this machine, one run.

Which engine should ``--ruler-backend=auto`` pick on a CPU-only machine? The
smoke preset's prompts (niah_single_1, niah_single_2, niah_multikey_2, vt, fwe
at 1K and 4K, 2 samples each; change with ``--tasks/--lengths/--samples``) are
generated once with the embedded model's tokenizer and chat template, then run
through each engine as the plugin runs them: one ``generate`` call per item
(task × length). Printed per engine: load seconds, generate seconds, prompt
tokens, **seconds per 1K prompt tokens** (generate time / prompt tokens × 1000),
the run's total (load + generate) and the RULER score per item; then the
ratios hf/vllm and how many answers are identical. JSON goes to
``bench/results/engines.json`` (``--out``).

Each engine runs in its own child process, one after the other, so neither
competes with the other for the CPU or keeps memory the other needs.

    python bench/engines.py [--engines hf,vllm] [--samples 2] [--lengths 1k,4k] [--vllm-dtype auto]

Any model the plugin takes goes in ``--model``; the second embedded model (a base
model: RULER's base prompts, as ``auto`` picks for a model without a chat template)::

    python bench/engines.py --model gemma3-270m --tasks niah_single_1,vt --lengths 4k --samples 2 \
        --out bench/results/engines_gemma3_4k.json
    python bench/engines.py --engines vllm --model gemma3-270m --tasks niah_single_1 --lengths 4k,8k,16k,32k \
        --samples 1 --out bench/results/engines_gemma3_lengths_vllm.json   # seconds per sample by length
    python bench/engines.py --engines hf --model gemma3-270m --tasks niah_single_1 --lengths 8k,16k \
        --samples 1 --out bench/results/engines_gemma3_lengths_hf.json

A base model rarely emits EOS, so every answer runs to the task's token budget
(128 for niah, 30 for vt); in the 4K run above, hf's niah and vt items (same prompt
sizes) differ by 64 s for 98 more tokens each, so prefill was most of hf's time.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SMOKE_TASKS = "niah_single_1,niah_single_2,niah_multikey_2,vt,fwe"


def run_engine(ns: argparse.Namespace) -> dict:
    """In the child: build one engine, run every item, return the measurements."""
    from pytest_ruler.tasks.chat import frame_for
    from pytest_ruler.engines import EngineConfig, GenerationRequest, load_engine
    from pytest_ruler.lengths import parse_lengths
    from pytest_ruler.results.scoring import get_metric
    from pytest_ruler.tasks import GenerationContext, generate_samples, get_task
    from pytest_ruler.tasks.tokenizer import load_tokenizer

    tok = load_tokenizer(ns.model)
    ctx = GenerationContext(tok, frame=frame_for("auto", tok))
    items = []
    for task in ns.tasks.split(","):
        for length in parse_lengths(ns.lengths):
            spec = get_task(task)
            samples = generate_samples(task, length, samples=ns.samples, seed=0, ctx=ctx)
            reqs = [GenerationRequest(s.prompt, tuple(tok.encode(s.prompt)), spec.tokens_to_generate) for s in samples]
            items.append((spec, length, samples, reqs))

    options = {"enforce_eager": True} if ns.engine == "vllm" else {}
    dtype = ns.vllm_dtype if ns.engine == "vllm" else ns.hf_dtype
    config = EngineConfig(model=ns.model, backend=ns.engine, dtype=dtype, options=options)
    t0 = time.perf_counter()
    engine = load_engine(config)
    load_s = time.perf_counter() - t0
    warm = GenerationRequest("warm-up", tuple(tok.encode("Say hello.")), 4)
    t0 = time.perf_counter()
    engine.generate([warm])  # first-call costs (kernel selection, allocations) are not per-token costs
    warm_s = time.perf_counter() - t0

    rows, total_gen, total_prompt, total_completion = [], 0.0, 0, 0
    for spec, length, samples, reqs in items:
        t0 = time.perf_counter()
        out = engine.generate(reqs)
        gen_s = time.perf_counter() - t0
        preds = [c.text for c in out]
        score = get_metric(spec.metric)(preds, [list(s.outputs) for s in samples])
        prompt = sum(r.prompt_tokens for r in reqs)
        completion = sum(c.completion_tokens for c in out)
        total_gen += gen_s
        total_prompt += prompt
        total_completion += completion
        rows.append({"task": spec.name, "length": length, "samples": len(reqs), "score": round(score, 2),
                     "generate_s": round(gen_s, 3), "prompt_tokens": prompt, "completion_tokens": completion,
                     "reported_prompt_tokens": sum(c.prompt_tokens for c in out),
                     "errors": [c.error for c in out if not c.ok], "predictions": preds})
    identity = dict(engine.identity())
    engine.close()
    return {
        "engine": ns.engine, "dtype": identity.get("dtype"), "device": identity.get("device"),
        "load_s": round(load_s, 2), "warmup_s": round(warm_s, 2), "generate_s": round(total_gen, 2),
        "prompt_tokens": total_prompt, "completion_tokens": total_completion,
        "s_per_1k_prompt_tokens": round(total_gen / total_prompt * 1000, 3),
        "total_s": round(load_s + warm_s + total_gen, 2),
        "mean_score": round(sum(r["score"] for r in rows) / len(rows), 2),
        "items": rows,
    }


def child(ns: argparse.Namespace, engine: str) -> dict:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", engine, "--model", ns.model, "--tasks", ns.tasks,
           "--lengths", ns.lengths, "--samples", str(ns.samples), "--vllm-dtype", ns.vllm_dtype, "--hf-dtype", ns.hf_dtype]
    env = dict(os.environ, HF_HUB_OFFLINE="1", VLLM_NO_USAGE_STATS="1")
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    line = next((l for l in reversed(proc.stdout.splitlines()) if l.startswith("ENGINE_JSON ")), None)
    if line is None:
        raise SystemExit(f"{engine} failed (exit {proc.returncode}):\n{proc.stderr[-4000:]}")
    result = json.loads(line[len("ENGINE_JSON "):])
    result["process_wall_s"] = round(wall, 2)
    return result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--engines", default="hf,vllm")
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--tasks", default=SMOKE_TASKS)
    ap.add_argument("--lengths", default="1k,4k")
    ap.add_argument("--samples", type=int, default=2)
    ap.add_argument("--vllm-dtype", default="auto", help="auto is bfloat16 on CPU")
    ap.add_argument("--hf-dtype", default="auto", help="auto is float32 on CPU")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "engines.json"))
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ns = ap.parse_args()
    if ns.child:
        ns.engine = ns.child
        print("ENGINE_JSON " + json.dumps(run_engine(ns)), flush=True)
        return 0

    results = {}
    for engine in ns.engines.split(","):
        r = results[engine] = child(ns, engine)
        print(f"{engine:5s} {r['device']}/{r['dtype']}: load {r['load_s']:.1f} s, generate {r['generate_s']:.1f} s for "
              f"{r['prompt_tokens']} prompt tokens = {r['s_per_1k_prompt_tokens']:.3f} s per 1K prompt tokens; "
              f"total {r['total_s']:.1f} s; mean score {r['mean_score']:.1f}", flush=True)
    report = {"schema": "pytest-ruler/bench-engines/1", "machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
              "load_avg_at_end": os.getloadavg()}, "settings": {k: v for k, v in vars(ns).items() if k not in ("child", "out")},
              "engines": results}
    if "hf" in results and "vllm" in results:
        hf, vl = results["hf"], results["vllm"]
        same = sum(a == b for x, y in zip(hf["items"], vl["items"]) for a, b in zip(x["predictions"], y["predictions"]))
        answers = sum(len(x["predictions"]) for x in hf["items"])
        report["comparison"] = {
            "hf_over_vllm_per_1k_prompt_tokens": round(hf["s_per_1k_prompt_tokens"] / vl["s_per_1k_prompt_tokens"], 2),
            "hf_over_vllm_total": round(hf["total_s"] / vl["total_s"], 2),
            "same_prompt_tokens": [x["prompt_tokens"] for x in hf["items"]] == [x["prompt_tokens"] for x in vl["items"]],
            "identical_answers": f"{same}/{answers}",
            "score_deltas": {f"{x['task']}@{x['length']}": round(y["score"] - x["score"], 2) for x, y in zip(hf["items"], vl["items"])},
        }
        c = report["comparison"]
        print(f"ratio hf/vllm: {c['hf_over_vllm_per_1k_prompt_tokens']}x per 1K prompt tokens, {c['hf_over_vllm_total']}x in total "
              f"(load included); identical answers {c['identical_answers']}; same prompt tokens: {c['same_prompt_tokens']}")
    out = Path(ns.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
