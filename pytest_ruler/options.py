"""The option spec: every ``--ruler-*`` option once, typed, and the RulerConfig built from it.

Data flow::

    OPTIONS (name, help, parser, default, target)
        ├─► add_options(parser): the pytest options --ruler-<name> and ini keys ruler_<name>
        └─► build_config(pytest_config): for each option, the command line, else the ini
            key, else the preset, else the default, through the option's parser (which
            names the parameter as the user wrote it, the value and the fix), into its
            target: a RulerConfig field ("run"), a MapReduceConfig field ("mapreduce")
            or an engine option ("engine"). Checks that span options run after.

Every option ``--ruler-<name>`` is also an ini key ``ruler_<name>`` (the option
wins); flags are typed bool ini keys, and every other ini value goes through the
same parser as the option, so ``ruler_samples = many`` is refused like
``--ruler-samples=many`` (the message names ``ruler_samples``). Nothing here
loads a model; a bad value raises one :class:`~pytest_ruler.errors.RulerUsageError`.

Public names: ``OPTIONS``, ``Option``, ``PRESETS``, ``RulerConfig``,
``add_options``, ``build_config``, ``is_active``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

from .errors import RulerUsageError
from .lengths import parse_length, parse_lengths

__all__ = ["OPTIONS", "PRESETS", "Option", "RulerConfig", "add_options", "build_config", "is_active"]

Parser = Callable[[str, Any], Any]  # (the parameter as the user wrote it, the raw value) -> the typed value


def _int(name: str, value: Any, minimum: int = 1) -> int:
    """An integer >= minimum; ``name`` is an option name without ``--ruler-`` or a written parameter."""
    where = name if name.startswith(("-", "ruler_")) else f"--ruler-{name}"
    try:
        n = int(str(value).strip())
    except ValueError:
        raise RulerUsageError(where, value, f"give an integer >= {minimum}") from None
    if n < minimum:
        raise RulerUsageError(where, value, f"give an integer >= {minimum}")
    return n


def integer(minimum: int = 1) -> Parser:
    return lambda where, raw: _int(where, raw, minimum)


def _text(where: str, raw: Any) -> str:
    return str(raw)


def _flag(where: str, raw: Any) -> bool:
    return bool(raw)


def _not_flag(where: str, raw: Any) -> bool:
    return not bool(raw)


def _path(where: str, raw: Any) -> Path:
    return Path(str(raw)).expanduser()


def _length(where: str, raw: Any) -> int:
    return parse_length(raw, where)


def _lengths(where: str, raw: Any) -> tuple[int, ...]:
    return tuple(parse_lengths(str(raw), where))


def _score(where: str, raw: Any) -> float:
    try:
        t = float(str(raw).strip())
    except ValueError:
        raise RulerUsageError(where, raw, "give a score between 0 and 100, e.g. 85.6") from None
    if not 0 <= t <= 100:
        raise RulerUsageError(where, raw, "give a score between 0 and 100, e.g. 85.6")
    return t


def _significance(where: str, raw: Any) -> float:
    try:
        alpha = float(raw)
    except ValueError:
        alpha = -1.0
    if not 0 < alpha < 1:
        raise RulerUsageError(where, raw, "give a significance level between 0 and 1, e.g. 0.05")
    return alpha


def _fraction(where: str, raw: Any) -> float:
    try:
        return float(raw)
    except ValueError:
        raise RulerUsageError(where, raw, "give a number, e.g. 0.9") from None


def choice(*names: str) -> Parser:
    def parse(where: str, raw: Any) -> str:
        if str(raw) not in names:
            raise RulerUsageError(where, raw, f"choose one of {', '.join(names)}")
        return str(raw)

    return parse


def _json(where: str, raw: Any) -> Any:
    try:
        return json.loads(raw) if isinstance(raw, str) else raw
    except json.JSONDecodeError:
        raise RulerUsageError(where, raw, "give a JSON object, e.g. '{\"max_position_embeddings\": 65536}'") from None


def _seeds(where: str, value: Any) -> tuple[int, ...]:
    text = str(value).strip()
    if "," not in text:
        return tuple(range(_int(where, text)))
    seeds = [_int(where, part, minimum=0) for part in text.split(",") if part.strip()]
    if not seeds:
        raise RulerUsageError(where, value, "give a count N (seeds 0..N-1) or a comma list like 0,1,7")
    return tuple(dict.fromkeys(seeds))


def _depths(where: str, value: Any) -> tuple[float, ...]:
    out = []
    for part in str(value).split(","):
        if not part.strip():
            continue
        try:
            d = float(part.strip().rstrip("%"))
        except ValueError:
            raise RulerUsageError(where, value, "give depths as fractions of the context, e.g. 0,0.25,0.5,0.75,1") from None
        d = d / 100 if d > 1 else d
        if not 0 <= d <= 1:
            raise RulerUsageError(where, value, "depths are fractions in [0, 1] (or percentages up to 100)")
        out.append(d)
    if not out:
        raise RulerUsageError(where, value, "give at least one depth, e.g. 0,0.5,1")
    return tuple(dict.fromkeys(out))


def _parse_value(raw: str) -> Any:
    try:
        return json.loads(raw)
    except json.JSONDecodeError:
        return raw


def _engine_options(values: Any, where: str = "--ruler-engine-option") -> dict[str, Any]:
    items: list[str] = []
    for v in values if isinstance(values, list) else [values]:
        items += [p for p in str(v).split(",") if p.strip()] if "{" not in str(v) else [str(v)]
    out: dict[str, Any] = {}
    for item in items:
        if "=" not in item:
            raise RulerUsageError(where, item, "write KEY=VALUE, e.g. --ruler-engine-option=enforce_eager=true")
        k, v = item.split("=", 1)
        out[k.strip()] = _parse_value(v.strip())
    return out


@dataclass(frozen=True)
class Option:
    """One ``--ruler-<name>`` option and its ini key ``ruler_<name>``."""

    name: str  # without the --ruler- prefix
    help: str
    parse: Parser = _text
    default: Any = None  # the raw default, as a user would write it (shown in --help)
    flag: bool = False
    metavar: str | None = None
    target: str = "run"  # run: a RulerConfig field; mapreduce: a MapReduceConfig field; engine: an engine option
    key: str | None = None  # the field or engine option it sets (default: the name with underscores)

    @property
    def field_name(self) -> str:
        return self.key or self.name.replace("-", "_")


OPTIONS: tuple[Option, ...] = (
    Option("model", "model to test: HF id, local folder, .gguf file or alias (smollm2-135m); activates the suite", metavar="NAME"),
    Option("backend", "engine: auto (vllm with a GPU, else hf), hf, vllm, openai, or a registered name", default="auto"),
    Option("base-url", "OpenAI-compatible server URL, e.g. http://127.0.0.1:8000/v1 (API key from env RULER_API_KEY)", metavar="URL"),
    Option("tokenizer", "tokenizer for the length budget (default: the model's own)", metavar="NAME"),
    Option("tasks", "RULER task names, globs (niah_*) or all, comma-separated (default: the preset's)", metavar="LIST"),
    Option("lengths", "target lengths in tokens, e.g. 4k,8k,16384 (k = 1024; default: the preset's)", _lengths, metavar="LIST"),
    Option("samples", "samples per item (default: the preset's)", integer(1), metavar="N"),
    Option("seeds", "seeds: a count N (0..N-1) or a comma list", _seeds, "1", metavar="N|LIST"),
    Option("depths", "sweep needle depths over each item's samples (niah, vt, qa): fractions like 0,0.25,0.5,0.75,1", _depths, metavar="LIST"),
    Option("preset", "bundle of tasks/lengths/samples: smoke (CPU minutes), ci (default), paper (13 tasks, 4K-128K, 500 samples)", choice("smoke", "ci", "paper"), "ci", metavar="smoke|ci|paper"),
    Option("threshold", "pass mark (0-100) for items and effective length", _score, "85.6", metavar="SCORE"),
    Option("require-effective-length", "release gate: fail the run if the effective length is below LEN", _length, metavar="LEN", key="required_effective_length"),
    Option("baseline", "earlier JSON report: fail on a statistically significant drop", _path, metavar="PATH"),
    Option("baseline-alpha", "significance level of the baseline comparison", _significance, "0.05", metavar="ALPHA"),
    Option("baseline-test", "baseline test: two-proportion-z or fisher (one-sided, Holm-corrected)", choice("two-proportion-z", "fisher"), "two-proportion-z"),
    Option("report", "write the JSON report here", _path, metavar="PATH"),
    Option("markdown", "write the Markdown table here", _path, metavar="PATH"),
    Option("plots", "write PNG plots (score vs length; depth x length) into this folder", _path, metavar="DIR"),
    Option("chat-template", "auto (the model's own), none (RULER's base template) or a Jinja file", default="auto", metavar="auto|none|PATH"),
    Option("cache-dir", "prediction cache folder (default: inside pytest's cache dir)", _path, metavar="DIR"),
    Option("no-cache", "do not read or write the prediction cache", _flag, flag=True),
    Option("only", "run only the RULER items, not the other collected tests", _flag, flag=True),
    Option("max-model-len", "raise the engine's context limit explicitly (prompts are never truncated)", _length, metavar="LEN"),
    Option("dtype", "model dtype: auto, float32, bfloat16, float16", default="auto"),
    Option("device", "hf engine device: auto, cpu, cuda, cuda:N", default="auto"),
    Option("batch-size", "requests per engine batch (hf: default 4 on CPU, 8 on CUDA)", integer(1), metavar="N"),
    Option("batch-items", "send the prompts of up to N upcoming items of the same length to the engine in one call (without xdist)", integer(1), "1", metavar="N"),
    Option("trust-remote-code", "allow the model's own code from the Hub to run (off by default)", _flag, flag=True),
    Option("engine-option", "back-end option KEY=VALUE, repeatable or comma-separated (e.g. tensor_parallel_size=2)", lambda where, raw: _engine_options(raw, where), metavar="KEY=VALUE", key="engine_options"),
    Option("tensor-parallel-size", "vllm: GPUs per engine", integer(1), metavar="N", target="engine"),
    Option("gpu-memory-utilization", "vllm: fraction of GPU memory for the engine", _fraction, metavar="F", target="engine"),
    Option("hf-overrides", "vllm: JSON overrides of the model config (context extension, e.g. rope scaling)", _json, metavar="JSON", target="engine"),
    Option("mapreduce", "also run each item through LLM x MapReduce chunked inference (a twin item, mode mapreduce)", _flag, flag=True),
    Option("mapreduce-chunk", "map-reduce: document tokens per chunk", _length, "2k", metavar="LEN", target="mapreduce", key="chunk_tokens"),
    Option("mapreduce-overlap", "map-reduce: tokens repeated from one chunk at the start of the next", integer(0), "0", metavar="N", target="mapreduce", key="overlap"),
    Option("mapreduce-rounds", "map-reduce: most collapse rounds before the least confident records are dropped", integer(0), "3", metavar="N", target="mapreduce", key="max_rounds"),
    Option("mapreduce-window", "map-reduce: tokens one call may use, prompt + output (default: the engine's context)", _length, metavar="LEN", target="mapreduce", key="window"),
    Option("mapreduce-no-verify", "map-reduce: grounding none: keep claimed values not found in their chunk (default: grounding literal, a hallucination filter only)", _not_flag, flag=True, target="mapreduce", key="verify"),
    Option("mapreduce-layout", "map-reduce: map prompt layout: question-last (default), example-first, format-last", metavar="NAME", target="mapreduce", key="layout"),
    Option("require-mapreduce-effective-length", "gate for chunked inference: fail the run if the map-reduce effective length is below LEN", _length, metavar="LEN", key="required_mapreduce_effective_length"),
    Option("mapreduce-parallel", "map-reduce: requests per engine call (default: all calls of a stage at once)", integer(1), metavar="N", target="mapreduce", key="parallel"),
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


def _lookup(config: Any, name: str) -> tuple[Any, str]:
    """An option's raw value and where it came from (``--ruler-<name>`` or the ini key), or (None, option)."""
    value = config.getoption(_dest(name))
    if value is not None and value != []:
        return value, f"--ruler-{name}"
    ini = config.getini(_dest(name))
    if ini not in (None, "", [], False):
        return ini, _dest(name)
    return None, f"--ruler-{name}"


