"""The structured information protocol: four-field records, parsed leniently.

Every map and collapse call answers with one record::

    Extracted Information: <facts from the text relevant to the question>
    Rationale: <how the answer follows from them>
    Answer: <the intermediate answer, or NO INFORMATION>
    Confidence Score: <0-5>

``parse_record(text)`` never raises. It accepts the labels in any case, with
markdown bold, ``-``/``=`` instead of ``:``, "Confidence: 4/5" and the like. A
field it cannot find is listed in ``Record.problems`` (the call is counted as
malformed in the report) and the raw output is kept in ``Record.raw``. An
output with no labels at all becomes a record whose answer is the whole text
(stripped), marked malformed, so a model that ignores the format can still be
traced and, for free-form answers, still used.

Public names: ``Record``, ``parse_record``, ``format_record``, ``NO_INFORMATION``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

__all__ = ["FIELDS", "NO_INFORMATION", "Record", "format_record", "parse_record"]

NO_INFORMATION = "NO INFORMATION"
FIELDS = ("Extracted Information", "Rationale", "Answer", "Confidence Score")

_LABELS = {
    "extracted": r"extracted\s+information|extracted\s+info|information|extracted",
    "rationale": r"rationale|reasoning|reason",
    "answer": r"(?:intermediate\s+|final\s+)?answer",
    "confidence": r"confidence(?:\s+score)?|score",
}
_LABEL_RE = re.compile(
    r"(?im)^[ \t>*#\-\d.)]*\**[ \t]*(?:the[ \t]+)?(?P<label>" + "|".join(f"(?P<{k}>{v})" for k, v in _LABELS.items())
    + r")[ \t]*\**[ \t]*(?:is[ \t]*)?[:=\-][ \t]*\**"
)
_NUMBER = re.compile(r"(\d+(?:\.\d+)?)\s*(?:/\s*(\d+(?:\.\d+)?))?")
_NO_INFO = re.compile(r"^\W*no\s+(?:relevant\s+)?information\b", re.I)


@dataclass(frozen=True)
class Record:
    """One parsed record (map or collapse output)."""

    extracted: str = ""
    rationale: str = ""
    answer: str = ""
    confidence: float | None = None  # 0-5; None when missing or unreadable
    raw: str = ""
    problems: tuple[str, ...] = ()
    source: str = ""  # which call made it, e.g. "map 3" or "collapse 1.2"
    dropped: tuple[str, ...] = field(default=())  # claims removed by the support check

    @property
    def ok(self) -> bool:
        return not self.problems

    @property
    def no_information(self) -> bool:
        return not self.answer.strip() or bool(_NO_INFO.match(self.answer.strip()))

    def with_(self, **changes: object) -> "Record":
        return replace(self, **changes)


def _confidence(text: str) -> float | None:
    m = _NUMBER.search(text)
    if not m:
        return None
    value = float(m.group(1))
    scale = float(m.group(2)) if m.group(2) else 5.0
    if scale <= 0:
        return None
    if m.group(2) and scale != 5:
        value = value * 5 / scale  # "8/10" -> 4
    if value > 5 and not m.group(2):
        value = value / 20 if value <= 100 else 5.0  # "80" read as a percentage
    return max(0.0, min(5.0, round(value, 2)))


def parse_record(text: str, *, prefix: str = "Extracted Information:", source: str = "") -> Record:
    """A Record from a model's output (``prefix`` is what the prompt already wrote)."""
    raw = text
    full = f"{prefix}{text}" if prefix else text
    spans: list[tuple[str, int, int]] = []
    for m in _LABEL_RE.finditer(full):
        kind = next(k for k in _LABELS if m.group(k))
        spans.append((kind, m.start(), m.end()))
    values: dict[str, str] = {}
    for j, (kind, _, end) in enumerate(spans):
        stop = spans[j + 1][1] if j + 1 < len(spans) else len(full)
        if kind not in values:  # the first occurrence of a field wins
            values[kind] = full[end:stop].strip().strip("*").strip()
    problems = []
    if not spans or set(values) == {"extracted"} and not text.strip():
        problems.append("no fields")
    for kind, name in zip(_LABELS, FIELDS):
        if kind not in values and "no fields" not in problems:
            problems.append(f"missing {name}")
    confidence = _confidence(values["confidence"]) if "confidence" in values else None
    if "confidence" in values and confidence is None:
        problems.append("unreadable Confidence Score")
    answer = values.get("answer")
    if answer is None:
        # no Answer field: the text after the prefix is the best guess at one
        answer = values.get("extracted", text).strip() if "no fields" not in problems else text.strip()
    answer = re.split(r"\n\s*\n", answer.strip(), maxsplit=1)[0].strip()  # up to the first blank line
    return Record(
        extracted=values.get("extracted", ""),
        rationale=values.get("rationale", ""),
        answer=answer,
        confidence=confidence,
        raw=raw,
        problems=tuple(problems),
        source=source,
    )


def format_record(r: Record) -> str:
    """The record as the four labelled lines the prompts show."""
    conf = "unknown" if r.confidence is None else f"{r.confidence:g}"
    return (
        f"Extracted Information: {r.extracted.strip() or '-'}\n"
        f"Rationale: {r.rationale.strip() or '-'}\n"
        f"Answer: {r.answer.strip() or NO_INFORMATION}\n"
        f"Confidence Score: {conf}"
    )
