"""Example conftest: a custom task and a custom engine, registered for the run.

Run the examples with the embedded model:

    pytest examples --ruler-model=smollm2-135m --ruler-tasks=niah_single_1 --ruler-lengths=1k --ruler-samples=3

(the suite's one item, niah_single_1 at 1K, beside the folder's own tests; each test
sets the lengths it needs, so every file also runs alone with --ruler-no-suite)
"""

from pytest_ruler import make_task


def pytest_ruler_register(registry):
    # a harder retrieval task: eight keys hidden among distractor needles
    registry.task(make_task("niah_8keys", "niah", tokens_to_generate=128, type_haystack="needle", num_needle_k=8))
    # a custom engine: any object with name, tokenizer, max_context, identity(), generate(), close()
    from custom_engine import EchoLastNumberEngine

    registry.engine("echo-last-number", EchoLastNumberEngine)


def pytest_ruler_summary(config, report):
    """A team's own gate: single-needle retrieval must hold at every tested length,
    natively or, where native context fails, through map-reduce."""
    failures = []
    for mode in ("native", "mapreduce"):
        summary = report["summary"][mode]
        eff = summary["per_task_effective_length"] if summary else {}
        longest = max((i["length"] for i in report["items"] if i["mode"] == mode), default=None)
        if eff.get("niah_single_1", longest) != longest:
            failures.append(f"niah_single_1 {mode} effective length {eff['niah_single_1']} is below the longest tested length {longest}")
    rescued = any(x["rescued"] for x in report.get("mapreduce_vs_native", []) if x["task"] == "niah_single_1")
    if rescued:  # native fails where map-reduce passes: the chunked path is the one this team ships
        failures = [f for f in failures if " native " not in f]
    return failures or None