def _raw(config: Any, name: str) -> Any:
    return _lookup(config, name)[0]


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


def _task_thresholds(config: Any) -> dict[str, float]:
    """Per-task pass marks from the ini key ``ruler_task_thresholds`` (``task = score`` per line)."""
    from .tasks import get_task

    out: dict[str, float] = {}
    for line in config.getini("ruler_task_thresholds") or []:
        if not line.strip():
            continue
        sep = "=" if "=" in line else ":"
        if sep not in line:
            raise RulerUsageError("ruler_task_thresholds", line, "write one 'task = score' per line, e.g. cwe = 70")
        task, raw = (p.strip() for p in line.split(sep, 1))
        get_task(task)  # a misspelt task name is an error, not a silently unused threshold
        out[task] = _score(f"ruler_task_thresholds[{task}]", raw)
    return out


def read_options(config: Any) -> dict[str, Any]:
    """Every option's typed value (None when unset and without default): command line, ini, preset, default."""
    preset_raw, where = _lookup(config, "preset")
    preset = PRESETS[choice(*PRESETS)(where, preset_raw or "ci")]
    values: dict[str, Any] = {}
    for opt in OPTIONS:
        raw, where = _lookup(config, opt.name)
        if raw is None:
            raw = preset.get(opt.name, opt.default)
        values[opt.name] = None if raw is None else opt.parse(where, raw)
    return values


