"""The shared machinery of every task family.

Data flow of one sample::

    TaskSpec + (length, seed, index) ──► sample_rng ──► family.draft(...) ──► Draft
    Draft.estimate(n)  (spliced piece counts, no full tokenization)
        └─► budget.fill(): largest n that fits the budget ──► Draft.render(n)
                    ──► ONE tokenization of the wrapped prompt (verification)
                    ──► Sample (prompt_tokens exact, metadata)

Public names:

- ``Sample``: one generated prompt (frozen); ``Sample.to_ruler_json()``.
- ``Frame``: the chat wrapper around a prompt (``BASE_FRAME`` = none).
- ``GenerationContext``: tokenizer, frame and data sources for a run.
- ``Draft`` / ``Rendered``: what a family returns; ``budget.fill`` sizes a draft
  (the budget rule is stated there).
- ``PrefixCounter``: lazily summed token counts of haystack units.
- ``sample_rng(task, length, seed, index)``: the only source of randomness.
- ``run_memo``: a value fixed for a whole run (task, length, seed), such as
  the reference's one vt example layout per run, computed once per tokenizer
  and frame.
- ``distinct_slots`` / ``insert_before``: needles and statements placed at
  distinct existing lines, as the reference places them.
- ``depth_fraction``, ``with_defaults``, ``check_positive_int``, ``check_depths``:
  the families' argument checks.
"""
from __future__ import annotations

import bisect
import hashlib
import random
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Protocol, Sequence

from ..data.registry import data_kind, data_kinds, default_paths, read_data
from ..errors import RulerUsageError
from .tokenizer import Tokenizer

__all__ = [
    "BASE_FRAME",
    "Draft",
    "Frame",
    "GenerationContext",
    "PrefixCounter",
    "Rendered",
    "Sample",
    "distinct_slots",
    "insert_before",
    "run_memo",
    "sample_rng",
]


@dataclass(frozen=True)
class Frame:
    """Text around the task prompt: ``head + input + tail + answer_prefix``.

    ``BASE_FRAME`` is RULER's ``base`` template (nothing around the prompt).
    A chat template becomes a frame: head = everything before the user
    message, tail = the end of the user turn and the start of the assistant turn.
    """

    head: str = ""
    tail: str = ""
    name: str = "base"
    # what rendered it: (template, bos_token, eos_token, template kwargs), None for BASE_FRAME; a family
    # whose prompt is a whole conversation (tasks.mrcr) renders that with the same template
    source: tuple | None = field(default=None, compare=False, hash=False, repr=False)

    def wrap(self, text: str) -> str:
        return f"{self.head}{text}{self.tail}"


BASE_FRAME = Frame()


@dataclass(frozen=True)
class Sample:
    """One RULER sample: the prompt, its references, and what was measured."""

    task: str
    index: int
    seed: int
    target_length: int
    input: str  # the (framed) prompt, without the answer prefix
    answer_prefix: str
    outputs: tuple[str, ...]
    prompt_tokens: int  # tokens of input + answer_prefix, exact
    tokens_to_generate: int
    metadata: Mapping[str, Any] = field(default_factory=dict, compare=False, hash=False)
    # token ids of input + answer_prefix from the verification pass: what engines receive
    prompt_ids: tuple[int, ...] | None = field(default=None, compare=False, hash=False, repr=False)
    # the haystack alone, and the unframed task text before and after it: what
    # chunked inference (mapreduce/) splits and asks about; None for a family
    # that does not say where its context is
    context: str | None = field(default=None, compare=False, hash=False, repr=False)
    around_context: tuple[str, str] | None = field(default=None, compare=False, hash=False, repr=False)
    # the chat the prompt renders, where a family's prompt is a conversation (tasks.mrcr): an engine
    # that takes messages (openai's chat endpoint) sends these instead of splitting the prompt
    messages: tuple[Mapping[str, str], ...] | None = field(default=None, compare=False, hash=False, repr=False)

    @property
    def length(self) -> int:
        """RULER's ``length``: prompt tokens plus tokens_to_generate (<= target_length)."""
        return self.prompt_tokens + self.tokens_to_generate

    @property
    def prompt(self) -> str:
        """The full text sent to a model: input followed by the answer prefix."""
        return self.input + self.answer_prefix

    def to_ruler_json(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "input": self.input,
            "outputs": list(self.outputs),
            "length": self.length,
            "answer_prefix": self.answer_prefix,
            "task": self.task,
            "seed": self.seed,
            "target_length": self.target_length,
            "prompt_tokens": self.prompt_tokens,
            "tokens_to_generate": self.tokens_to_generate,
            "metadata": dict(self.metadata),
        }


