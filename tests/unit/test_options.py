"""The option spec (pytest_ruler.options): one typed declaration per option, validated once
(plugin.config.build_config).

A stand-in for pytest's config object (``getoption``/``getini`` over dicts) drives
``build_config`` directly; the pytester runs of the plugin cover the real parser.
"""

from __future__ import annotations

from dataclasses import fields

import pytest

from pytest_ruler.errors import RulerUsageError
from pytest_ruler.mapreduce import MapReduceConfig
from pytest_ruler.options import OPTIONS, option_dest
from pytest_ruler.run_config import RulerConfig
from pytest_ruler.plugin.config import build_config


class FakeConfig:
    """getoption / getini over two dicts keyed by option name (without --ruler-)."""

    def __init__(self, argv: dict | None = None, ini: dict | None = None):
        self.argv = {option_dest(k): v for k, v in (argv or {}).items()}
        self.ini = {option_dest(k): v for k, v in (ini or {}).items()}

    def getoption(self, dest):
        return self.argv.get(dest)

    def getini(self, dest):
        if dest == "ruler_task_thresholds":
            return self.ini.get(dest, [])
        return self.ini.get(dest)


def config(argv=None, ini=None) -> RulerConfig:
    return build_config(FakeConfig({"model": "smollm2-135m", "backend": "scripted", **(argv or {})}, ini))


def test_every_option_lands_in_a_field_of_its_target():
    run = {f.name for f in fields(RulerConfig)}
    mapreduce = {f.name for f in fields(MapReduceConfig)}
    for opt in OPTIONS:
        if opt.target == "run":
            assert opt.field_name in run, opt.name
        elif opt.target == "mapreduce":
            assert opt.field_name in mapreduce, opt.name
        else:
            assert opt.target == "engine", opt.name
    assert len({o.name for o in OPTIONS}) == len(OPTIONS)


def test_engines_declare_their_top_level_options():
    from pytest_ruler.engines.options import declared_options

    engine_opts = {o.name: o for o in OPTIONS if o.target == "engine"}
    assert set(engine_opts) == {"tensor-parallel-size", "gpu-memory-utilization", "hf-overrides", "max-concurrency"}
    vllm, openai = declared_options("vllm"), declared_options("openai")
    assert all(o.field_name in vllm for n, o in engine_opts.items() if n != "max-concurrency")
    assert engine_opts["max-concurrency"].field_name == "concurrency" and "concurrency" in openai


def test_the_engine_flags_table_is_what_the_engines_declare():
    """options.ENGINE_FLAGS (data, so declaring the pytest options loads no engine) cannot go stale:
    its flags, keys, defaults and order are the built-in engines' declarations with a ``cli``."""
    from pytest_ruler.engines.options import cli_options
    from pytest_ruler.options import ENGINE_FLAGS, GROUPS

    assert [(cli, key, default) for cli, key, default, *_ in ENGINE_FLAGS] == [(o.cli, o.key, o.default) for o in cli_options()]
    assert all(group in dict(GROUPS) and metavar.isupper() and text for _, _, _, group, metavar, text in ENGINE_FLAGS)
    assert [o.name for o in OPTIONS if o.target == "engine"] == [row[0] for row in ENGINE_FLAGS]


def test_an_engine_flag_is_coerced_by_its_declaration_naming_the_option():
    assert config({"tensor-parallel-size": "2"}).engine_options["tensor_parallel_size"] == 2
    assert config({"backend": "vllm", "gpu-memory-utilization": "0.5"}).engine_options["gpu_memory_utilization"] == 0.5
    from pytest_ruler.options import option

    assert option("gpu-memory-utilization").parse("--ruler-gpu-memory-utilization", "0.5") == 0.5
    with pytest.raises(RulerUsageError) as exc:
        option("gpu-memory-utilization").parse("--ruler-gpu-memory-utilization", "2")
    assert exc.value.parameter == "--ruler-gpu-memory-utilization" and "gpu_memory_utilization" in exc.value.fix


