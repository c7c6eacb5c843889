"""Task-aware records: what each RULER family asks of a chunk and how records combine.

A plain "keep the most confident answer" reduce fails by construction on
several families (a single-needle reduce cannot union a multi-value answer, follow a
variable chain across chunks, or add word counts). Each family gets a
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
unions and follows links. Which strategy a task gets, and the question's keys or
query value it needs, come from the task's family (``family.mapreduce_strategy(question)``,
next to its templates, returns a strategy's name and its hints), read from the question
text: nothing of a sample's answers or generator metadata reaches a strategy (code never
sees the answers). The strategies are this module's; a family names one, or brings a
:class:`Strategy` of its own, and imports nothing from here to do so.

Grounding (``check(..., verify=True)``, mode ``literal``, the default) is a hallucination
filter and nothing more: a value, assignment or counted word a record claims that does
not occur in its chunk's text is dropped (and listed in the call's ``dropped``). Which of
the values in a chunk answers the question (which key it belongs to, which chunk to
believe) is left to the model: its Answer, its Confidence Score, its reduce. The one other
rule: a claim that is a key named in the question is not a value (the model echoed the
key). ``verify=False`` (mode ``none``) keeps every claim as the model wrote it.

Public names: ``Strategy``, ``STRATEGIES``, ``strategy_for``, ``retrieve_hints``, ``GROUNDING``, ``ANSWERED_BY``,
``grounding_mode``, ``grounding_label``, ``grounding_summary``.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping, Sequence

from .prompts import LAYOUT_NOTES
from .protocol import NO_INFORMATION, Record

__all__ = ["ANSWERED_BY", "GROUNDING", "STRATEGIES", "Strategy", "grounding_label", "grounding_mode", "grounding_summary", "retrieve_hints", "strategy_for"]


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
    short: str = "the facts of this part about the question"  # the Extracted Information line of the format
    example: str = ""  # a filled four-field record (layouts that show one)
    # the prompt's own hints, added to what the family parsed (example values of the needle's kind)
    prompt_hints: Callable[[Mapping[str, Any]], Mapping[str, Any]] | None = None


def _check_values(r: Record, chunk: str, hints: Mapping[str, Any], verify: bool) -> Record:
    """Answer := the values of the needle's kind it states (else those in Extracted Information).

    With ``verify`` (grounding ``literal``), a value counts only where it occurs in the
    chunk's text (a hallucination filter). Which key a value belongs to is the model's
    call, not code's: a value of another key in the same chunk is kept.
    """
    if r.no_information:
        return r.with_(answer=NO_INFORMATION)
    kind = str(hints.get("kind", "numbers"))
    claims = values_of(r.answer, kind) or values_of(r.extracted, kind)
    keys = {_norm(str(k)) for k in hints.get("keys", ())}  # parsed from the question text by the family
    claims = [v for v in claims if v.lower() not in keys]  # a key repeated as its own value is no value
    text = _norm(chunk) if verify and claims else ""
    kept = [v for v in claims if not verify or _in(text, v)]
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


def _levels(stated: str, inferred: str) -> dict[str, str]:
    """A strategy's calibration examples: a record worth Confidence 5 (stated) and one worth 3 (inferred)."""
    return {"example_5": stated, "example_3": inferred}


