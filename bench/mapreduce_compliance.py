"""Benchmark: does a model write the structured information protocol? Compliance per map layout.

    python bench/mapreduce_compliance.py --model gemma3-270m [--backend hf] [--layouts all]
        [--chunks 20] [--chunk 2k] [--length 4k] [--out bench/results/mapreduce_compliance.json]

For each map prompt layout (``MAP_LAYOUTS``; ``--layouts all`` or a comma list), the same
``--chunks`` map calls, one per chunk: samples of niah_single_1 and niah_multikey_1 (seed 0,
alternating) at ``--length``, chunked at ``--chunk`` tokens; from each sample the chunk that
holds the needle and the first chunk that does not. Per layout: records with all four fields
and with a readable confidence (counted as the pipeline counts them, ``Outcome.tally``, with
95 % Clopper-Pearson intervals), parse failures, needle chunks whose checked answer (the
default literal filter) holds the needle value, other chunks answered NO INFORMATION after the
filter, how often the model's own Answer was a value of the prompts' example record (copied;
the filter drops it), and the engine seconds. The needle is located with the sample's answers, which only
this measurement reads (the pipeline never does). Every output is kept.

The result merges into ``--out`` under ``runs[model][layout]``, so each model × layout can be
run alone (minutes each; real models one at a time, under ``flock /work/notes/model.lock``).
Each run records its command, the processor (``bench.harness.machine``), the 1-minute load
before and after, the prompt frame (base: no chat template; else the chat template's) and wall
seconds. Timings under load are not results; the counts are.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.harness import machine  # noqa: E402
from pytest_ruler.lengths import parse_length  # noqa: E402
from pytest_ruler.mapreduce import MapReduceConfig, MapReducer, document_for, parse_record  # noqa: E402
from pytest_ruler.mapreduce.pipeline import MAP_LAYOUTS, RECORD_PREFIX, Outcome  # noqa: E402
from pytest_ruler.results.stats import clopper_pearson  # noqa: E402
from pytest_ruler.run.session import RulerSession  # noqa: E402
from pytest_ruler.run_config import RulerConfig  # noqa: E402
from pytest_ruler.tasks import generate_samples, get_family, get_task  # noqa: E402

TASKS = ("niah_single_1", "niah_multikey_1")
DEFAULT_OUT = ROOT / "bench" / "results" / "mapreduce_compliance.json"


def picked_chunks(session: RulerSession, mr: MapReduceConfig, length: int, count: int) -> list[tuple]:
    """(task, sample index, chunk index, needle?, doc, chunk, request) for ``count`` map calls."""
    per_task = (count + 3) // 4  # two chunks a sample, two tasks
    samples = {t: generate_samples(get_task(t), length, samples=per_task, seed=0, ctx=session.generation_context) for t in TASKS}
    reducer = MapReducer(session.complete, session.tokenizer, session.frame, mr, session.mapreduce_window(mr))
    out: list[tuple] = []
    for i in range(per_task):
        for task in TASKS:
            spec, sample = get_task(task), samples[task][i]
            doc = document_for(sample, spec, get_family(spec.family))
            chunks, requests = reducer.chunks(doc)
            gold = sample.outputs[0]  # measurement only: where the needle is
            needle = [j for j, c in enumerate(chunks) if gold in c.text][:1]
            other = [j for j in range(len(chunks)) if gold not in chunks[j].text][:1]
            for j in needle + other:
                out.append((task, sample.index, j, j in needle, gold, doc, chunks[j], requests[j]))
    return out[:count]


def measure(session: RulerSession, layout: str, ns: argparse.Namespace) -> dict:
    mr = MapReduceConfig(chunk_tokens=parse_length(ns.chunk, "--chunk"), layout=layout)
    picked = picked_chunks(session, mr, parse_length(ns.length, "--length"), ns.chunks)
    load_before = os.getloadavg()[0]
    started = time.perf_counter()
    done, _ = session.complete([p[-1] for p in picked], f"compliance {layout}")
    wall = time.perf_counter() - started
    outcome = Outcome(prediction="", calls=[], chunks=len(picked))
    t = {"needle_chunks": 0, "needle_found": 0, "other_chunks": 0, "other_no_information": 0, "engine_seconds": 0.0}
    outputs = []
    for (task, index, j, is_needle, gold, doc, chunk, req), c in zip(picked, done):
        r = parse_record(c.text, prefix=RECORD_PREFIX) if c.ok else parse_record("", prefix=RECORD_PREFIX)
        outcome.tally("map", r)
        checked = doc.strategy.check(r, chunk.text, doc.hints, True)
        t["engine_seconds"] += c.seconds
        if is_needle:
            t["needle_chunks"] += 1
            t["needle_found"] += gold in checked.answer
        else:
            t["other_chunks"] += 1
            t["other_no_information"] += checked.no_information
        outputs.append({"task": task, "sample": index, "part": j + 1, "needle": is_needle, "prompt_tokens": req.prompt_tokens,
                        "finish_reason": c.finish_reason, "problems": list(r.problems), "confidence": r.confidence,
                        "checked_answer": checked.answer, "output": c.text if c.ok else f"<{c.finish_reason}: {c.error}>"})
    comp = outcome.compliance["map"]
    n = comp["records"]
    shares = {k: {"share": round(comp[k] / n, 3) if n else None, "ci95": [round(x, 3) for x in clopper_pearson(comp[k], n)] if n else None}
              for k in ("four_fields", "confidence")}
    return {
        "layout": layout, "chunk_tokens": mr.chunk_tokens, "length": parse_length(ns.length, "--length"), "tasks": list(TASKS),
        **comp, "shares": shares, **{k: round(v, 1) if isinstance(v, float) else v for k, v in t.items()},
        "wall_s": round(wall, 1), "load_before": round(load_before, 2), "load_after": round(os.getloadavg()[0], 2),
        "outputs": outputs,
    }


def example_copies(run: dict) -> dict:
    """How often the model's own Answer (before the literal filter) is a value of the prompts' example
    records (``_EXAMPLE_VALUES``: fixed, never in a sample), on needle chunks and on the others:
    the filter drops such a value (it is not in the chunk), so the record then reads NO INFORMATION."""
    from pytest_ruler.mapreduce.strategies import _EXAMPLE_VALUES

    fixed = {v for pair in _EXAMPLE_VALUES.values() for v in pair}
    counts = {"needle": 0, "other": 0}
    for o in run.get("outputs", []):
        answer = parse_record(o["output"], prefix=RECORD_PREFIX).answer
        counts["needle" if o["needle"] else "other"] += any(v in answer for v in fixed)
    return counts


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--backend", default="hf")
    ap.add_argument("--layouts", default="all", help="'all' or a comma list of MAP_LAYOUTS")
    ap.add_argument("--chunks", type=int, default=20, help="map calls per layout")
    ap.add_argument("--chunk", default="2k", help="document tokens per chunk")
    ap.add_argument("--length", default="4k", help="sample length (two chunks a sample at 2k)")
    ap.add_argument("--out", default=str(DEFAULT_OUT))
    ns = ap.parse_args()
    layouts = list(MAP_LAYOUTS) if ns.layouts == "all" else [x.strip() for x in ns.layouts.split(",") if x.strip()]
    for layout in layouts:
        MapReduceConfig(layout=layout).validate()
    session = RulerSession(RulerConfig(model=ns.model, backend=ns.backend, samples=1, no_cache=True), cache_dir=None)
    started = time.perf_counter()
    session.engine  # loaded once, outside the timings
    load_s = time.perf_counter() - started
    out_path = Path(ns.out)
    data = json.loads(out_path.read_text()) if out_path.exists() else {}
    data.setdefault("description", __doc__.split("\n\n")[0] + " See bench/mapreduce_compliance.py.")
    runs = data.setdefault("runs", {}).setdefault(ns.model, {})
    for layout in layouts:
        r = measure(session, layout, ns)
        r.update(command="python " + " ".join(shlex.quote(a) for a in sys.argv), model=ns.model, backend=ns.backend,
                 frame=session.frame.name, engine_load_s=round(load_s, 1), machine=machine(),
                 measured_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
        runs[layout] = r
        for model_runs in data["runs"].values():  # derived from the stored outputs, for every run in the file
            for run in model_runs.values():
                run["answer_is_an_example_value"] = example_copies(run)
        print(ns.model, layout, {k: r[k] for k in ("records", "four_fields", "confidence", "parse_failures", "needle_found",
                                                   "needle_chunks", "other_no_information", "other_chunks", "wall_s", "load_before")}, flush=True)
        out_path.parent.mkdir(parents=True, exist_ok=True)
        out_path.write_text(json.dumps(data, indent=1) + "\n")  # after each layout: a stopped run keeps what it measured
    session.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
