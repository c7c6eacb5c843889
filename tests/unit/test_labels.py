"""Labels and texts that match the code (issue 19 D): the baseline header names the test
that ran, ``compare`` prints Avg as Avg, a user's own assert is not captioned with the
run's global threshold, ``--ruler-backend``'s help names every built-in back end."""

from __future__ import annotations

import pytest

from pytest_ruler.cli import main
from pytest_ruler.options import OPTIONS
from pytest_ruler.report.build import build_report, write_report
from pytest_ruler.results import ItemResult
from pytest_ruler.results.aggregate import passes
from pytest_ruler.results.baseline import compare
from pytest_ruler.results.regressions import summarize_regressions


def _item(task, length, scores, hashes=None, **kw):
    score = 100 * sum(scores) / len(scores)
    return ItemResult(task=task, length=length, seed=0, mode="native", samples=len(scores), score=score, threshold=85.6,
                      passed=passes(score, 85.6), nulls=0, seconds=0.0, sample_scores=tuple(scores),
                      sample_hashes=tuple(hashes or (f"{task}{length}-{i}" for i in range(len(scores)))), **kw)


def _report(items):
    return build_report(model="m", backend="scripted", tokenizer="t", haystack_corpus="essays: test", threshold=85.6, results=items)


def test_the_pass_rule_is_strictly_above():
    assert passes(85.61, 85.6) and not passes(85.6, 85.6) and not passes(0.0, 0.0) and passes(100.0, 99.9)


def test_the_baseline_header_names_the_sign_flip_test_for_partial_credit():
    base = [1.0, 0.75, 1.0, 0.5, 1.0] * 10
    cur = [s - 0.25 if i % 2 == 0 and s > 0.25 else s for i, s in enumerate(base)]
    comps = compare(_report([_item("niah_multivalue", 1024, base)]), [_item("niah_multivalue", 1024, cur)])
    assert comps[0].test == "sign-flip"
    head = summarize_regressions(comps)[1][0]
    assert "sign-flip permutation test for partial credit" in head and "t-test" not in head


def test_compare_prints_the_avg_column_as_avg_when_the_bound_column_is_there(tmp_path, capsys):
    # per-sample scores give Table 3 an Eff.LB column; Avg must still be read as Avg
    old = [_item("niah_single_1", 1024, [1.0] * 10), _item("niah_single_1", 2048, [0.0] * 10)]
    new = [_item("niah_single_1", 1024, [1.0] * 10), _item("niah_single_1", 2048, [1.0] * 5 + [0.0] * 5)]
    a, b = write_report(tmp_path / "a.json", _report(old)), write_report(tmp_path / "b.json", _report(new))
    assert main(["compare", str(a), str(b)]) == 0
    out = capsys.readouterr().out
    # Avg 50.0 -> 75.0; wAvg.inc would read 33.3 -> 66.7, wAvg.dec 66.7 -> 83.3
    assert "- **Effective length (native):** 1K → 1K (Avg 50.0 → 75.0)" in out


def test_a_user_assert_is_not_captioned_with_the_global_threshold():
    r = _item("vt", 16384, [0.5] * 10)
    assert "threshold" not in r.failure_message().splitlines()[0]
    assert "score 50.00 <= threshold 70.00 over 10 samples" in r.failure_message(70)
    assert "score 50.00 > threshold 40.00" in r.failure_message(40)


def test_the_backend_help_names_every_built_in_back_end():
    from pytest_ruler.engines import BUILTIN_ENGINES

    [backend] = [o for o in OPTIONS if o.name == "backend"]
    for name in ["auto", *BUILTIN_ENGINES]:
        assert name in backend.help, name
    assert "vLLM's CPU build" in backend.help


@pytest.mark.parametrize("path", ["pytest_ruler"])
def test_no_docstring_claims_scipy_is_absent(path):
    import pathlib

    root = pathlib.Path(__file__).parents[2] / path
    said = [str(p) for p in root.rglob("*.py") if "no scipy" in p.read_text() or "without scipy" in p.read_text()]
    assert not said, said