_RETRIEVE_LEVELS = _levels(
    "the part has the sentence giving the {kind1} for the key in the question",
    "the part names a {kind1} near similar words but never says it is the one for that key",
)

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
        prompt_hints=lambda h: retrieve_hints(str(h.get("kind", "numbers")), h.get("keys", ())),
        short="the sentence of this part that gives the {kind1} asked for, copied word for word",
        example="Extracted Information: One of the special magic {kind} for calm-river is: {v1}.\nRationale: this part states "
        "the {kind1} for calm-river word for word.\nAnswer: {v1}\nConfidence Score: 5",
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
        prompt_hints=lambda h: retrieve_hints(str(h.get("kind", "numbers")), h.get("keys", ())),
        short="every sentence of this part that gives one of the {kind} asked for, copied word for word",
        example="Extracted Information: One of the special magic {kind} for calm-river is: {v1}. One of the special magic "
        "{kind} for calm-river is: {v2}.\nRationale: this part states them word for word.\nAnswer: {v1}, {v2}\n"
        "Confidence Score: 5",
    ),
    "chain": Strategy(
        "chain",
        "Extracted Information: EVERY line of this part of the form VAR X = Y, copied word for word, even lines that "
        "look unrelated: the chain of assignments continues in other parts. Answer: the same lines, or NO INFORMATION.",
        _levels("VAR QWERT = 40213", "a line that is cut off, such as VAR QWE"),
        model_reduce=False,
        check=_check_assignments,
        combine=_chain,
        short="every line VAR X = Y of this part, copied word for word",
        example="Extracted Information: VAR QWERT = 40213; VAR ASDFG = VAR QWERT\nRationale: the assignments of this part."
        "\nAnswer: VAR QWERT = 40213; VAR ASDFG = VAR QWERT\nConfidence Score: 5",
    ),
    "count": Strategy(
        "count",
        "Extracted Information: the words that occur most often in this part, one 'word: count' per line, most "
        "frequent first (at least {top_map} words). Answer: the same list.",
        _levels("apple appears 7 times in this part", "a count that was estimated rather than counted"),
        model_reduce=False,
        check=_check_counts,
        combine=_count,
        short="the most frequent words of this part, as word: count",
        example="Extracted Information: apple: 7; river: 5; stone: 4\nRationale: counted in this part.\nAnswer: apple: 7; "
        "river: 5; stone: 4\nConfidence Score: 5",
    ),
    "facts": Strategy(
        "facts",
        "Extracted Information: every fact in this part about the people, places or things the question names, even "
        "if this part alone cannot answer it. Answer: the answer if this part gives it, else NO INFORMATION.",
        _levels(
            "The Eiffel Tower was completed in 1889.",
            "the part says Eiffel's company built the tower, so it was likely finished in his lifetime",
        ),
        model_reduce=True,
        check=_check_none,
        short="every fact of this part about the people, places or things the question names",
        example="Extracted Information: The Eiffel Tower was completed in 1889.\nRationale: the question asks when the "
        "tower was finished; this part says so.\nAnswer: 1889\nConfidence Score: 5",
    ),
}


def retrieve_hints(kind: str, keys: Sequence[str] = ()) -> dict[str, Any]:
    """Hints of the retrieve/union strategies: the needle kind (plural) and the question's keys."""
    v1, v2 = _EXAMPLE_VALUES.get(kind, _EXAMPLE_VALUES["numbers"])
    return {"kind": kind, "kind1": kind[:-1], "v1": v1, "v2": v2, "keys": list(keys)}


def strategy_for(family: Any, question: str, name: str = "task") -> tuple[Strategy, dict[str, Any]]:
    """The strategy a task family chooses for one question, and its hints.

    ``family`` is the task's family object (the runner passes it in); its
    ``mapreduce_strategy(question)`` reads what it needs from the question text and returns
    a strategy's name (a key of ``STRATEGIES``) or a :class:`Strategy`, with its hints. A
    family without that method, or naming no strategy here, cannot be run by map-reduce
    (a usage error naming the task).
    """
    from ..errors import RulerUsageError

    hook = getattr(family, "mapreduce_strategy", None)
    if hook is None:
        raise RulerUsageError("--ruler-mapreduce", name, f"family {getattr(family, 'name', family)!r} has no map-reduce strategy (mapreduce_strategy(question)); run it natively")
    chosen, hints = hook(question)
    strategy = chosen if isinstance(chosen, Strategy) else STRATEGIES.get(chosen) if isinstance(chosen, str) else None
    if strategy is None:
        raise RulerUsageError("--ruler-mapreduce", name, f"family {getattr(family, 'name', family)!r} names the strategy {chosen!r}; "
                              f"return one of {', '.join(STRATEGIES)} or a pytest_ruler.mapreduce.Strategy")
    hints = dict(hints)
    if strategy.prompt_hints is not None:
        hints = {**strategy.prompt_hints(hints), **hints}
    return strategy, hints