def build_config(config: Any) -> RulerConfig:
    """Read options and ini keys into a validated RulerConfig (raises RulerUsageError)."""
    from .engines import resolve_backend
    from .engines.gpus import tensor_parallel_size
    from .mapreduce import MapReduceConfig
    from .tasks import resolve_tasks

    values = read_options(config)
    run = {o.field_name: values[o.name] for o in OPTIONS if o.target == "run" and values[o.name] is not None}
    engine = dict(values["engine-option"] or {})
    engine.update({o.field_name: values[o.name] for o in OPTIONS if o.target == "engine" and values[o.name] is not None})
    tp = tensor_parallel_size(lambda name: _raw(config, name), strict=True)  # the one reader: also slot counting and worker pinning
    if tp is not None:
        engine["tensor_parallel_size"] = tp
    mapreduce = MapReduceConfig(**{o.field_name: values[o.name] for o in OPTIONS if o.target == "mapreduce" and values[o.name] is not None}).validate()
    # checks that span options, or look at files and registries
    resolve_backend(run["backend"])  # unknown names are refused here, before anything loads
    if run["backend"] == "openai" and not run.get("base_url"):
        raise RulerUsageError("--ruler-base-url", None, "the openai back end needs the server URL, e.g. --ruler-base-url=http://127.0.0.1:8000/v1")
    chat = run["chat_template"]
    if chat not in ("auto", "none", "base") and not Path(chat).expanduser().is_file():
        raise RulerUsageError("--ruler-chat-template", chat, "use auto (the model's own), none (base prompts) or a path to a Jinja file")
    if run.get("baseline") is not None and not run["baseline"].is_file():
        raise RulerUsageError("--ruler-baseline", _raw(config, "baseline"), "no such file; pass a JSON report written earlier with --ruler-report")
    run.update(
        model=str(run["model"]),
        tasks=tuple(t.name for t in resolve_tasks(str(run.get("tasks", "all")))),
        lengths_given=_raw(config, "lengths") is not None,
        task_thresholds=_task_thresholds(config),
        engine_options=engine,
        mapreduce=bool(run.get("mapreduce")) or run.get("required_mapreduce_effective_length") is not None,
        mapreduce_config=mapreduce,
    )
    return RulerConfig(**run)