@dataclass(frozen=True)
class Rendered:
    """A draft rendered at one size: the task prompt (unframed) and its answers."""

    input: str
    answer_prefix: str
    outputs: tuple[str, ...]
    metadata: Mapping[str, Any]
    context: str | None = None  # the haystack as it appears (last) in ``input``

    def around_context(self) -> tuple[str, str] | None:
        """The task text before and after the context (None when unknown)."""
        if not self.context:
            return None
        at = self.input.rfind(self.context)
        if at < 0:
            return None
        return self.input[:at], self.input[at + len(self.context):]


class Draft(Protocol):
    """All random choices of one sample, renderable at any haystack size n."""

    min_units: int
    max_units: int | None

    def estimate(self, n: int) -> int:
        """Estimated tokens of ``input + answer_prefix`` at size n (non-decreasing in n)."""

    def render(self, n: int) -> Rendered: ...


def sample_rng(task: str, length: int, seed: int, index: int, salt: str = "") -> random.Random:
    """The RNG of one sample: a stable hash of its identity, never global state."""
    key = f"pytest-ruler/1|{task}|{length}|{seed}|{index}|{salt}".encode()
    return random.Random(int.from_bytes(hashlib.sha256(key).digest()[:8], "big"))


_RUN_MEMO: dict[int, tuple[Any, dict[tuple, Any]]] = {}


def run_memo(ctx: "GenerationContext", key: tuple, compute: Callable[[], Any]) -> Any:
    """``compute()`` once per (tokenizer, frame, key): a per-run value, memoised.

    ``key`` must hold everything the value depends on besides the tokenizer
    and frame (task, length, seed, arguments). The memo keeps its tokenizer
    alive, so an id is never reused for another tokenizer while it is here.
    """
    tok = ctx.tokenizer
    entry = _RUN_MEMO.get(id(tok))
    if entry is None or entry[0] is not tok:
        if len(_RUN_MEMO) >= 8:
            _RUN_MEMO.pop(next(iter(_RUN_MEMO)))
        entry = _RUN_MEMO[id(tok)] = (tok, {})
    full = (ctx.frame, *key)
    if full not in entry[1]:
        entry[1][full] = compute()
    return entry[1][full]


def distinct_slots(rng: random.Random, n: int, k: int, first: int | None = None) -> list[int]:
    """k distinct line indices in range(n), sorted: item j goes before line slot[j].

    This is the reference's placement: never two items in one slot, never after
    the last line. ``first`` pins the first slot (a fixed depth); the others
    follow it. A family sets ``min_units`` to k; below that (the fixed-text
    count at n = 0) the items that have no line of their own go at the end.
    """
    if n < k:
        return [min(j, n) for j in range(k)]
    if first is None:
        return sorted(rng.sample(range(n), k))
    first = max(0, min(first, n - k))
    return [first] + sorted(rng.sample(range(first + 1, n), k - 1))


def insert_before(units: list[str], items: Sequence[str], slots: Sequence[int]) -> list[str]:
    """``units`` with ``items[j]`` inserted before ``units[slots[j]]`` (slot n = at the end);
    items sharing a slot keep their order."""
    order = sorted(range(len(items)), key=lambda j: slots[j])
    out: list[str] = []
    k = 0
    for i in range(len(units) + 1):
        while k < len(order) and slots[order[k]] == i:
            out.append(items[order[k]])
            k += 1
        if i < len(units):
            out.append(units[i])
    return out


