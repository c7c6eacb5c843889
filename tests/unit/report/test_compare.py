"""``pytest-ruler compare`` (report.compare): cells in Table 3's order, differing engines flagged first."""

from __future__ import annotations

from pytest_ruler.report.compare import compare_markdown
from pytest_ruler.results import ItemResult
from pytest_ruler.results.report import Report
from pytest_ruler.results.table import table3

# alphabetical order (cwe, mk_niah_easy, mk_niah_basic ...) is not Table 3's: the paper's tasks,
# then the ruler2 pack's own order (mk_niah_basic before mk_niah_easy), then the others
TASKS = ("zz_mine", "vt", "mk_niah_easy", "cwe", "mk_niah_basic", "niah_single_1")
ENGINE = {"backend": "hf", "class": "pytest_ruler.engines.hf.HFEngine", "dtype": "bfloat16", "options": {},
          "versions": {"torch": "2.5.1", "transformers": "4.46.0", "vllm": None}}


def _report(engine=None, drop=0.0):
    items = [ItemResult(task=t, length=L, seed=0, mode=mode, samples=4, score=100.0 - drop, threshold=85.6, passed=True,
                        nulls=0, seconds=0.1, sample_scores=(1.0,) * 4)
             for mode in ("mapreduce", "native") for t in TASKS for L in (2048, 1024)]
    fields = {} if engine is None else {"engine": engine}
    return Report.of_results(items, threshold=85.6, model="m", backend="hf", tokenizer="t", haystack_corpus="noise", **fields)


def _rows(markdown: str) -> list[tuple[str, str, str]]:
    return [tuple(c.strip() for c in line.strip("|").split("|")[:3]) for line in markdown.splitlines()
            if line.startswith("| ") and not line.startswith("| Task")]


def test_cells_are_listed_in_table_3_order():
    old, new = _report(), _report()
    rows = _rows(compare_markdown(old, new))
    order = table3(new, "native").tasks  # the terminal's row order
    assert order == ["niah_single_1", "vt", "cwe", "mk_niah_basic", "mk_niah_easy", "zz_mine"]
    assert rows == [(t, L, mode) for mode in ("native", "map-reduce") for t in order for L in ("1K", "2K")]


def test_differing_engine_identities_are_flagged_before_the_scores():
    same = compare_markdown(_report(ENGINE), _report(ENGINE))
    assert "Engine identities differ" not in same
    other = {**ENGINE, "dtype": "float32", "versions": {**ENGINE["versions"], "torch": "2.6.0"}}
    text = compare_markdown(_report(ENGINE), _report(other))
    lines = text.splitlines()
    flag = next(i for i, line in enumerate(lines) if "Engine identities differ" in line)
    assert flag < next(i for i, line in enumerate(lines) if line.startswith("- **Model:**"))
    assert "`dtype: bfloat16 -> float32`" in lines[flag] and "`versions.torch: 2.5.1 -> 2.6.0`" in lines[flag]
    assert "(2 fields)" in lines[flag]
    # a report from before the field: nothing to compare, nothing flagged
    assert "Engine identities differ" not in compare_markdown(_report(), _report(other))
