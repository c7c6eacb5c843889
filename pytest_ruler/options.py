"""RulerConfig: the run's settings, from command-line options and ini keys, validated once.

Every option ``--ruler-<name>`` is also an ini key ``ruler_<name>`` (the option
wins). ``add_options(parser)`` declares both; ``build_config(pytest_config)``
turns them into a frozen :class:`RulerConfig` or raises one
:class:`~pytest_ruler.errors.RulerUsageError` naming the option, the value and
the fix — before any model loads.

Public names: ``OPTIONS``, ``RulerConfig``, ``add_options``, ``build_config``,
``is_active``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from .errors import RulerUsageError
from .lengths import parse_length, parse_lengths

__all__ = ["OPTIONS", "PRESETS", "RulerConfig", "add_options", "build_config", "is_active"]


@dataclass(frozen=True)
class Option:
    name: str  # without the --ruler- prefix
    help: str
    default: Any = None
    flag: bool = False
    metavar: str | None = None


OPTIONS: tuple[Option, ...] = (
    Option("model", "model to test: HF id, local folder, .gguf file or alias (smollm2-135m); activates the suite", metavar="NAME"),
    Option("backend", "engine: auto (vllm with a GPU, else hf), hf, vllm, openai, or a registered name", "auto"),
    Option("base-url", "OpenAI-compatible server URL, e.g. http://127.0.0.1:8000/v1 (API key from env RULER_API_KEY)", metavar="URL"),
    Option("tokenizer", "tokenizer for the length budget (default: the model's own)", metavar="NAME"),
    Option("tasks", "RULER task names, globs (niah_*) or all, comma-separated (default: the preset's)", metavar="LIST"),
    Option("lengths", "target lengths in tokens, e.g. 4k,8k,16384 (k = 1024; default: the preset's)", metavar="LIST"),
    Option("samples", "samples per item (default: the preset's)", metavar="N"),
    Option("seeds", "seeds: a count N (0..N-1) or a comma list", "1", metavar="N|LIST"),
    Option("depths", "sweep needle depths over each item's samples (niah, vt, qa): fractions like 0,0.25,0.5,0.75,1", metavar="LIST"),
    Option("preset", "bundle of tasks/lengths/samples: smoke (CPU minutes), ci (default), paper (13 tasks, 4K-128K, 500 samples)", "ci", metavar="smoke|ci|paper"),
    Option("threshold", "pass mark (0-100) for items and effective length", "85.6", metavar="SCORE"),
    Option("require-effective-length", "release gate: fail the run if the effective length is below LEN", metavar="LEN"),
    Option("baseline", "earlier JSON report: fail on a statistically significant drop", metavar="PATH"),
    Option("baseline-alpha", "significance level of the baseline comparison", "0.05", metavar="ALPHA"),
    Option("baseline-test", "baseline test: two-proportion-z or fisher (one-sided, Holm-corrected)", "two-proportion-z"),
    Option("report", "write the JSON report here", metavar="PATH"),
    Option("markdown", "write the Markdown table here", metavar="PATH"),
    Option("plots", "write PNG plots (score vs length; depth x length) into this folder", metavar="DIR"),
    Option("chat-template", "auto (the model's own), none (RULER's base template) or a Jinja file", "auto", metavar="auto|none|PATH"),
    Option("cache-dir", "prediction cache folder (default: inside pytest's cache dir)", metavar="DIR"),
    Option("no-cache", "do not read or write the prediction cache", flag=True),
    Option("only", "run only the RULER items, not the other collected tests", flag=True),
    Option("max-model-len", "raise the engine's context limit explicitly (prompts are never truncated)", metavar="LEN"),
    Option("dtype", "model dtype: auto, float32, bfloat16, float16", "auto"),
    Option("device", "hf engine device: auto, cpu, cuda, cuda:N", "auto"),
    Option("batch-size", "requests per engine batch (hf: default 4 on CPU, 8 on CUDA)", metavar="N"),
    Option("batch-items", "send the prompts of up to N upcoming items of the same length to the engine in one call (without xdist)", "1", metavar="N"),
    Option("trust-remote-code", "allow the model's own code from the Hub to run (off by default)", flag=True),
    Option("engine-option", "back-end option KEY=VALUE, repeatable or comma-separated (e.g. tensor_parallel_size=2)", metavar="KEY=VALUE"),
    Option("tensor-parallel-size", "vllm: GPUs per engine", metavar="N"),
    Option("gpu-memory-utilization", "vllm: fraction of GPU memory for the engine", metavar="F"),
    Option("hf-overrides", "vllm: JSON overrides of the model config (context extension, e.g. rope scaling)", metavar="JSON"),
    Option("mapreduce", "also run each item through LLM x MapReduce chunked inference (a twin item, mode mapreduce)", flag=True),
    Option("mapreduce-chunk", "map-reduce: document tokens per chunk", "2k", metavar="LEN"),
    Option("mapreduce-overlap", "map-reduce: tokens repeated from one chunk at the start of the next", "0", metavar="N"),
    Option("mapreduce-rounds", "map-reduce: most collapse rounds before the least confident records are dropped", "3", metavar="N"),
    Option("mapreduce-window", "map-reduce: tokens one call may use, prompt + output (default: the engine's context)", metavar="LEN"),
    Option("mapreduce-no-verify", "map-reduce: grounding none: keep claimed values not found in their chunk (default: grounding literal, a hallucination filter only)", flag=True),
    Option("mapreduce-layout", "map-reduce: map prompt layout: question-last (default), example-first, format-last", metavar="NAME"),
    Option("require-mapreduce-effective-length", "gate for chunked inference: fail the run if the map-reduce effective length is below LEN", metavar="LEN"),
    Option("mapreduce-parallel", "map-reduce: requests per engine call (default: all calls of a stage at once)", metavar="N"),
    Option("essays", "essay haystack: .txt file, folder of .txt, or RULER's JSON", metavar="PATH"),
    Option("squad", "SQuAD v2 dev JSON for qa_1", metavar="PATH"),
    Option("hotpotqa", "HotpotQA dev distractor JSON for qa_2", metavar="PATH"),
)


PRESETS: dict[str, dict[str, str]] = {
    # minutes on two CPU cores with the embedded model: the README's first command
    "smoke": {"tasks": "niah_single_1,niah_single_2,niah_multikey_2,vt,fwe", "lengths": "1k,4k", "samples": "2"},
    # a GPU CI job: every task at short lengths, enough samples to see a regression
    "ci": {"tasks": "all", "lengths": "4k,8k,16k", "samples": "20"},
    # the paper's setting
    "paper": {"tasks": "all", "lengths": "4k,8k,16k,32k,64k,128k", "samples": "500"},
}


def _dest(name: str) -> str:
    return "ruler_" + name.replace("-", "_")


def add_options(parser: Any) -> None:
    group = parser.getgroup("ruler", "RULER long-context tests (pytest-ruler)")
    for opt in OPTIONS:
        if opt.flag:
            group.addoption(f"--ruler-{opt.name}", action="store_true", default=None, dest=_dest(opt.name), help=opt.help)
            parser.addini(_dest(opt.name), opt.help, type="bool", default=False)
        else:
            extra = {"action": "append"} if opt.name == "engine-option" else {}
            group.addoption(f"--ruler-{opt.name}", default=None, dest=_dest(opt.name), metavar=opt.metavar, help=f"{opt.help}" + (f" [default: {opt.default}]" if opt.default else ""), **extra)
            parser.addini(_dest(opt.name), opt.help, default=None)
    parser.addini("ruler_task_thresholds", "per-task pass marks, one 'task = score' per line", type="linelist", default=[])


def _raw(config: Any, name: str) -> Any:
    value = config.getoption(_dest(name))
    if value is None or value == []:
        ini = config.getini(_dest(name))
        value = ini if ini not in (None, "", []) else None
    return value


def is_active(config: Any) -> bool:
    return bool(_raw(config, "model"))


@dataclass(frozen=True)
class RulerConfig:
    model: str
    backend: str = "auto"
    base_url: str | None = None
    tokenizer: str | None = None
    tasks: tuple[str, ...] = ()
    lengths: tuple[int, ...] = (4096,)
    lengths_given: bool = True  # False: the lengths come from the preset, not --ruler-lengths / ini
    samples: int = 10
    seeds: tuple[int, ...] = (0,)
    depths: tuple[float, ...] | None = None
    threshold: float = 85.6
    task_thresholds: Mapping[str, float] = field(default_factory=dict)
    preset: str = "ci"
    required_effective_length: int | None = None
    baseline: Path | None = None
    baseline_alpha: float = 0.05
    baseline_test: str = "two-proportion-z"
    report: Path | None = None
    markdown: Path | None = None
    plots: Path | None = None
    chat_template: str = "auto"
    cache_dir: Path | None = None
    no_cache: bool = False
    only: bool = False
    max_model_len: int | None = None
    dtype: str = "auto"
    device: str = "auto"
    batch_size: int | None = None
    batch_items: int = 1
    trust_remote_code: bool = False
    engine_options: Mapping[str, Any] = field(default_factory=dict)
    essays: str | None = None
    squad: str | None = None
    hotpotqa: str | None = None
    mapreduce: bool = False
    mapreduce_config: Any = None  # a mapreduce.MapReduceConfig
    required_mapreduce_effective_length: int | None = None

    def threshold_for(self, task: str) -> float:
        return self.task_thresholds.get(task, self.threshold)


def _int(name: str, value: Any, minimum: int = 1) -> int:
    try:
        n = int(str(value).strip())
    except ValueError:
        raise RulerUsageError(f"--ruler-{name}", value, f"give an integer >= {minimum}") from None
    if n < minimum:
        raise RulerUsageError(f"--ruler-{name}", value, f"give an integer >= {minimum}")
    return n


def _threshold(name: str, value: Any) -> float:
    try:
        t = float(str(value).strip())
    except ValueError:
        raise RulerUsageError(name, value, "give a score between 0 and 100, e.g. 85.6") from None
    if not 0 <= t <= 100:
        raise RulerUsageError(name, value, "give a score between 0 and 100, e.g. 85.6")
    return t


def _seeds(value: Any) -> tuple[int, ...]:
    text = str(value).strip()
    if "," not in text:
        return tuple(range(_int("seeds", text)))
    seeds = []
    for part in text.split(","):
        if part.strip():
            seeds.append(_int("seeds", part, minimum=0))
    if not seeds:
        raise RulerUsageError("--ruler-seeds", value, "give a count N (seeds 0..N-1) or a comma list like 0,1,7")
    return tuple(dict.fromkeys(seeds))


def _depths(value: Any) -> tuple[float, ...]:
    out = []
    for part in str(value).split(","):
        if not part.strip():
            continue
        try:
            d = float(part.strip().rstrip("%"))
        except ValueError:
            raise RulerUsageError("--ruler-depths", value, "give depths as fractions of the context, e.g. 0,0.25,0.5,0.75,1") from None
        d = d / 100 if d > 1 else d
        if not 0 <= d <= 1:
            raise RulerUsageError("--ruler-depths", value, "depths are fractions in [0, 1] (or percentages up to 100)")
        out.append(d)
    if not out:
        raise RulerUsageError("--ruler-depths", value, "give at least one depth, e.g. 0,0.5,1")
    return tuple(dict.fromkeys(out))


def _parse_value(raw: str) -> Any:
    try:
        return json.loads(raw)
    except json.JSONDecodeError:
        return raw


def _engine_options(values: Any) -> dict[str, Any]:
    items: list[str] = []
    for v in values if isinstance(values, list) else [values]:
        items += [p for p in str(v).split(",") if p.strip()] if "{" not in str(v) else [str(v)]
    out: dict[str, Any] = {}
    for item in items:
        if "=" not in item:
            raise RulerUsageError("--ruler-engine-option", item, "write KEY=VALUE, e.g. --ruler-engine-option=enforce_eager=true")
        k, v = item.split("=", 1)
        out[k.strip()] = _parse_value(v.strip())
    return out


def _task_thresholds(config: Any) -> dict[str, float]:
    """Per-task pass marks from the ini key ``ruler_task_thresholds`` (``task = score`` per line)."""
    out: dict[str, float] = {}
    for line in config.getini("ruler_task_thresholds") or []:
        if not line.strip():
            continue
        sep = "=" if "=" in line else ":"
        if sep not in line:
            raise RulerUsageError("ruler_task_thresholds", line, "write one 'task = score' per line, e.g. cwe = 70")
        task, raw = (p.strip() for p in line.split(sep, 1))
        out[task] = _threshold(f"ruler_task_thresholds[{task}]", raw)
    return out


def build_config(config: Any) -> RulerConfig:
    """Read options and ini keys into a validated RulerConfig (raises RulerUsageError)."""
    from .tasks import resolve_tasks

    preset_name = str(_raw(config, "preset") or "ci")
    if preset_name not in PRESETS:
        raise RulerUsageError("--ruler-preset", preset_name, f"choose one of {', '.join(PRESETS)}")
    preset = PRESETS[preset_name]

    def get(name: str, default: Any = None) -> Any:
        value = _raw(config, name)
        if value is None:
            value = preset.get(name, default)
        return value

    model = str(get("model"))
    tasks = tuple(t.name for t in resolve_tasks(str(get("tasks", "all"))))
    lengths = tuple(parse_lengths(str(get("lengths", "4k")), "--ruler-lengths"))
    samples = _int("samples", get("samples", "10"))
    seeds = _seeds(get("seeds", "1"))
    depths = _depths(get("depths")) if get("depths") else None
    threshold = _threshold("--ruler-threshold", get("threshold", "85.6"))
    thresholds = _task_thresholds(config)
    from .tasks import get_task

    for task in thresholds:
        get_task(task)  # a misspelt task name is an error, not a silently unused threshold
    options = _engine_options(get("engine-option")) if get("engine-option") else {}
    from .engines.gpus import tensor_parallel_size

    tp = tensor_parallel_size(get, strict=True)  # the one reader: also slot counting and worker pinning
    if tp is not None:
        options["tensor_parallel_size"] = tp
    for name, key, conv in (
        ("gpu-memory-utilization", "gpu_memory_utilization", float),
        ("hf-overrides", "hf_overrides", lambda v: json.loads(v) if isinstance(v, str) else v),
    ):
        raw = get(name)
        if raw is not None:
            try:
                options[key] = conv(raw)
            except (ValueError, json.JSONDecodeError):
                raise RulerUsageError(f"--ruler-{name}", raw, "see `pytest --help` for the expected form") from None
    chat = str(get("chat-template", "auto"))
    if chat not in ("auto", "none", "base") and not Path(chat).expanduser().is_file():
        raise RulerUsageError("--ruler-chat-template", chat, "use auto (the model's own), none (base prompts) or a path to a Jinja file")
    report = get("report")
    required = get("require-effective-length")
    baseline = get("baseline")
    if baseline and not Path(str(baseline)).expanduser().is_file():
        raise RulerUsageError("--ruler-baseline", baseline, "no such file; pass a JSON report written earlier with --ruler-report")
    alpha = get("baseline-alpha", "0.05")
    try:
        alpha_f = float(alpha)
    except ValueError:
        alpha_f = -1.0
    if not 0 < alpha_f < 1:
        raise RulerUsageError("--ruler-baseline-alpha", alpha, "give a significance level between 0 and 1, e.g. 0.05")
    test = str(get("baseline-test", "two-proportion-z"))
    if test not in ("two-proportion-z", "fisher"):
        raise RulerUsageError("--ruler-baseline-test", test, "choose two-proportion-z or fisher")
    cache_dir = get("cache-dir")
    max_len = get("max-model-len")
    batch = get("batch-size")
    backend = str(get("backend", "auto"))
    from .engines import resolve_backend

    resolve_backend(backend)  # unknown names are refused here, before anything loads
    base_url = get("base-url")
    if backend == "openai" and not base_url:
        raise RulerUsageError("--ruler-base-url", None, "the openai back end needs the server URL, e.g. --ruler-base-url=http://127.0.0.1:8000/v1")
    from .mapreduce import MapReduceConfig

    window = get("mapreduce-window")
    parallel = get("mapreduce-parallel")
    required_mr = get("require-mapreduce-effective-length")
    mr_config = MapReduceConfig(
        chunk_tokens=parse_length(get("mapreduce-chunk", "2k"), "--ruler-mapreduce-chunk"),
        overlap=_int("mapreduce-overlap", get("mapreduce-overlap", "0"), minimum=0),
        max_rounds=_int("mapreduce-rounds", get("mapreduce-rounds", "3"), minimum=0),
        window=parse_length(window, "--ruler-mapreduce-window") if window else None,
        parallel=_int("mapreduce-parallel", parallel) if parallel else None,
        verify=not bool(get("mapreduce-no-verify", False)),
        layout=str(get("mapreduce-layout", "question-last")),
    ).validate()
    return RulerConfig(
        model=model,
        backend=backend,
        base_url=str(base_url) if base_url else None,
        tokenizer=get("tokenizer"),
        tasks=tasks,
        lengths=lengths,
        lengths_given=_raw(config, "lengths") is not None,
        samples=samples,
        seeds=seeds,
        depths=depths,
        threshold=threshold,
        task_thresholds=thresholds,
        preset=preset_name,
        required_effective_length=parse_length(required, "--ruler-require-effective-length") if required else None,
        baseline=Path(str(baseline)).expanduser() if baseline else None,
        baseline_alpha=alpha_f,
        baseline_test=test,
        report=Path(report) if report else None,
        markdown=Path(get("markdown")) if get("markdown") else None,
        plots=Path(get("plots")) if get("plots") else None,
        chat_template=chat,
        cache_dir=Path(cache_dir) if cache_dir else None,
        no_cache=bool(get("no-cache", False)),
        only=bool(get("only", False)),
        max_model_len=parse_length(max_len, "--ruler-max-model-len") if max_len else None,
        dtype=str(get("dtype", "auto")),
        device=str(get("device", "auto")),
        batch_size=_int("batch-size", batch) if batch else None,
        batch_items=_int("batch-items", get("batch-items", "1")),
        trust_remote_code=bool(get("trust-remote-code", False)),
        engine_options=options,
        essays=get("essays"),
        squad=get("squad"),
        hotpotqa=get("hotpotqa"),
        mapreduce=bool(get("mapreduce", False)) or bool(required_mr),
        mapreduce_config=mr_config,
        required_mapreduce_effective_length=parse_length(required_mr, "--ruler-require-mapreduce-effective-length") if required_mr else None,
    )
