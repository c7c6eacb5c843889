"""The CPU dtype from the processor (issue 33): fake /proc/cpuinfo texts, no torch or vllm needed."""

from __future__ import annotations

import subprocess
import sys
from types import SimpleNamespace

import pytest

from pytest_ruler.engines import EngineConfig, processor
from pytest_ruler.engines.dtypes import dtype_line, engine_dtype
from pytest_ruler.engines.processor import DtypeChoice, Processor, cpu_dtype, parse_cpuinfo

EPYC_AVX2 = """processor\t: 0
vendor_id\t: AuthenticAMD
model name\t: AMD EPYC 7B13
flags\t\t: fpu vme sse sse2 ssse3 sse4_1 sse4_2 avx f16c fma avx2 bmi2 sha_ni
processor\t: 1
model name\t: AMD EPYC 7B13
flags\t\t: fpu vme sse sse2 ssse3 sse4_1 sse4_2 avx f16c fma avx2 bmi2 sha_ni
"""
XEON_AMX = """processor\t: 0
model name\t: Intel(R) Xeon(R) Platinum 8480+
flags\t\t: fpu sse2 avx avx2 avx512f avx512bw avx512_vnni avx512_bf16 amx_bf16 amx_tile amx_int8
"""
XEON_AVX512_ONLY = """model name\t: Intel(R) Xeon(R) Gold 6148
flags\t\t: fpu avx avx2 avx512f avx512bw avx512vl
"""
ARM = """processor\t: 0
BogoMIPS\t: 50.00
Features\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics bf16
"""


def test_cpuinfo_gives_the_model_name_and_flags():
    p = parse_cpuinfo(EPYC_AVX2)
    assert p.model == "AMD EPYC 7B13" and {"avx2", "fma"} <= p.flags and not p.native_bf16
    assert p.summary() == {"model": "AMD EPYC 7B13",
                           "flags": {"avx2": True, "avx512f": False, "avx512_bf16": False, "amx_bf16": False, "amx_tile": False}}
    amx = parse_cpuinfo(XEON_AMX)
    assert amx.native_bf16 and amx.bf16_units == ["AVX512-BF16", "AMX"]
    assert parse_cpuinfo(ARM).known and parse_cpuinfo(ARM).model == "unnamed processor"
    assert not parse_cpuinfo("").known and parse_cpuinfo("").model == "unknown"


@pytest.mark.parametrize(("text", "dtype", "words"), [
    (EPYC_AVX2, "float32", "auto: AMD EPYC 7B13 has no native bfloat16 (AVX512-BF16/AMX); --ruler-dtype=bfloat16 to force"),
    (XEON_AVX512_ONLY, "float32", "Gold 6148 has no native bfloat16"),  # AVX-512 alone does not compute bfloat16
    (XEON_AMX, "bfloat16", "auto: Intel(R) Xeon(R) Platinum 8480+ computes bfloat16 natively (AVX512-BF16, AMX); "
                           "--ruler-dtype=float32 to force float32"),
    (ARM, "float32", "unnamed processor has no native bfloat16"),  # only the x86 units count
    ("", "float32", "auto: the processor could not be read, so bfloat16 is not known to be native"),
])
def test_auto_is_bfloat16_only_where_the_processor_computes_it(text, dtype, words):
    choice = cpu_dtype("auto", parse_cpuinfo(text))
    assert choice.dtype == dtype and words in choice.reason
    assert cpu_dtype(None, parse_cpuinfo(text)) == choice


@pytest.mark.parametrize("text", [EPYC_AVX2, XEON_AMX, ""])
def test_a_dtype_the_user_names_wins(text):
    assert cpu_dtype("bfloat16", parse_cpuinfo(text)) == DtypeChoice("bfloat16", "--ruler-dtype=bfloat16")
    assert cpu_dtype("float32", parse_cpuinfo(text), asked_by="--ruler-engine-option=dtype") == \
        DtypeChoice("float32", "--ruler-engine-option=dtype=float32")


def test_this_processor_reads_cpuinfo_once_and_falls_back_to_unknown(tmp_path, monkeypatch):
    info = tmp_path / "cpuinfo"
    info.write_text(XEON_AMX)
    monkeypatch.setattr(processor, "CPUINFO", info)
    processor.this_processor.cache_clear()
    try:
        assert processor.this_processor().model == "Intel(R) Xeon(R) Platinum 8480+"
        info.write_text(EPYC_AVX2)
        assert processor.this_processor().native_bf16  # read once per process
        processor.this_processor.cache_clear()
        monkeypatch.setattr(processor, "CPUINFO", tmp_path / "absent")  # macOS, Windows
        assert not processor.this_processor().known
        assert cpu_dtype("auto", processor.this_processor()).dtype == "float32"
    finally:
        processor.this_processor.cache_clear()


# --------------------------------------------------------------------------- the engines' identity


