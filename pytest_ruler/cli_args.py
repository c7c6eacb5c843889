"""The ``pytest-ruler`` command line: its parser, the flags made from the option spec, and the usage errors.

    build_parser(commands) ──► the argparse parser; ``commands`` maps each sub-command to the function
        that runs it (``cli``). Every argument has a help text and shows its default; argparse's own
        errors are one line, ``pytest-ruler: error: ... (see pytest-ruler CMD --help)``
    SPEC_FLAGS ──► the flags of gate, compare and report that are plugin options (``options.OPTIONS``):
        help, metavar, shown default and parser are the option's; spec_values(ns, command) types them
    MissingArgument(command, parameter, fix) ──► "CMD: missing PARAMETER: FIX", the usage error of an
        argument that only a combination makes required (gate needs a gate; score a task or a metric)

Public names: ``GATE_USAGE_ERROR``, ``MissingArgument``, ``SPEC_FLAGS``, ``build_parser``, ``spec_values``.
"""

from __future__ import annotations

import argparse
from typing import Any, Callable, Mapping

from . import __version__
from .errors import RulerUsageError

__all__ = ["GATE_USAGE_ERROR", "MissingArgument", "SPEC_FLAGS", "build_parser", "spec_values"]

GATE_USAGE_ERROR = 4  # the plugin's exit codes: 0 passed, 1 failed, 2 not decided (interrupted), 4 usage error

DESCRIPTION = """\
RULER long-context tests outside a pytest run: write RULER data and score predictions for other
harnesses, and read, gate, compare and merge the JSON reports that `pytest --ruler-report` writes.
The tests themselves run under pytest: pytest --ruler-model=smollm2-135m (see `pytest --help`)."""

EPILOG = """\
examples:
  pytest-ruler gate ruler.json --require-effective-length=64k      # a release gate in CI (exit 0/1/2/4)
  pytest-ruler compare old.json new.json --out delta.md            # a PR comment
  pytest-ruler generate --task niah_single_1 --length 4k --out niah.jsonl
each command has its own --help."""

#: the flags of gate, compare and report that are the plugin's options (``options.OPTIONS``):
#: (the option's name without --ruler-, the flag's name here); help, metavar, default and
#: parser are the option's, and a bad value is refused naming the flag
SPEC_FLAGS: dict[str, tuple[tuple[str, str], ...]] = {
    "gate": (("require-effective-length", "require-effective-length"),
             ("require-mapreduce-effective-length", "require-mapreduce-effective-length"),
             ("baseline", "baseline"), ("baseline-alpha", "baseline-alpha"), ("baseline-test", "baseline-test"),
             ("gate-confidence", "confidence"), ("threshold", "threshold"), ("noninferiority-margin", "noninferiority-margin")),
    "compare": (("baseline-alpha", "alpha"), ("baseline-test", "test")),
    "report": (("ci", "ci"),),
}


class MissingArgument(RulerUsageError):
    """An argument a command needs in this combination: ``CMD: missing PARAMETER: FIX``."""

    def __init__(self, command: str, parameter: str, fix: str) -> None:
        super().__init__(parameter, None, fix)
        self.args = (f"{command}: missing {parameter}: {fix}",)


class _Formatter(argparse.HelpFormatter):
    """Every argument's help ends with its default (unless it says it, or there is none to say)."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        nothing = action.default is None or action.default is False or action.default == argparse.SUPPRESS  # (0 is a default)
        if "default" in text or nothing:  # --version's default is SUPPRESS
            return text
        return f"{text} (default: %(default)s)"


    def _split_lines(self, text: str, width: int) -> list[str]:
        import textwrap

        return textwrap.wrap(" ".join(text.split()), width, break_on_hyphens=False)  # --ruler-... stays whole

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        import textwrap

        return textwrap.fill(" ".join(text.split()), width, initial_indent=indent, subsequent_indent=indent, break_on_hyphens=False)


class _Raw(argparse.RawDescriptionHelpFormatter, _Formatter):
    """The top-level help: its description and examples as written."""


class _Parser(argparse.ArgumentParser):
    """argparse's usage errors in this module's one-line shape (``gate`` exits with its usage code)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _Formatter)
        super().__init__(*args, **kwargs)

    def add_subparsers(self, **kwargs: Any) -> Any:
        action = super().add_subparsers(**kwargs)
        self.command_actions = [*getattr(self, "command_actions", []), action]  # build_parser names them by their choices
        return action

    def error(self, message: str) -> Any:
        code = GATE_USAGE_ERROR if self.prog.endswith(" gate") else 2
        self.exit(code, f"pytest-ruler: error: {message} (see {self.prog} --help)\n")


def _option(name: str) -> Any:
    from .options import option

    return option(name)


