"""The option spec: every ``--ruler-*`` option once, typed, with its one default.

Data flow::

    OPTIONS (name, help, parser, default, target)
        ├─► add_options(parser): the pytest options --ruler-<name> and ini keys ruler_<name>
        ├─► spec_default(name): the typed value when nothing sets the option: its default, else
        │   the default preset's value, through its parser. The defaults of the option fields
        │   of RulerConfig (run_config) and MapReduceConfig (mapreduce.pipeline) are spec_default(...),
        │   so a default is written once, in OPTIONS, and the plugin, the CLI's spec flags
        │   (cli.SPEC_FLAGS) and a config built in code agree.
        └─► plugin.config.build_config(pytest_config): for each option, the command line, else
            the ini key (``lookup``), else the preset, else the default, through the option's
            parser (which names the parameter as the user wrote it, the value and the fix),
            into its target: a RulerConfig field ("run"), a MapReduceConfig field ("mapreduce")
            or an engine option ("engine").
            A preset (``PRESETS``) may also set flags: ``long`` turns on
            --ruler-sequential and --ruler-ci.

Every option ``--ruler-<name>`` is also an ini key ``ruler_<name>`` (the option
wins); flags are typed bool ini keys, and every other ini value goes through the
same parser as the option, so ``ruler_samples = many`` is refused like
``--ruler-samples=many`` (the message names ``ruler_samples``). Nothing here
loads a model; a bad value raises one :class:`~pytest_ruler.errors.RulerUsageError`.

Importing this module is cheap (the plugin's entry module does, for every pytest run): the spec is
data and it imports only :mod:`.errors`, :mod:`.parsers` and :mod:`.lengths`; the engines' options
are a table (``ENGINE_FLAGS``, kept equal to their declarations by a unit test); their coercion,
``--ruler-shard``'s parser and ``plugin.config`` are imported when a value is read (suite active).

``pytest --help`` shows the options in groups (``GROUPS``: selection, gate and baseline, engine,
outputs, data, map-reduce, thinking, scale-out), each with an upper-case metavar (``NAME``, ``N``,
``LEN``, ``PATH``) and its default (``shown_default``); ``docs_gen`` writes the options page
(docs/reference/options.md) from the same data.

Public names: ``DEFAULT_PRESET``, ``ENGINE_FLAGS``, ``GROUPS``, ``OPTIONS``, ``Option``, ``PRESETS``,
``add_options``, ``argparse_help``, ``early_value``, ``is_active``, ``lookup``, ``option``,
``option_dest``, ``raw_value``, ``shown_default``, ``spec_default``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from .errors import RulerUsageError
from .parsers import (
    Parser,
    parse_arms,
    choice,
    integer,
    parse_base_urls,
    parse_confidence,
    parse_depths,
    parse_device,
    parse_dtype,
    parse_flag,
    parse_key_values,
    parse_length,
    parse_lengths,
    parse_not_flag,
    parse_path,
    parse_seeds,
    parse_significance,
    parse_marker,
    parse_template_kwargs,
    parse_text,
    parse_threshold,
)

__all__ = ["DEFAULT_PRESET", "ENGINE_FLAGS", "GROUPS", "OPTIONS", "PRESETS", "Option", "add_options", "argparse_help",
           "early_value", "is_active", "lookup", "option", "option_dest", "raw_value", "shown_default", "spec_default"]

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
    group: str | None = None  # its group in ``pytest --help`` (a key of GROUPS)
    shown: str | None = None  # the default shown when the option sets none itself (an engine's declared default)

    @property
    def field_name(self) -> str:
        return self.key or self.name.replace("-", "_")


def _engine_parser(cli: str) -> Parser:
    """The coercion of the declaration behind ``--ruler-<cli>`` (looked up when a value is read), naming the option."""

    def parse(where: str, raw: Any) -> Any:
        from .engines.options import cli_options
        declared = next(o for o in cli_options() if o.cli == cli)
        try:
            return declared.coerce(raw)
        except RulerUsageError:
            from .secrets import typed_value
            raise RulerUsageError(where, typed_value(raw), f"{declared.key} {declared.form()}") from None

    return parse


def _parse_margin(where: str, raw: Any) -> float:
    """``--ruler-noninferiority-margin``: points in [0, 100)."""
    try:
        margin = float(str(raw).strip())
    except ValueError:
        margin = -1.0
    if not 0.0 <= margin < 100.0:
        raise RulerUsageError(where, raw, "give the margin in points, in [0, 100), e.g. 5: an arm must score at least "
                              "the reference's score minus 5 points in every cell")
    return margin


def _parse_shard(where: str, raw: Any) -> Any:
    """``--ruler-shard``'s parser (:func:`pytest_ruler.shard.parse_shard`), imported when a value is read."""
    from .shard import parse_shard
    return parse_shard(where, raw)


