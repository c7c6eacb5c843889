"""The 11 offline tasks at 4K and 16K with the embedded tokenizer: exact templates,
budget, fill, answers, needles, VT chains, CWE/FWE counts, determinism; and the
reference's bytes and draws (issue 15): the vt example's boundary and size, the
distinct placement of needles and statements, the fwe vocabulary, the cwe pool,
the qa question order and document repeat.

The template strings below are typed from RULER's reference templates, not imported
from the package, so a change to the package's templates fails here.
"""

from __future__ import annotations

import re
from collections import Counter

import pytest

from pytest_ruler.tasks import generate_samples, get_task

OFFLINE = ["niah_single_1", "niah_single_2", "niah_single_3", "niah_multikey_1", "niah_multikey_2",
           "niah_multikey_3", "niah_multivalue", "niah_multiquery", "vt", "cwe", "fwe"]
LENGTHS = [4096, 16384]
N = 3

NIAH_T = ("Some special magic {v} are hidden within the following text. Make sure to memorize it. "
          "I will quiz you about the {v} afterwards.\n{context}\nWhat are all the special magic {v} for {query} mentioned in the provided text?")
NIAH_P = " The special magic {v} for {query} mentioned in the provided text are"
NIAH_T1 = ("A special magic {v} is hidden within the following text. Make sure to memorize it. "
           "I will quiz you about the {v} afterwards.\n{context}\nWhat is the special magic {v} for {query} mentioned in the provided text?")
NIAH_P1 = " The special magic {v} for {query} mentioned in the provided text is"
VT_T = ("Memorize and track the chain(s) of variable assignment hidden in the following text.\n\n{context}\n"
        "Question: Find all variables that are assigned the value {query} in the text above.")
VT_P = (" Answer: According to the chain(s) of variable assignment in the text above, {num_v} variables "
        "are assigned the value {query}, they are: ")
CWE_T = ("Below is a numbered list of words. In these words, some appear more often than others. Memorize the ones "
         "that appear most often.\n{context}\nQuestion: What are the 10 most common words in the above list?")
CWE_P = " Answer: The top 10 words that appear most often in the list are:"
FWE_T = ("Read the following coded text and track the frequency of each coded word. Find the three most frequently "
         "appeared coded words. {context}\nQuestion: Do not provide any explanation. Please ignore the dots '....'. "
         "What are the three most frequently appeared words in the above coded text?")
FWE_P = " Answer: According to the coded text above, the three most frequently appeared words are:"
MIN_FILL = {"niah": 0.97, "variable_tracking": 0.97, "common_words_extraction": 0.95, "freq_words_extraction": 0.90}


@pytest.fixture(scope="module")
def generated(ctx):
    return {(t, L): generate_samples(t, L, samples=N, seed=0, ctx=ctx) for t in OFFLINE for L in LENGTHS}


def split_template(template: str, text: str, **fmt: str) -> str:
    """Check text == template with some {context}; return the context."""
    head, tail = template.split("{context}")
    head, tail = head.format(**fmt), tail.format(**fmt)
    assert text.startswith(head), (text[: len(head) + 40], head)
    assert text.endswith(tail), (text[-len(tail) - 40:], tail)
    return text[len(head): len(text) - len(tail)]


CASES = [(t, L) for t in OFFLINE for L in LENGTHS]


@pytest.mark.parametrize(("task", "length"), CASES, ids=[f"{t}-{L}" for t, L in CASES])
def test_budget_fill_and_exact_count(generated, tokenizer, task, length):
    spec = get_task(task)
    for s in generated[task, length]:
        # the recorded count is the real count of the prompt, with no special tokens
        assert s.prompt_tokens == len(tokenizer.encode(s.input + s.answer_prefix))
        assert s.length == s.prompt_tokens + spec.tokens_to_generate <= length
        assert s.length >= MIN_FILL[spec.family] * length, (s.length, length)
        assert s.outputs and all(o in s.input for o in s.outputs)


