"""Random keys, values and words for the synthetic tasks.

Every generator takes its own ``random.Random`` (never global state), so a
sample is a pure function of its seed.

- ``random_needle(rng, kind)`` for kind ``words`` (an ``adjective-noun`` pair),
  ``numbers`` (7 digits, uniform in [1000000, 9999999]) or ``uuids`` (version 4).
- ``word_pool()``: the common-words-extraction pool (8,169 entries).
- ``WONDERWORDS_VERSION``: the word lists' version, recorded in sample metadata.

Word lists come from ``wonderwords`` 2.2.0, the version the RULER reference
used (3.x ships different lists). A pair is drawn as an independent uniform
adjective and noun: the same distribution as drawing from the set of all
distinct pairs, without building its 6 million entries.
"""

from __future__ import annotations

import random
from functools import lru_cache
import importlib.util
from importlib import metadata
from pathlib import Path
from typing import Callable

from ..errors import RulerUsageError

__all__ = ["NEEDLE_KINDS", "WONDERWORDS_VERSION", "adjectives", "needle_maker", "nouns", "random_needle", "word_pool"]

NEEDLE_KINDS = ("words", "numbers", "uuids")
WONDERWORDS_VERSION = "2.2.0"


def _read_list(name: str) -> tuple[str, ...]:
    try:
        installed = metadata.version("wonderwords")
    except metadata.PackageNotFoundError as exc:
        raise RulerUsageError("wonderwords", None, f"pip install wonderwords=={WONDERWORDS_VERSION}") from exc
    if installed != WONDERWORDS_VERSION:
        raise RulerUsageError(
            "wonderwords", installed,
            f"RULER's word lists are those of wonderwords {WONDERWORDS_VERSION}: pip install wonderwords=={WONDERWORDS_VERSION}",
        )
    # read the asset files without importing wonderwords (its import reads them all)
    spec = importlib.util.find_spec("wonderwords")
    folder = Path(list(spec.submodule_search_locations)[0]) if spec and spec.submodule_search_locations else None
    if folder is None or not (folder / "assets" / name).is_file():
        raise RulerUsageError("wonderwords", installed, f"its word list {name} is missing: pip install --force-reinstall wonderwords=={WONDERWORDS_VERSION}")
    text = (folder / "assets" / name).read_text(encoding="utf-8")
    return tuple(sorted({w.strip() for w in text.splitlines() if w.strip()}))


@lru_cache(maxsize=None)
def nouns() -> tuple[str, ...]:
    return _read_list("nounlist.txt")


@lru_cache(maxsize=None)
def adjectives() -> tuple[str, ...]:
    return _read_list("adjectivelist.txt")


@lru_cache(maxsize=None)
def verbs() -> tuple[str, ...]:
    return _read_list("verblist.txt")


@lru_cache(maxsize=None)
def word_pool() -> tuple[str, ...]:
    """The reference's cwe word pool: every wonderwords 2.2.0 noun, adjective and verb (sorted, distinct).

    Provenance: RULER's ``common_words_extraction.py`` builds its pool as the
    set of the three wonderwords 2.2.0 lists (``nounlist.txt``,
    ``adjectivelist.txt``, ``verblist.txt``, each line right-stripped): 8,169
    entries, 119 of them capitalised, hyphenated or two words (``TV``,
    ``ad hoc``, ``brother-in-law``). The pool is benchmark data like the
    templates, so it is reproduced as is, read from the same pinned package.
    """
    return tuple(sorted(set(nouns()) | set(adjectives()) | set(verbs())))


def uuid4_string(bits: int) -> str:
    """``str(uuid.UUID(int=bits, version=4))``, without building a UUID object."""
    bits = (bits & ~(0xC000 << 48)) | (0x8000 << 48)  # RFC 4122 variant
    bits = (bits & ~(0xF000 << 64)) | (4 << 76)  # version 4
    h = f"{bits:032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def needle_maker(rng: random.Random, kind: str) -> Callable[[], str]:
    """A fast ``lambda: random_needle(rng, kind)``: the same draws, pre-bound."""
    if kind == "numbers":
        randint = rng.randint
        return lambda: str(randint(1_000_000, 9_999_999))
    if kind == "words":
        choice, adjs, nns = rng.choice, adjectives(), nouns()
        return lambda: f"{choice(adjs)}-{choice(nns)}"
    if kind == "uuids":
        bits = rng.getrandbits
        return lambda: uuid4_string(bits(128))
    raise RulerUsageError("needle type", kind, f"choose one of {', '.join(NEEDLE_KINDS)}")


def random_needle(rng: random.Random, kind: str) -> str:
    if kind == "numbers":
        return str(rng.randint(1_000_000, 9_999_999))
    if kind == "words":
        return f"{rng.choice(adjectives())}-{rng.choice(nouns())}"
    if kind == "uuids":
        return uuid4_string(rng.getrandbits(128))
    raise RulerUsageError("needle type", kind, f"choose one of {', '.join(NEEDLE_KINDS)}")
