"""Aggregation tasks: common words extraction (cwe) and frequent words extraction (fwe).

cwe — arguments ``freq_cw`` (30), ``freq_ucw`` (3), ``num_cw`` (10); below a
target length of 4096 tokens the repeats become 6 and 1 and the one-shot
example shrinks to 20 words (3/1), as the reference does. The context is a
numbered list ``1. word 2. word …``: ``num_cw`` common words ``freq_cw`` times
each, every other word ``freq_ucw`` times, shuffled. The example (40 words,
10 common ×10, others ×3) is rendered with the full template, the answer prefix
and its answer `` 1. w1 2. w2 …``, then a newline. Words come from the
reference's pool (``words.word_pool``: 8,169 wonderwords 2.2.0 entries, a few
capitalised, hyphenated or two-word such as ``TV`` or ``ad hoc``); the example's
words and the list's are drawn independently, so they may overlap, as in the
reference. The haystack size n is the number of distinct words. Kept ours: the
reference shuffles every list with one fixed seed, so all its samples of a size
put the common words in the same slots (the reference's qa has the same defect
with its gold document); ours shuffles per sample.

fwe — arguments ``alpha`` (2.0), ``coded_wordlen`` (6), ``vocab_size`` (None:
(target length − tokens_to_generate) // 50, as the reference: 80 / 654 / 2620
at 4K / 32K / 128K; at least 16). A vocabulary of random lower-case coded
words; the word of rank k appears floor(n·k^−alpha/ζ(alpha)) times; rank 1 is
the noise token ``...``; the answer is the words of ranks 2, 3, 4, which are
checked to be strictly more frequent than every other coded word. The
haystack size n is the nominal total word count, sized per sample.

Kept ours: the reference sizes n once per run and reuses that count pattern
for every sample, but each sample draws its own vocabulary and random coded
words tokenize to 2–4 tokens, so a fixed n leaves some samples about 10 %
short of the length and takes others over it (the reference never checks).
Every sample here is filled as close to its bound as the unit allows and never
over budget, so n is sized per sample.
"""

from __future__ import annotations

import math
import random
import re
import string
from typing import Any, Mapping

from ..errors import RulerUsageError
from .base import GenerationContext, Rendered, check_positive_int, with_defaults
from .words import WONDERWORDS_VERSION, word_pool

__all__ = [
    "CWE_ANSWER_PREFIX",
    "CWE_TEMPLATE",
    "CommonWordsFamily",
    "FWE_ANSWER_PREFIX",
    "FWE_TEMPLATE",
    "FrequentWordsFamily",
    "parse_question",
    "fwe_vocab_size",
    "zeta",
]

CWE_TEMPLATE = (
    "Below is a numbered list of words. In these words, some appear more often than others. "
    "Memorize the ones that appear most often.\n{context}\nQuestion: What are the 10 most common words in the above list?"
)
CWE_ANSWER_PREFIX = " Answer: The top 10 words that appear most often in the list are:"
FWE_TEMPLATE = (
    "Read the following coded text and track the frequency of each coded word. "
    "Find the three most frequently appeared coded words. {context}\nQuestion: Do not provide any explanation. "
    "Please ignore the dots '....'. What are the three most frequently appeared words in the above coded text?"
)
FWE_ANSWER_PREFIX = " Answer: According to the coded text above, the three most frequently appeared words are:"

_NUMBER_WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10}
_QUESTION = re.compile(r"What are the (\w+) most (?:common|frequently appeared) words", re.I)


def parse_question(question: str) -> dict[str, int] | None:
    """``{"top": k}``: how many words a cwe/fwe question asks for, read from its text."""
    found = _QUESTION.findall(question)
    if not found:
        return None
    word = found[-1].lower()
    top = int(word) if word.isdigit() else _NUMBER_WORDS.get(word)
    return {"top": top} if top else None


def _count_strategy(question: str, extra: int) -> tuple[str, dict[str, Any]]:
    """``count``: the model counts words per chunk; code sums the counts and takes the top k."""
    q = parse_question(question)
    if q is None:
        raise RulerUsageError("--ruler-mapreduce", question.strip()[:80], "no word count found in this question; keep the cwe/fwe template")
    return "count", {"top": q["top"], "top_map": q["top"] + extra}


SHORT_LENGTH = 4096  # below this, cwe uses the reference's short-context repeats


