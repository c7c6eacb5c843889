"""The examples/ folder runs (plumbing only: the scripted test engine, not a model,
held to a 2K window so the map-reduce example has something to rescue)."""

from __future__ import annotations

import shutil
from pathlib import Path

from .helpers import SCRIPTED, run

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_the_examples_pass_on_the_scripted_engine(pytester):
    for f in EXAMPLES.glob("*.py"):
        shutil.copy(f, pytester.path / f.name)
    result = run(pytester, *SCRIPTED, "--ruler-max-model-len=2048", "--ruler-no-cache", "-k", "test_")
    result.assert_outcomes(passed=4)
    out = result.stdout.str()
    rescue = next(ln for ln in out.splitlines() if ln.startswith("map-reduce passes where native fails"))
    assert "(grounding: literal (hallucination filter:" in rescue and rescue.endswith("): niah_single_1@4K")
    assert "RULER FAILED" not in out