#: the groups of ``pytest --help``, in order: (key, title)
GROUPS: tuple[tuple[str, str], ...] = (
    ("selection", "pytest-ruler: model and selection (what to run)"),
    ("gate", "pytest-ruler: gate and baseline (what decides the run and its exit code)"),
    ("engine", "pytest-ruler: engine (how the model runs)"),
    ("outputs", "pytest-ruler: outputs (report, tables, plots, prediction cache)"),
    ("data", "pytest-ruler: data (haystacks and question sets; `pytest-ruler download`)"),
    ("mapreduce", "pytest-ruler: map-reduce (chunked inference)"),
    ("thinking", "pytest-ruler: thinking models"),
    ("scale-out", "pytest-ruler: scale-out (several servers, GPUs, machines)"),
)

#: the engines' top-level options (``EngineOption.cli``) as data, so declaring the options loads no engine: (cli, key,
#: declared default, group, metavar, help in ``pytest --help``); tests/unit/test_options.py keeps it equal to
#: ``engines.options.cli_options()`` (names, keys, defaults, order); the declaration coerces (``_engine_parser``)
ENGINE_FLAGS: tuple[tuple[str, str, Any, str, str, str], ...] = (
    ("tensor-parallel-size", "tensor_parallel_size", 1, "scale-out", "N", "GPUs per engine, one tensor shard each (vllm, ray); "
     "it can change the numbers, so a run with another size does not reuse cached predictions"),
    ("gpu-memory-utilization", "gpu_memory_utilization", 0.9, "engine", "FRACTION", "share of each GPU's memory vLLM may take "
     "(weights, activations and KV cache): one engine per GPU; vLLM's CPU build: share of RAM, used when no KV cache size is given"),
    ("hf-overrides", "hf_overrides", None, "engine", "JSON", "JSON object of Hugging Face config overrides, passed to vLLM as is"),
    ("max-concurrency", "concurrency", 8, "scale-out", "N", "requests in flight per server (--ruler-base-url), at most 1024; "
     "with xdist, per server for the whole run"),
)


def _engine_cli_options() -> tuple[Option, ...]:
    """Top-level options that engines declare (``ENGINE_FLAGS``), e.g. vllm's --ruler-tensor-parallel-size."""
    return tuple(Option(cli, text, _engine_parser(cli), metavar=metavar, target="engine", key=key, group=group,
                        shown=None if default is None else f"{default} (the engine's)")
                 for cli, key, default, group, metavar, text in ENGINE_FLAGS)


