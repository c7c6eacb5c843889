"""The processor this process runs on, read without importing torch, and the CPU dtype to compute in.

Data flow::

    /proc/cpuinfo (Linux) ──parse_cpuinfo(text)──► Processor(model, flags)      (this_processor(): once per process)
    the dtype asked for + Processor ──cpu_dtype(requested, processor)──► DtypeChoice(dtype, reason)

bfloat16 is fast on a CPU only where the processor computes it natively: the x86
flags ``avx512_bf16`` (AVX512-BF16) or ``amx_bf16`` (AMX). Elsewhere (an AVX2-only
processor) it is emulated: vLLM's CPU build ran the same prompts 5.7x slower in
bfloat16 than in float32 on an AVX2 EPYC (issue 33). So ``auto`` means bfloat16
only where it is native, float32 otherwise; a processor that cannot be read (no
``/proc/cpuinfo``: macOS, Windows, or an ARM machine whose flags are not those)
counts as not native, so ``auto`` is float32 there. A dtype the user names wins.

Everything here is plain text parsing: the engines' ``describe()`` (the cache
identity, given without loading a model) calls it, and nothing imports torch.

Public names: ``BF16_FLAGS``, ``REPORTED_FLAGS``, ``DtypeChoice``, ``Processor``,
``cpu_dtype``, ``parse_cpuinfo``, ``this_processor``.
"""

from __future__ import annotations

import functools
import platform
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

__all__ = ["BF16_FLAGS", "REPORTED_FLAGS", "DtypeChoice", "Processor", "cpu_dtype", "parse_cpuinfo", "this_processor"]

CPUINFO = Path("/proc/cpuinfo")
UNKNOWN = "unknown"
# the flags with which a processor computes bfloat16 natively, and how people name them
BF16_FLAGS = {"avx512_bf16": "AVX512-BF16", "amx_bf16": "AMX"}
# what a benchmark figure records of its processor: the vector units that set CPU speed
REPORTED_FLAGS = ("avx2", "avx512f", "avx512_bf16", "amx_bf16", "amx_tile")


@dataclass(frozen=True)
class Processor:
    """A processor's model name (``unknown`` when it cannot be read) and its capability flags."""

    model: str
    flags: frozenset[str] = frozenset()

    @property
    def known(self) -> bool:
        """Whether its flags could be read (without them nothing is known to be native)."""
        return bool(self.flags)

    @property
    def bf16_units(self) -> list[str]:
        """The native bfloat16 units it has, by their usual names (empty: bfloat16 is emulated)."""
        return [name for flag, name in BF16_FLAGS.items() if flag in self.flags]

    @property
    def native_bf16(self) -> bool:
        return bool(self.bf16_units)

    def summary(self) -> dict[str, object]:
        """What a benchmark records: the model name and each flag of ``REPORTED_FLAGS``, present or not."""
        return {"model": self.model, "flags": {f: f in self.flags for f in REPORTED_FLAGS}}


class DtypeChoice(NamedTuple):
    """A dtype and why it was chosen, in words fit for the run header."""

    dtype: str
    reason: str


def parse_cpuinfo(text: str) -> Processor:
    """The first processor described in a ``/proc/cpuinfo`` text (x86 ``flags``, ARM ``Features``)."""
    model, flags = "", frozenset[str]()
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if not sep:
            continue
        key = key.strip().lower()
        if key == "model name" and not model:
            model = "".join(ch for ch in " ".join(value.split()) if ch.isprintable())  # it goes into the header
        elif key in ("flags", "features") and not flags:
            flags = frozenset(value.split())
    return Processor(model or (UNKNOWN if not flags else "unnamed processor"), flags)


@functools.lru_cache(maxsize=1)
def this_processor() -> Processor:
    """This machine's processor, read once; ``Processor("unknown")`` where there is no ``/proc/cpuinfo``."""
    try:
        return parse_cpuinfo(CPUINFO.read_text(encoding="utf-8", errors="replace"))
    except OSError:
        # without flags nothing is known to be native: auto stays float32
        return Processor(platform.processor() or UNKNOWN)


def cpu_dtype(requested: str | None, processor: Processor, *, asked_by: str = "--ruler-dtype") -> DtypeChoice:
    """The dtype to compute in on this CPU, and why (pure).

    ``requested`` other than ``auto``/None wins as is (``asked_by`` names where it
    was said). ``auto``: bfloat16 where ``processor`` has AVX512-BF16 or AMX,
    else float32 (also for an unknown processor).
    """
    if requested and requested != "auto":
        return DtypeChoice(requested, f"{asked_by}={requested}")
    units = processor.bf16_units
    if units:
        return DtypeChoice("bfloat16", f"auto: {processor.model} computes bfloat16 natively ({', '.join(units)}); "
                                       "--ruler-dtype=float32 to force float32")
    if not processor.known:
        what = "the processor" if processor.model == UNKNOWN else f"the flags of {processor.model}"
        return DtypeChoice("float32", f"auto: {what} could not be read, so bfloat16 is not known to be native "
                                      "(AVX512-BF16/AMX); --ruler-dtype=bfloat16 to force")
    return DtypeChoice("float32", f"auto: {processor.model} has no native bfloat16 (AVX512-BF16/AMX); --ruler-dtype=bfloat16 to force")
