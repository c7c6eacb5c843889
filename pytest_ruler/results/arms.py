"""The arms of a run compared with its reference arm: the report's ``arms`` and the verdict's reasons.

    the reference arm's items, each other arm's items (``ItemResult.arm``), the margin
        ──compare_arms(reference, arms, reference_name=, margin=, alpha=, settings=, engines=)──► ArmsOutcome
            .section   the report's top-level ``arms`` (report.schema_arms): per arm its settings, engine, items,
                       verdict and, per (task, length, mode) cell, both scores, the paired difference and its 95 %
                       interval, the flips each way with two examples each, the test's p-values and the cell's status
            .reasons   the verdict's reasons (results.verdict.Reason, kind "arms"), one or more per arm
            .detail    the lines above the verdict line (one per arm, one per cell)
    a report dict's ``arms`` ──arm_reports(section, like)──► [(name, Report)]: each arm's own Table 3 (report.lines)

Pairing. Items pair by (task, length, seed, mode); within a pair, samples pair by position where both
prompt hashes agree (the same question: the tokenizer and the template are checked at start,
``run.arms.check_same_prompts``). A pair whose hashes differ at any position is a failed reason that
nothing undoes ("asked other questions"). Errored items are left out (the run's ``errors`` reason fails
it already). A cell pools its seeds.

The test per cell. With ``--ruler-noninferiority-margin=D``: the paired non-inferiority test
(results.noninferiority), Holm over the arm's cells; a cell is shown, refuted or not shown. The arm's
reason: failed when a cell is refuted (the arm is worse than the reference by more than D there), else not
decided when a cell is not shown (the run could not show the arm is no worse: more samples would decide;
it is not passed, since a lack of evidence is no evidence of no regression), else passed. Without a
margin: the baseline's paired drop test (``stats.paired_less``: exact McNemar for 0/1 scores), Holm;
failed on a significant drop (a refuted cell and a significant drop are final: they fail the run even while
another cell is not decided, since more samples there cannot undo them), else passed (no significant drop, which a small run also gives: the
reason says so). Each arm is its own family: Holm runs over its cells, not over every arm's.

``arm_verdict(section)``: the reasons and detail lines from a report's ``arms`` alone: results.gate judges a
report with arms by it (the run and ``pytest-ruler gate`` on its JSON agree; an item's own mark then decides nothing).

Public names: ``ArmsOutcome``, ``arm_reports``, ``arm_verdict``, ``compare_arms``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .item import ItemResult
from .report import Report
from .noninferiority import NOT_SHOWN, REFUTED, SHOWN, decide, noninferiority
from .stats import adjust, paired_less
from .verdict import FAILED, NOT_DECIDED, PASSED, Reason, cell_label, count, name_cells

__all__ = ["ArmsOutcome", "arm_reports", "arm_verdict", "compare_arms"]

EXAMPLES = 2  # flips shown each way per cell
DROP, NO_DROP = "drop", "no significant drop"
Key = tuple[str, int, str]


@dataclass
class ArmsOutcome:
    section: dict[str, Any]
    reasons: list[Reason] = field(default_factory=list)
    detail: list[tuple[str, str]] = field(default_factory=list)


@dataclass
class _Cell:
    reference: list[float] = field(default_factory=list)
    arm: list[float] = field(default_factory=list)
    lost: list[dict[str, Any]] = field(default_factory=list)
    gained: list[dict[str, Any]] = field(default_factory=list)


def _key(r: ItemResult) -> tuple[str, int, int, str]:
    return (r.task, r.length, r.seed, r.mode)


def _example(ref: ItemResult, arm: ItemResult, i: int) -> dict[str, Any]:
    def record(r: ItemResult) -> Mapping[str, Any]:
        return r.predictions[i] if i < len(r.predictions) else {}

    a, b = record(ref), record(arm)
    return {"seed": ref.seed, "index": a.get("index", i), "prompt_hash": ref.sample_hashes[i] if i < len(ref.sample_hashes) else None,
            "answers": list(a.get("answers") or b.get("answers") or ()), "reference_prediction": str(a.get("prediction", "")),
            "arm_prediction": str(b.get("prediction", "")), "reference_score": ref.sample_scores[i], "arm_score": arm.sample_scores[i]}


def _pair(ref: ItemResult, arm: ItemResult, cell: _Cell) -> int:
    """Adds the pair's shared questions to ``cell``; returns how many positions have other prompt hashes."""
    n = min(len(ref.sample_scores), len(arm.sample_scores))
    hashed = len(ref.sample_hashes) >= n and len(arm.sample_hashes) >= n
    differ = 0
    for i in range(n):
        if hashed and ref.sample_hashes[i] != arm.sample_hashes[i]:
            differ += 1
            continue
        r, a = float(ref.sample_scores[i]), float(arm.sample_scores[i])
        cell.reference.append(r)
        cell.arm.append(a)
        if a != r:
            flips = cell.lost if a < r else cell.gained
            if len(flips) < EXAMPLES:
                flips.append(_example(ref, arm, i))
    return differ