# Each option's group in ``pytest --help`` (GROUPS, in this order); help texts are for users: what the option
# does, its values and its default, no internal names.
_OPTIONS: tuple[Option, ...] = (
    # selection: what to run
    Option("model", "model to test: Hugging Face id, local folder, .gguf file or alias (smollm2-135m, gemma3-270m); "
           "giving it adds the standard suite to the run", metavar="NAME", group="selection"),
    Option("preset", "bundle of tasks, lengths and samples: smoke (minutes on a CPU), ci, long (retrieval and tracking at "
           "4K-32K, 20 samples, sequential stopping and error bars on), paper (13 tasks, 4K-128K, 500 samples), ruler2 (RULERv2's 12 tasks, 4K-32K, 100 samples)",
           choice("smoke", "ci", "long", "paper", "ruler2"), "ci", metavar="NAME", group="selection"),
    Option("tasks", "task names, globs (niah_*), pack names (ruler2) or all, comma-separated; `pytest-ruler tasks` "
           "lists them", metavar="LIST", group="selection"),
    Option("lengths", "target lengths in tokens, comma-separated, e.g. 4k,8k,16384 (k = 1024)", parse_lengths, metavar="LIST", group="selection"),
    Option("samples", "samples per item (task x length x seed)", integer(1), metavar="N", group="selection"),
    Option("seeds", "seeds: a count N (seeds 0 to N-1) or a comma-separated list", parse_seeds, "1", metavar="N", group="selection"),
    Option("depths", "needle depths swept over each item's samples (niah, vt and qa tasks): fractions, e.g. 0,0.25,0.5,0.75,1",
           parse_depths, metavar="LIST", group="selection"),
    Option("only", "run only the RULER items, not the other collected tests", parse_flag, flag=True, group="selection"),
    Option("no-suite", "leave the standard suite out: run only your own tests, with the plugin configured", parse_flag, flag=True, group="selection"),
    # gate and baseline: what decides the run
    Option("threshold", "pass mark in [0, 100) for items and the effective length: a score passes when it is above it; "
           "rel:F (e.g. rel:0.85): above F times the model's own score at the shortest tested length", parse_threshold, "85.6", metavar="SCORE", group="gate"),
    Option("require-effective-length", "release gate: the run fails if the effective length is below LEN (e.g. 64k)",
           parse_length, metavar="LEN", key="required_effective_length", group="gate"),
    Option("require-mapreduce-effective-length", "release gate for map-reduce (chunked) inference: the run fails if its "
           "effective length is below LEN; turns on --ruler-mapreduce", parse_length, metavar="LEN", key="required_mapreduce_effective_length", group="gate"),
    Option("gate-confidence", "gate on the effective length's lower confidence bound at this level (e.g. 0.95) instead of "
           "its point estimate", parse_confidence, metavar="LEVEL", group="gate"),
    Option("baseline", "an earlier JSON report (--ruler-report): the run fails on a statistically significant drop against it",
           parse_path, metavar="PATH", group="gate"),
    Option("baseline-alpha", "significance level of the baseline comparison", parse_significance, "0.05", metavar="ALPHA", group="gate"),
    Option("baseline-test", "test of the baseline comparison: two-proportion-z or fisher (one-sided, Holm-corrected)",
           choice("two-proportion-z", "fisher"), "two-proportion-z", metavar="NAME", group="gate"),
    Option("arm", "an engine configuration run on the same samples, NAME:KEY=VALUE,... (repeatable; the first arm is the "
           "reference); keys: backend, dtype, base_url, model, max_model_len and engine options, e.g. "
           "--ruler-arm=ref --ruler-arm=cand:dtype=bfloat16", parse_arms, metavar="ARM", key="arms", group="gate"),
    Option("noninferiority-margin", "non-inferiority margin in points: each arm (and a --ruler-baseline run) passes only where it "
           "is shown to score at least the reference minus D (paired one-sided test per cell, Holm-corrected); without it, "
           "the run fails on a significant drop", _parse_margin, metavar="D", group="gate"),
    Option("sequential", "stop an item's samples early once its pass or fail is statistically settled (an anytime-valid test)", parse_flag, flag=True, group="gate"),
    Option("stop-when-decided", "measure only what the gate's verdict needs, in the order that decides it soonest, and stop once it is "
           "decided (items not needed are skipped: not measured)", parse_flag, flag=True, group="gate"),
    # engine: how the model runs
    Option("backend", "engine: auto (vllm where it can run here: a visible GPU, or vLLM's CPU build installed; else hf), hf, "
           "vllm, openai, ray (vLLM in Ray Data; not tested in CI), scripted (a rule-based stand-in for plumbing tests, not a model), or a "
           "registered name", default="auto", metavar="NAME", group="engine"),
    Option("base-url", "OpenAI-compatible server URL, e.g. http://127.0.0.1:8000/v1 (API key from env RULER_API_KEY); give "
           "it several times (ini: one per line) for several servers of the same model: requests are spread over them, the "
           "samples of one item on one server, and a server that dies mid-run hands its requests to the others", parse_base_urls, metavar="URL", group="engine"),
    Option("tokenizer", "tokenizer that measures the lengths (default: the model's own)", metavar="NAME", group="engine"),
    Option("chat-template", "prompt template: auto (the model's own chat template), none (RULER's base template) or a "
           "Jinja file", default="auto", metavar="TEMPLATE", group="engine"),
    Option("dtype", "model dtype: auto, float32, bfloat16 or float16", parse_dtype, "auto", metavar="DTYPE", group="engine"),
    Option("device", "hf engine device: auto, cpu, cuda or cuda:N", parse_device, "auto", metavar="DEVICE", group="engine"),
    Option("max-model-len", "raise the engine's context limit to LEN (prompts are never truncated)", parse_length, metavar="LEN", group="engine"),
    Option("batch-size", "requests per engine batch (default: hf 4 on CPU, 8 on CUDA; the engine's own otherwise)", integer(1), metavar="N", group="engine"),
    Option("batch-items", "the most items whose prompts go into one engine call (the running item and those after it "
           "in this process); 1: one item at a time", integer(1), "16", metavar="N", group="engine"),
    Option("trust-remote-code", "allow the model's own code from the Hugging Face Hub to run", parse_flag, flag=True, group="engine"),
    Option("engine-option", "an engine option KEY=VALUE, repeatable or comma-separated (e.g. tensor_parallel_size=2)",
           lambda where, raw: parse_key_values(raw, where), metavar="KEY=VALUE", key="engine_options", group="engine"),
    # outputs: what the run writes
    Option("report", "write the JSON report here (its format: `pytest-ruler schema`)", parse_path, metavar="PATH", group="outputs"),
    Option("markdown", "write the Markdown table here", parse_path, metavar="PATH", group="outputs"),
    Option("plots", "write PNG plots (score by length; depth by length) into this folder", parse_path, metavar="DIR", group="outputs"),
    Option("html", "write the run's page here: one self-contained HTML file (opens offline) with the verdict, Table 3 with "
           "intervals, the charts and every sample's prediction (filter by task, length, right/wrong); needs matplotlib: "
           'pip install "pytest-ruler[plot]"', parse_path, metavar="PATH", group="outputs"),
    Option("ci", "show each score's 95% interval (score+a/-b) in the terminal and Markdown tables", parse_flag, flag=True, key="show_ci", group="outputs"),
    Option("cache-dir", "prediction cache folder (default: $RULER_PREDICTIONS_DIR, else a per-user cache folder; "
           "pytest --cache-clear keeps it)", parse_path, metavar="DIR", group="outputs"),
    Option("no-cache", "neither read nor write the prediction cache", parse_flag, flag=True, group="outputs"),
    Option("record", "save each item's samples (token ids, text, answers, hashes, generator settings) into this folder: a "
           "manifest.json and one JSON Lines file per item, each put in place when its item finishes; --ruler-replay runs them again",
           parse_path, metavar="DIR", group="outputs"),
    Option("replay", "run exactly the samples recorded in this folder (--ruler-record), generating nothing: the items are the "
           "recorded ones, and this run's tokenizer must reproduce the recorded token ids (refused at start otherwise)",
           parse_path, metavar="DIR", group="selection"),
    Option("history", "add each complete run's report to this history folder (one file per run and an index; "
           "`pytest-ruler history DIR --html OUT` draws the trend); an incomplete or interrupted run is not added",
           parse_path, metavar="DIR", group="outputs"),
    Option("label", "the run's label in the report and the history folder (default: `git describe --always --dirty` "
           "of the working directory, else the UTC date and time)", metavar="TEXT", group="outputs"),
    # data: the tasks' input files (`pytest-ruler download ...`)
    Option("essays", "essay haystack: a .txt file, a folder of .txt files, or RULER's JSON (`pytest-ruler download essays`)", metavar="PATH", group="data"),
    Option("squad", "SQuAD v2 dev JSON, for qa_1 (`pytest-ruler download squad`)", metavar="PATH", group="data"),
    Option("hotpotqa", "HotpotQA dev distractor JSON, for qa_2 and the questions of RULERv2's qa tasks "
           "(`pytest-ruler download hotpotqa`)", metavar="PATH", group="data"),
    Option("mmlu", "MMLU folder for RULERv2's mk_niah/mv_niah easy and hard tasks: test/ and auxiliary_train/ CSV files, "
           "or test.jsonl and auxiliary_train.jsonl (`pytest-ruler download mmlu`)", metavar="DIR", group="data"),
    Option("hotpotqa-train", "HotpotQA train JSON (hotpot_train_v1.1.json): the haystack of RULERv2's qa tasks "
           "(`pytest-ruler download hotpotqa-train`)", metavar="PATH", group="data"),
    Option("mrcr", "OpenAI's MRCR records, for the mrcr tasks: a folder of its parquet files, one parquet file, or JSON Lines "
           "with the same fields (`pytest-ruler download mrcr`)", metavar="PATH", group="data"),
    # map-reduce: chunked inference (mapreduce.MapReduceConfig)
    Option("mapreduce", "also run each item through map-reduce (LLM x MapReduce) chunked inference, as a second item", parse_flag, flag=True, group="mapreduce"),
    Option("mapreduce-chunk", "document tokens per chunk", parse_length, "2k", metavar="LEN", target="mapreduce", key="chunk_tokens", group="mapreduce"),
    Option("mapreduce-overlap", "tokens repeated from one chunk at the start of the next", integer(0), "0", metavar="N",
           target="mapreduce", key="overlap", group="mapreduce"),
    Option("mapreduce-rounds", "the most collapse rounds before the least confident records are dropped", integer(0), "3",
           metavar="N", target="mapreduce", key="max_rounds", group="mapreduce"),
    Option("mapreduce-window", "tokens one call may use, prompt and output (default: the engine's context)", parse_length,
           metavar="LEN", target="mapreduce", key="window", group="mapreduce"),
    Option("mapreduce-no-verify", "keep values a chunk's answer claims even when they are not in that chunk's text "
           "(by default they are dropped: a filter against made-up values)", parse_not_flag, flag=True, target="mapreduce", key="verify", group="mapreduce"),
    Option("mapreduce-layout", "the map prompt's layout: few-shot (one filled record for a made-up part before the chunk), "
           "question-last, example-first or format-last; auto: few-shot for base prompts, question-last for chat prompts",
           choice("auto", "few-shot", "question-last", "example-first", "format-last"), "auto", metavar="NAME",
           target="mapreduce", key="layout", group="mapreduce"),
    Option("mapreduce-parallel", "requests per engine call (default: every call of a stage at once)", integer(1),
           metavar="N", target="mapreduce", key="parallel", group="mapreduce"),
    # thinking models (run.reasoning, engines.thinking)
    Option("think-budget", "thinking tokens on top of each task's answer budget: the model thinks for up to N tokens, "
           "then answers after RULER's answer prefix", integer(1), metavar="N", group="thinking"),
    Option("chat-template-kwargs", "KEY=VALUE passed to the chat template, repeatable (e.g. enable_thinking=false)",
           parse_template_kwargs, metavar="KEY=VALUE", group="thinking"),
    Option("think-start", "the text that opens a model's thinking", parse_marker, "<think>", metavar="TEXT", group="thinking"),
    Option("think-end", "the text that ends a model's thinking: the answer is what follows it", parse_marker, "</think>", metavar="TEXT", group="thinking"),
    # scale-out: past one machine (shard.py; merge the reports with `pytest-ruler merge`)
    Option("shard", "run only shard I of N (e.g. 2/4): the items whose test id hashes to it, whatever the order or -n; "
           "merge the shards' reports with `pytest-ruler merge`", _parse_shard, metavar="I/N", group="scale-out"),
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
    # RULERv2 (tasks.ruler2): its 12 tasks at the reference's 100 samples per task and length
    "ruler2": {"tasks": "ruler2", "lengths": "4k,8k,16k,32k", "samples": "100"},
}


