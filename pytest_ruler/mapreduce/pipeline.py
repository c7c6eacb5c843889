"""Map → collapse → reduce over any engine, for many documents at once.

Data flow (one ``MapReducer.run(documents)`` call)::

    Document(instruction, context, question, answer_prefix, strategy, hints)
      ──chunk_text(context, chunk budget)──► chunks (each map prompt verified to fit the window)
      ──map (prompt layout: MapReduceConfig.layout, one of MAP_LAYOUTS; "auto" = resolve_layout:
         few-shot for base prompts, AUTO_LAYOUTS["chat"] for chat prompts): one request per chunk,
         ALL chunks of ALL documents in one complete() call──►
         parse_record (lenient; protocol compliance tallied per stage in Outcome.compliance)
         ──strategy.check (grounding "literal": claims not in the chunk's text dropped)──► records
      ──collapse (model strategies, while the reduce prompt would not fit the window;
         at most max_rounds rounds; each round's calls in one complete() call)──► fewer records
      ──reduce: model strategies ask the task's question over the records with the
         task's own answer prefix; mechanical strategies combine in code──► prediction
    Outcome(prediction, calls=[CallRecord per engine call], chunks, rounds, malformed, notes)
    (each CallRecord's ``served``: the endpoints that answered it and those that failed it first,
    for the item's per-endpoint counts; the pipeline sees completions only, never answers)

``complete(requests, label)`` is the session's cached completion function
(``RulerSession.complete``), so map calls are cached per chunk and an
interrupted run resumes where it stopped. Nothing here imports pytest.

Every request is checked against the window before it is sent: prompt tokens
(exact, after chat framing) + max tokens <= window. A map prompt that
overshoots (the chunk budget is an estimate) makes the document re-chunk with
a smaller budget; a configuration whose fixed prompt text alone leaves no room
for a chunk is a usage error naming the option.

Public names: ``MapReduceConfig``, ``Document``, ``CallRecord``, ``Outcome``,
``MapReducer``, ``compliance_total``, ``resolve_layout``, ``AUTO_LAYOUTS``; the prompt texts (``MAP_PROMPT``, ``MAP_LAYOUTS``,
``COLLAPSE_PROMPT``, ``REDUCE_PROMPT``) live in ``prompts`` and are re-exported here.

The pipeline gets a ``Document``: context, instruction, question, answer prefix and the
strategy the task's family chose from the question text. It never sees a sample's answers
or metadata; which claimed value answers the question is decided by the model's records,
confidence scores and reduce call (or, for unions, sums and chains, mechanically over what
the model claimed).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Any, Callable, Mapping, Sequence

from ..engines.base import Completion, EndpointCall, GenerationRequest, endpoint_calls
from ..errors import RulerUsageError
from ..options import spec_default
from .chunking import Chunk, chunk_text
from .prompts import CALIBRATION, COLLAPSE_PROMPT, FEW_SHOT_EXAMPLES, FORMAT, MAP_LAYOUTS, MAP_PROMPT, RECORD_PREFIX, REDUCE_PROMPT
from .protocol import NO_INFORMATION, Record, format_record, parse_record
from .strategies import STRATEGIES, Strategy

__all__ = [
    "COLLAPSE_PROMPT",
    "CallRecord",
    "Document",
    "MAP_LAYOUTS",
    "MAP_PROMPT",
    "MapReduceConfig",
    "MapReducer",
    "Outcome",
    "REDUCE_PROMPT",
    "AUTO_LAYOUTS",
    "compliance_total",
    "resolve_layout",
]

#: ``layout="auto"`` (the default): few-shot for base prompts (no chat template), this for chat prompts
AUTO_LAYOUTS = {"base": "few-shot", "chat": "question-last"}


def resolve_layout(layout: str, frame: Any) -> str:
    """The map layout that runs: ``layout`` itself, or for ``auto`` the one ``AUTO_LAYOUTS`` picks for
    the prompt frame (base: the frame adds nothing around the prompt; chat: a chat template)."""
    if layout != "auto":
        return layout
    return AUTO_LAYOUTS["base" if getattr(frame, "name", "base") == "base" else "chat"]

@dataclass(frozen=True)
class MapReduceConfig:
    """Options of chunked inference (``--ruler-mapreduce-*`` and the fixture's keywords). A field
    that an option sets takes that option's default (``options.spec_default``): written once, in
    the option spec."""

    chunk_tokens: int = spec_default("mapreduce-chunk")  # document tokens per chunk
    overlap: int = spec_default("mapreduce-overlap")  # tokens repeated from the end of one chunk at the start of the next
    window: int | None = spec_default("mapreduce-window")  # tokens one call may use (prompt + output); None = the engine's context
    max_rounds: int = spec_default("mapreduce-rounds")  # collapse rounds before the lowest-confidence records are dropped
    parallel: int | None = spec_default("mapreduce-parallel")  # requests per engine call; None = a whole stage at once
    record_tokens: int = 128  # max tokens of a map or collapse record (no option)
    verify: bool = spec_default("mapreduce-no-verify")  # grounding "literal": drop claimed values not in their chunk's text (hallucination filter); False: "none"
    calibration: bool = True  # state the confidence principles with an example per level in map prompts (no option)
    layout: str = spec_default("mapreduce-layout")  # map prompt layout, one of MAP_LAYOUTS, or "auto" (resolve_layout)

    def validate(self) -> "MapReduceConfig":
        for name, value, low in (
            ("chunk", self.chunk_tokens, 16),
            ("rounds", self.max_rounds, 0),
            ("record-tokens", self.record_tokens, 8),
            ("overlap", self.overlap, 0),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise RulerUsageError(f"--ruler-mapreduce-{name}", value, f"give an integer >= {low}")
        if self.overlap >= self.chunk_tokens // 2 and self.overlap:
            raise RulerUsageError("--ruler-mapreduce-overlap", self.overlap, f"keep the overlap under half the chunk ({self.chunk_tokens // 2} tokens)")
        if self.parallel is not None and (not isinstance(self.parallel, int) or self.parallel < 1):
            raise RulerUsageError("mapreduce parallel", self.parallel, "give a number of requests >= 1, or None for a whole stage at once")
        if self.layout != "auto" and self.layout not in MAP_LAYOUTS:
            raise RulerUsageError("--ruler-mapreduce-layout", self.layout, f"choose auto or one of {', '.join(MAP_LAYOUTS)}")
        if self.window is not None and (not isinstance(self.window, int) or self.window < 64):
            raise RulerUsageError("--ruler-mapreduce-window", self.window, "give a window of at least 64 tokens (default: the engine's context)")
        return self

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Document:
    """One question over one long text, split into the parts a task prompt has."""

    instruction: str  # task text before the context
    context: str
    question: str  # task text after the context
    answer_prefix: str  # the task's answer prefix: the reduce prompt ends with it
    answer_tokens: int  # max tokens of the final answer
    strategy: Strategy
    hints: Mapping[str, Any] = field(default_factory=dict)


@dataclass
class CallRecord:
    """One engine call of the pipeline, for the report."""

    doc: int
    stage: str  # map | collapse | reduce
    round: int
    parts: str  # "3" (a chunk) or "1-4" (records of chunks 1..4)
    prompt_tokens: int
    completion_tokens: int = 0
    finish_reason: str = ""
    seconds: float = 0.0
    cached: bool = False
    parse: str = "ok"  # "ok", the problems found, or "-" (reduce: the prediction is scored as is)
    answer: str = ""
    confidence: float | None = None
    dropped: list[str] = field(default_factory=list)
    output: str = ""
    outcome: str | None = None  # a thinking model's (engines.thinking.OUTCOMES), as for a native sample
    thinking_tokens: int = 0
    # the engine calls that answered it, each with its endpoint (engines.base.endpoint_calls; none
    # from the cache): the item's per-endpoint counts (results.endpoints.tally), not in to_dict
    served: tuple[EndpointCall, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        del d["served"]
        return d


def _new_tally() -> dict[str, int]:
    return {"records": 0, "four_fields": 0, "confidence": 0, "parse_failures": 0}


@dataclass
class Outcome:
    prediction: str
    calls: list[CallRecord]
    chunks: int
    rounds: int = 0
    malformed: int = 0
    notes: list[str] = field(default_factory=list)
    error: str | None = None
    # protocol compliance per stage ("map", "collapse"): records, records with all four
    # fields, with a readable Confidence Score, and parse failures (no field beyond the
    # prompt's own "Extracted Information:" could be read: free text, empty, no output)
    compliance: dict[str, dict[str, int]] = field(default_factory=lambda: {"map": _new_tally(), "collapse": _new_tally()})

    def tally(self, stage: str, r: Record) -> None:
        t = self.compliance.setdefault(stage, _new_tally())
        t["records"] += 1
        t["four_fields"] += not any(p.startswith("missing") or p in ("no fields", "no output") for p in r.problems)
        t["confidence"] += r.confidence is not None
        t["parse_failures"] += _parse_failure(r)


def _parse_failure(r: Record) -> bool:
    p = set(r.problems)
    return bool(p & {"no fields", "no output"}) or {"missing Rationale", "missing Answer", "missing Confidence Score"} <= p


def compliance_total(outcomes: Sequence["Outcome"]) -> dict[str, dict[str, int]]:
    """The protocol compliance of many outcomes (an item's samples), summed per stage."""
    total: dict[str, dict[str, int]] = {}
    for o in outcomes:
        for stage, t in o.compliance.items():
            acc = total.setdefault(stage, _new_tally())
            for k, v in t.items():
                acc[k] = acc.get(k, 0) + v
    return total


Complete = Callable[[Sequence[GenerationRequest], str], tuple[list[Completion], list[bool]]]


class MapReducer:
    """Runs the pipeline for a batch of documents over one completion function."""

    def __init__(self, complete: Complete, tokenizer: Any, frame: Any, config: MapReduceConfig, window: int):
        self.complete = complete
        self.tok = tokenizer
        self.frame = frame
        # the layout that runs ("auto" resolved for this frame): what the report's config records
        self.config = replace(config.validate(), layout=resolve_layout(config.layout, frame))
        self.window = min(window, config.window) if config.window else window

    # ---- prompts -------------------------------------------------------------
    def _request(self, user: str, prefix: str, max_tokens: int) -> GenerationRequest:
        prompt = self.frame.wrap(user) + prefix
        return GenerationRequest(prompt, tuple(self.tok.encode(prompt)), max_tokens, answer_prefix=prefix)

    def _fits(self, r: GenerationRequest) -> bool:
        return r.prompt_tokens + r.max_tokens <= self.window

    def _map_prompt(self, doc: Document, chunk_text_: str, i: int, n: int) -> GenerationRequest:
        h = doc.hints
        # the level examples have placeholders of their own ({kind1}): fill them, then the sentence
        levels = {k: v.format_map(_Hints(h)) for k, v in doc.strategy.levels.items()}
        calibration = CALIBRATION.format_map(_Hints({**levels, **h})) if self.config.calibration else ""
        fmt = FORMAT.format(guide_short=doc.strategy.short.format_map(_Hints(h)), example=doc.strategy.example.format_map(_Hints(h)))
        # few-shot: a made-up part, its question and its record, fixed text (a family's own strategy gets the facts one)
        shot = doc.strategy.name if STRATEGIES.get(doc.strategy.name) is doc.strategy else "facts"
        user = MAP_LAYOUTS[self.config.layout].format(
            instruction=doc.instruction.strip(),
            i=i + 1,
            n=n,
            calibration=calibration,
            chunk=chunk_text_.strip(),
            question=doc.question.strip(),
            guide=doc.strategy.guide.format_map(_Hints(h)),
            format=fmt,
            example_chunk=FEW_SHOT_EXAMPLES[shot][0].format_map(_Hints(h)),
            example_question=FEW_SHOT_EXAMPLES[shot][1].format_map(_Hints(h)),
            example_record=STRATEGIES[shot].example.format_map(_Hints(h)),
        )
        return self._request(user, RECORD_PREFIX, self.config.record_tokens)

    def _records_text(self, records: Sequence[Record]) -> str:
        return "\n\n".join(f"Record from {r.source}:\n{format_record(r)}" for r in records)

    def _collapse_prompt(self, doc: Document, group: Sequence[Record]) -> GenerationRequest:
        first, last = _span(group)
        user = COLLAPSE_PROMPT.format(instruction=doc.instruction.strip(), first=first, last=last, records=self._records_text(group), question=doc.question.strip())
        return self._request(user, RECORD_PREFIX, self.config.record_tokens)

    def _reduce_prompt(self, doc: Document, records: Sequence[Record], n: int) -> GenerationRequest:
        user = REDUCE_PROMPT.format(instruction=doc.instruction.strip(), n=n, records=self._records_text(records), question=doc.question.strip())
        return self._request(user, doc.answer_prefix, doc.answer_tokens)

    # ---- chunking with a verified fit ------------------------------------------
    def chunks(self, doc: Document) -> tuple[list[Chunk], list[GenerationRequest]]:
        """The document's chunks and their map requests, every one verified to fit the window."""
        empty = self._map_prompt(doc, "", 98, 99)
        room = self.window - empty.prompt_tokens - empty.max_tokens - 8  # part numbers may take a few more tokens
        budget = min(self.config.chunk_tokens, room)
        if budget < 16:
            raise RulerUsageError(
                "--ruler-mapreduce-window", self.window,
                f"a map prompt's fixed text and its {empty.max_tokens} output tokens take {empty.prompt_tokens + empty.max_tokens} "
                f"tokens, leaving no room for a chunk; raise the window (or lower --ruler-mapreduce-record-tokens)",
            )
        for _ in range(6):
            chunks = chunk_text(doc.context, budget, self.tok.count_pieces, self.config.overlap)
            requests = [self._map_prompt(doc, c.text, c.index, len(chunks)) for c in chunks]
            over = max((r.prompt_tokens + r.max_tokens - self.window for r in requests), default=0)
            if over <= 0:
                return chunks, requests
            budget -= over + 8  # the estimate was short at a seam: shrink and re-pack
            if budget < 16:
                break
        raise RulerUsageError("--ruler-mapreduce-chunk", self.config.chunk_tokens, "a single unit of this text (a line or sentence) does not fit the window; raise --ruler-mapreduce-window")

    # ---- stages -----------------------------------------------------------------
    def _send(self, requests: Sequence[GenerationRequest], label: str) -> tuple[list[Completion], list[bool]]:
        step = self.config.parallel or max(1, len(requests))
        out: list[Completion] = []
        hits: list[bool] = []
        for at in range(0, len(requests), step):
            c, h = self.complete(list(requests[at : at + step]), label)
            out += c
            hits += h
        return out, hits

    def _record(self, doc_i: int, stage: str, rnd: int, parts: str, req: GenerationRequest, c: Completion, hit: bool) -> CallRecord:
        return CallRecord(
            doc=doc_i, stage=stage, round=rnd, parts=parts, prompt_tokens=req.prompt_tokens,
            completion_tokens=c.completion_tokens, finish_reason=c.finish_reason, seconds=round(c.seconds, 3),
            cached=hit, output=c.text if c.ok else f"<{c.finish_reason}: {c.error}>",
            outcome=c.outcome, thinking_tokens=c.thinking_tokens, served=() if hit else endpoint_calls(c),
        )

    def _parse(self, doc: Document, call: CallRecord, c: Completion, source: str, chunk: str | None) -> Record:
        if not c.ok:
            call.parse = f"no output ({c.finish_reason})"
            return Record(answer=NO_INFORMATION, raw="", problems=("no output",), source=source)
        r = parse_record(c.text, prefix=RECORD_PREFIX, source=source)
        if chunk is not None:
            r = doc.strategy.check(r, chunk, doc.hints, self.config.verify)
        call.parse = "ok" if r.ok else "; ".join(r.problems)
        call.answer, call.confidence, call.dropped = r.answer, r.confidence, list(r.dropped)
        return r

    def run(self, docs: Sequence[Document], label: str = "mapreduce") -> list[Outcome]:
        outcomes: list[Outcome] = []
        plans = []
        for d_i, doc in enumerate(docs):
            chunks, reqs = self.chunks(doc)
            plans.append((chunks, reqs))
            outcomes.append(Outcome(prediction="", calls=[], chunks=len(chunks)))

        # map: every chunk of every document in one stage
        flat = [(d_i, c, r) for d_i, (chunks, reqs) in enumerate(plans) for c, r in zip(chunks, reqs)]
        done, hits = self._send([r for _, _, r in flat], f"{label} map")
        records: list[list[Record]] = [[] for _ in docs]
        for (d_i, chunk, req), c, hit in zip(flat, done, hits):
            call = self._record(d_i, "map", 0, str(chunk.index + 1), req, c, hit)
            rec = self._parse(docs[d_i], call, c, f"part {chunk.index + 1}", chunk.text)
            outcomes[d_i].calls.append(call)
            outcomes[d_i].malformed += not rec.ok
            outcomes[d_i].tally("map", rec)
            records[d_i].append(rec)

        # keep what carries information; mechanical strategies combine in code
        for d_i, doc in enumerate(docs):
            kept = [r for r in records[d_i] if not r.no_information or doc.strategy.name == "facts" and r.extracted.strip()]
            records[d_i] = kept
            if not doc.strategy.model_reduce:
                outcomes[d_i].prediction = doc.strategy.combine(kept, doc.hints) if doc.strategy.combine else ""

        model_docs = [d_i for d_i, doc in enumerate(docs) if doc.strategy.model_reduce]
        # collapse: while the reduce prompt would not fit, merge groups of records
        for rnd in range(1, self.config.max_rounds + 2):
            todo = [d_i for d_i in model_docs if records[d_i] and not self._fits(self._reduce_prompt(docs[d_i], records[d_i], outcomes[d_i].chunks))]
            if not todo:
                break
            if rnd > self.config.max_rounds:
                for d_i in todo:
                    records[d_i] = self._trim(docs[d_i], records[d_i], outcomes[d_i])
                break
            jobs = []
            for d_i in todo:
                groups = self._groups(docs[d_i], records[d_i])
                if all(len(g) == 1 for g in groups):  # nothing left to merge: trim instead
                    records[d_i] = self._trim(docs[d_i], records[d_i], outcomes[d_i])
                    continue
                outcomes[d_i].rounds = rnd
                records[d_i] = []
                for g in groups:
                    if len(g) == 1:
                        records[d_i].append(g[0])
                    else:
                        jobs.append((d_i, g, self._collapse_prompt(docs[d_i], g)))
            if not jobs:
                continue
            done, hits = self._send([r for _, _, r in jobs], f"{label} collapse {rnd}")
            for (d_i, g, req), c, hit in zip(jobs, done, hits):
                first, last = _span(g)
                call = self._record(d_i, "collapse", rnd, f"{first}-{last}", req, c, hit)
                rec = self._parse(docs[d_i], call, c, f"parts {first}-{last}", None)
                outcomes[d_i].calls.append(call)
                outcomes[d_i].malformed += not rec.ok
                outcomes[d_i].tally("collapse", rec)
                conf = rec.confidence if rec.confidence is not None else max((x.confidence or 0 for x in g), default=None)
                if not rec.no_information:
                    records[d_i].append(rec.with_(confidence=conf))

        # reduce: the model answers the task's question over the records
        jobs = []
        for d_i in model_docs:
            if not records[d_i]:
                outcomes[d_i].notes.append("every part answered NO INFORMATION: nothing to reduce")
                continue
            jobs.append((d_i, self._reduce_prompt(docs[d_i], records[d_i], outcomes[d_i].chunks)))
        if jobs:
            done, hits = self._send([r for _, r in jobs], f"{label} reduce")
            for (d_i, req), c, hit in zip(jobs, done, hits):
                call = self._record(d_i, "reduce", 0, f"1-{outcomes[d_i].chunks}", req, c, hit)
                call.parse, call.answer = "-", c.text.strip()
                outcomes[d_i].calls.append(call)
                outcomes[d_i].prediction = c.text if c.ok else ""
                if not c.ok:
                    outcomes[d_i].error = f"reduce: {c.finish_reason}: {c.error}"
        return outcomes

    # ---- collapse helpers --------------------------------------------------------
    def _groups(self, doc: Document, records: Sequence[Record]) -> list[list[Record]]:
        """Consecutive records packed into groups whose collapse prompt fits the window."""
        groups: list[list[Record]] = []
        current: list[Record] = []
        for r in records:
            trial = current + [r]
            if current and not self._fits(self._collapse_prompt(doc, trial)):
                groups.append(current)
                current = [r]
            else:
                current = trial
        if current:
            groups.append(current)
        return groups

    def _trim(self, doc: Document, records: list[Record], outcome: Outcome) -> list[Record]:
        """The collapse bound was reached: keep the most confident records that fit."""
        ranked = sorted(records, key=lambda r: -(r.confidence if r.confidence is not None else 2.5))
        kept: list[Record] = []
        for r in ranked:
            if self._fits(self._reduce_prompt(doc, kept + [r], outcome.chunks)):
                kept.append(r)
        dropped = len(records) - len(kept)
        if dropped:
            outcome.notes.append(f"collapse bound reached after {outcome.rounds} rounds: dropped the {dropped} least confident records")
        order = {id(r): i for i, r in enumerate(records)}
        return sorted(kept, key=lambda r: order[id(r)])


class _Hints(dict):
    def __missing__(self, key: str) -> str:
        return "{" + key + "}"


def _span(group: Sequence[Record]) -> tuple[str, str]:
    def ends(r: Record) -> tuple[str, str]:
        parts = r.source.split()[-1].split("-")
        return parts[0], parts[-1]

    return ends(group[0])[0], ends(group[-1])[1]