def _cell_order(key: Key) -> tuple:
    task, length, mode = key
    return (mode != "native", mode, length, task)


def _one_arm(name: str, reference_name: str, ref_items: Mapping[tuple, ItemResult], items: Sequence[ItemResult],
             margin: float | None, alpha: float) -> dict[str, Any]:
    cells: dict[Key, _Cell] = {}
    mismatched: list[Key] = []
    unpaired = 0
    errored = sorted((r for r in items if r.error is not None), key=lambda r: (r.mode, r.length, r.task, r.seed))
    for r in items:
        ref = ref_items.get(_key(r))
        if ref is None or ref.error is not None or r.error is not None:
            unpaired += 1
            continue
        key = (r.task, r.length, r.mode)
        if _pair(ref, r, cells.setdefault(key, _Cell())):
            mismatched.append(key)
    keys = sorted((k for k, c in cells.items() if c.reference), key=_cell_order)
    tests = [noninferiority(cells[k].reference, cells[k].arm, margin or 0.0, alpha) for k in keys]
    if margin is not None:
        decided = decide(tests, alpha)
    else:
        raw = [paired_less(cells[k].reference, cells[k].arm).p_value for k in keys]
        decided = [(DROP if p < alpha and t.difference < 0 else NO_DROP, p, p) for p, t in zip(adjust(raw, "holm"), tests)]
    out_cells = []
    for k, t, (status, p_a, p_b) in zip(keys, tests, decided):
        c = cells[k]
        entry = {"task": k[0], "length": k[1], "mode": k[2], "pairs": t.n, "reference_score": t.reference_score,
                 "arm_score": t.arm_score, "difference": t.difference, "difference_ci95": [t.ci_low, t.ci_high],
                 "lost": t.lost, "gained": t.gained, "lost_examples": c.lost, "gained_examples": c.gained, "status": status}
        if margin is not None:
            entry.update(p_shown=t.p_shown, p_refuted=t.p_refuted, p_shown_adjusted=p_a, p_refuted_adjusted=p_b)
        else:
            entry.update(p_drop_adjusted=p_a)
        out_cells.append(entry)
    entry = {"name": name, "reference": False, "cells": out_cells, "unpaired_items": unpaired,
             "prompt_mismatches": [{"task": t, "length": L, "mode": m} for t, L, m in dict.fromkeys(mismatched)],
             "errored_items": [{"task": r.task, "length": r.length, "seed": r.seed, "mode": r.mode} for r in errored]}
    entry["status"] = _arm_reasons(entry, reference_name, margin)[1]
    return entry


def _arm_reasons(entry: Mapping[str, Any], ref: str, margin: float | None) -> tuple[list[Reason], str]:
    """An arm's reasons and status, from its stored entry (so a saved report is judged as the run was)."""
    name, cells = str(entry["name"]), list(entry.get("cells") or ())
    mismatched = [(m["task"], int(m["length"]), m["mode"]) for m in entry.get("prompt_mismatches") or ()]
    errored = [(e["task"], int(e["length"]), e["mode"]) for e in entry.get("errored_items") or ()]
    reasons, status = _reasons(name, ref, cells, margin, mismatched)
    if errored:  # no verdict rests on missing evidence: an errored item of an arm fails the run, as the reference's do
        where = tuple(dict.fromkeys(errored))
        reasons.insert(0, Reason("arms", FAILED, f"arm {name}: {count(len(errored), 'item')} errored ({name_cells(where)})", where, final=True))
        status = FAILED
    return reasons, status


def arm_verdict(section: Mapping[str, Any]) -> tuple[list[Reason], list[tuple[str, str]]]:
    """The verdict's reasons (kind "arms") and the detail lines of a report's ``arms``: what the run said,
    and what ``pytest-ruler gate`` says of the saved report."""
    ref, margin = str(section.get("reference")), section.get("margin")
    reasons: list[Reason] = []
    detail: list[tuple[str, str]] = []
    for entry in section.get("arms") or ():
        if entry.get("reference"):
            continue
        arm_reasons, status = _arm_reasons(entry, ref, margin)
        reasons += arm_reasons
        detail += _detail(str(entry["name"]), ref, list(entry.get("cells") or ()), margin, status)
    return reasons, detail


