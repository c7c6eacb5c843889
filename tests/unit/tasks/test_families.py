"""Task families as a typed, registrable seam: a user's family generates, is checked once, and
map-reduce reads its strategy by name (tests/data/passphrase_family.py is the custom family)."""

from __future__ import annotations

import pytest

from pytest_ruler.errors import RulerUsageError
from pytest_ruler.mapreduce import STRATEGIES, document_for
from pytest_ruler.tasks import (
    FAMILIES, ChunkableFamily, Family, family_names, generate_samples, get_family, make_task, register_family,
)
from tests.data.passphrase_family import KEY, PassphraseFamily


@pytest.fixture
def passphrase():
    return register_family(PassphraseFamily(), replace=True)


def test_a_registered_family_generates_samples_within_budget(ctx, passphrase):
    assert isinstance(passphrase, ChunkableFamily) and isinstance(passphrase, Family)
    assert "passphrase" in family_names() and FAMILIES["passphrase"] is passphrase is get_family("passphrase")
    spec = make_task("passphrase_7", "passphrase", tokens_to_generate=16, digits=7)
    samples = generate_samples(spec, 1024, samples=3, seed=1, ctx=ctx)
    for s in samples:
        (value,) = s.outputs
        assert len(value) == 7 and f"for {KEY} is: {value}." in s.input
        assert s.length <= 1024 and s.length > 1024 - 40  # filled up to the budget, one filler line at most short
        assert s.metadata["family"] == "passphrase" and s.metadata["haystack_corpus"] == "filler"
    assert generate_samples(spec, 1024, samples=3, seed=1, ctx=ctx) == samples  # deterministic like every family


def test_a_family_argument_is_checked_by_the_family(passphrase):
    with pytest.raises(RulerUsageError) as err:
        make_task("passphrase_bad", "passphrase", tokens_to_generate=16, digits=12)
    assert err.value.parameter == "digits" and err.value.value == 12


def test_a_family_missing_a_member_is_refused_naming_it():
    class NoDraft:
        name = "nodraft"

        def validate(self, args):
            return dict(args)

        def data_label(self, args, ctx):
            return "x"

    with pytest.raises(RulerUsageError) as err:
        register_family(NoDraft())
    assert err.value.parameter == "family" and err.value.value == "nodraft" and "draft missing" in err.value.fix
    assert "nodraft" not in family_names()

    class Nameless(NoDraft):
        name = "two words"

    with pytest.raises(RulerUsageError, match="needs a `name`"):
        register_family(Nameless())


def test_a_builtin_family_name_is_refused_and_a_second_family_needs_replace(passphrase):
    class Impostor(PassphraseFamily):
        name = "niah"

    with pytest.raises(RulerUsageError, match="built-in RULER family"):
        register_family(Impostor())
    assert FAMILIES["niah"] is not Impostor
    with pytest.raises(RulerUsageError, match="already registered"):
        register_family(PassphraseFamily())
    again = PassphraseFamily()
    assert register_family(again, replace=True) is get_family("passphrase") is again


def test_an_unknown_family_names_the_known_ones():
    with pytest.raises(RulerUsageError) as err:
        make_task("t", "no_such_family", tokens_to_generate=8)
    assert err.value.parameter == "family" and "niah" in err.value.fix and "register_family" in err.value.fix


def test_map_reduce_reads_the_custom_familys_strategy_by_name(ctx, passphrase):
    spec = make_task("passphrase_mr", "passphrase", tokens_to_generate=16)
    [sample] = generate_samples(spec, 2048, samples=1, seed=0, ctx=ctx)
    doc = document_for(sample, spec, passphrase)
    assert doc.strategy is STRATEGIES["retrieve"] and doc.hints["keys"] == [KEY]
    assert doc.context == sample.context and sample.outputs[0] in doc.context