def zeta(alpha: float) -> float:
    """Riemann zeta ζ(alpha) for alpha > 1 (Euler–Maclaurin, ~1e-12 accurate)."""
    if alpha <= 1:
        raise RulerUsageError("alpha", alpha, "the Zeta distribution needs alpha > 1")
    n = 32
    head = math.fsum(k ** -alpha for k in range(1, n))
    tail = n ** (1 - alpha) / (alpha - 1) + n ** -alpha / 2 + alpha * n ** (-alpha - 1) / 12
    tail -= alpha * (alpha + 1) * (alpha + 2) * n ** (-alpha - 3) / 720
    return head + tail


def _numbered(words: list[str]) -> str:
    return " ".join(f"{i + 1}. {w}" for i, w in enumerate(words))


class CommonWordsFamily:
    name = "common_words_extraction"
    defaults: Mapping[str, Any] = {"freq_cw": 30, "freq_ucw": 3, "num_cw": 10}

    def validate(self, args: Mapping[str, Any]) -> dict[str, Any]:
        a = with_defaults("cwe", args, self.defaults)
        for k in self.defaults:
            check_positive_int(k, a[k])
        if a["freq_cw"] <= a["freq_ucw"]:
            raise RulerUsageError("freq_cw", a["freq_cw"], f"common words must appear more often than the others (freq_ucw={a['freq_ucw']})")
        return a

    def data_needs(self, args: Mapping[str, Any]) -> tuple[str, ...]:
        return ()

    def data_label(self, args: Mapping[str, Any], ctx: GenerationContext) -> str:
        return f"wonderwords {WONDERWORDS_VERSION} word list"

    def draft(self, args: Mapping[str, Any], ctx: GenerationContext, rng: random.Random, index: int, *, length: int, **_: Any) -> "CWEDraft":
        return CWEDraft(args, ctx, rng, length)

    def mapreduce_strategy(self, question: str) -> tuple[str, dict[str, Any]]:
        return _count_strategy(question, extra=5)


class CWEDraft:
    def __init__(self, a: Mapping[str, Any], ctx: GenerationContext, rng: random.Random, length: int):
        tok = ctx.tokenizer
        pool = word_pool()
        self.num_cw = a["num_cw"]
        if length < SHORT_LENGTH:
            self.freq_cw, self.freq_ucw, ex = 6, 1, (20, 3, 1)
        else:
            self.freq_cw, self.freq_ucw, ex = a["freq_cw"], a["freq_ucw"], (40, 10, 3)
        ex_words = rng.sample(pool, ex[0])
        self.words = rng.sample(pool, len(pool))  # drawn independently of the example's words
        ex_common = ex_words[: self.num_cw]
        ex_list = ex_common * ex[1] + ex_words[self.num_cw:] * ex[2]
        rng.shuffle(ex_list)
        self.example = (
            CWE_TEMPLATE.format(context=_numbered(ex_list)) + CWE_ANSWER_PREFIX + " " + _numbered(ex_common) + "\n"
        )
        self._shuffle_seed = rng.getrandbits(64)
        self.outputs = tuple(self.words[: self.num_cw])
        self.min_units = self.num_cw + 1
        self.max_units = len(self.words)
        self._tok = tok
        # token counts of the list: Σ numbering + Σ freq(w)·count(" w")
        self._word_counts = [0]
        self._num_counts = [0]
        empty = self._render(self.num_cw)
        self._base = tok.count(empty.input + empty.answer_prefix) - self._list_tokens(self.num_cw)

    def _entries(self, n: int) -> int:
        return self.num_cw * self.freq_cw + (n - self.num_cw) * self.freq_ucw

    def _list_tokens(self, n: int) -> int:
        entries = self._entries(n)
        if len(self._num_counts) <= entries:
            start = len(self._num_counts)
            counts = self._tok.count_pieces(f" {i}." for i in range(start, entries + 1))
            for c in counts:
                self._num_counts.append(self._num_counts[-1] + c)
        if len(self._word_counts) <= n:
            start = len(self._word_counts) - 1
            counts = self._tok.count_pieces(" " + w for w in self.words[start:n])
            for c in counts:
                self._word_counts.append(self._word_counts[-1] + c)
        common = self._word_counts[self.num_cw]
        return self._num_counts[entries] + common * self.freq_cw + (self._word_counts[n] - common) * self.freq_ucw

    def estimate(self, n: int) -> int:
        return self._base + self._list_tokens(n)

    def _render(self, n: int) -> Rendered:
        common, uncommon = self.words[: self.num_cw], self.words[self.num_cw:n]
        entries = common * self.freq_cw + uncommon * self.freq_ucw
        random.Random(self._shuffle_seed + n).shuffle(entries)
        context = _numbered(entries)
        text = self.example + CWE_TEMPLATE.format(context=context)
        meta = {
            "haystack": "word list",
            "haystack_units": n,
            "freq_cw": self.freq_cw,
            "freq_ucw": self.freq_ucw,
            "list_entries": len(entries),
            "wonderwords": WONDERWORDS_VERSION,
        }
        return Rendered(text, CWE_ANSWER_PREFIX, self.outputs, meta, context)

    render = _render