@pytest.fixture
def cpu_is(monkeypatch):
    def use(text: str) -> None:
        monkeypatch.setattr(processor, "this_processor", lambda: parse_cpuinfo(text))
    return use


def vllm_cfg(**kw) -> EngineConfig:
    kw.setdefault("backend", "vllm")
    return EngineConfig(model="org/model", **kw)


def test_the_vllm_identity_carries_the_concrete_cpu_dtype(cpu_is):
    from pytest_ruler.engines.vllm_model import describe
    from pytest_ruler.engines.vllm_kwargs import llm_kwargs

    cpu_is(EPYC_AVX2)
    assert describe(vllm_cfg(), device="cpu")["dtype"] == "float32"
    assert llm_kwargs(vllm_cfg(), device="cpu")["dtype"] == "float32"  # what vLLM is given
    cpu_is(XEON_AMX)
    assert describe(vllm_cfg(), device="cpu")["dtype"] == "bfloat16"
    # the user's dtype wins, the engine option over --ruler-dtype
    cpu_is(EPYC_AVX2)
    assert describe(vllm_cfg(dtype="bfloat16"), device="cpu")["dtype"] == "bfloat16"
    assert describe(vllm_cfg(dtype="bfloat16", options={"dtype": "float32"}), device="cpu")["dtype"] == "float32"
    # on GPU vLLM's own auto is left alone
    assert describe(vllm_cfg(), device="cuda")["dtype"] == "auto"
    assert llm_kwargs(vllm_cfg(), processor=parse_cpuinfo(XEON_AMX))["dtype"] == "auto"


def test_vllm_describe_reads_the_processor_without_importing_vllm_or_torch(tmp_path):
    info = tmp_path / "cpuinfo"
    info.write_text(EPYC_AVX2)
    code = ("import sys; from pathlib import Path; from pytest_ruler.engines import EngineConfig, processor; "
            f"processor.CPUINFO = Path({str(info)!r}); from pytest_ruler.engines.vllm_model import describe; "
            "d = describe(EngineConfig(model='org/model', backend='vllm'), device='cpu'); "
            "print(d['dtype'], sorted(m for m in ('vllm', 'torch') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "float32 []"


def test_the_hf_choice_has_the_same_shape_and_stays_float32_on_cpu(cpu_is):
    from pytest_ruler.engines.hf_options import dtype_choice

    cpu_is(XEON_AMX)  # the hf engine keeps float32 on CPU whatever the processor
    assert dtype_choice(EngineConfig(model="m"), "cpu") == DtypeChoice(
        "float32", "auto: the hf engine computes in float32 on CPU; --ruler-dtype=bfloat16 to force")
    assert dtype_choice(EngineConfig(model="m"), "cuda:1").dtype == "bfloat16"
    assert dtype_choice(EngineConfig(model="m", dtype="float16"), "cpu") == DtypeChoice("float16", "--ruler-dtype=float16")


# --------------------------------------------------------------------------- the run header


def test_the_header_line_says_which_dtype_and_why(cpu_is, monkeypatch):
    from pytest_ruler.engines import gpus

    monkeypatch.setattr(gpus, "vllm_device", lambda: "cpu")
    cpu_is(EPYC_AVX2)
    assert dtype_line("vllm", vllm_cfg()) == [
        "ruler: dtype float32 (auto: AMD EPYC 7B13 has no native bfloat16 (AVX512-BF16/AMX); --ruler-dtype=bfloat16 to force)"]
    assert engine_dtype("ray", vllm_cfg(backend="ray")).dtype == "float32"
    assert dtype_line("hf", EngineConfig(model="m", device="cpu")) == [
        "ruler: dtype float32 (auto: the hf engine computes in float32 on CPU; --ruler-dtype=bfloat16 to force)"]
    # the server's dtype, or no model at all: not ours to say
    assert dtype_line("openai", EngineConfig(model="m", backend="openai")) == []
    assert dtype_line("scripted", EngineConfig(model="m", backend="scripted")) == []


def test_header_lines_carry_the_dtype_line(cpu_is, monkeypatch):
    from pytest_ruler.engines import gpus
    from pytest_ruler.run_config import RulerConfig
    from pytest_ruler.plugin.terminal import header_lines
    from pytest_ruler.tasks.base import BASE_FRAME

    monkeypatch.setattr(gpus, "vllm_device", lambda: "cpu")
    cpu_is(XEON_AMX)
    rs = SimpleNamespace(config=RulerConfig(model="org/model", backend="vllm"), backend="vllm", cache_dir=None,
                         tokenizer=SimpleNamespace(name="org/model"), frame=BASE_FRAME, engine_config=vllm_cfg())
    lines = header_lines(rs)
    assert lines[1].startswith("ruler: dtype bfloat16 (auto: Intel(R) Xeon(R) Platinum 8480+ computes bfloat16 natively")