class PrefixCounter:
    """Token counts of units ``unit(0), unit(1), ...`` summed lazily.

    Units are counted in batches as the search needs them. ``memo=True`` keeps
    per-piece counts in the tokenizer (for units that recur across samples:
    corpus sentences, documents); ``memo=False`` is for one-off random units
    (distractor needles), estimated from memoised runs instead.
    """

    def __init__(
        self,
        tokenizer: Tokenizer,
        unit: Callable[[int], str] | None = None,
        *,
        memo: bool = True,
        limit: int | None = None,
        count_unit: Callable[[int], int] | None = None,
    ):
        self._tok = tokenizer
        self._unit = unit
        self._memo = memo
        self._limit = limit
        self._count_unit = count_unit
        self.prefix: list[int] = [0]

    def ensure(self, n: int) -> int:
        if self._limit is not None:
            n = min(n, self._limit)
        have = len(self.prefix) - 1
        if n > have:
            if self._count_unit is not None:
                counts = [self._count_unit(i) for i in range(have, n)]
            elif self._memo:
                pieces = [self._unit(i) for i in range(have, n)]
                counts = self._tok.count_pieces(pieces)
            else:
                counts = [self._tok.estimate_count(self._unit(i)) for i in range(have, n)]
            total = self.prefix[-1]
            for c in counts:
                total += c
                self.prefix.append(total)
        return len(self.prefix) - 1

    def total(self, n: int) -> int:
        self.ensure(n)
        return self.prefix[n]

    def largest_within(self, limit: int) -> int:
        """Largest n with total(n) <= limit (counts only as many units as needed)."""
        have = self.ensure(64)
        avg = max(1.0, self.prefix[have] / max(1, have))
        guess = int(limit / avg * 1.02) + 16
        while True:
            have = self.ensure(guess)
            if self.prefix[have] > limit or (self._limit is not None and have >= self._limit):
                break
            guess = int(guess * 1.25) + 16
        return bisect.bisect_right(self.prefix, limit) - 1


class GenerationContext:
    """What generation needs besides the task: tokenizer, frame, and where each kind of data is.

    ``data`` maps a data kind (``data.registry``: essays, squad, hotpotqa, mmlu, hotpotqa-train,
    or one a plugin registered) to its path; a kind may also be given by keyword, ``-`` written
    ``_`` (``squad=PATH``, ``hotpotqa_train=PATH``). A kind with no path uses what
    ``pytest-ruler download`` left in the data folder. A family reads its data with
    :meth:`read` (parsed once per process and file state, by the registry).

    It holds no state learned from samples: a sample must not depend on
    which samples were generated before it in the same process.
    """

    def __init__(self, tokenizer: Tokenizer, frame: Frame = BASE_FRAME, data: Mapping[str, str | None] | None = None,
                 **paths: str | None) -> None:
        known = {k.name for k in data_kinds()}
        given = dict(data or {})
        for key, path in paths.items():
            given[data_kind(key if key in known else key.replace("_", "-")).name] = path
        self.tokenizer = tokenizer
        self.frame = frame
        self.data: dict[str, str | None] = default_paths({k: None if v is None else str(v) for k, v in given.items()})
        self._frame_tokens: int | None = None

    def __repr__(self) -> str:
        return f"GenerationContext(tokenizer={self.tokenizer!r}, frame={self.frame!r}, data={self.data!r})"

    def path(self, kind: str) -> str | None:
        """Where the data of ``kind`` is (None: nowhere; the kind's fallback or an error when read)."""
        return self.data.get(kind)

    def read(self, kind: str, reader: Callable[[Any], Any] | None = None) -> Any:
        """The data of ``kind``, as its reader (or ``reader``: another reading of the same file) parses
        it; raises RulerDataError naming the kind's option, and how to get the data when there is none."""
        return read_data(kind, self.path(kind), reader=reader)

    @property
    def frame_tokens(self) -> int:
        if self._frame_tokens is None:
            self._frame_tokens = self.tokenizer.count(self.frame.head) + self.tokenizer.count(self.frame.tail)
        return self._frame_tokens


def depth_fraction(position: int, total: int) -> float:
    """A position among ``total`` slots as a fraction of the context (0 = start)."""
    return round(position / total, 4) if total else 0.0


def with_defaults(family: str, args: Mapping[str, Any], defaults: Mapping[str, Any]) -> dict[str, Any]:
    """The family's defaults updated with ``args``; an unknown argument is an error naming the valid ones."""
    merged = {**defaults, **args}
    for key in sorted(set(merged) - set(defaults)):
        raise RulerUsageError(f"{family} argument {key}", merged[key], f"{family} takes {', '.join(defaults)}")
    return merged


def check_positive_int(parameter: str, value: Any, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise RulerUsageError(parameter, value, f"must be an integer >= {minimum}")
    return value


def check_depths(value: Any) -> tuple[float, ...] | None:
    """``depth``: None (random, as the paper), a fraction in [0, 1], or a list to sweep."""
    if value is None:
        return None
    values: Sequence[Any] = value if isinstance(value, (list, tuple)) else [value]
    out = []
    for v in values:
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v <= 1:
            raise RulerUsageError("depth", value, "give a fraction of the context in [0, 1] (0 = start, 1 = end), a list of them to sweep, or none for random depths")
        out.append(float(v))
    if not out:
        raise RulerUsageError("depth", value, "give at least one depth in [0, 1], or none for random depths")
    return tuple(out)
