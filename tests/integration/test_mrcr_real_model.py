"""The MRCR pack on the real embedded model (SmolLM2-135M-Instruct, CPU) at 1K–4K, on records the test makes.

No claim on the model's quality: the run must bin, send, grade and aggregate real answers, and the
report must agree with itself (the aggregates are the items' scores; every prediction is graded by
MRCR's grade against its record). One sample a length: SmolLM2 often writes to the end of the pack's
1024-token answer budget, about 9 tokens/s on 2 loaded cores (2 samples a length took over 25 minutes
beside the quick tier)."""

from __future__ import annotations

import json

import pytest

from pytest_ruler.results.mrcr_grade import grade
from tests.mrcr_data import make_records, write_jsonl


@pytest.mark.slow
def test_the_embedded_model_on_mrcr_1k_to_4k(pytester):
    write_jsonl(pytester.path / "records.jsonl", make_records(needles=(2,)))
    args = ["-p", "no:hypothesispytest", "--ruler-model=smollm2-135m", "--ruler-backend=hf", "--ruler-tasks=mrcr_2",
            "--ruler-lengths=1k,2k,4k", "--ruler-samples=1", "--ruler-mrcr=records.jsonl", "--ruler-report=r.json"]
    result = pytester.runpytest_subprocess(*args, timeout=3000)
    data = json.loads((pytester.path / "r.json").read_text())
    assert data["backend"] == "hf" and data["chat_template"].startswith("chat:")
    items = {i["length"]: i for i in data["items"]}
    assert sorted(items) == [1024, 2048, 4096] and all(i["samples"] == 1 and i["error"] is None for i in items.values())
    for item in items.values():
        for p in item["predictions"]:
            assert p["score"] == pytest.approx(round(grade(p["prediction"], *p["answers"]), 4), abs=1e-4)
    per = data["mrcr"]["needles"]["2"]["per_length"]
    assert {int(L): c["score"] for L, c in per.items()} == {L: i["score"] for L, i in items.items()}
    assert data["task_thresholds"] == {"mrcr_2": 30.0}
    outcome = result.parseoutcomes()
    assert outcome.get("passed", 0) + outcome.get("failed", 0) == 3
