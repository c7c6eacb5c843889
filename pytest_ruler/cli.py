"""The ``pytest-ruler`` command.

Sub-commands (names fixed by the user contract):

- ``generate --task T --length L --samples N --seed S --tokenizer NAME --out F.jsonl``
  writes RULER-format JSONL (``index``, ``input``, ``outputs``, ``length``,
  ``answer_prefix`` and our metadata); base template unless ``--chat-template``;
  ``--out -`` writes the lines to stdout (every line names its ``task``).
- ``score --task T PRED.jsonl``: reads lines with ``pred`` and ``outputs`` and
  prints the task's RULER metric (``--metric`` overrides it).
- ``download essays|squad|hotpotqa|mmlu|hotpotqa-train|mrcr``: fetches the paper's data (and
  RULERv2's) when online.
- ``report REPORT.json``: renders a saved run as Markdown and PNG plots, and prints
  the path of each file it wrote.
- ``html REPORT.json [--out PATH]``: the run's page, one self-contained HTML file that opens offline
  (``pages.run_page``: the verdict, Table 3 with intervals, the charts, every sample); prints its path.
- ``gate REPORT.json --require-effective-length=LEN [--baseline OLD.json] [--threshold SCORE|rel:F]``: the
  plugin's gate on a saved report, with the plugin's exit codes (0 passed, 1 failed,
  2 not decided: an interrupted run, a shard's report, 4 usage error); on GitHub Actions it writes the
  step summary and annotations as the plugin does (``report.github.github_output``), so a job
  that gates a merged report (``merge``) gets the run's summary page. ``--threshold`` judges the
  saved items again under another mark, e.g. ``rel:0.85`` (``results.relative``).
- ``compare OLD.json NEW.json [--alpha A] [--test T] [--out FILE]``: a Markdown delta
  table for a PR comment (``report.compare``: per cell old and new score, change and
  significance by the baseline statistics; effective length old → new). Exits 0: it
  reports, it does not gate.
- ``merge SHARD.json ... --out MERGED.json [--partial] [--history DIR [--label TEXT]]``: the reports of ``--ruler-shard=i/N``
  runs into the whole run's report (``results.merge``: each read by the one reader; mixed
  runs, overlapping items and missing shards refused; the summary computed from the items);
  ``--history`` adds the merged run to a history folder as ``--ruler-history`` adds a run.
- ``history DIR [--html OUT] [--format github-action-benchmark [--out FILE]]``: a history folder
  (``--ruler-history=DIR``, ``merge --history DIR``) as a self-contained trend page, or the newest run of
  each group as github-action-benchmark's customBiggerIsBetter list; without either, the index rebuilt
  and the runs listed (``history.command``).
- ``cache info|clear [--cache-dir DIR] [--model NAME] [--yes]``: the prediction cache's folder,
  size and predictions per model; clearing all or one model's, asking first (``run.cache_command``).
- ``schema [--out FILE]``: prints the JSON Schema of the report (``report.schema``, shipped as
  package data).
- ``tasks``: lists the registered tasks and their families.
- ``--version``: prints ``pytest-ruler <version>``.

The parser (every argument's help and default, the flags made from the option spec) is
``cli_args``; this module holds what each command does (``COMMANDS``).

``gate``, ``compare`` and ``report`` read saved reports only through the one reader and check
(``results.saved.read_report``: types, the schema, and a summary that its items give), so a
damaged or edited report is one usage error, never a traceback or a verdict on numbers the
items do not give. Their flags that are plugin options (``SPEC_FLAGS``: ``--ci``,
``--require-effective-length``, ``--baseline-alpha`` as ``--alpha``, ...) are made from the
option spec (``options.OPTIONS``): help, default and parser are the option's.

Usage errors, argparse's own included, print one line, ``pytest-ruler: error: ...``, and
exit with 2 (4 for ``gate``); an argument that only a combination makes required says what is
missing (``gate: missing the gate: give --require-effective-length=LEN ...``).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any, Sequence

from .cli_args import GATE_USAGE_ERROR, SPEC_FLAGS, MissingArgument, spec_values as _spec_values
from .cli_args import build_parser as _build_parser
from .errors import RulerUsageError

__all__ = ["COMMANDS", "SPEC_FLAGS", "build_parser", "main"]


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _parse_arg(text: str) -> tuple[str, Any]:
    if "=" not in text:
        raise RulerUsageError("--arg", text, "write task arguments as key=value, e.g. --arg num_needle_k=8")
    key, raw = text.split("=", 1)
    try:
        value = json.loads(raw)
    except json.JSONDecodeError:
        value = raw
    return key.strip(), value


def _cmd_generate(ns: argparse.Namespace) -> int:
    from .tasks.chat import frame_for
    from .lengths import parse_length
    from .data.registry import data_kinds, missing_data
    from .tasks import GenerationContext, data_needs, iter_samples, resolve_tasks
    from .tasks.tokenizer import load_tokenizer

    length = parse_length(ns.length, "--length")
    specs = resolve_tasks(ns.task)
    overrides = dict(_parse_arg(a) for a in ns.arg or [])
    if ns.depth is not None:
        overrides["depth"] = [float(d) for d in ns.depth.split(",")] if "," in ns.depth else float(ns.depth)
    if overrides:
        if len(specs) != 1:
            raise RulerUsageError("--arg", ns.arg or ns.depth, "task arguments apply to one task; name a single --task")
        specs = [specs[0].with_args(**overrides)]
    if ns.samples < 1:
        raise RulerUsageError("--samples", ns.samples, "give a number of samples >= 1")
    many = len(specs) > 1
    to_stdout = ns.out == "-"
    out = Path(ns.out)
    if many and out.suffix == ".jsonl":
        raise RulerUsageError("--out", ns.out, "several tasks write one file each: pass a folder, e.g. --out out/ (or - for stdout)")
    t0 = time.perf_counter()
    tok = load_tokenizer(ns.tokenizer, trust_remote_code=ns.trust_remote_code)
    ctx = GenerationContext(tok, frame=frame_for(ns.chat_template, tok),
                            data={k.name: getattr(ns, k.generate_flag[2:].replace("-", "_"), None) for k in data_kinds() if k.generate_flag})
    for spec in specs:
        lacking = missing_data(data_needs(spec), ctx.data)  # what the task's family needs (data.registry)
        if many and lacking:
            k = lacking[0]
            get = f" (get it with `{k.download}`)" if k.download else ""
            print(f"skipped {spec.name}: needs {k.generate_flag or k.option}=PATH{get}", file=sys.stderr)
            continue
        samples = iter_samples(spec, length, samples=ns.samples, seed=ns.seed, ctx=ctx)
        if to_stdout:
            target: Any = "stdout"
            count = _write_jsonl(sys.stdout, samples)
            sys.stdout.flush()
        else:
            target = out / f"{spec.name}-{length}.jsonl" if many else out
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = target.with_name(target.name + ".part")
            with tmp.open("w", encoding="utf-8") as fh:
                count = _write_jsonl(fh, samples)
            tmp.replace(target)
        print(f"wrote {_plural(count, 'sample')} of {spec.name} at {length} tokens to {target} ({time.perf_counter() - t0:.1f}s)", file=sys.stderr)
    return 0


def _write_jsonl(fh: Any, samples: Any) -> int:
    count = 0
    for sample in samples:
        fh.write(json.dumps(sample.to_ruler_json(), ensure_ascii=False) + "\n")
        count += 1
    return count


def _read_predictions(path: Path) -> tuple[list[str], list[list[str]]]:
    if not path.is_file():
        raise RulerUsageError("PRED.jsonl", str(path), "no such file; pass a JSONL file with one {\"pred\": ..., \"outputs\": [...]} per line")
    preds, refs = [], []
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise RulerUsageError("PRED.jsonl", f"{path}:{lineno}", f"not JSON ({exc.msg}); each line must be an object with 'pred' and 'outputs'") from exc
        if not isinstance(row, dict) or "pred" not in row or "outputs" not in row:
            raise RulerUsageError("PRED.jsonl", f"{path}:{lineno}", "each line needs 'pred' (string) and 'outputs' (list of reference strings)")
        outputs = row["outputs"]
        if isinstance(outputs, str):
            outputs = [outputs]
        preds.append(str(row["pred"] if row["pred"] is not None else ""))
        refs.append([str(o) for o in outputs])
    if not preds:
        raise RulerUsageError("PRED.jsonl", str(path), "the file has no predictions")
    return preds, refs


def _cmd_score(ns: argparse.Namespace) -> int:
    from .results.scoring import count_nulls, get_metric

    if ns.metric:
        metric_name = ns.metric
    elif ns.task:
        from .tasks import get_task

        metric_name = get_task(ns.task).metric
    else:
        raise MissingArgument("score", "--task TASK (or --metric)", "name the task whose metric scores the predictions, "
                              "e.g. pytest-ruler score --task niah_single_1 PRED.jsonl, or pass --metric all|part")
    metric = get_metric(metric_name)
    preds, refs = _read_predictions(Path(ns.predictions))
    score = metric(preds, refs)
    full = {"all": "string_match_all", "part": "string_match_part"}[metric_name]
    result = {"task": ns.task, "metric": full, "score": round(score, 2), "samples": len(preds), "nulls": count_nulls(preds)}
    if ns.json:
        print(json.dumps(result))
    else:
        label = f"{ns.task} " if ns.task else ""
        print(f"{label}{full}: {score:.2f} (samples={len(preds)}, nulls={result['nulls']})")
    return 0


def _cmd_download(ns: argparse.Namespace) -> int:
    from .data.download import download

    path = download(ns.what, Path(ns.dest) if ns.dest else None)
    flag = f"--ruler-{ns.what}"
    print(f"{path}\nuse it with {flag}={path} (or --{ns.what}={path} for pytest-ruler generate)")
    return 0


def _cmd_report(ns: argparse.Namespace) -> int:
    from .report.render import render_report

    flags = _spec_values(ns, "report")
    _, written = render_report(ns.report, Path(ns.out) if ns.out else None, plots=not ns.no_plots, ci=flags["show_ci"])
    for path in written:
        print(path)
    return 0


def _cmd_html(ns: argparse.Namespace) -> int:
    from .pages.run_page import render_html

    print(render_html(ns.report, ns.out))
    return 0


def _read_report(path: str, parameter: str) -> Any:
    """The one reader of saved reports (``results.saved.read_report``), its errors naming ``parameter``."""
    from .results.saved import read_report

    return read_report(path, parameter)


def _has_arms(path: str) -> bool:
    """Whether the saved report at ``path`` has ``arms`` (--ruler-arm), which decide without another gate."""
    try:
        return bool(_read_report(path, "REPORT.json").field("arms"))
    except RulerUsageError:
        return False


def _cmd_gate(ns: argparse.Namespace) -> int:
    """The plugin's gate on a saved report: same verdict lines, same exit codes."""
    from .results import gate

    flags = _spec_values(ns, "gate")  # every flag checked before any file is read (a report with arms needs no other gate)
    required, mr_required = flags["required_effective_length"], flags["required_mapreduce_effective_length"]
    if required is None and mr_required is None and flags["baseline"] is None and not _has_arms(ns.report):  # arms decide alone
        raise MissingArgument("gate", "the gate", "give --require-effective-length=LEN (e.g. 64k), "
                              "--require-mapreduce-effective-length=LEN or --baseline OLD.json")
    report = _read_report(ns.report, "REPORT.json")
    if ns.threshold is not None:  # judged again under another mark (an absolute score, or rel:F): results.relative
        from .options import option
        from .results.relative import rejudge

        report = rejudge(report, option("threshold").parse("--threshold", ns.threshold))
    baseline = None
    if flags["baseline"] is not None:
        from .results.baseline import load_baseline

        baseline = load_baseline(ns.baseline, "--baseline")
    verdict = gate(report, required=required, mapreduce_required=mr_required, baseline=baseline, baseline_path=ns.baseline,
                   alpha=flags["baseline_alpha"], test=flags["baseline_test"], confidence=flags["gate_confidence"],
                   margin=flags["noninferiority_margin"])
    from .report.github import github_output  # on GitHub, as the plugin: the step summary and annotations

    github_output(report.with_fields(**verdict.fields, verdict=verdict.to_dict()), verdict.lines(), say=print)
    for text, _ in verdict.lines():  # one line per gate, the baseline's, then `ruler verdict: ...` last (as the plugin)
        print(text)
    return verdict.exit_status