def _niah_fields(task):
    spec = get_task(task)
    a = spec.args
    singular = a["num_needle_q"] * a["num_needle_v"] == 1
    v = a["type_needle_v"][:-1] if singular else a["type_needle_v"]
    return a, singular, v


@pytest.mark.parametrize(("task", "length"), [c for c in CASES if c[0].startswith("niah")])
def test_niah_template_needles(generated, task, length):
    a, singular, v = _niah_fields(task)
    for s in generated[task, length]:
        keys = s.metadata["query_keys"]
        assert len(keys) == a["num_needle_q"]
        query = keys[0] if len(keys) == 1 else ", ".join(keys[:-1]) + ", and " + keys[-1]
        template, prefix = (NIAH_T1, NIAH_P1) if singular else (NIAH_T, NIAH_P)
        context = split_template(template, s.input, v=v, query=query)
        assert s.answer_prefix == prefix.format(v=v, query=query)
        plural = a["type_needle_v"]
        # every answer sits in exactly one needle sentence with its queried key
        assert len(s.outputs) == a["num_needle_q"] * a["num_needle_v"]
        for key in keys:
            sentences = re.findall(rf"One of the special magic {plural} for {re.escape(key)} is: ([^\n]+?)\.(?:\n| |$)", context)
            assert len(sentences) == a["num_needle_v"], (key, sentences)
        for value in s.outputs:
            hits = [k for k in keys if context.count(f"One of the special magic {plural} for {k} is: {value}.") == 1]
            assert len(hits) == 1
        assert len(s.metadata["needles"]) == a["num_needle_k"] * a["num_needle_v"]
        for n in s.metadata["needles"]:
            assert 0.0 <= n["depth"] <= 1.0


NOISE = "The grass is green. The sky is blue. The sun is yellow. Here we go. There and back again."


def _vt_parts(s):
    """(example, real prompt) of a vt sample: the example ends in a blank line."""
    example, real = s.input.split("\n\nMemorize and track", 1)
    return example, "Memorize and track" + real


@pytest.mark.parametrize("length", LENGTHS)
def test_vt_chain_and_example(generated, length):
    for s in generated["vt", length]:
        assert len(s.outputs) == 5 and len(set(s.outputs)) == 5
        assert all(re.fullmatch(r"[A-Z]{5}", o) for o in s.outputs)
        # the one-shot example comes first, solved, then a blank line, then the real prompt
        example, real = _vt_parts(s)
        assert example.startswith("Memorize and track the chain(s) of variable assignment hidden in the following text.\n\n")
        m = re.search(r"they are:  ((?:[A-Z]{3} ?)+)$", example)
        assert m and m.group(1).split() == s.metadata["example_chain"]
        value = re.search(r"assigned the value (\d{5}) in the text above\.$", real).group(1)
        context = split_template(VT_T, real, query=value)
        assert s.answer_prefix == VT_P.format(num_v=5, query=value)
        lines = context.split("\n")
        chain = [f"VAR {s.outputs[0]} = {value}"] + [f"VAR {s.outputs[i]} = VAR {s.outputs[i - 1]} " for i in range(1, 5)]
        positions = [lines.index(stmt) for stmt in chain]
        assert positions == sorted(positions)
        # distinct existing lines: a noise line after every statement, never two in one slot
        assert all(b - a >= 2 for a, b in zip(positions, positions[1:])) and positions[-1] < len(lines) - 1
        assert all(ln == NOISE for i, ln in enumerate(lines) if i not in positions)
        assert 10000 <= int(value) <= 99998


def test_vt_example_bytes_at_the_boundary(generated, tokenizer):
    """Reference bytes: two spaces before the example's answer, a blank line before the task."""
    for s in generated["vt", 4096]:
        names = " ".join(s.metadata["example_chain"])
        assert f"they are:  {names}\nMemorize" not in s.input
        assert f", they are:  {names}\n\nMemorize and track the chain(s) of variable assignment hidden in the following text.\n\n" in s.input


