"""Small data files for RULERv2's MMLU and HotpotQA tasks, written by the tests that need them.

Made-up text in the datasets' own formats (MMLU: a test/ CSV folder beside an
auxiliary_train.jsonl of Hugging Face records; HotpotQA: its JSON lists of records), big
enough to fill 32K tokens (the haystack is drawn again once every entry was used).
"""

from __future__ import annotations

import csv
import json
import random
from pathlib import Path

WORDS = ("river", "castle", "engine", "violet", "harbor", "lantern", "meadow", "copper", "falcon", "garden",
         "island", "jacket", "kettle", "ladder", "marble", "needle", "orchard", "pepper", "quartz", "ribbon")


def _phrase(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def write_ruler2_data(folder: Path) -> dict[str, str]:
    """Write the files into ``folder``; the GenerationContext keywords that point at them."""
    rng = random.Random(7)
    mmlu = folder / "mmlu"
    (mmlu / "test").mkdir(parents=True)
    with (mmlu / "test" / "a_subject_test.csv").open("w", newline="") as f:
        writer = csv.writer(f)
        for i in range(40):
            writer.writerow([f"Test question {i}: which {_phrase(rng, 6)}?", *(_phrase(rng, 2) for _ in range(4)), "ABCD"[i % 4]])
    with (mmlu / "auxiliary_train.jsonl").open("w") as f:
        for i in range(300):
            f.write(json.dumps({"question": f"Train question {i}:\n  how {_phrase(rng, 8)}?",
                                "choices": [_phrase(rng, 2) for _ in range(4)], "answer": i % 4}) + "\n")

    def record(i: int, prefix: str) -> dict:
        titles = [f"{prefix} title {i}-{k}" for k in range(10)]
        context = [[t, [f"{_phrase(rng, 9)}. ", f"{_phrase(rng, 9)}."]] for t in titles]
        return {"_id": f"{prefix}{i}", "question": f"Which {_phrase(rng, 5)} ({prefix} {i})?", "answer": _phrase(rng, 2),
                "context": context, "supporting_facts": [[titles[1], 0], [titles[4], 1]]}

    train = folder / "hotpot_train.json"
    train.write_text(json.dumps([record(i, "train") for i in range(60)]))
    dev = folder / "hotpot_dev.json"
    dev.write_text(json.dumps([record(i, "dev") for i in range(12)]))
    return {"mmlu": str(mmlu), "hotpotqa_train": str(train), "hotpotqa": str(dev)}
