"""The option spec: every ``--ruler-*`` option once, typed, and the RulerConfig built from it.

Data flow::

    OPTIONS (name, help, parser, default, target)
        ├─► add_options(parser): the pytest options --ruler-<name> and ini keys ruler_<name>
        └─► build_config(pytest_config): for each option, the command line, else the ini
            key, else the preset, else the default, through the option's parser (which
            names the parameter as the user wrote it, the value and the fix), into its
            target: a RulerConfig field ("run"), a MapReduceConfig field ("mapreduce")
            or an engine option ("engine"). Checks that span options run after.
            A preset (``PRESETS``) may also set flags: ``long`` turns on
            --ruler-sequential and --ruler-ci.

Every option ``--ruler-<name>`` is also an ini key ``ruler_<name>`` (the option
wins); flags are typed bool ini keys, and every other ini value goes through the
same parser as the option, so ``ruler_samples = many`` is refused like
``--ruler-samples=many`` (the message names ``ruler_samples``). Nothing here
loads a model; a bad value raises one :class:`~pytest_ruler.errors.RulerUsageError`.

Importing this module is cheap (the plugin's entry module does, for every pytest run):
the spec is data; the parts a configuration needs (engines' registry, tasks, map-reduce)
are imported by ``build_config``, which runs only when the suite is active.

Public names: ``OPTIONS``, ``Option``, ``PRESETS``, ``RulerConfig``,
``add_options``, ``build_config``, ``is_active``, ``option_dest``, ``raw_value``,
``early_value``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from .errors import RulerUsageError
from .parsers import (
    Parser,
    choice,
    integer,
    parse_confidence,
    parse_depths,
    parse_flag,
    parse_key_values,
    parse_length,
    parse_lengths,
    parse_not_flag,
    parse_path,
    parse_score,
    parse_seeds,
    parse_significance,
    parse_text,
)

__all__ = ["OPTIONS", "PRESETS", "Option", "RulerConfig", "add_options", "argparse_help", "build_config", "early_value", "is_active",
           "option_dest", "raw_value"]

@dataclass(frozen=True)
class Option:
    """One ``--ruler-<name>`` option and its ini key ``ruler_<name>``."""

    name: str  # without the --ruler- prefix
    help: str
    parse: Parser = parse_text
    default: Any = None  # the raw default, as a user would write it (shown in --help)
    flag: bool = False
    metavar: str | None = None
    target: str = "run"  # run: a RulerConfig field; mapreduce: a MapReduceConfig field; engine: an engine option
    key: str | None = None  # the field or engine option it sets (default: the name with underscores)

    @property
    def field_name(self) -> str:
        return self.key or self.name.replace("-", "_")


def _engine_parser(declared: Any) -> Parser:
    """An engine-declared option's own coercion, its errors naming the top-level option."""

    def parse(where: str, raw: Any) -> Any:
        try:
            return declared.coerce(raw)
        except RulerUsageError:
            raise RulerUsageError(where, raw, f"{declared.key} {declared.form()}") from None

    return parse


def _engine_cli_options() -> tuple[Option, ...]:
    """Top-level options that engines declare (``EngineOption.cli``), e.g. vllm's --ruler-tensor-parallel-size."""
    from .engines.options import cli_options

    return tuple(Option(o.cli, o.help.split(". ")[0], _engine_parser(o), metavar=o.kind.upper(), target="engine", key=o.key)
                 for o in cli_options())