def test_vt_example_sized_to_500_tokens_one_layout_per_run(generated, tokenizer):
    layouts, names = set(), set()
    for s in generated["vt", 4096] + generated["vt", 16384]:
        example, _ = _vt_parts(s)
        before_answer = example[: example.index("they are: ") + len("they are: ")]
        # the reference sizes the example's prompt to 500 tokens (14 noise lines with its tokenizer)
        assert 480 <= tokenizer.count(before_answer) <= 510
        ex_lines = split_template(VT_T + VT_P, before_answer, query=re.search(r"value (\d{5}),", before_answer).group(1), num_v=5).split("\n")
        assert s.metadata["example_lines"] == sum(ln == NOISE for ln in ex_lines) >= 10
        # the layout: which lines hold statements; the names and value change per sample
        layouts.add((s.target_length, tuple(i for i, ln in enumerate(ex_lines) if ln.startswith("VAR "))))
        names.add(tuple(s.metadata["example_chain"]))
    assert len({lay for L, lay in layouts if L == 4096}) == 1 and len({lay for L, lay in layouts if L == 16384}) == 1
    assert len(names) == 2 * N


def test_vt_value_range_excludes_99999():
    from pytest_ruler.tasks.variable_tracking import _value

    class Top:
        def randint(self, a, b):
            return b

    assert _value(Top()) == "99998"


def test_niah_needles_at_distinct_lines(fresh_ctx):
    """16 needles in a short noise haystack: each before its own line, none after the last."""
    spec = get_task("niah_single_1").with_args("niah_crowded", num_needle_k=4, num_needle_v=4)
    for s in generate_samples(spec, 1536, samples=4, seed=1, ctx=fresh_ctx()):
        context = s.context
        lines = context.split("\n")
        needle = [i for i, ln in enumerate(lines) if ln.startswith("One of the special magic")]
        assert len(needle) == 16 and lines[-1] == NOISE
        assert all(b - a >= 2 for a, b in zip(needle, needle[1:]))
    for task in ("niah_multikey_2", "niah_multikey_3"):
        for s in generate_samples(task, 4096, samples=2, seed=0, ctx=fresh_ctx()):
            assert not s.context.endswith(s.metadata["query_keys"][0] + " is: " + s.outputs[0] + ".")


def _numbered(context):
    """[(number, entry)] of ``1. w 2. ad hoc …`` (entries may hold spaces)."""
    parts = re.split(r"(?:^| )(\d+)\. ", context)
    return list(zip(map(int, parts[1::2]), parts[2::2]))


@pytest.mark.parametrize("length", LENGTHS)
def test_cwe_counts(generated, length):
    overlaps = 0
    for s in generated["cwe", length]:
        example, real = s.input.split("\nBelow is a numbered list", 1)
        ex_answer = example.split(CWE_P + " ")[1]
        assert example.endswith(CWE_P + " " + " ".join(f"{i}. {w}" for i, w in _numbered(ex_answer)))
        context = split_template(CWE_T, "Below is a numbered list" + real)
        assert s.answer_prefix == CWE_P
        entries = _numbered(context)
        assert [i for i, _ in entries] == list(range(1, len(entries) + 1))
        counts = Counter(w for _, w in entries)
        assert len(s.outputs) == 10
        assert all(counts[w] == 30 for w in s.outputs)
        assert all(c == 3 for w, c in counts.items() if w not in s.outputs)
        ex_list = example.split("Memorize the ones that appear most often.\n", 1)[1].split("\nQuestion:", 1)[0]
        overlaps += len({w for _, w in _numbered(ex_list)} & set(counts))
    # example and list words are drawn independently, as in the reference
    if length >= 16384:
        assert overlaps > 0


def test_cwe_pool_is_the_references():
    from pytest_ruler.tasks.words import word_pool

    pool = word_pool()
    assert len(pool) == 8169 and len(set(pool)) == 8169
    odd = [w for w in pool if not re.fullmatch(r"[a-z]+", w)]
    assert len(odd) == 119 and {"TV", "ad hoc", "brother-in-law"} <= set(odd)


