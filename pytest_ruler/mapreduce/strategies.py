"""Task-aware records: what each RULER family asks of a chunk and how records combine.

A plain "keep the most confident answer" reduce fails by construction on
several families (see the map-reduce spec's table). Each family gets a
strategy: the extraction guide and calibration examples shown in its map
prompt, how claims are read out of a record, and whether the final answer
comes from a reduce call of the model or from a mechanical combination of
the model's per-chunk records.

=========  ====================================  ==========================================
strategy   what a map record carries             reduce
=========  ====================================  ==========================================
retrieve   the verbatim needle sentence, value   model (reads the records, answers Q)
union      every value of the queried key(s)     code: union of the values, in order
chain      every ``VAR X = Y`` in the chunk      code: follow the links from the query value
count      ``word: count`` for frequent words    code: sum counts over chunks, take the top k
facts      facts about the question's entities   model
=========  ====================================  ==========================================

What is read out of each chunk always comes from the model; code only sums,
unions and follows links. ``check(..., verify=True)`` enforces the calibration
principle "a claim not supported by the text scores 0" in code: a value or assignment a
record claims that does not occur in its chunk is dropped (and listed in the
call's record), so one hallucinating chunk cannot outvote the chunk that holds
the needle. Counts and free-text facts are not checked.

Public names: ``Strategy``, ``STRATEGIES``, ``strategy_for``.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

from .protocol import NO_INFORMATION, Record

__all__ = ["STRATEGIES", "Strategy", "strategy_for"]


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().lower()


# ---- claims read out of records -------------------------------------------------
_SHAPES = {
    "numbers": re.compile(r"\b\d+\b"),
    "uuids": re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", re.I),
    "words": re.compile(r"\b[A-Za-z][A-Za-z'-]+\b"),
}
_STOP = {
    "the", "is", "are", "for", "of", "a", "an", "special", "magic", "number", "numbers", "word", "words", "uuid",
    "uuids", "no", "information", "mentioned", "in", "provided", "text", "answer", "one", "and", "value", "values",
    "key", "this", "part", "none", "not", "found",
}


def values_of(text: str, kind: str = "numbers") -> list[str]:
    """Values of the needle's kind that a field states, in order, without repeats.

    For a ``key: value`` line only what follows the last colon counts, so a
    key that happens to look like a value is not taken for one.
    """
    shape = _SHAPES.get(kind, _SHAPES["numbers"])
    out: list[str] = []
    for line in text.splitlines():
        found = [v for v in shape.findall(line.rsplit(":", 1)[-1]) if v.lower() not in _STOP]
        out += found or [v for v in shape.findall(line) if v.lower() not in _STOP]
    return list(dict.fromkeys(out))


_ASSIGN = re.compile(r"(?:VAR\s+)?\b([A-Z]{2,})\s*=\s*(?:VAR\s+)?([A-Z]{2,}\b|\d+)")


def assignments_of(text: str) -> list[tuple[str, str]]:
    """``VAR X = Y`` statements a field states, as (X, Y) pairs."""
    return list(dict.fromkeys(_ASSIGN.findall(text)))


_COUNT = re.compile(r"([A-Za-z][\w'-]*)\W{0,3}\s*[:=\-–]\s*(\d+)")


def counts_of(text: str) -> dict[str, int]:
    """``word: count`` pairs a field states (the largest count if a word repeats)."""
    out: dict[str, int] = {}
    for word, n in _COUNT.findall(text):
        w = word.lower()
        if w in ("count", "confidence", "score", "answer", "rationale", "information"):
            continue
        out[w] = max(out.get(w, 0), int(n))
    return out


def _in(chunk_norm: str, value: str) -> bool:
    return re.search(rf"(?<![\w-]){re.escape(value.lower())}(?![\w-])", chunk_norm) is not None


# ---- strategies ------------------------------------------------------------------
@dataclass(frozen=True)
class Strategy:
    """How one family's records are read, checked and combined."""

    name: str
    guide: str  # what to put in each field, shown in map prompts
    levels: Mapping[str, str]  # calibration examples: "example_5" (stated), "example_3" (inferred)
    model_reduce: bool
    check: Callable[[Record, str, Mapping[str, Any], bool], Record]  # (record, chunk, hints, verify)
    combine: Callable[[Sequence[Record], Mapping[str, Any]], str] | None = None


