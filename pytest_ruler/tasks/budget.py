"""Sizing a draft to the token budget: ``fill``.

Data flow (``tasks.generate`` calls it once per sample)::

    Draft (from a family) + budget ──► estimate(n): spliced piece counts, no full tokenization
        ──► largest n whose estimate fits ──► Draft.render(n)
        ──► ONE tokenization of the wrapped prompt (frame.head + input + frame.tail + answer_prefix)
        ──► over budget: shrink; room for another unit: grow; best in-budget result kept
        ──► Fitted (rendered text, exact prompt_tokens, units, passes, token ids)

Public names: ``fill``, ``Fitted``, ``smallest_length``, ``suggested_length``.

Budget rule: tokens(frame.head + input + frame.tail + answer_prefix)
+ tokens_to_generate <= length, counted without special tokens. ``fill`` never
returns a prompt over budget: the count it reports comes from tokenizing the
final text, not from the estimate. The estimate is a sum of per-piece counts,
exact when the tokenizer's pre-tokenizer splits at the seams (byte-level BPE
does); ``fill`` learns the observed drift and corrects, so a tokenizer that
merges across seams costs an extra pass, never a wrong length.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import RulerUsageError
from .base import Draft, GenerationContext, Rendered

__all__ = ["Fitted", "fill", "smallest_length", "suggested_length"]


@dataclass(frozen=True)
class Fitted:
    rendered: Rendered
    prompt_tokens: int
    units: int
    passes: int
    prompt_ids: tuple[int, ...] = ()


def _encode(ctx: GenerationContext, r: Rendered) -> list[int]:
    return ctx.tokenizer.encode(ctx.frame.wrap(r.input) + r.answer_prefix)


def _full_count(ctx: GenerationContext, r: Rendered) -> int:
    return len(_encode(ctx, r))


def smallest_length(draft: Draft, ctx: GenerationContext, tokens_to_generate: int) -> int:
    """The fewest tokens a length must have for ``draft`` to fit at all: its smallest render
    (``min_units``: the fixed text and the fewest units the task needs), wrapped, plus the answer."""
    return _full_count(ctx, draft.render(draft.min_units)) + tokens_to_generate


def suggested_length(smallest: int) -> int:
    """A length to advise for a task whose sample needs ``smallest``: random keys and names
    change the count a little from sample to sample, so 10% and 32 tokens more, in 64s."""
    return -(-int(smallest * 1.1 + 32) // 64) * 64


def fill(draft: Draft, budget: int, ctx: GenerationContext, *, task: str, length: int, tokens_to_generate: int) -> Fitted:
    """Render ``draft`` at the largest size whose real token count fits ``budget``.

    The search is a pure function of the draft (never of earlier samples), so a
    sample is the same whatever was generated before it. The seam drift
    between the spliced estimate and the real count is measured on a tiny
    render (one unit), then each pass renders once and tokenizes once: a pass
    that overshoots shrinks, one that leaves room for another unit grows, and
    the best in-budget result is kept.
    """
    overhead = ctx.frame_tokens
    hi = draft.max_units
    probe = min(draft.min_units + 1, hi) if hi is not None else draft.min_units + 1
    drift = _full_count(ctx, draft.render(probe)) - draft.estimate(probe) - overhead

    def largest(limit: int) -> int | None:
        lo_n = draft.min_units
        if draft.estimate(lo_n) + overhead > limit:
            return None
        # exponential then binary search on the (monotone) estimate
        step = max(1, lo_n)
        top = lo_n
        while hi is None or top < hi:
            nxt = top + step if hi is None else min(hi, top + step)
            if draft.estimate(nxt) + overhead > limit:
                break
            top, step = nxt, step * 2
        else:
            return top
        a, b = top, (top + step if hi is None else min(hi, top + step))
        while b - a > 1:
            mid = (a + b) // 2
            if draft.estimate(mid) + overhead <= limit:
                a = mid
            else:
                b = mid
        return a

    best: Fitted | None = None
    tried: dict[int, int] = {}
    n = largest(budget - drift)
    passes = 0
    while n is not None and n not in tried and passes < 8:
        rendered = draft.render(n)
        ids = _encode(ctx, rendered)
        actual = len(ids)
        passes += 1
        tried[n] = actual
        drift = actual - draft.estimate(n) - overhead
        if actual <= budget:
            if best is None or n > best.units:
                best = Fitted(rendered, actual, n, passes, tuple(ids))
            grow = hi is None or n < hi
            if not grow or draft.estimate(n + 1) + overhead + drift > budget:
                break
            nxt = largest(budget - drift)
            n = nxt if nxt is not None and nxt > n else n + 1
        else:
            nxt = largest(budget - drift)
            n = nxt if nxt is not None and nxt < n else n - 1
            if n < draft.min_units:
                n = None
    if best is not None:
        return Fitted(best.rendered, best.prompt_tokens, best.units, passes, best.prompt_ids)
    smallest = smallest_length(draft, ctx, tokens_to_generate)
    suggest = suggested_length(smallest)
    raise RulerUsageError(
        "length", length,
        f"task {task!r} needs at least {smallest} tokens with this tokenizer and template "
        f"(its fixed text plus the smallest haystack); use a length of {suggest} or more",
    )