_OPTIONS: tuple[Option, ...] = (
    Option("model", "model to test: HF id, local folder, .gguf file or alias (smollm2-135m, gemma3-270m); activates the suite", metavar="NAME"),
    Option("backend", "engine: auto (vllm where it runs here: a visible GPU, or vLLM's CPU build installed; else hf), hf, vllm, openai, scripted (a rule-based stand-in for plumbing tests, not a model), or a registered name", default="auto"),
    Option("base-url", "OpenAI-compatible server URL, e.g. http://127.0.0.1:8000/v1 (API key from env RULER_API_KEY)", metavar="URL"),
    Option("tokenizer", "tokenizer for the length budget (default: the model's own)", metavar="NAME"),
    Option("tasks", "RULER task names, globs (niah_*) or all, comma-separated (default: the preset's)", metavar="LIST"),
    Option("lengths", "target lengths in tokens, e.g. 4k,8k,16384 (k = 1024; default: the preset's)", parse_lengths, metavar="LIST"),
    Option("samples", "samples per item (default: the preset's)", integer(1), metavar="N"),
    Option("seeds", "seeds: a count N (0..N-1) or a comma list", parse_seeds, "1", metavar="N|LIST"),
    Option("depths", "sweep needle depths over each item's samples (niah, vt, qa): fractions like 0,0.25,0.5,0.75,1", parse_depths, metavar="LIST"),
    Option("preset", "bundle of tasks/lengths/samples: smoke (CPU minutes), ci (default), long (retrieval and tracking at 4K-32K, "
           "20 samples, sequential stopping and error bars on), paper (13 tasks, 4K-128K, 500 samples)",
           choice("smoke", "ci", "long", "paper"), "ci", metavar="smoke|ci|long|paper"),
    Option("threshold", "pass mark in [0, 100) for items and effective length: a score passes when it is above it", parse_score, "85.6", metavar="SCORE"),
    Option("require-effective-length", "release gate: fail the run if the effective length is below LEN", parse_length, metavar="LEN", key="required_effective_length"),
    Option("baseline", "earlier JSON report: fail on a statistically significant drop", parse_path, metavar="PATH"),
    Option("baseline-alpha", "significance level of the baseline comparison", parse_significance, "0.05", metavar="ALPHA"),
    Option("baseline-test", "baseline test: two-proportion-z or fisher (one-sided, Holm-corrected)", choice("two-proportion-z", "fisher"), "two-proportion-z"),
    Option("ci", "show each score's 95% interval (score+a/-b, valid for bounded scores) in the terminal and Markdown tables", parse_flag, flag=True, key="show_ci"),
    Option("gate-confidence", "gate on the effective length's lower confidence bound at this level (e.g. 0.95) instead of the point estimate", parse_confidence, metavar="LEVEL"),
    Option("sequential", "stop an item's samples early once an anytime-valid betting test puts its score clearly above or below the threshold", parse_flag, flag=True),
    Option("report", "write the JSON report here", parse_path, metavar="PATH"),
    Option("markdown", "write the Markdown table here", parse_path, metavar="PATH"),
    Option("plots", "write PNG plots (score vs length; depth x length) into this folder", parse_path, metavar="DIR"),
    Option("chat-template", "auto (the model's own), none (RULER's base template) or a Jinja file", default="auto", metavar="auto|none|PATH"),
    Option("cache-dir", "prediction cache folder (default: inside pytest's cache dir)", parse_path, metavar="DIR"),
    Option("no-cache", "do not read or write the prediction cache", parse_flag, flag=True),
    Option("only", "run only the RULER items, not the other collected tests", parse_flag, flag=True),
    Option("no-suite", "do not add the standard suite's items: run only your own tests, with the plugin configured", parse_flag, flag=True),
    Option("max-model-len", "raise the engine's context limit explicitly (prompts are never truncated)", parse_length, metavar="LEN"),
    Option("dtype", "model dtype: auto, float32, bfloat16, float16", default="auto"),
    Option("device", "hf engine device: auto, cpu, cuda, cuda:N", default="auto"),
    Option("batch-size", "requests per engine batch (hf: default 4 on CPU, 8 on CUDA)", integer(1), metavar="N"),
    Option("batch-items", "the most items whose prompts share one engine call: the running item's next batch and those of the "
           "items this process runs after it (with or without xdist); 1: one item at a time", integer(1), "16", metavar="N"),
    Option("trust-remote-code", "allow the model's own code from the Hub to run (off by default)", parse_flag, flag=True),
    Option("engine-option", "back-end option KEY=VALUE, repeatable or comma-separated (e.g. tensor_parallel_size=2)", lambda where, raw: parse_key_values(raw, where), metavar="KEY=VALUE", key="engine_options"),
    Option("mapreduce", "also run each item through LLM x MapReduce chunked inference (a twin item, mode mapreduce)", parse_flag, flag=True),
    Option("mapreduce-chunk", "map-reduce: document tokens per chunk", parse_length, "2k", metavar="LEN", target="mapreduce", key="chunk_tokens"),
    Option("mapreduce-overlap", "map-reduce: tokens repeated from one chunk at the start of the next", integer(0), "0", metavar="N", target="mapreduce", key="overlap"),
    Option("mapreduce-rounds", "map-reduce: most collapse rounds before the least confident records are dropped", integer(0), "3", metavar="N", target="mapreduce", key="max_rounds"),
    Option("mapreduce-window", "map-reduce: tokens one call may use, prompt + output (default: the engine's context)", parse_length, metavar="LEN", target="mapreduce", key="window"),
    Option("mapreduce-no-verify", "map-reduce: grounding none: keep claimed values not found in their chunk (default: grounding literal, a hallucination filter only)", parse_not_flag, flag=True, target="mapreduce", key="verify"),
    Option("mapreduce-layout", "map-reduce: map prompt layout: question-last (default), example-first, format-last", metavar="NAME", target="mapreduce", key="layout"),
    Option("require-mapreduce-effective-length", "gate for chunked inference: fail the run if the map-reduce effective length is below LEN", parse_length, metavar="LEN", key="required_mapreduce_effective_length"),
    Option("mapreduce-parallel", "map-reduce: requests per engine call (default: all calls of a stage at once)", integer(1), metavar="N", target="mapreduce", key="parallel"),
    Option("essays", "essay haystack: .txt file, folder of .txt, or RULER's JSON", metavar="PATH"),
    Option("squad", "SQuAD v2 dev JSON for qa_1", metavar="PATH"),
    Option("hotpotqa", "HotpotQA dev distractor JSON for qa_2", metavar="PATH"),
)
OPTIONS: tuple[Option, ...] = _OPTIONS + _engine_cli_options()