_SENTENCE = re.compile(r"[^\n]*?(?:(?<=[.!?])(?=\s)|\n|$)")


def _sentences(chunk: str) -> list[str]:
    return [_norm(s) for s in _SENTENCE.findall(chunk) if s.strip()]


def _supported(value: str, keys: Sequence[str], sentences: Sequence[str]) -> bool:
    """The chunk has a sentence stating ``value`` together with one of the queried keys."""
    return any(_in(s, value) and (not keys or any(k in s for k in keys)) for s in sentences)


def _check_values(r: Record, chunk: str, hints: Mapping[str, Any], verify: bool) -> Record:
    """Answer := the values of the needle's kind it states (else those in Extracted Information).

    With ``verify``, a value counts only where the chunk has a sentence stating it
    together with a queried key (the record's "key, value, verbatim sentence"):
    a value of a distractor key, or one the model made up, is dropped.
    """
    if r.no_information:
        return r.with_(answer=NO_INFORMATION)
    kind = str(hints.get("kind", "numbers"))
    claims = values_of(r.answer, kind) or values_of(r.extracted, kind)
    keys = [_norm(str(k)) for k in hints.get("keys", ())]
    claims = [v for v in claims if v.lower() not in keys]  # a key repeated as its own value is no value
    sentences = _sentences(chunk) if verify and claims else []
    kept = [v for v in claims if not verify or _supported(v, keys, sentences)]
    dropped = tuple(v for v in claims if v not in kept)
    if not kept:
        return r.with_(answer=NO_INFORMATION, dropped=dropped)
    return r.with_(answer=", ".join(kept), dropped=dropped)


def _check_assignments(r: Record, chunk: str, hints: Mapping[str, Any], verify: bool) -> Record:
    text = _norm(chunk)
    claims = assignments_of(f"{r.extracted}\n{r.answer}")
    kept = [(a, b) for a, b in claims if not verify or re.search(rf"\b{a.lower()}\s*=\s*(?:var\s+)?{b.lower()}\b", text)]
    dropped = tuple(f"{a} = {b}" for a, b in claims if (a, b) not in kept)
    lines = "; ".join(f"VAR {a} = {'' if b.isdigit() else 'VAR '}{b}" for a, b in kept)
    return r.with_(extracted=lines or r.extracted, answer=lines or NO_INFORMATION, dropped=dropped)


def _check_counts(r: Record, chunk: str, hints: Mapping[str, Any], verify: bool) -> Record:
    text = _norm(chunk)
    counts = counts_of(f"{r.extracted}\n{r.answer}")
    kept = {w: n for w, n in counts.items() if not verify or _in(text, w)}
    dropped = tuple(w for w in counts if w not in kept)
    lines = "; ".join(f"{w}: {n}" for w, n in kept.items())
    return r.with_(extracted=lines or r.extracted, answer=lines or NO_INFORMATION, dropped=dropped)


def _check_none(r: Record, chunk: str, hints: Mapping[str, Any], verify: bool) -> Record:
    return r


def _union(records: Sequence[Record], hints: Mapping[str, Any]) -> str:
    kind = str(hints.get("kind", "numbers"))
    values: list[str] = []
    for r in records:
        if not r.no_information and (r.confidence is None or r.confidence > 0):
            values += values_of(r.answer, kind)
    return ", ".join(dict.fromkeys(values))


def _chain(records: Sequence[Record], hints: Mapping[str, Any]) -> str:
    links: dict[str, set[str]] = {}
    for r in records:
        for a, b in assignments_of(f"{r.extracted}\n{r.answer}"):
            links.setdefault(b, set()).add(a)
    found: list[str] = []
    frontier = [str(hints.get("query", ""))]
    while frontier:
        nxt = []
        for v in frontier:
            for a in sorted(links.get(v, ())):
                if a not in found:
                    found.append(a)
                    nxt.append(a)
        frontier = nxt
    return " ".join(found)


