"""The MRCR pack: ``mrcr_2``, ``mrcr_4``, ``mrcr_8`` (OpenAI's multi-round co-reference resolution).

A sample is a record of the data set (``data.mrcr``), not a drafted haystack: a long synthetic
chat in which 2, 4 or 8 identical requests hide, ending with a user turn that asks for the i-th
answer to one of them, prefixed with a random string. Select the tasks with ``--ruler-tasks=mrcr``
(all three), ``mrcr:<glob>`` or by name; they are graded with MRCR's own grade (the ``mrcr``
metric, ``results.mrcr_grade``).

Data flow of an item (task × length L × seed)::

    --ruler-mrcr (data.mrcr.read_mrcr: records in the data set's order)
        ──► the task's records (n_needles = 2, 4 or 8), in order
        ──► each rendered with the run's chat template (the whole conversation, the generation
            prompt after the last user turn; ``render_conversation``) and counted with the run's
            tokenizer, as the items count every prompt (no special tokens added)
        ──► the bin of L: L/2 < tokens <= L; its first N records (``select``) ──► Sample
            (prompt = the rendered chat; ``messages`` = the chat itself, for an engine that takes
            messages; outputs = (answer, random string): the grade's references, never sent)

Counting every record of a 1M-token data set would take long; a record is not counted when its
``n_chars`` rules it out of the bin: at most 4 tokens per character (UTF-8 bytes) plus 32 per
message for the template, so ``4 × n_chars + 32 × total_messages <= L/2`` is below the bin; and
more than 16 characters per token on average (``n_chars / 16 > L``) is what a record above the
bin would need to be counted in it: no tokenizer comes near that on prose. Counts are kept per
process (tokenizer, template, data file), so an item's bin is counted once.

The seed does not change an item's samples: the data set fixes them (the first N of the bin,
deterministic in every process). ``tokens_to_generate`` (the answer budget) is ours: 1024;
the reference names none.

Public names: ``PACK``, ``PACK_TASKS``, ``PACK_MARKS``, ``MARKS_SOURCE``, ``MrcrFamily``, ``pack_tasks``,
``render_conversation``, ``select``, ``Binned``.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Iterator, Mapping, Sequence

from ..errors import RulerUsageError
from .base import GenerationContext, Sample, run_memo, with_defaults

__all__ = ["MARKS_SOURCE", "PACK", "PACK_MARKS", "PACK_TASKS", "Binned", "MrcrFamily", "PACK_ROWS", "render_conversation", "select"]

PACK = "mrcr"
FAMILY = "mrcr"
TOKENS_TO_GENERATE = 1024
#: (name, n_needles)
PACK_TASKS: tuple[tuple[str, int], ...] = (("mrcr_2", 2), ("mrcr_4", 4), ("mrcr_8", 8))
#: the pack's default pass marks (points), used when neither ruler_task_thresholds nor --ruler-threshold says
PACK_MARKS: Mapping[str, float] = MappingProxyType({"mrcr_2": 30.0, "mrcr_4": 15.0, "mrcr_8": 10.0})
MARKS_SOURCE = ("vLLM's MRCR accuracy test (tests/evals/mrcr): per-needle match-ratio thresholds 2: 0.30, 4: 0.15, "
                "8: 0.10 for Qwen/Qwen3-0.6B at a 32K context, as points")
_CHARS_PER_TOKEN_MAX = 16
_TOKENS_PER_MESSAGE = 32


class MrcrFamily:
    """The family of the MRCR tasks: its samples are records (``samples``), not drafts."""

    name = FAMILY
    defaults: Mapping[str, Any] = {"n_needles": 2}

    def validate(self, args: Mapping[str, Any]) -> dict[str, Any]:
        a = with_defaults(FAMILY, args, self.defaults)
        if a["n_needles"] not in (2, 4, 8):
            raise RulerUsageError("n_needles", a["n_needles"], "MRCR has 2, 4 or 8 needles")
        return a

    def data_needs(self, args: Mapping[str, Any]) -> tuple[str, ...]:
        return ("mrcr",)

    def data_label(self, args: Mapping[str, Any], ctx: GenerationContext) -> str:
        return ctx.read("mrcr").label

    def draft(self, args: Mapping[str, Any], ctx: GenerationContext, rng: Any, index: int, **where: Any) -> Any:
        # not a RulerUsageError: the start-up check of a drafted task's smallest prompt passes over this family
        raise NotImplementedError("an MRCR sample is a record of the data set, not a draft: generate it with iter_samples")

    def samples(self, spec: Any, length: int, *, samples: int, seed: int, ctx: GenerationContext, start: int = 0) -> Iterator[Sample]:
        """The item's samples: the first ``start + samples`` records of the bin, from ``start`` (fewer when the bin has fewer)."""
        data = ctx.read("mrcr")
        binned = select(ctx, data, spec.args["n_needles"], length, start + samples)
        for index, chosen in enumerate(binned.chosen[start:], start):
            record, text, ids = chosen.record, chosen.text, chosen.ids
            meta = {"family": FAMILY, "haystack_corpus": data.label, "tokenizer": ctx.tokenizer.name, "template": ctx.frame.name,
                    "record": record.position, "source": record.source, "n_needles": record.n_needles,
                    "desired_msg_index": record.desired_msg_index, "total_messages": record.total_messages,
                    "n_chars": record.n_chars, "bin": [length // 2 + 1, length]}
            yield Sample(task=spec.name, index=index, seed=seed, target_length=length, input=text, answer_prefix="",
                         outputs=(record.answer, record.random_string), prompt_tokens=len(ids),
                         tokens_to_generate=spec.tokens_to_generate, metadata=meta, prompt_ids=tuple(ids),
                         messages=chosen.messages)


#: the pack's task rows as the registry takes them (name, family, tokens_to_generate, metric, args): tasks.registry
#: builds and validates them (make_task), as it does RULERv2's
PACK_ROWS: tuple[tuple[str, str, int, str, dict[str, int]], ...] = tuple(
    (name, FAMILY, TOKENS_TO_GENERATE, "mrcr", {"n_needles": n}) for name, n in PACK_TASKS)


# ---------------------------------------------------------------- the chat template, whole


@functools.lru_cache(maxsize=4)
def _compiled(template: str) -> Any:
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)

    def raise_exception(message: str) -> None:
        raise RulerUsageError("chat template", "the model's", f"the template refused an MRCR conversation: {message}")

    env.globals["raise_exception"] = raise_exception
    return env.from_string(template)


def render_conversation(ctx: GenerationContext, messages: Sequence[Mapping[str, str]]) -> str:
    """The conversation as the run's chat template renders it, with the generation prompt after the
    last user turn; a run without a chat template (base prompts) is refused."""
    source = ctx.frame.source
    if not source:
        raise RulerUsageError("--ruler-chat-template", ctx.frame.name, "the MRCR tasks are chats and need a chat template: "
                              "use a chat model with --ruler-chat-template=auto (its own) or a Jinja file "
                              "(pytest-ruler generate: --chat-template auto)")
    template, bos, eos, kwargs = source
    reserved = ("messages", "add_generation_prompt", "bos_token", "eos_token")
    try:
        return _compiled(template).render(messages=[dict(m) for m in messages], add_generation_prompt=True, bos_token=bos,
                                          eos_token=eos, **{k: v for k, v in kwargs.items() if k not in reserved})
    except RulerUsageError:
        raise
    except Exception as exc:
        raise RulerUsageError("--ruler-chat-template", ctx.frame.name,
                              f"it does not render an MRCR conversation ({type(exc).__name__}: {exc}); pass another template") from None


# ---------------------------------------------------------------- bins


@dataclass(frozen=True)
class Chosen:
    record: Any
    messages: tuple
    text: str
    ids: tuple[int, ...]


@dataclass(frozen=True)
class Binned:
    """A bin's records: ``chosen`` (at most the number asked, in order) and whether the data ran out."""

    n_needles: int
    length: int
    asked: int
    chosen: tuple[Chosen, ...]

    @property
    def short(self) -> bool:
        return len(self.chosen) < self.asked

    @property
    def largest(self) -> int:
        return max((len(c.ids) for c in self.chosen), default=0)


def _may_fit(record: Any, length: int) -> bool:
    """False when ``n_chars`` rules the record out of the bin (see the module docstring)."""
    most = 4 * record.n_chars + _TOKENS_PER_MESSAGE * max(1, record.total_messages)
    return most > length // 2 and record.n_chars <= _CHARS_PER_TOKEN_MAX * length


def select(ctx: GenerationContext, data: Any, n_needles: int, length: int, count: int) -> Binned:
    """The first ``count`` records of ``n_needles`` whose rendered chat has L/2 < tokens <= L (``length``)."""
    counts: dict[int, int] = run_memo(ctx, ("mrcr-counts", data), dict)  # record position -> tokens
    chosen: list[Chosen] = []
    for record in data.records:
        if len(chosen) >= count:
            break
        if record.n_needles != n_needles or not _may_fit(record, length):
            continue
        known = counts.get(record.position)
        if known is not None and not length // 2 < known <= length:
            continue
        messages = data.messages(record)
        text = render_conversation(ctx, messages)
        ids = tuple(ctx.tokenizer.encode(text))
        counts[record.position] = len(ids)
        if length // 2 < len(ids) <= length:
            chosen.append(Chosen(record, messages, text, ids))
    return Binned(n_needles, length, count, tuple(chosen))
