"""A custom RULER task from a family with other arguments, generated with the
embedded tokenizer and written as RULER-format JSONL.

    python examples/custom_task.py out/custom.jsonl
"""

import json
import sys
from pathlib import Path

from pytest_ruler import GenerationContext, generate_samples, load_tokenizer, make_task, register_task

# eight keys hidden among distractor needles; the answer is the one key asked for
task = register_task(make_task("niah_8keys", "niah", tokens_to_generate=128, type_haystack="needle", num_needle_k=8))
ctx = GenerationContext(load_tokenizer("smollm2-135m"))
out = sys.argv[1] if len(sys.argv) > 1 else "custom.jsonl"
Path(out).parent.mkdir(parents=True, exist_ok=True)  # out/custom.jsonl: make out/ when it is missing
with open(out, "w", encoding="utf-8") as fh:
    for sample in generate_samples(task, 4096, samples=5, seed=0, ctx=ctx):
        fh.write(json.dumps(sample.to_ruler_json()) + "\n")
print(f"wrote 5 samples of {task.name} to {out}")
