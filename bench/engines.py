"""Benchmark: the same RULER prompts through ``hf`` and ``vllm`` (both dtypes) on this machine, one run.

Which engine, and which dtype, should a CPU-only machine use? The smoke preset's
prompts (niah_single_1, niah_single_2, niah_multikey_2, vt, fwe at 1K and 4K, 2
samples each; change with ``--tasks/--lengths/--samples``) are generated once with the
embedded model's tokenizer and chat template, then run through each engine as the
plugin runs them: one ``generate`` call per item (task × length). The default engines
are ``hf`` (float32 on CPU), ``vllm:float32`` and ``vllm:bfloat16``: vLLM's CPU build
runs bfloat16 fast only where the processor computes it natively (AVX512-BF16 or AMX);
on an AVX2 processor it was 5.7x slower than float32 (issue 33). Printed per engine:
load seconds, generate seconds, prompt tokens, **seconds per 1K prompt tokens**
(generate time / prompt tokens × 1000), the run's total (load + generate) and the RULER
score per item; then the ratios (vllm bfloat16/float32, hf/vllm per dtype) and how
many answers are identical. JSON goes to ``bench/results/engines.json`` (``--out``).

Figures depend on the processor, so every engine's figures carry it: the model name,
the flags that matter (avx2, avx512f, avx512_bf16, amx_bf16, amx_tile: read from
/proc/cpuinfo by :mod:`pytest_ruler.engines.processor`) and torch's own
``torch.backends.cpu.get_cpu_capability()`` as the child that ran the engine saw it,
with the load average before and after.

Each engine runs in its own child process, one after the other, so neither
competes with the other for the CPU or keeps memory the other needs.

    python bench/engines.py [--engines hf,vllm:float32,vllm:bfloat16] [--samples 2] [--lengths 1k,4k]

An engine is ``NAME`` or ``NAME:DTYPE`` (``vllm`` alone: the vllm engine's ``auto``, which
is float32 or bfloat16 by the processor; ``hf`` alone: ``--hf-dtype``).

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
DEFAULT_ENGINES = "hf,vllm:float32,vllm:bfloat16"


def split_engine(spec: str, hf_dtype: str = "auto") -> tuple[str, str]:
    """``NAME[:DTYPE]`` -> (engine, dtype); no dtype: ``auto`` (``hf_dtype`` for hf)."""
    name, _, dtype = spec.partition(":")
    return name, dtype or (hf_dtype if name == "hf" else "auto")


def processor_record() -> dict:
    """The processor these figures come from (see the module docstring)."""
    from pytest_ruler.engines.processor import this_processor

    record = this_processor().summary()
    if "torch" in sys.modules:  # the child's engine imported it: what torch itself dispatches to
        try:
            record["torch_cpu_capability"] = sys.modules["torch"].backends.cpu.get_cpu_capability()
        except Exception as exc:  # an older torch
            record["torch_cpu_capability"] = f"unknown ({type(exc).__name__})"
    return record


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

    name, dtype = split_engine(ns.child, ns.hf_dtype)
    options = {"enforce_eager": True} if name == "vllm" else {}
    config = EngineConfig(model=ns.model, backend=name, dtype=dtype, options=options)
    load_before = os.getloadavg()
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
        "engine": name, "asked_dtype": dtype, "dtype": identity.get("dtype"), "device": identity.get("device"),
        "processor": processor_record(), "load_avg_before": load_before, "load_avg_after": os.getloadavg(),
        "load_s": round(load_s, 2), "warmup_s": round(warm_s, 2), "generate_s": round(total_gen, 2),
        "prompt_tokens": total_prompt, "completion_tokens": total_completion,
        "s_per_1k_prompt_tokens": round(total_gen / total_prompt * 1000, 3),
        "total_s": round(load_s + warm_s + total_gen, 2),
        "mean_score": round(sum(r["score"] for r in rows) / len(rows), 2),
        "items": rows,
    }


def child(ns: argparse.Namespace, spec: str) -> dict:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", spec, "--model", ns.model, "--tasks", ns.tasks,
           "--lengths", ns.lengths, "--samples", str(ns.samples), "--hf-dtype", ns.hf_dtype]
    env = dict(os.environ, HF_HUB_OFFLINE="1", VLLM_NO_USAGE_STATS="1")
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    line = next((l for l in reversed(proc.stdout.splitlines()) if l.startswith("ENGINE_JSON ")), None)
    if line is None:
        raise SystemExit(f"{spec} failed (exit {proc.returncode}):\n{proc.stderr[-4000:]}")
    result = json.loads(line[len("ENGINE_JSON "):])
    result["process_wall_s"] = round(wall, 2)
    return result


def compare(a: dict, b: dict) -> dict:
    """``a`` against ``b`` on the same prompts: time ratios a/b and the answers they share."""
    same = sum(x == y for p, q in zip(a["items"], b["items"]) for x, y in zip(p["predictions"], q["predictions"]))
    answers = sum(len(p["predictions"]) for p in a["items"])
    return {
        "per_1k_prompt_tokens": round(a["s_per_1k_prompt_tokens"] / b["s_per_1k_prompt_tokens"], 2),
        "generate": round(a["generate_s"] / b["generate_s"], 2) if b["generate_s"] else None,
        "total": round(a["total_s"] / b["total_s"], 2),
        "same_prompt_tokens": [p["prompt_tokens"] for p in a["items"]] == [q["prompt_tokens"] for q in b["items"]],
        "identical_answers": f"{same}/{answers}",
        "score_deltas": {f"{p['task']}@{p['length']}": round(q["score"] - p["score"], 2) for p, q in zip(a["items"], b["items"])},
    }


def comparisons(results: dict) -> dict:
    """vllm bfloat16 over float32 (the dtype's price on this processor), then hf over each vllm run."""
    out = {}
    by_dtype = {r["dtype"]: key for key, r in results.items() if r["engine"] == "vllm"}
    if "bfloat16" in by_dtype and "float32" in by_dtype:
        out["vllm_bfloat16_over_float32"] = compare(results[by_dtype["bfloat16"]], results[by_dtype["float32"]])
    if "hf" in results:
        for dtype, key in sorted(by_dtype.items()):
            out[f"hf_over_vllm_{dtype}"] = compare(results["hf"], results[key])
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--engines", default=DEFAULT_ENGINES, help="NAME or NAME:DTYPE, comma-separated")
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--tasks", default=SMOKE_TASKS)
    ap.add_argument("--lengths", default="1k,4k")
    ap.add_argument("--samples", type=int, default=2)
    ap.add_argument("--hf-dtype", default="auto", help="the dtype of a plain 'hf' (auto is float32 on CPU)")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "engines.json"))
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ns = ap.parse_args()
    if ns.child:
        print("ENGINE_JSON " + json.dumps(run_engine(ns)), flush=True)
        return 0

    proc = processor_record()
    flags = ", ".join(f for f, on in proc["flags"].items() if on) or "none of them"
    print(f"processor: {proc['model']} ({flags})", flush=True)
    results = {}
    for spec in ns.engines.split(","):
        r = results[spec] = child(ns, spec)
        print(f"{spec:14s} {r['device']}/{r['dtype']}: load {r['load_s']:.1f} s, generate {r['generate_s']:.1f} s for "
              f"{r['prompt_tokens']} prompt tokens = {r['s_per_1k_prompt_tokens']:.3f} s per 1K prompt tokens; "
              f"total {r['total_s']:.1f} s; mean score {r['mean_score']:.1f} (torch: "
              f"{r['processor'].get('torch_cpu_capability')}, load {r['load_avg_before'][0]:.1f}->{r['load_avg_after'][0]:.1f})",
              flush=True)
    report = {"schema": "pytest-ruler/bench-engines/2",
              "machine": {"python": platform.python_version(), "cpus": os.cpu_count(), "processor": proc,
                          "load_avg_at_end": os.getloadavg()},
              "settings": {k: v for k, v in vars(ns).items() if k not in ("child", "out")},
              "engines": results, "comparison": comparisons(results)}
    for name, c in report["comparison"].items():
        print(f"{name}: {c['per_1k_prompt_tokens']}x per 1K prompt tokens, {c['total']}x in total (load included); "
              f"identical answers {c['identical_answers']}; same prompt tokens: {c['same_prompt_tokens']}")
    out = Path(ns.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
