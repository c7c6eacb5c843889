"""Defaults live once, in the option spec (``options.OPTIONS``): ``RulerConfig`` and
``MapReduceConfig`` take theirs from it (``options.spec_default``), and the plugin
(``plugin.config.build_config``), a config built in code and the CLI's spec flags agree.

Two checks: the values agree (a config read from no options equals one built with no
arguments), and the source declares no default a second time (an option's field in either
dataclass is ``spec_default("<the option>")``, read from the source with ``ast``).
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import inspect
import textwrap

import pytest

from pytest_ruler import cli
from pytest_ruler.mapreduce import MapReduceConfig, pipeline
from pytest_ruler import options, run_config
from pytest_ruler.options import OPTIONS, option_dest, spec_default
from pytest_ruler.run_config import RulerConfig
from pytest_ruler.plugin.config import build_config
from pytest_ruler.tasks import resolve_tasks


class NoOptions:
    """A pytest config with only --ruler-model (and the scripted engine) set."""

    def __init__(self, **argv):
        self.argv = {option_dest(k): v for k, v in argv.items()}

    def getoption(self, dest):
        return self.argv.get(dest)

    def getini(self, dest):
        return [] if dest == "ruler_task_thresholds" else None


def _fields(target):
    """(option, the field it sets) of a target: "run" (RulerConfig) or "mapreduce" (MapReduceConfig)."""
    return [(o, o.field_name) for o in OPTIONS if o.target == target]


def test_a_config_built_in_code_is_what_the_plugin_reads_from_no_options():
    read = build_config(NoOptions(model="smollm2-135m", backend="scripted"))
    made = RulerConfig(model="smollm2-135m", backend="scripted")
    differ = {name: (getattr(read, name), getattr(made, name)) for _, name in _fields("run")
              if getattr(read, name) != getattr(made, name)}
    assert not differ, differ
    assert read.mapreduce_config == MapReduceConfig()
    assert read.tasks and read.samples == spec_default("samples") and read.threshold == spec_default("threshold")


@pytest.mark.parametrize("target, cls", [("run", RulerConfig), ("mapreduce", MapReduceConfig)])
def test_each_option_field_defaults_to_its_spec_default(target, cls):
    defaults = {f.name: f for f in dataclasses.fields(cls)}
    for opt, name in _fields(target):
        f = defaults[name]
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:  # required (model)
            assert spec_default(opt.name) is None, opt.name
            continue
        value = f.default if f.default is not dataclasses.MISSING else f.default_factory()
        expected = spec_default(opt.name)
        if name == "tasks":  # the preset's "all", resolved to the registry's names
            expected = tuple(t.name for t in resolve_tasks(expected))
        assert value == (expected if expected is not None or not isinstance(value, dict) else {}), opt.name


def test_the_cli_spec_flags_default_as_the_plugin_does():
    for command, flags in cli.SPEC_FLAGS.items():
        values = cli._spec_values(argparse.Namespace(**{flag.replace("-", "_"): None for _, flag in flags}), command)
        made = RulerConfig(model="m")
        assert values == {options.option(n).field_name: getattr(made, options.option(n).field_name) for n, _ in flags}, command


# --------------------------------------------------------------------------- declared once


def declared_twice(source: str, class_name: str, target: str) -> list[str]:
    """The option fields of ``class_name`` in ``source`` whose default is written there instead of
    read from the spec: ``spec_default("<its option>")``, or for an option without a default an
    empty ``field(default_factory=dict)`` or a factory that calls ``spec_default``."""
    by_field = {o.field_name: o for o in OPTIONS if o.target == target}
    tree = ast.parse(source)
    cls = next(n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name == class_name)
    factories = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    bad = []
    for stmt in cls.body:
        if not (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.target.id in by_field):
            continue
        opt, value = by_field[stmt.target.id], stmt.value
        if value is None and spec_default(opt.name) is None:  # required, and the spec has no default either (model)
            continue
        if _reads_spec(value, opt.name):
            continue
        factory = _factory(value)
        if factory == "dict" and spec_default(opt.name) is None:
            continue
        if factory in factories and any(_reads_spec(n, opt.name) for n in ast.walk(factories[factory])):
            continue
        bad.append(f"{class_name}.{stmt.target.id} = {ast.unparse(value) if value else '(required)'}")
    return bad


def _reads_spec(node: ast.AST | None, name: str) -> bool:
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "spec_default"
            and [a.value for a in node.args if isinstance(a, ast.Constant)] == [name])


def _factory(node: ast.AST | None) -> str | None:
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "field":
        for kw in node.keywords:
            if kw.arg == "default_factory" and isinstance(kw.value, ast.Name):
                return kw.value.id
    return None


@pytest.mark.parametrize("module, class_name, target", [(run_config, "RulerConfig", "run"), (pipeline, "MapReduceConfig", "mapreduce")])
def test_no_default_is_declared_a_second_time(module, class_name, target):
    assert declared_twice(inspect.getsource(module), class_name, target) == []


def test_the_check_finds_a_default_written_twice():
    """The check can fail: literal defaults, a disagreeing spec name, a factory with a value."""
    source = textwrap.dedent('''
        class MapReduceConfig:
            chunk_tokens: int = 2048
            overlap: int = spec_default("mapreduce-rounds")
            layout: str = spec_default("mapreduce-layout")
            window: int | None = None
        class RulerConfig:
            seeds: tuple = field(default_factory=lambda: (0,))
            engine_options: dict = field(default_factory=dict)
    ''')
    assert declared_twice(source, "MapReduceConfig", "mapreduce") == [
        "MapReduceConfig.chunk_tokens = 2048", "MapReduceConfig.overlap = spec_default('mapreduce-rounds')",
        "MapReduceConfig.window = None"]
    assert declared_twice(source, "RulerConfig", "run") == ["RulerConfig.seeds = field(default_factory=lambda: (0,))"]