def _reasons(name: str, ref: str, cells: list[dict[str, Any]], margin: float | None,
             mismatched: list[Key]) -> tuple[list[Reason], str]:
    def keyed(status: str) -> tuple[Key, ...]:
        return tuple((c["task"], c["length"], c["mode"]) for c in cells if c["status"] == status)

    reasons = []
    if mismatched:
        where = tuple(dict.fromkeys(mismatched))
        reasons.append(Reason("arms", FAILED, f"arm {name} was asked other questions than the reference arm {ref} at "
                                              f"{name_cells(where)} (prompt hashes differ)", where, final=True))
    if not cells:
        reasons.append(Reason("arms", NOT_DECIDED, f"arm {name}: no cell compared with the reference arm {ref}"))
    elif margin is not None:
        refuted, open_ = keyed(REFUTED), keyed(NOT_SHOWN)
        if refuted:
            reasons.append(Reason("arms", FAILED, f"arm {name} is worse than {ref} by more than {margin:g} points at "
                                                  f"{name_cells(refuted)} (non-inferiority refuted, Holm over {count(len(cells), 'cell')})", refuted, final=True))
        if open_:
            reasons.append(Reason("arms", NOT_DECIDED, f"arm {name}: non-inferiority to {ref} (margin {margin:g} points) not shown at "
                                                       f"{name_cells(open_)}: more samples would decide", open_))
        if not refuted and not open_:
            reasons.append(Reason("arms", PASSED, f"arm {name} is non-inferior to {ref} (margin {margin:g} points) in "
                                                  f"{'every one' if len(cells) > 1 else 'its one'} of {count(len(cells), 'cell')}"))
    else:
        drops = keyed(DROP)
        if drops:
            reasons.append(Reason("arms", FAILED, f"arm {name} dropped significantly against {ref} at {name_cells(drops)} "
                                                  f"(paired, Holm over {count(len(cells), 'cell')})", drops, final=True))
        else:
            reasons.append(Reason("arms", PASSED, f"arm {name}: no significant drop against {ref} ({count(len(cells), 'cell')}; "
                                                  "--ruler-noninferiority-margin=D shows it is no worse)"))
    worst = [r.status for r in reasons]
    status = FAILED if FAILED in worst else NOT_DECIDED if NOT_DECIDED in worst else PASSED
    return reasons, status


_COLOUR = {REFUTED: "red", DROP: "red", NOT_SHOWN: "yellow", SHOWN: "green", NO_DROP: ""}


def _detail(name: str, ref: str, cells: list[dict[str, Any]], margin: float | None, status: str) -> list[tuple[str, str]]:
    test = f"non-inferiority margin {margin:g} points" if margin is not None else "paired drop test"
    out = [(f"arm {name} vs {ref} ({test}, Holm over {count(len(cells), 'cell')}): {status.upper()}", "")]
    for c in cells:
        low, high = c["difference_ci95"]
        out.append((f"  {cell_label(c['task'], c['length'], c['mode'])}: {ref} {c['reference_score']:.1f}, {name} {c['arm_score']:.1f}, "
                    f"difference {c['difference']:+.1f} [{low:+.1f}, {high:+.1f}] over {c['pairs']} pairs, "
                    f"lost {c['lost']} / gained {c['gained']}: {c['status']}", _COLOUR.get(c["status"], "")))
    return out


def compare_arms(reference: Sequence[ItemResult], arms: Mapping[str, Sequence[ItemResult]], *, reference_name: str,
                 margin: float | None, alpha: float = 0.05, settings: Mapping[str, Mapping[str, Any]] | None = None,
                 engines: Mapping[str, Any] | None = None) -> ArmsOutcome:
    """Each arm's items against the reference arm's (see the module docstring); ``settings`` and ``engines``:
    per arm name, what it changes and its engine identity (for the report)."""
    settings, engines = settings or {}, engines or {}
    ref_items = {_key(r): r for r in reference}
    entries = [{"name": reference_name, "reference": True, "status": None, "settings": dict(settings.get(reference_name) or {}),
                "engine": engines.get(reference_name), "cells": [], "unpaired_items": 0, "prompt_mismatches": []}]
    outcome = ArmsOutcome({})
    for name, items in arms.items():
        entry = _one_arm(name, reference_name, ref_items, items, margin, alpha)
        entry.update(settings=dict(settings.get(name) or {}), engine=engines.get(name),
                     items=[r.to_dict() for r in sorted(items, key=lambda r: (r.mode, r.length, r.task, r.seed))])
        entries.append(entry)
    outcome.section = {"reference": reference_name, "margin": margin, "alpha": alpha, "correction": "holm",
                       "test": "noninferiority" if margin is not None else "paired-drop", "interleaving": "item",
                       "arms": entries}
    outcome.reasons, outcome.detail = arm_verdict(outcome.section)
    return outcome


def arm_reports(section: Mapping[str, Any] | None, like: Any) -> list[tuple[str, Any]]:
    """Each non-reference arm's items as a Report (its own Table 3), with ``like``'s threshold and names."""
    out = []
    for arm in (section or {}).get("arms") or ():
        if arm.get("reference") or not arm.get("items"):
            continue
        items = [ItemResult.from_dict(d) for d in arm["items"]]
        out.append((str(arm["name"]), Report.of_results(items, threshold=like.threshold, task_thresholds=like.task_thresholds,
                                                       model=like.model, backend=like.backend, tokenizer=like.tokenizer,
                                                       haystack_corpus=like.haystack_corpus)))
    return out