_BY_NAME: dict[str, Option] = {o.name: o for o in OPTIONS}
REPEATABLE = ("engine-option", "chat-template-kwargs", "base-url", "arm")  # options given several times (argparse append)


def option(name: str) -> Option:
    """The option ``--ruler-<name>`` of the spec."""
    try:
        return _BY_NAME[name]
    except KeyError:
        raise RulerUsageError("option", name, f"not an option of the spec; one of {', '.join(_BY_NAME)}") from None


def spec_default(name: str) -> Any:
    """The typed value of ``--ruler-<name>`` when nothing sets it: the option's default, else the
    default preset's value, through the option's parser; a flag not given is its parser's
    value of ``False``; None when the option has no default (see the module docstring)."""
    opt = option(name)
    raw = opt.default
    if raw is None and name != "preset":
        raw = PRESETS[DEFAULT_PRESET].get(name)
    if raw is None and opt.flag:
        raw = False
    return None if raw is None else opt.parse(f"--ruler-{name}", raw)


DEFAULT_PRESET: str = spec_default("preset")  # the preset option's default: its values are the defaults of tasks, lengths, samples


def option_dest(name: str) -> str:
    """The argparse dest and the ini key of ``--ruler-<name>``: ``ruler_<name>``."""
    return "ruler_" + name.replace("-", "_")


