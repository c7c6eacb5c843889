"""The pytest options and ini keys read into a validated RulerConfig, once, at start-up.

    pytest config ──build_config(config)──► RulerConfig (run_config.RulerConfig; its
        mapreduce_config a mapreduce.MapReduceConfig, its engine_options typed by the
        resolved engine's declarations)
        1. read_options: per option of the spec (options.OPTIONS) the command line, else the
           ini key (options.lookup), else the preset, else the option's default, through the
           option's parser, which names the parameter as the user wrote it
        2. each value into its target: a RulerConfig field, a MapReduceConfig field or an
           engine option; the per-task marks from the ini key ruler_task_thresholds (over a pack's
           documented defaults, ``tasks.mrcr.PACK_MARKS``, which apply unless --ruler-threshold is given)
        3. the checks that span options, or look at files and registries

The defaults are the spec's (``options.spec_default``); nothing here declares one. This
module lives beside the hooks, not in ``options``, because it imports the engines' registry,
the tasks and map-reduce, which the option spec must not (``mapreduce.MapReduceConfig``
reads its defaults from the spec). A bad value raises one
:class:`~pytest_ruler.errors.RulerUsageError`.

Public names: ``build_config``, ``read_options``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..engines import resolve_backend
from ..engines.gpus import tensor_parallel_size
from ..engines.options import coerce_engine_options, declared_options
from ..errors import RulerUsageError
from ..mapreduce import MapReduceConfig
from ..options import DEFAULT_PRESET, OPTIONS, PRESETS, lookup, option, raw_value
from ..run_config import RulerConfig
from ..run.replay import replay_settings
from ..parsers import parse_score
from ..tasks import get_task, resolve_tasks

__all__ = ["build_config", "read_options"]


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
        get_task(task)  # a misspelt task name is an error, not a silently unused threshold
        out[task] = parse_score(f"ruler_task_thresholds[{task}]", raw)
    return out


def _pack_marks(run: dict[str, Any], config: Any, tasks: Any) -> dict[str, float]:
    """A pack's documented default marks for its tasks in the run (the MRCR pack's: ``tasks.mrcr.PACK_MARKS``),
    unless --ruler-threshold (or its ini key) gives the mark; ruler_task_thresholds overrides them."""
    if raw_value(config, "threshold") is not None or not isinstance(run.get("threshold"), (int, float)):
        return {}
    from ..tasks.mrcr import PACK_MARKS

    return {t: m for t, m in PACK_MARKS.items() if t in tasks}


def _check_relative(run: dict[str, Any], config: Any) -> None:
    """rel:F resolves against the run's own base score at its end: absolute per-task marks and
    sequential stopping (which stops an item against its mark while it runs) cannot go with it."""
    mark = run.get("threshold")
    if isinstance(mark, (int, float)):
        return
    if config.getini("ruler_task_thresholds"):
        raise RulerUsageError("ruler_task_thresholds", config.getini("ruler_task_thresholds"),
                              f"per-task marks are absolute scores; with --ruler-threshold={mark} each task is judged "
                              "against its own score at the shortest tested length: drop one of the two")
    if run.get("sequential"):
        raise RulerUsageError("--ruler-sequential", True, f"sequential stopping stops an item against its mark while it runs, and "
                              f"--ruler-threshold={mark} is resolved at the run's end; use an absolute threshold, or run "
                              "without --ruler-sequential (and not the long preset, which turns it on)")


def read_options(config: Any) -> dict[str, Any]:
    """Every option's typed value: command line, ini, preset, default (a flag not given: its parser's
    value of False; None when unset and without a default)."""
    preset_raw, where = lookup(config, "preset")
    preset = PRESETS[option("preset").parse(where, preset_raw or DEFAULT_PRESET)]
    values: dict[str, Any] = {}
    for opt in OPTIONS:
        raw, where = lookup(config, opt.name)
        if raw is None:
            raw = preset.get(opt.name, opt.default)
        if raw is None and opt.flag:
            raw = False
        values[opt.name] = None if raw is None else opt.parse(where, raw)
    return values


def _tasks(config: Any, selection: Any) -> tuple[str, ...]:
    """The selected tasks' names; an unknown name is refused naming the option (or ini key) it came from."""
    try:
        return tuple(t.name for t in resolve_tasks(str(selection)))
    except RulerUsageError as exc:
        where = lookup(config, "tasks")[1] if raw_value(config, "tasks") is not None else "--ruler-preset"
        raise RulerUsageError(where, exc.value, exc.fix) from None


def build_config(config: Any) -> RulerConfig:
    """Read options and ini keys into a validated RulerConfig (raises RulerUsageError)."""
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
    if run["only"] and run["no_suite"]:
        raise RulerUsageError("--ruler-no-suite", True, "--ruler-only runs just the standard suite and --ruler-no-suite "
                              "leaves it out, so together nothing would run: drop one of the two options")
    chat = run["chat_template"]
    if chat not in ("auto", "none", "base") and not Path(chat).expanduser().is_file():
        raise RulerUsageError("--ruler-chat-template", chat, "use auto (the model's own), none (base prompts) or a path to a Jinja file")
    if run.get("chat_template_kwargs") and chat in ("none", "base"):
        raise RulerUsageError("--ruler-chat-template-kwargs", raw_value(config, "chat-template-kwargs"),
                              f"--ruler-chat-template={chat} renders no chat template, so these would go unused: "
                              "use --ruler-chat-template=auto (the model's own) or a Jinja file, or drop them")
    if run["think_start"] == run["think_end"]:
        raise RulerUsageError("--ruler-think-end", run["think_end"], "the end of the thinking must differ from its start (--ruler-think-start)")
    if run.get("baseline") is not None and not run["baseline"].is_file():
        raise RulerUsageError("--ruler-baseline", raw_value(config, "baseline"), "no such file; pass a JSON report written earlier with --ruler-report")
    if run.get("noninferiority_margin") is not None and not run.get("arms") and run.get("baseline") is None:
        raise RulerUsageError("--ruler-noninferiority-margin", raw_value(config, "noninferiority-margin"),
                              "a margin compares something with a reference: add --ruler-arm (twice or more) or --ruler-baseline")
    _check_relative(run, config)
    tasks = _tasks(config, run["tasks"])
    run.update(
        model=str(run["model"]),
        tasks=tasks,
        lengths_given=raw_value(config, "lengths") is not None,
        task_thresholds={**_pack_marks(run, config, tasks), **_task_thresholds(config)},
        engine_options=engine,
        mapreduce=bool(run.get("mapreduce")) or run.get("required_mapreduce_effective_length") is not None,
        mapreduce_config=mapreduce,
    )
    if run.get("replay") is not None:  # the recorded tasks, lengths, seeds, samples, depths (run.replay)
        run.update(replay_settings(run, lambda name: raw_value(config, name)))
    return RulerConfig(**run)