def test_values_are_typed_from_the_command_line_and_the_ini_file_alike():
    a = config({"samples": "3", "lengths": "1k,4k", "seeds": "2", "threshold": "70", "mapreduce-chunk": "1k", "no-cache": True})
    b = config(ini={"samples": "3", "lengths": "1k,4k", "seeds": "2", "threshold": "70", "mapreduce-chunk": "1k", "no-cache": True})
    for c in (a, b):
        assert (c.samples, c.lengths, c.seeds, c.threshold, c.no_cache) == (3, (1024, 4096), (0, 1), 70.0, True)
        assert c.mapreduce_config.chunk_tokens == 1024 and c.mapreduce_config.verify is True
    assert a.lengths_given and b.lengths_given
    assert not config().lengths_given  # the preset's lengths


def test_the_command_line_wins_over_the_ini_file_and_the_preset():
    c = config({"samples": "5"}, {"samples": "3", "preset": "smoke"})
    assert c.samples == 5 and c.preset == "smoke" and c.lengths == (1024, 4096)


@pytest.mark.parametrize(
    "argv, ini, parameter",
    [
        ({"samples": "many"}, {}, "--ruler-samples"),
        ({}, {"samples": "many"}, "ruler_samples"),  # named as the user wrote it
        ({"threshold": "101"}, {}, "--ruler-threshold"),
        ({"preset": "huge"}, {}, "--ruler-preset"),
        ({"baseline-alpha": "2"}, {}, "--ruler-baseline-alpha"),
        ({}, {"mapreduce-overlap": "-1"}, "ruler_mapreduce_overlap"),
        ({"gpu-memory-utilization": "2"}, {}, "--ruler-gpu-memory-utilization"),
        ({"hf-overrides": "{not json"}, {}, "--ruler-hf-overrides"),
        ({"engine-option": ["mode=nonsense"]}, {}, "--ruler-engine-option"),
        ({"engine-option": ["tensor_parallel_size=2"]}, {}, "--ruler-engine-option"),  # scripted declares no TP
        ({"dtype": "float8"}, {}, "--ruler-dtype"),  # refused here, not by the engine per item
        ({}, {"dtype": "int4"}, "ruler_dtype"),
        ({"device": "gpu7"}, {}, "--ruler-device"),
        ({"device": "cuda:x"}, {}, "--ruler-device"),
        ({"batch-items": "0"}, {}, "--ruler-batch-items"),
    ],
)
def test_a_bad_value_names_the_parameter_the_value_and_the_fix(argv, ini, parameter):
    with pytest.raises(RulerUsageError) as err:
        config(argv, ini)
    assert err.value.parameter == parameter
    assert err.value.fix


def test_dtype_and_device_are_typed_once():
    c = config({"dtype": " BFloat16 ", "device": "CUDA:7"})
    assert (c.dtype, c.device) == ("bfloat16", "cuda:7")  # whether cuda:7 exists is the hf start-up check's
    with pytest.raises(RulerUsageError) as err:
        config({"dtype": "float8"})
    assert err.value.value == "float8" and "choose auto, float32, bfloat16 or float16" in err.value.fix
    assert "quantization=" in err.value.fix


def test_engine_options_are_typed_by_the_engines_declaration():
    c = config({"engine-option": ["delay=0.5,max_context=4096"]})
    assert c.engine_options == {"delay": 0.5, "max_context": 4096}
    # another engine's top-level option is kept as given, typed, and left unread by this engine
    c = config({"tensor-parallel-size": "2"})
    assert c.engine_options["tensor_parallel_size"] == 2


def test_auto_drops_options_meant_for_the_other_engine():
    c = build_config(FakeConfig({"model": "smollm2-135m", "engine-option": ["no_such_option=1"]}))
    assert "no_such_option" not in c.engine_options


def test_the_long_preset_carries_sequential_stopping_and_error_bars():
    c = config({"preset": "long"})
    assert c.tasks == ("niah_single_1", "niah_single_2", "niah_single_3", "niah_multikey_1", "niah_multivalue", "vt")
    assert c.lengths == (4096, 8192, 16384, 32768) and c.samples == 20 and not c.lengths_given
    assert c.sequential is True and c.show_ci is True
    plain = config({"preset": "ci"})
    assert plain.sequential is False and plain.show_ci is False  # the other presets leave both off
    assert config({"preset": "long", "samples": "40"}).samples == 40  # explicit options still win
    # sequential stopping and the engine's queue across items go together (issue 22)
    both = config({"preset": "long", "batch-items": "2"})
    assert both.sequential is True and both.batch_items == 2
    assert config({}).batch_items == 16  # items share engine calls by default
