"""bench/cost_to_verdict.py's pure parts: the simulated profiles, the true verdict, one sequential item
as the runner stops it, and one planned run against the full one on the same answers."""

from __future__ import annotations

import numpy as np
import pytest

from bench import cost_to_verdict as ctv

K = 1024


@pytest.mark.parametrize("name", sorted(ctv.PROFILES))
def test_each_profile_has_the_true_total_it_names(name):
    totals = ctv.PROFILES[name]
    curves = ctv.true_curves(totals)
    assert sorted(curves) == sorted(t for t, _, _ in ctv.TASKS)
    for j, total in enumerate(totals):
        column = [c[j] for c in curves.values()]
        assert all(0.0 < x < 1.0 for x in column)
        assert np.mean(column) == pytest.approx(total / 100, abs=1e-6)
        assert len(set(np.round(column, 6))) > 1  # the tasks spread around the Total


def test_the_true_verdict_follows_the_gate_rules():
    totals = (93, 84, 90, 88, 70, 55)  # below the mark at 8K only (then again from 64K)
    assert ctv.true_verdict(totals, 8 * K, None) == "passed"  # the point gate: 16K passes
    assert ctv.true_verdict(totals, 8 * K, 0.95) == "failed"  # the bound stops at 8K
    assert ctv.true_verdict(totals, 4 * K, 0.95) == "passed"
    assert ctv.true_verdict(totals, 64 * K, None) == "failed"
    on = (95, 91, 85.6, 83, 75, 60)
    assert ctv.true_verdict(on, 16 * K, None) == "failed"  # on the mark is not above it


def test_a_sequential_item_stops_as_the_runner_does_and_counts_its_tokens():
    zeros = ctv.sequential_item("vt", 4 * K, np.zeros(20))
    assert zeros.samples == 8 and zeros.stopped is not None and zeros.prompt_tokens == 8 * 4 * K  # two batches of 4
    ones = ctv.sequential_item("vt", 4 * K, np.ones(20))
    assert ones.samples == 20 and ones.stopped is None and ones.score == 100.0  # a pass needs 31 samples
    ones = ctv.sequential_item("vt", 4 * K, np.ones(100))
    assert ones.samples < 100 and ones.passed


@pytest.mark.parametrize("rule, required", [("point", 16 * K), ("bound", 16 * K), ("point", 64 * K)])
def test_a_planned_run_on_the_same_answers_gives_the_full_runs_verdict_for_fewer_tokens(rule, required):
    items = ctv.full_run(np.random.default_rng(1), ctv.true_curves(ctv.PROFILES["clear_decline"]), 20)
    cfg = ctv.config(required, None if rule == "point" else 0.95)
    measured, skipped = ctv.planned_run(cfg, items)
    assert len(measured) + len(skipped) == len(items)
    assert ctv.verdict(measured, cfg, skipped) == ctv.verdict(items.values(), cfg)
    assert ctv._tokens(measured) < ctv._tokens(items.values())