def _cmd_compare(ns: argparse.Namespace) -> int:
    """A Markdown delta table of two saved reports, for a PR comment; reports, never gates."""
    from .report.compare import compare_markdown

    flags = _spec_values(ns, "compare")
    old, new = _read_report(ns.old, "OLD.json"), _read_report(ns.new, "NEW.json")
    text = compare_markdown(old, new, alpha=flags["baseline_alpha"], test=flags["baseline_test"],
                            old_name=Path(ns.old).name, new_name=Path(ns.new).name)
    return _emit(text, ns.out)


def _cmd_merge(ns: argparse.Namespace) -> int:
    """Shard reports (--ruler-shard=i/N) into the whole run's report (results.merge); gate, report and compare read it."""
    from .results.merge import merge_files

    merged = merge_files(ns.reports, partial=ns.partial)
    try:
        Path(ns.out).write_text(json.dumps(merged.to_dict(), indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    except OSError as exc:
        raise RulerUsageError("--out", ns.out, f"cannot write the file ({exc.strerror or exc})") from None
    shards = merged.field("shards")
    count = shards["count"]
    missing = ", ".join(f"{i}/{count}" for i in shards["missing"])
    note = f"; PARTIAL: missing {missing} (its gate is NOT DECIDED)" if missing else ""
    done = ", ".join(f"{i}/{count}" for i in shards["merged"])
    print(f"merged shards {done}: {_plural(len(merged.items), 'item')} -> {ns.out}{note}")
    if ns.history is not None:  # the merged run into the history folder (history.store; a partial merge is refused)
        from .history.command import add_after_merge

        print(f"added to the history: {add_after_merge(merged, ns.history, ns.label)}")
    return 0


def _cmd_history(ns: argparse.Namespace) -> int:
    """A history folder's trend page (--html), its chart-action export (--format), or its runs listed."""
    from .history.command import history_command

    return history_command(ns.folder, html=ns.html, fmt=ns.fmt, out=ns.out)


def _cmd_tasks(ns: argparse.Namespace) -> int:
    from .tasks import get_task, task_names

    for name in task_names():
        spec = get_task(name)
        args = ", ".join(f"{k}={v}" for k, v in spec.args.items())
        print(f"{name:<18} {spec.family:<24} gen={spec.tokens_to_generate:<4} metric={spec.metric:<5} {args}")
    return 0


def _cmd_schema(ns: argparse.Namespace) -> int:
    """The report's JSON Schema (package data, ``report.schema``): to stdout or a file."""
    from .report.schema import report_schema, schema_text

    text = schema_text(report_schema())
    return _emit(text, ns.out)


COMMANDS = {"generate": _cmd_generate, "score": _cmd_score, "download": _cmd_download, "report": _cmd_report, "gate": _cmd_gate,
            "compare": _cmd_compare, "merge": _cmd_merge, "schema": _cmd_schema, "tasks": _cmd_tasks, "html": _cmd_html,
            "history": _cmd_history}


def build_parser() -> argparse.ArgumentParser:
    """The command line (``cli_args.build_parser``) wired to this module's commands."""
    return _build_parser(COMMANDS)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    ns = parser.parse_args(argv)
    try:
        return ns.func(ns)
    except RulerUsageError as exc:
        print(f"pytest-ruler: error: {exc}", file=sys.stderr)
        return GATE_USAGE_ERROR if ns.command == "gate" else 2


def _emit(text: str, out: str | None) -> int:
    """A command's text to stdout (``--out`` unset or ``-``) or to the ``--out`` file, whose path is printed."""
    if out in (None, "-"):
        sys.stdout.write(text)
        return 0
    try:
        Path(out).write_text(text, encoding="utf-8")
    except OSError as exc:
        raise RulerUsageError("--out", out, f"cannot write the file ({exc.strerror or exc})") from None
    print(out)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