@pytest.mark.parametrize("length", LENGTHS)
def test_fwe_top_three(generated, length):
    for s in generated["fwe", length]:
        context = split_template(FWE_T, s.input)
        assert s.answer_prefix == FWE_P
        counts = Counter(w for w in context.split(" ") if w != "...")
        ranked = counts.most_common()
        assert [w for w, _ in ranked[:3]] == list(s.outputs)
        assert ranked[2][1] > ranked[3][1]
        assert all(re.fullmatch(r"[a-z]{6}", w) for w in counts)
        assert context.count("...") > ranked[0][1]  # the noise token is the most frequent


def test_fwe_vocabulary_size_is_the_references(generated):
    from pytest_ruler.tasks.aggregation import fwe_vocab_size

    args = get_task("fwe").args
    # (length - tokens_to_generate) // 50, as the reference: 80 / 654 / 2620 at 4K / 32K / 128K
    assert [fwe_vocab_size(args, L, 50) for L in (4096, 32768, 131072)] == [80, 654, 2620]
    for length, size in ((4096, 80), (16384, 326)):
        assert {s.metadata["vocab_size"] for s in generated["fwe", length]} == {size}


def test_qa_asks_the_questions_in_file_order(fresh_ctx):
    from pytest_ruler.data.qa import load_qa

    ctx = fresh_ctx()
    for task, name in (("qa_1", "squad"), ("qa_2", "hotpotqa")):
        items = load_qa(name, ctx.path(name)).items
        samples = generate_samples(task, 2048, samples=3, seed=7, ctx=ctx)
        assert [s.metadata["question"] for s in samples] == [items[i].question for i in range(3)]
        again = generate_samples(task, 4096, samples=1, seed=8, ctx=ctx, start=len(items))[0]
        assert again.metadata["question"] == items[0].question  # wraps around past the last question


def test_qa_repeats_the_pool_when_it_runs_out(fresh_ctx):
    from pytest_ruler.data.qa import load_qa

    ctx = fresh_ctx()
    docs = load_qa("squad", ctx.path("squad")).docs
    s = generate_samples("qa_1", 16384, samples=1, seed=0, ctx=ctx)[0]
    assert s.metadata["haystack_units"] > len(docs)
    bodies = re.findall(r"Document \d+:\n(.*?)(?=\n\nDocument \d+:|$)", s.context, flags=re.S)
    assert len(bodies) == s.metadata["haystack_units"] and set(bodies) == set(docs)
    assert s.length >= 0.9 * 16384


@pytest.mark.parametrize("task", OFFLINE)
def test_same_seed_same_bytes_other_seed_differs(fresh_ctx, task):
    a = [s.to_ruler_json() for s in generate_samples(task, 4096, samples=2, seed=5, ctx=fresh_ctx())]
    b = [s.to_ruler_json() for s in generate_samples(task, 4096, samples=2, seed=5, ctx=fresh_ctx())]
    c = [s.to_ruler_json() for s in generate_samples(task, 4096, samples=2, seed=6, ctx=fresh_ctx())]
    assert a == b
    assert [x["input"] for x in a] != [x["input"] for x in c]
    # a sample does not depend on which other samples were generated with it
    alone = generate_samples(task, 4096, samples=1, seed=5, ctx=fresh_ctx(), start=1)[0].to_ruler_json()
    assert alone == a[1]


def test_one_verification_pass_per_sample_after_the_first(generated):
    passes = [s.metadata["passes"] for (t, L), ss in generated.items() for s in ss[1:]]
    assert sum(p == 1 for p in passes) >= 0.9 * len(passes)


def test_qa_without_data_names_both_options(fresh_ctx):
    from pytest_ruler.errors import RulerUsageError

    with pytest.raises(RulerUsageError) as e:
        generate_samples("qa_1", 4096, samples=1, ctx=fresh_ctx(squad=None))
    # the pytest option and `pytest-ruler generate`'s own --squad
    assert "--ruler-squad=PATH to pytest" in str(e.value) and "--squad=PATH to `pytest-ruler generate`" in str(e.value)
