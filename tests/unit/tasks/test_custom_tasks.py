"""Custom tasks: a family with other arguments; depth control."""

from __future__ import annotations

import pytest

from pytest_ruler.errors import RulerUsageError
from pytest_ruler.tasks import generate_samples, get_task, make_task, register_task


def test_custom_niah_eight_keys_needle_haystack(ctx):
    spec = make_task("niah_8keys", "niah", tokens_to_generate=64, type_haystack="needle", num_needle_k=8)
    s = generate_samples(spec, 2048, samples=2, ctx=ctx)
    for sample in s:
        assert len(sample.metadata["needles"]) == 8
        assert sample.length <= 2048


def test_with_args_derives_from_standard():
    spec = get_task("vt").with_args("vt8", num_hops=8)
    assert spec.family == "variable_tracking" and spec.args["num_hops"] == 8 and spec.tokens_to_generate == 30


def test_vt_eight_hops(ctx):
    s = generate_samples(get_task("vt").with_args("vt8", num_hops=8), 2048, samples=1, ctx=ctx)[0]
    assert len(s.outputs) == 9
    assert s.answer_prefix.startswith(" Answer: According to the chain(s) of variable assignment in the text above, 9 variables")


def test_register_and_resolve(ctx):
    spec = register_task(make_task("fwe_alpha15", "freq_words_extraction", tokens_to_generate=50, alpha=1.5))
    assert get_task("fwe_alpha15") == spec
    with pytest.raises(RulerUsageError, match="standard RULER task"):
        register_task(make_task("vt", "variable_tracking", tokens_to_generate=30))
    with pytest.raises(RulerUsageError, match="already registered"):
        register_task(make_task("fwe_alpha15", "freq_words_extraction", tokens_to_generate=50, alpha=1.7))


@pytest.mark.parametrize("task", ["niah_single_1", "niah_single_2", "niah_multikey_2"])
@pytest.mark.parametrize("depth", [0.0, 0.5, 1.0])
def test_fixed_depth_is_recorded_and_respected(ctx, task, depth):
    spec = get_task(task).with_args(f"{task}_d", depth=depth)
    for s in generate_samples(spec, 2048, samples=2, ctx=ctx):
        assert s.metadata["depth"] == pytest.approx(depth, abs=0.02)
        key = s.metadata["query_keys"][0]
        pos = s.input.index(f"for {key} is:")
        relative = pos / len(s.input)
        assert abs(relative - depth) < 0.1


def test_depth_sweep_cycles_over_samples(ctx):
    spec = get_task("niah_single_1").with_args("sweep", depth=[0.1, 0.9])
    depths = [s.metadata["depth"] for s in generate_samples(spec, 2048, samples=4, ctx=ctx)]
    assert depths == pytest.approx([0.1, 0.9, 0.1, 0.9], abs=0.02)


def test_random_essay_depths_come_from_the_40_grid(ctx):
    grid = {round(i * 100 / 39) / 100 for i in range(40)}
    for s in generate_samples("niah_multikey_1", 4096, samples=3, ctx=ctx):
        n = s.metadata["haystack_units"]
        for needle in s.metadata["needles"]:
            # depth = int(n * d) / n, so it is within one sentence of a grid depth
            assert min(abs(needle["depth"] - g) for g in grid) <= 1 / n + 1e-4
