"""Benchmark: LLM×MapReduce against native inference at a length where both can pass.

One process, one engine, the same samples, no cache: the native item and its
map-reduce twin alternate ``--repeats`` times; the best wall time of each is
kept. Reported: wall seconds, engine calls, prompt and generated tokens, the
scores, and the ratio map-reduce / native (the baseline, run in the same process).

    python bench/mapreduce.py [--model smollm2-135m] [--task niah_single_1] [--length 8k]
                              [--samples 3] [--chunk 2k] [--repeats 1] [--no-verify]
    python bench/mapreduce.py --layouts [--length 16k]     # map prompt layouts, see below

The grounding mode (what code did to the model's records) is recorded in the result.

``--layouts`` measures how often the model writes the structured protocol under each
map prompt layout (``MAP_LAYOUTS``): for sample 0 of niah_single_1 and niah_multikey_1,
the chunk that holds the needle and the first and last other chunks, one map call each
per layout; per layout: records with all four fields, with a confidence, parse failures,
needle chunks whose checked answer holds the needle value, other chunks answered NO
INFORMATION. The needle is located with the sample's answers, which only this
measurement reads (the pipeline never does). Written to bench/results/mapreduce_layouts.json.

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

from pytest_ruler.run_config import RulerConfig  # noqa: E402
from pytest_ruler.lengths import parse_length  # noqa: E402
from pytest_ruler.mapreduce import MapReduceConfig, grounding_label, grounding_mode  # noqa: E402
from pytest_ruler.run.session import RulerSession  # noqa: E402


def layouts(ns: argparse.Namespace) -> int:
    from pytest_ruler.mapreduce import MapReducer, document_for
    from pytest_ruler.mapreduce.pipeline import MAP_LAYOUTS, RECORD_PREFIX
    from pytest_ruler.mapreduce.protocol import parse_record
    from pytest_ruler.tasks import generate_samples, get_family, get_task

    length = parse_length(ns.length, "--length")
    config = RulerConfig(model=ns.model, backend=ns.backend, samples=1, no_cache=True)
    session = RulerSession(config, cache_dir=None)
    session.engine
    out: dict = {"model": ns.model, "backend": ns.backend, "length": length, "chunk_tokens": parse_length(ns.chunk, "--chunk"), "layouts": {}}
    for layout in MAP_LAYOUTS:
        mr = MapReduceConfig(chunk_tokens=out["chunk_tokens"], layout=layout)
        tally = {"calls": 0, "four_fields": 0, "confidence": 0, "parse_failures": 0, "needle_chunks": 0, "needle_found": 0,
                 "other_chunks": 0, "other_no_information": 0, "seconds": 0.0, "outputs": []}
        for task in ("niah_single_1", "niah_multikey_1"):
            spec = get_task(task)
            [sample] = generate_samples(spec, length, samples=1, seed=0, ctx=session.generation_context)
            doc = document_for(sample, spec, get_family(spec.family))
            reducer = MapReducer(session.complete, session.tokenizer, session.frame, mr, session.mapreduce_window(mr))
            chunks, requests = reducer.chunks(doc)
            gold = sample.outputs[0]  # measurement only
            needle = [i for i, c in enumerate(chunks) if gold in c.text]
            others = [i for i in range(len(chunks)) if i not in needle]
            picked = needle[:1] + ([others[0], others[-1]] if len(others) > 1 else others)
            done, _ = session.complete([requests[i] for i in picked], f"layout {layout} {task}")
            for i, c in zip(picked, done):
                r = parse_record(c.text, prefix=RECORD_PREFIX)
                checked = doc.strategy.check(r, chunks[i].text, doc.hints, True)
                tally["calls"] += 1
                tally["four_fields"] += not any(p.startswith("missing") or p == "no fields" for p in r.problems)
                tally["confidence"] += r.confidence is not None
                tally["parse_failures"] += {"missing Rationale", "missing Answer", "missing Confidence Score"} <= set(r.problems) or "no fields" in r.problems
                tally["seconds"] += c.seconds
                if i in needle:
                    tally["needle_chunks"] += 1
                    tally["needle_found"] += gold in checked.answer
                else:
                    tally["other_chunks"] += 1
                    tally["other_no_information"] += checked.no_information
                tally["outputs"].append({"task": task, "part": i + 1, "needle": i in needle, "output": c.text})
        tally["seconds"] = round(tally["seconds"], 1)
        out["layouts"][layout] = tally
        print(layout, {k: v for k, v in tally.items() if k != "outputs"}, flush=True)
    session.close()
    path = Path(ns.out if ns.out != DEFAULT_OUT else str(ROOT / "bench" / "results" / "mapreduce_layouts.json"))
    path.write_text(json.dumps(out, indent=1) + "\n")
    return 0


DEFAULT_OUT = str(ROOT / "bench" / "results" / "mapreduce.json")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--backend", default="hf")
    ap.add_argument("--task", default="niah_single_1")
    ap.add_argument("--length", default="8k")
    ap.add_argument("--samples", type=int, default=3)
    ap.add_argument("--chunk", default="2k")
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--out", default=DEFAULT_OUT)
    ap.add_argument("--no-verify", action="store_true", help="grounding none: keep every claim as the model wrote it")
    ap.add_argument("--layout", default=None, help="map prompt layout (default: MapReduceConfig's)")
    ap.add_argument("--layouts", action="store_true", help="measure protocol compliance per map prompt layout instead")
    ns = ap.parse_args()
    if ns.layouts:
        return layouts(ns)
    length = parse_length(ns.length, "--length")
    mr = MapReduceConfig(chunk_tokens=parse_length(ns.chunk, "--chunk"), verify=not ns.no_verify)
    if ns.layout:
        mr = MapReduceConfig(chunk_tokens=mr.chunk_tokens, verify=mr.verify, layout=ns.layout)
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
                    best[mode]["compliance"] = r.mapreduce.get("compliance")
    session.close()
    out = {
        "model": ns.model,
        "backend": ns.backend,
        "task": ns.task,
        "length": length,
        "samples": ns.samples,
        "chunk_tokens": mr.chunk_tokens,
        "grounding": grounding_mode(mr.verify),
        "grounding_label": grounding_label({"grounding": grounding_mode(mr.verify)}),
        "layout": mr.layout,
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