PRESETS: dict[str, dict[str, Any]] = {
    # minutes on two CPU cores with the embedded model: the README's first command
    "smoke": {"tasks": "niah_single_1,niah_single_2,niah_multikey_2,vt,fwe", "lengths": "1k,4k", "samples": "2"},
    # a GPU CI job: every task at short lengths, enough samples to see a regression
    "ci": {"tasks": "all", "lengths": "4k,8k,16k", "samples": "20"},
    # a 32K-window model (gemma3-270m) from 4K to its window: the retrieval and tracking tasks.
    # A preset may carry flags (True): here sequential stopping and error bars. 20 samples per
    # cell: with the default mark (85.6) and batches of 4, an item scoring 0 stops after 8
    # samples and one near 30 after 12, while a clear pass needs about 30 samples to stop early
    # (so it runs all 20); 10 samples would leave sequential stopping little to save.
    "long": {"tasks": "niah_single_1,niah_single_2,niah_single_3,niah_multikey_1,niah_multivalue,vt",
             "lengths": "4k,8k,16k,32k", "samples": "20", "sequential": True, "ci": True},
    # the paper's setting
    "paper": {"tasks": "all", "lengths": "4k,8k,16k,32k,64k,128k", "samples": "500"},
}


def option_dest(name: str) -> str:
    """The argparse dest and the ini key of ``--ruler-<name>``: ``ruler_<name>``."""
    return "ruler_" + name.replace("-", "_")


def argparse_help(text: str) -> str:
    """``text`` as argparse help: argparse %-formats help strings (``%(default)s``), so a
    literal ``%`` ("95% intervals") must be doubled or ``pytest --help`` crashes."""
    return text.replace("%", "%%")


def add_options(parser: Any) -> None:
    group = parser.getgroup("ruler", "RULER long-context tests (pytest-ruler)")
    for opt in OPTIONS:
        if opt.flag:
            group.addoption(f"--ruler-{opt.name}", action="store_true", default=None, dest=option_dest(opt.name), help=argparse_help(opt.help))
            parser.addini(option_dest(opt.name), opt.help, type="bool", default=False)
        else:
            extra = {"action": "append"} if opt.name == "engine-option" else {}
            shown = opt.help + (f" [default: {opt.default}]" if opt.default else "")
            group.addoption(f"--ruler-{opt.name}", default=None, dest=option_dest(opt.name), metavar=opt.metavar, help=argparse_help(shown), **extra)
            parser.addini(option_dest(opt.name), opt.help, default=None)
    parser.addini("ruler_task_thresholds", "per-task pass marks, one 'task = score' per line", type="linelist", default=[])


def _lookup(config: Any, name: str) -> tuple[Any, str]:
    """An option's raw value and where it came from (``--ruler-<name>`` or the ini key), or (None, option)."""
    value = config.getoption(option_dest(name))
    if value is not None and value != []:
        return value, f"--ruler-{name}"
    ini = config.getini(option_dest(name))
    if ini not in (None, "", [], False):
        return ini, option_dest(name)
    return None, f"--ruler-{name}"


def raw_value(config: Any, name: str) -> Any:
    """``--ruler-<name>`` as given (command line, else ini), before parsing; None when unset."""
    return _lookup(config, name)[0]