# ---- grounding: what code did to the records, in the words a report shows -------------
GROUNDING = {
    "literal": "hallucination filter: code dropped claimed values not found in their chunk's text",
    "none": "no filter: records used as the model wrote them",
    "unrecorded": "not recorded: a result from before the grounding mode was recorded, when code also kept only "
    "values stated in one sentence with a queried key taken from the generator's metadata",
    "not run": "the item errored before map-reduce ran, so no record was read or filtered",
}

#: who chose the final answer, per strategy (the reduce column of the table above)
ANSWERED_BY = {
    "retrieve": "the model's reduce chose which value answers the question",
    "facts": "the model's reduce chose the answer",
    "union": "code took the union of the values the map records kept",
    "chain": "code followed the chain of the map records' assignments from the query value",
    "count": "code summed the map records' word counts and took the most frequent",
}


def grounding_mode(verify: bool) -> str:
    """``literal`` (the default hallucination filter) or ``none``."""
    return "literal" if verify else "none"


def _mode_of(mr: Mapping[str, Any]) -> str:
    if mr.get("grounding"):
        return str(mr["grounding"])
    return "unrecorded" if mr else "not run"  # an errored twin records nothing; an old report records the rest


def _answered(strategies: Iterable[str]) -> str:
    return "; ".join(f"{ANSWERED_BY[s]} ({s})" for s in dict.fromkeys(strategies) if s in ANSWERED_BY)


def _layouts(layouts: Iterable[str]) -> str:
    names = [n for n in dict.fromkeys(layouts) if n]
    if not names:
        return ""
    return "; map layout: " + " / ".join(f"{n} ({LAYOUT_NOTES[n]})" if n in LAYOUT_NOTES else n for n in names)


def grounding_label(mapreduce: Mapping[str, Any] | None) -> str:
    """How a map-reduce result was obtained, for every place a user reads it.

    ``mapreduce`` is an item's ``mapreduce`` dict (or a report's); the label names the
    grounding mode and what code did to the model's records, who chose the final answer
    (from the strategy that ran: the model's reduce, or code for union/chain/count), and
    the protocol compliance when known, e.g. ``grounding: literal (hallucination filter:
    ...); the model's reduce chose which value answers the question (retrieve); map layout:
    few-shot (...); map records with all four fields 3/24, with a confidence 3/24``. An errored twin
    (nothing recorded) says it did not run, never that generator metadata was used.
    """
    mr = dict(mapreduce or {})
    mode = _mode_of(mr)
    label = f"grounding: {mode} ({GROUNDING.get(mode, 'unknown mode')})"
    answered = _answered([str(mr["strategy"])] if mr.get("strategy") else [])
    if answered:
        label += f"; {answered}"
    label += _layouts([str((mr.get("config") or {}).get("layout") or "")])
    comp = (mr.get("compliance") or {}).get("map")
    if comp and comp.get("records"):
        n = comp["records"]
        label += f"; map records with all four fields {comp['four_fields']}/{n}, with a confidence {comp['confidence']}/{n}"
    return label


def grounding_summary(mapreduce_dicts: Iterable[Mapping[str, Any] | None]) -> str:
    """One label for many map-reduce items (a rescue line, a table header): their grounding
    mode(s) and their map records' protocol compliance summed, in ``grounding_label``'s words."""
    modes: list[str] = []
    strategies: list[str] = []
    layouts: list[str] = []
    total = {"records": 0, "four_fields": 0, "confidence": 0, "parse_failures": 0}
    for mr in mapreduce_dicts:
        mr = dict(mr or {})
        mode = _mode_of(mr)
        if mode not in modes:
            modes.append(mode)
        if mr.get("strategy"):
            strategies.append(str(mr["strategy"]))
        layouts.append(str((mr.get("config") or {}).get("layout") or ""))
        for k, v in ((mr.get("compliance") or {}).get("map") or {}).items():
            total[k] = total.get(k, 0) + int(v)
    if not modes:
        return ""
    text = " / ".join(f"grounding: {m} ({GROUNDING.get(m, 'unknown mode')})" for m in modes)
    answered = _answered(strategies)
    if answered:
        text += f"; {answered}"
    text += _layouts(layouts)
    if total["records"]:
        n = total["records"]
        text += f"; map records with all four fields {total['four_fields']}/{n}, with a confidence {total['confidence']}/{n}"
    return text