class FrequentWordsFamily:
    name = "freq_words_extraction"
    defaults: Mapping[str, Any] = {"alpha": 2.0, "coded_wordlen": 6, "vocab_size": None}

    def validate(self, args: Mapping[str, Any]) -> dict[str, Any]:
        a = with_defaults("fwe", args, self.defaults)
        if isinstance(a["alpha"], bool) or not isinstance(a["alpha"], (int, float)) or a["alpha"] <= 1:
            raise RulerUsageError("alpha", a["alpha"], "the Zeta distribution needs a number alpha > 1 (the paper uses 2.0)")
        a["alpha"] = float(a["alpha"])
        check_positive_int("coded_wordlen", a["coded_wordlen"], minimum=3)
        if a["vocab_size"] is not None:
            check_positive_int("vocab_size", a["vocab_size"], minimum=5)
        return a

    def data_needs(self, args: Mapping[str, Any]) -> tuple[str, ...]:
        return ()

    def data_label(self, args: Mapping[str, Any], ctx: GenerationContext) -> str:
        return "coded words"

    def draft(self, args: Mapping[str, Any], ctx: GenerationContext, rng: random.Random, index: int, *,
              length: int, tokens_to_generate: int = 50, **_: Any) -> "FWEDraft":
        return FWEDraft(args, ctx, rng, fwe_vocab_size(args, length, tokens_to_generate))

    def mapreduce_strategy(self, question: str) -> tuple[str, dict[str, Any]]:
        return _count_strategy(question, extra=5)


def fwe_vocab_size(args: Mapping[str, Any], length: int, tokens_to_generate: int) -> int:
    """The reference's vocabulary size: (length − tokens_to_generate) // 50, at least 16."""
    return args["vocab_size"] or max(16, (length - tokens_to_generate) // 50)


class FWEDraft:
    def __init__(self, a: Mapping[str, Any], ctx: GenerationContext, rng: random.Random, size: int):
        wl = a["coded_wordlen"]
        vocab: set[str] = set()
        while len(vocab) < size:
            vocab.add("".join(rng.choices(string.ascii_lowercase, k=wl)))
        words = sorted(vocab)
        rng.shuffle(words)
        words[0] = "..."  # rank 1 is noise
        self.vocab = words
        self.alpha = a["alpha"]
        self._z = zeta(self.alpha)
        self._weights = [k ** -self.alpha / self._z for k in range(1, size + 1)]
        self._shuffle_seed = rng.getrandbits(64)
        self.outputs = tuple(words[1:4])
        self._word_tokens = ctx.tokenizer.count_pieces(" " + w for w in words)
        self.min_units = 1
        self.max_units = None
        empty = Rendered(FWE_TEMPLATE.format(context=""), FWE_ANSWER_PREFIX, self.outputs, {})
        self._base = ctx.tokenizer.count(empty.input + empty.answer_prefix)

    def counts(self, n: int) -> list[int]:
        return [int(n * w) for w in self._weights]

    def estimate(self, n: int) -> int:
        return self._base + sum(c * t for c, t in zip(self.counts(n), self._word_tokens))

    def render(self, n: int) -> Rendered:
        counts = self.counts(n)
        seq = [w for w, c in zip(self.vocab, counts) for _ in range(c)]
        random.Random(self._shuffle_seed + n).shuffle(seq)
        context = " ".join(seq)
        text = FWE_TEMPLATE.format(context=context)
        meta = {
            "haystack": "coded words",
            "haystack_units": n,
            "vocab_size": len(self.vocab),
            "answer_counts": counts[1:4],
            "next_count": counts[4] if len(counts) > 4 else 0,
            "noise_count": counts[0],
        }
        return Rendered(text, FWE_ANSWER_PREFIX, self.outputs, meta, context)