def early_value(early_config: Any, name: str) -> Any:
    """An option's raw value before the command line is fully parsed (``pytest_load_initial_conftests``):
    the known args, else the ini key; None when unset."""
    namespace = getattr(early_config, "known_args_namespace", None)
    value = getattr(namespace, option_dest(name), None)
    if value is None or value == []:
        try:
            ini = early_config.getini(option_dest(name))
        except (ValueError, KeyError):
            ini = None
        value = ini if ini not in (None, "", []) else None
    return value


def is_active(config: Any) -> bool:
    return bool(raw_value(config, "model"))


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
    show_ci: bool = False  # --ruler-ci: intervals in the terminal and Markdown tables
    gate_confidence: float | None = None  # --ruler-gate-confidence: gate on the effective length's lower bound
    sequential: bool = False  # --ruler-sequential: anytime-valid early stopping per item
    report: Path | None = None
    markdown: Path | None = None
    plots: Path | None = None
    chat_template: str = "auto"
    cache_dir: Path | None = None
    no_cache: bool = False
    only: bool = False
    no_suite: bool = False  # --ruler-no-suite: the plugin is configured, the standard suite is not collected
    max_model_len: int | None = None
    dtype: str = "auto"
    device: str = "auto"
    batch_size: int | None = None
    batch_items: int = 16  # --ruler-batch-items
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
        out[task] = parse_score(f"ruler_task_thresholds[{task}]", raw)
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
    from .engines.options import coerce_engine_options, declared_options
    from .mapreduce import MapReduceConfig
    from .tasks import resolve_tasks

    values = read_options(config)
    run = {o.field_name: values[o.name] for o in OPTIONS if o.target == "run" and values[o.name] is not None}
    # engine options: --ruler-engine-option and the engine-declared top-level options, typed by the
    # resolved engine's declaration (with auto, keys another engine declares are dropped, not refused)
    backend = resolve_backend(run["backend"])  # unknown names are refused here, before anything loads
    engine = dict(values["engine-option"] or {})
    engine.update({o.field_name: values[o.name] for o in OPTIONS if o.target == "engine" and values[o.name] is not None})
    tp = tensor_parallel_size(lambda name: raw_value(config, name), strict=True)  # the one reader: also slot counting and worker pinning
    if tp is not None:
        engine["tensor_parallel_size"] = tp
    # a top-level option another engine declares (vllm's TP with hf) is kept as given, typed by its own
    # parser, and left unread by this engine (engines.options.engine_options drops it)
    declared = declared_options(backend)
    foreign = {o.field_name: engine.pop(o.field_name) for o in OPTIONS
               if o.target == "engine" and declared is not None and o.field_name not in declared and values[o.name] is not None and o.field_name in engine}
    engine = {**coerce_engine_options(backend, engine, drop_unknown=run["backend"] == "auto"), **foreign}
    mapreduce = MapReduceConfig(**{o.field_name: values[o.name] for o in OPTIONS if o.target == "mapreduce" and values[o.name] is not None}).validate()
    # checks that span options, or look at files and registries
    if run["backend"] == "openai" and not run.get("base_url"):
        raise RulerUsageError("--ruler-base-url", None, "the openai back end needs the server URL, e.g. --ruler-base-url=http://127.0.0.1:8000/v1")
    if run.get("only") and run.get("no_suite"):
        raise RulerUsageError("--ruler-no-suite", True, "--ruler-only runs just the standard suite and --ruler-no-suite "
                              "leaves it out, so together nothing would run: drop one of the two options")
    chat = run["chat_template"]
    if chat not in ("auto", "none", "base") and not Path(chat).expanduser().is_file():
        raise RulerUsageError("--ruler-chat-template", chat, "use auto (the model's own), none (base prompts) or a path to a Jinja file")
    if run.get("baseline") is not None and not run["baseline"].is_file():
        raise RulerUsageError("--ruler-baseline", raw_value(config, "baseline"), "no such file; pass a JSON report written earlier with --ruler-report")
    run.update(
        model=str(run["model"]),
        tasks=tuple(t.name for t in resolve_tasks(str(run.get("tasks", "all")))),
        lengths_given=raw_value(config, "lengths") is not None,
        task_thresholds=_task_thresholds(config),
        engine_options=engine,
        mapreduce=bool(run.get("mapreduce")) or run.get("required_mapreduce_effective_length") is not None,
        mapreduce_config=mapreduce,
    )
    return RulerConfig(**run)
