"""RULERv2 compatibility check: are our prompt templates the reference's text, string for string?

    python bench/ruler2_templates.py PATH/TO/NeMo-Skills   # a checkout with nemo_skills/dataset/ruler2/

Why templates and not whole prompts: the reference's generator cannot run here (it loads
MMLU and HotpotQA through ``datasets.load_dataset`` from the Hub and NLTK's punkt by
download, both offline here), and even where it runs its prompts cannot be byte-identical
to ours by construction: it draws from the process-global ``random`` seeded once (42), in an
order that depends on its size search and on the samples before, while ours draws each
sample from its own RNG (so sample i is the same whatever ran before, in any process). What
can be compared exactly is the benchmark's text: every template string our tasks format.

The reference's files are read as text and parsed with ``ast``: their string constants
are evaluated, nothing of theirs is imported or run. Writes bench/results/ruler2_templates.json:
per template ours, whether the reference has the identical string, and the totals.
"""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _strings(path: Path) -> set[str]:
    """Every string constant of a Python file, with adjacent literals joined and ``a + b`` of two literals folded."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            out.add(node.value)
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            try:
                value = ast.literal_eval(node)
            except ValueError:
                continue
            if isinstance(value, str):
                out.add(value)
    return out


def ours() -> dict[str, tuple[str, str]]:
    """{name: (reference file, our template)}."""
    from pytest_ruler.tasks.ruler2 import mmlu, niah, qa

    out = {"niah.TEMPLATE_SINGLE": ("prepare_niah.py", niah.TEMPLATE_SINGLE),
           "niah.TEMPLATE_MULTIPLE": ("prepare_niah.py", niah.TEMPLATE_MULTIPLE),
           "niah.NEEDLE (with numbers)": ("prepare_niah.py", niah.NEEDLE.replace("numbers", "{type_needle_v}")),
           "mmlu.TOTAL": ("prepare_mmlu.py", mmlu.TOTAL), "mmlu.NEEDLE": ("prepare_mmlu.py", mmlu.NEEDLE),
           "qa.TOTAL": ("prepare_qa.py", qa.TOTAL), "qa.NEEDLE": ("prepare_qa.py", qa.NEEDLE)}
    out.update({f"mmlu.CONTEXT[{k}]": ("prepare_mmlu.py", v) for k, v in mmlu.CONTEXT.items()})
    out.update({f"mmlu.PROBLEM[{'/'.join(k)}]": ("prepare_mmlu.py", v) for k, v in mmlu.PROBLEM.items()})
    out.update({f"qa.CONTEXT[{k}]": ("prepare_qa.py", v) for k, v in qa.CONTEXT.items()})
    out.update({f"qa.PROBLEM[{k}]": ("prepare_qa.py", v) for k, v in qa.PROBLEM.items()})
    return out


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    folder = Path(argv[0]) / "nemo_skills" / "dataset" / "ruler2"
    strings = {name: _strings(folder / name) for name in ("prepare_niah.py", "prepare_mmlu.py", "prepare_qa.py")}
    rows = [{"template": name, "file": f, "identical": text in strings[f]} for name, (f, text) in ours().items()]
    same = sum(r["identical"] for r in rows)
    result = {"reference": str(folder), "templates": len(rows), "identical": same, "rows": rows,
              "note": "templates only: the reference's whole prompts cannot be byte-identical to ours by construction (see the docstring)"}
    out = ROOT / "bench" / "results" / "ruler2_templates.json"
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"{same} of {len(rows)} templates identical to the reference's; wrote {out}")
    for r in rows:
        if not r["identical"]:
            print(f"  differs: {r['template']}")
    return 0 if same == len(rows) else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