def _add_spec_flags(parser: argparse.ArgumentParser, command: str) -> None:
    from .options import argparse_help, shown_default

    for name, flag in SPEC_FLAGS[command]:
        opt = _option(name)
        same = f"as --ruler-{opt.name}"
        if opt.flag:
            parser.add_argument(f"--{flag}", action="store_true", default=None, help=argparse_help(f"{opt.help} ({same})"))
        else:
            default = shown_default(opt)
            shown = f"; default: {default}" if default is not None else ""
            metavar = "OLD.json" if name == "baseline" else opt.metavar or "NAME"
            parser.add_argument(f"--{flag}", metavar=metavar, help=argparse_help(f"{opt.help} ({same}{shown})"))


def spec_values(ns: argparse.Namespace, command: str) -> dict[str, Any]:
    """The command's spec flags, typed by their options' parsers: {the option's field: value}; a flag
    not given is its option's default (``options.spec_default``, as the plugin's)."""
    from .options import spec_default

    out = {}
    for name, flag in SPEC_FLAGS[command]:
        opt = _option(name)
        raw = getattr(ns, flag.replace("-", "_"))
        out[opt.field_name] = spec_default(name) if raw is None else opt.parse(f"--{flag}", raw)  # checked before files are read
    return out


def build_parser(commands: Mapping[str, Callable[[argparse.Namespace], int]]) -> argparse.ArgumentParser:
    """The parser; ``commands[name]`` runs sub-command ``name`` (set as ``ns.func``)."""
    p = _Parser(prog="pytest-ruler", description=DESCRIPTION, epilog=EPILOG, formatter_class=_Raw)
    p.add_argument("--version", action="version", version=f"pytest-ruler {__version__}", help="print pytest-ruler's version")
    sub = p.add_subparsers(dest="command", required=True, title="commands", metavar="COMMAND", parser_class=_Parser)

    g = sub.add_parser("generate", help="write RULER-format JSONL samples (for other harnesses)",
                       description="Write RULER-format JSONL: one object per sample with index, input, outputs, length and "
                                   "answer_prefix (RULER's base template unless --chat-template says otherwise).")
    g.add_argument("--task", required=True, help="a task, a comma-separated list, a glob (niah_*) or all")
    g.add_argument("--length", required=True, help="target length in tokens: 4096, 4k, 128k (k = 1024)")
    g.add_argument("--samples", type=int, default=10, metavar="N", help="samples per task")
    g.add_argument("--seed", type=int, default=0, metavar="N", help="seed: the same seed writes the same samples")
    g.add_argument("--tokenizer", default="smollm2-135m", metavar="NAME", help="tokenizer that measures the length: an alias, "
                   "a .gguf file, a folder or a Hugging Face id")
    g.add_argument("--out", required=True, metavar="PATH", help="F.jsonl for one task; a folder for several; - for stdout")
    g.add_argument("--chat-template", default="none", metavar="TEMPLATE", help="none (RULER's base template), auto (the "
                   "tokenizer's chat template) or a Jinja file")
    g.add_argument("--essays", metavar="PATH", help="essay haystack: a .txt file, a folder of .txt files, or RULER's JSON "
                   "(default: CPython's own reference prose, offline; the paper's: `pytest-ruler download essays`)")
    g.add_argument("--squad", metavar="PATH", help="SQuAD v2 dev JSON, for qa_1 (no default: `pytest-ruler download squad`)")
    g.add_argument("--hotpotqa", metavar="PATH", help="HotpotQA dev distractor JSON, for qa_2 (no default: "
                   "`pytest-ruler download hotpotqa`)")
    g.add_argument("--mmlu", metavar="DIR", help="MMLU folder, for RULERv2's MMLU tasks (no default: `pytest-ruler download mmlu`)")
    g.add_argument("--hotpotqa-train", metavar="PATH", help="HotpotQA train JSON, for RULERv2's qa tasks (no default: "
                   "`pytest-ruler download hotpotqa-train`)")
    g.add_argument("--mrcr", metavar="PATH", help="OpenAI's MRCR records, for the mrcr tasks: a folder of parquet files, one "
                   "parquet file or JSON Lines (no default: `pytest-ruler download mrcr`)")
    g.add_argument("--depth", metavar="DEPTH", help="needle depth in [0, 1], or a comma-separated list swept over the "
                   "samples (default: the task's own)")
    g.add_argument("--arg", action="append", metavar="KEY=VALUE", help="override a task argument, repeatable "
                   "(default: the task's arguments; `pytest-ruler tasks` lists them)")
    g.add_argument("--trust-remote-code", action="store_true", help="allow a Hugging Face tokenizer's own code to run")

    s = sub.add_parser("score", help="score predictions with a RULER metric",
                       description="Score a JSONL file of predictions with the task's RULER metric (or --metric).")
    s.add_argument("predictions", metavar="PRED.jsonl", help="one {\"pred\": ..., \"outputs\": [...]} object per line")
    s.add_argument("--task", metavar="TASK", help="the task whose metric scores the predictions (or give --metric)")
    s.add_argument("--metric", choices=["all", "part", "ruler2_all", "ruler2_part", "ruler2_2steps", "multichoice", "mrcr"],
                   help="a metric instead of the task's: all (string_match_all), part (string_match_part), or a RULERv2 scorer")
    s.add_argument("--json", action="store_true", help="print one JSON object instead of a line")

    d = sub.add_parser("download", help="fetch the paper's data sets (needs network)")
    d.add_argument("what", choices=["essays", "squad", "hotpotqa", "mmlu", "hotpotqa-train", "mrcr"], help="the data set")
    d.add_argument("--dest", metavar="DIR", help="folder to write into (default: the pytest-ruler data folder)")

    r = sub.add_parser("report", help="render a saved JSON report as Markdown and PNG plots")
    r.add_argument("report", metavar="REPORT.json", help="a JSON report written by pytest --ruler-report")
    r.add_argument("--out", metavar="DIR", help="folder for REPORT.md and the plots (default: next to the JSON)")
    r.add_argument("--no-plots", action="store_true", help="write only the Markdown table")
    _add_spec_flags(r, "report")

    h = sub.add_parser("html", help="write a saved JSON report's page: one self-contained HTML file (opens offline)",
                       description="The run's page: the verdict, Table 3 with intervals, the charts (inline SVG) and a "
                                   "sample browser. Needs matplotlib (the plot extra).")
    h.add_argument("report", metavar="REPORT.json", help="a JSON report written by pytest --ruler-report (or pytest-ruler merge)")
    h.add_argument("--out", metavar="PATH", help="write the page here (default: REPORT.html next to the JSON)")

    gt = sub.add_parser("gate", help="apply the release gate to a saved JSON report (the plugin's verdict and exit codes)",
                        description="The plugin's gate on a saved report: exit 0 passed, 1 failed, 2 not decided "
                                    "(an interrupted run, a shard's report), 4 usage error.")
    gt.add_argument("report", metavar="REPORT.json", help="a JSON report written by pytest --ruler-report (or pytest-ruler merge)")
    _add_spec_flags(gt, "gate")

    c = sub.add_parser("compare", help="a Markdown delta table of two saved JSON reports (a PR comment); exits 0")
    c.add_argument("old", metavar="OLD.json", help="the earlier JSON report")
    c.add_argument("new", metavar="NEW.json", help="the later JSON report")
    _add_spec_flags(c, "compare")
    c.add_argument("--out", metavar="FILE", help="write the Markdown here (default: stdout)")

    m = sub.add_parser("merge", help="merge the JSON reports of --ruler-shard=I/N runs into the whole run's report")
    m.add_argument("reports", nargs="+", metavar="SHARD.json", help="the shards' JSON reports")
    m.add_argument("--out", required=True, metavar="MERGED.json", help="write the merged JSON report here")
    m.add_argument("--partial", action="store_true", help="merge although shards are missing (marked partial: never gated as whole)")
    m.add_argument("--history", metavar="DIR", help="also add the merged report to this history folder (as --ruler-history "
                   "does for a run; a partial merge is not added)")
    m.add_argument("--label", metavar="TEXT", help="the run's label in the history (default: the shards' --ruler-label, else "
                   "`git describe --always --dirty`, else the UTC date and time)")

    h = sub.add_parser("history", help="the runs of a history folder (--ruler-history=DIR): a trend page, or an export for chart actions",
                       description="Without --html or --format: rebuild DIR/index.json and list the runs.")
    h.add_argument("folder", metavar="DIR", help="a history folder written by pytest --ruler-history=DIR")
    h.add_argument("--html", metavar="OUT", help="write one self-contained HTML trend page here (needs the plot extra)")
    h.add_argument("--format", dest="fmt", choices=["github-action-benchmark"], help="print the newest run of each group as "
                   "github-action-benchmark's customBiggerIsBetter JSON list")
    h.add_argument("--out", metavar="FILE", help="with --format: write the JSON here (default: stdout)")

    sc = sub.add_parser("schema", help="print the JSON Schema of the report (pytest-ruler/1)")
    sc.add_argument("--out", metavar="FILE", help="write it here (default: stdout)")

    from .run.cache_command import add_parser as add_cache_parser

    add_cache_parser(sub)
    sub.add_parser("tasks", help="list the registered tasks, their families and arguments")
    for name, parser in sub.choices.items():
        if name in commands:
            parser.set_defaults(func=commands[name])
        for action in getattr(parser, "command_actions", []):  # a missing nested command is named by its choices, not its dest
            if action.metavar is None:
                action.metavar = "{" + ",".join(action.choices) + "}"
    return p