def _count(records: Sequence[Record], hints: Mapping[str, Any]) -> str:
    total: Counter[str] = Counter()
    for r in records:
        total.update(counts_of(f"{r.extracted}\n{r.answer}"))
    top = [w for w, _ in sorted(total.items(), key=lambda kv: (-kv[1], kv[0]))[: int(hints.get("top", 10))]]
    return " ".join(f"{i}. {w}" for i, w in enumerate(top, 1))


_RETRIEVE_LEVELS = {
    "example_5": "the part has the sentence giving the {kind1} for the key in the question",
    "example_3": "the part names a {kind1} near similar words but never says it is the one for that key",
}

_EXAMPLE_VALUES = {
    "numbers": ("2817465", "5093318"),
    "words": ("lantern", "meadow"),
    "uuids": ("4c1f7a02-93be-4d7e-b5a8-0e6f2d9c3a11", "9b0e33d1-2f6c-4a8e-8c17-5d2e6a4f0b93"),
}

STRATEGIES: dict[str, Strategy] = {
    "retrieve": Strategy(
        "retrieve",
        "Extracted Information: the sentence that answers the question, copied word for word. "
        "Answer: the value alone, or NO INFORMATION if this part does not contain it.",
        _RETRIEVE_LEVELS,
        model_reduce=True,
        check=_check_values,
    ),
    "union": Strategy(
        "union",
        "The question has several answers spread over the whole text. Extracted Information: every sentence of this "
        "part that gives one, copied word for word. Answer: every value found in this part, separated by commas, or "
        "NO INFORMATION.",
        _RETRIEVE_LEVELS,
        model_reduce=False,
        check=_check_values,
        combine=_union,
    ),
    "chain": Strategy(
        "chain",
        "Extracted Information: EVERY line of this part of the form VAR X = Y, copied word for word, even lines that "
        "look unrelated: the chain of assignments continues in other parts. Answer: the same lines, or NO INFORMATION.",
        {
            "example_5": "VAR QWERT = 40213",
            "example_3": "a line that is cut off, such as VAR QWE",
        },
        model_reduce=False,
        check=_check_assignments,
        combine=_chain,
    ),
    "count": Strategy(
        "count",
        "Extracted Information: the words that occur most often in this part, one 'word: count' per line, most "
        "frequent first (at least {top_map} words). Answer: the same list.",
        {
            "example_5": "apple appears 7 times in this part",
            "example_3": "a count that was estimated rather than counted",
        },
        model_reduce=False,
        check=_check_counts,
        combine=_count,
    ),
    "facts": Strategy(
        "facts",
        "Extracted Information: every fact in this part about the people, places or things the question names, even "
        "if this part alone cannot answer it. Answer: the answer if this part gives it, else NO INFORMATION.",
        {
            "example_5": "The Eiffel Tower was completed in 1889.",
            "example_3": "the part says Eiffel's company built the tower, so it was likely finished in his lifetime",
        },
        model_reduce=True,
        check=_check_none,
    ),
}


def strategy_for(spec: Any) -> tuple[Strategy, dict[str, Any]]:
    """The strategy of a RULER task spec, and the hints its reduce needs."""
    family, a = spec.family, dict(spec.args)
    if family == "niah":
        kind = a.get("type_needle_v", "numbers")
        v1, v2 = _EXAMPLE_VALUES.get(kind, _EXAMPLE_VALUES["numbers"])
        multi = int(a.get("num_needle_v", 1)) * int(a.get("num_needle_q", 1)) > 1
        return STRATEGIES["union" if multi else "retrieve"], {"kind": kind, "kind1": kind[:-1], "v1": v1, "v2": v2}
    if family == "variable_tracking":
        return STRATEGIES["chain"], {}
    if family == "common_words_extraction":
        top = int(a.get("num_cw", 10))
        return STRATEGIES["count"], {"top": top, "top_map": top + 5}
    if family == "freq_words_extraction":
        return STRATEGIES["count"], {"top": 3, "top_map": 8}
    return STRATEGIES["facts"], {}
