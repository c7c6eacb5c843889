"""Lengths as users type them: ``4k``, ``8K``, ``16384``, ``128k`` (k = 1024).

Public names: ``parse_length(text, parameter=...)``, ``parse_lengths(text)``,
``format_length(n)``.
"""

from __future__ import annotations

import re
from typing import Iterable

from .errors import RulerUsageError

__all__ = ["format_length", "parse_length", "parse_lengths"]

_LENGTH = re.compile(r"^\s*(\d+)\s*([kKmM]?)\s*$")


def parse_length(text: str | int, parameter: str = "length") -> int:
    if isinstance(text, bool):
        raise RulerUsageError(parameter, text, "give a number of tokens like 4096, 4k or 128k (k = 1024)")
    if isinstance(text, int):
        value = text
    else:
        m = _LENGTH.match(str(text))
        if not m:
            raise RulerUsageError(parameter, text, "give a number of tokens like 4096, 4k or 128k (k = 1024)")
        value = int(m.group(1)) * {"": 1, "k": 1024, "m": 1024 * 1024}[m.group(2).lower()]
    if value < 1:
        raise RulerUsageError(parameter, text, "a length must be at least 1 token")
    return value


def parse_lengths(text: str | Iterable[str | int], parameter: str = "lengths") -> list[int]:
    items = str(text).split(",") if isinstance(text, (str, int)) else list(text)
    items = [i for i in items if str(i).strip()]
    if not items:
        raise RulerUsageError(parameter, text, "give at least one length, e.g. 4k,8k,16k")
    out: list[int] = []
    for item in items:
        n = parse_length(item, parameter)
        if n not in out:
            out.append(n)
    return sorted(out)


def format_length(n: int | None) -> str:
    """4096 -> '4K', 131072 -> '128K', 1000 -> '1000'."""
    if n is None:
        return "-"
    return f"{n // 1024}K" if n % 1024 == 0 else str(n)