def argparse_help(text: str) -> str:
    """``text`` as argparse help: argparse %-formats help strings (``%(default)s``), so a
    literal ``%`` ("95% intervals") must be doubled or ``pytest --help`` crashes."""
    return text.replace("%", "%%")


def shown_default(opt: Option) -> str | None:
    """The default ``pytest --help`` and the options page show: the option's own, else the default
    preset's value (``the preset's (ci: 20)``); None for a flag (off unless given) or an option
    whose help says what happens without it."""
    if opt.flag:
        return None
    if opt.default is not None:
        return str(opt.default)
    if opt.shown is not None:
        return opt.shown
    preset = PRESETS[DEFAULT_PRESET].get(opt.name)
    return None if preset is None else f"the preset's ({DEFAULT_PRESET}: {preset})"


def add_options(parser: Any) -> None:
    """The options in their groups (``GROUPS``; ``pytest --help`` shows each group under its title),
    and their ini keys."""
    groups = {key: parser.getgroup(f"ruler-{key}", title) for key, title in GROUPS}
    for opt in OPTIONS:
        group = groups.get(opt.group or "") or parser.getgroup("ruler-other", "pytest-ruler: other options")
        if opt.flag:
            group.addoption(f"--ruler-{opt.name}", action="store_true", default=None, dest=option_dest(opt.name), help=argparse_help(opt.help))
            parser.addini(option_dest(opt.name), opt.help, type="bool", default=False)
        else:
            extra = {"action": "append"} if opt.name in REPEATABLE else {}
            default = shown_default(opt)
            shown = opt.help + (f" [default: {default}]" if default is not None else "")
            group.addoption(f"--ruler-{opt.name}", default=None, dest=option_dest(opt.name), metavar=opt.metavar, help=argparse_help(shown), **extra)
            parser.addini(option_dest(opt.name), opt.help, default=None)
    parser.addini("ruler_task_thresholds", "per-task pass marks, one 'task = score' per line", type="linelist", default=[])


def lookup(config: Any, name: str) -> tuple[Any, str]:
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
    return lookup(config, name)[0]


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
