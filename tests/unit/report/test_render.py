"""pytest_ruler.report (load, markdown, plots, render): Markdown and PNG output of a saved JSON report."""

from __future__ import annotations

import copy
import json
import sys

import pytest

from pytest_ruler.errors import RulerUsageError
from pytest_ruler.report.load import load_report
from pytest_ruler.report.markdown import markdown
from pytest_ruler.report.plots import plot_scores
from pytest_ruler.report.render import render_report
from pytest_ruler.results.table import format_effective_length
from pytest_ruler.report.build import build_report, write_report
from pytest_ruler.run.session import ItemResult

LENGTHS = [4096, 8192, 16384, 32768, 65536, 131072]
PYDOC = "pydoc_data (CPython 3.11 pydoc topics, offline default; not the paper's Paul Graham essays)"
PAPER = "essays:PaulGrahamEssays.json"
# mean score per (task, length); seed 0 gets +delta, seed 1 gets -delta, so the mean is exact
BASE = {
    "niah_single_1": [100.0, 100.0, 100.0, 100.0, 98.0, 96.0],  # passes everywhere -> >=128K
    "niah_single_2": [99.0, 97.5, 93.0, 88.25, 70.0, 41.0],     # 32K
    "vt": [95.0, 90.0, 86.0, 72.5, 40.0, 10.0],                 # 16K (86.0 > 85.6)
    "cwe": [80.0, 60.0, 30.0, 10.0, 2.0, 0.0],                  # never -> <4K
}
DELTA = 1.5


def _result(task, length, seed, score, mode="native", **kw):
    return ItemResult(task=task, length=length, seed=seed, mode=mode, samples=20, score=score,
                      threshold=85.6, passed=score > 85.6, nulls=0, seconds=0.5, **kw)


def _results(mode="native", base=BASE, extra=None):
    out = []
    for task, scores in base.items():
        for L, s in zip(LENGTHS, scores):
            d = min(DELTA, s, 100.0 - s)  # keep both seeds in [0, 100] so the mean is exactly s
            for seed, v in ((0, s + d), (1, s - d)):
                kw = (extra or {}).get((task, L, seed), {})
                out.append(_result(task, L, seed, v, mode, **kw))
    return out


def _report(corpus=PYDOC, results=None, **kw):
    return build_report(model="smollm2-135m", backend="hf", tokenizer="smollm2-135m", haystack_corpus=corpus,
                        threshold=85.6, results=_results() if results is None else results, **kw)


def _table(md: str, heading: str) -> dict[str, list[str]]:
    """Rows of the first Markdown table after ``heading``: {first cell: other cells}."""
    lines = md.splitlines()
    start = lines.index(heading)
    rows: dict[str, list[str]] = {}
    in_table = False
    for line in lines[start + 1:]:
        if line.startswith("|"):
            in_table = True
            cells = [c.strip() for c in line.strip("|").split(" | ")]
            if not cells[0].startswith(":--"):
                rows[cells[0]] = cells[1:]
        elif in_table:
            break
    return rows


@pytest.fixture(scope="module")
def report():
    return _report()


# ------------------------------------------------------------------ load --
def test_load_report_round_trip(tmp_path, report):
    path = write_report(tmp_path / "ruler.json", report)
    assert load_report(path).to_dict() == json.loads(json.dumps(report))  # the typed report writes back what it read


def test_a_report_gets_the_usual_file_mode_not_mkstemps_0600(tmp_path, report):
    import os

    umask = os.umask(0o022)
    try:
        path = write_report(tmp_path / "ruler.json", report)
    finally:
        os.umask(umask)
    assert path.stat().st_mode & 0o777 == 0o644


def test_a_report_to_a_pipe_is_written_into_it_never_put_in_its_place(tmp_path, report):
    # --ruler-report=/dev/stdout, or /dev/full (run as root, a replace would swap the device for a file)
    import os
    import stat
    import threading

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
    reader.start()
    write_report(fifo, report)
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    reader.join(timeout=60)
    assert json.loads(got[0])["schema"] == "pytest-ruler/1"
    assert not list(tmp_path.glob("pipe*.tmp"))


@pytest.mark.parametrize(
    "content, fragment",
    [
        (None, "no such file"),
        ("{not json", "not valid JSON"),
        ("[1, 2]", "expected a JSON object"),
        ('{"schema": "pytest-ruler/0", "items": [], "summary": {}}', "expected schema 'pytest-ruler/1', found schema 'pytest-ruler/0'"),
        ('{"items": [], "summary": {}}', "no \"schema\" field"),
        ('{"schema": "pytest-ruler/1", "items": {}, "summary": {}}', "\"items\" must be a list"),
        ('{"schema": "pytest-ruler/1", "items": [{"task": "vt", "length": "4k", "score": 1}], "summary": {}}', "no valid 'length'"),
        ('{"schema": "pytest-ruler/1", "items": [], "summary": {"native": {"avg": 1}}}', "per_length"),
    ],
)
def test_load_report_errors(tmp_path, content, fragment):
    path = tmp_path / "REPORT.json"
    if content is not None:
        path.write_text(content, encoding="utf-8")
    with pytest.raises(RulerUsageError) as info:
        load_report(path)
    assert info.value.parameter == "REPORT.json"
    assert info.value.value == str(path)
    assert fragment in info.value.fix


def test_load_report_folder(tmp_path):
    with pytest.raises(RulerUsageError, match="folder"):
        load_report(tmp_path)


# -------------------------------------------------------- effective length --
@pytest.mark.parametrize(
    "n, lengths, expected",
    [
        (None, LENGTHS, "<4K"),
        (None, [8192, 16384], "<8K"),
        (None, [], "-"),
        (131072, LENGTHS, "≥128K"),
        (32768, LENGTHS, "32K"),
        (4096, [4096], "≥4K"),
        (1000, [1000, 5000], "1000"),
        (32768, [], "32K"),
    ],
)
def test_format_effective_length(n, lengths, expected):
    assert format_effective_length(n, lengths) == expected


# ---------------------------------------------------------------- tables --
def test_task_rows_are_seed_means(report):
    md = markdown(report)
    rows = _table(md, "## Effective context length")
    header = rows.pop("Task")
    assert header == ["4K", "8K", "16K", "32K", "64K", "128K", "Avg", "wAvg (inc)", "wAvg (dec)", "Effective"]
    # paper order: niah rows first, then vt, cwe; Total last
    assert list(rows) == ["niah_single_1", "niah_single_2", "vt", "cwe", "**Total**"]
    for task, scores in BASE.items():
        assert rows[task][:6] == [f"{s:.1f}" for s in scores], task
        assert rows[task][6:9] == ["", "", ""]
    assert rows["niah_single_1"][9] == "≥128K"
    assert rows["niah_single_2"][9] == "32K"
    assert rows["vt"][9] == "16K"
    assert rows["cwe"][9] == "<4K"


def test_total_row_equals_summary(report):
    s = report["summary"]["native"]
    total = _table(markdown(report), "## Effective context length")["**Total**"]
    assert total[:6] == [f"{s['per_length'][str(L)]:.1f}" for L in LENGTHS]
    assert total[6:9] == [f"{s['avg']:.1f}", f"{s['wavg_inc']:.1f}", f"{s['wavg_dec']:.1f}"]
    assert total[9] == format_effective_length(s["effective_length"], LENGTHS)
    # and the summary really is the mean over tasks of the seed means
    for i, L in enumerate(LENGTHS):
        assert s["per_length"][str(L)] == pytest.approx(sum(v[i] for v in BASE.values()) / len(BASE))


def test_total_effective_passes_everywhere_prints_at_least_longest():
    good = {t: [99.0] * 6 for t in ("niah_single_1", "vt")}
    md = markdown(_report(results=_results(base=good)))
    assert _table(md, "## Effective context length")["**Total**"][9] == "≥128K"


def test_header(report):
    md = markdown(report)
    assert md.startswith("# RULER report: smollm2-135m\n")
    assert "- **Backend:** hf" in md
    assert "- **Tokenizer:** `smollm2-135m`" in md
    assert "- **Threshold:** 85.6" in md
    assert "- **Items:** 48 native (4 tasks × 6 lengths × 2 seeds); 20 samples per item" in md
    assert "Gate" not in md  # no gate was asked for
    assert "averaged over 2 seed(s)" in md


@pytest.mark.parametrize(
    "corpus, warned",
    [
        (PYDOC, True),
        ("noise; " + PYDOC + "; needle", True),
        ("essays:my_essays.txt", True),
        (PAPER, False),
        ("noise; " + PAPER + "; needle; wonderwords 2.2.0 word list", False),
        ("noise", False),
    ],
)
def test_haystack_warning(corpus, warned):
    md = markdown(_report(corpus=corpus))
    assert f"- **Haystack corpus:** {corpus}" in md
    assert ("not the paper's haystack" in md) is warned
    if warned:
        assert "pytest-ruler download essays" in md


def test_haystack_not_recorded():
    md = markdown(_report(corpus=""))
    assert "- **Haystack corpus:** not recorded in this report" in md


@pytest.mark.parametrize(
    "required, passed, expected",
    [
        (32768, True, "- **Gate:** PASSED: effective length 8K ≥ required 32K"),
        (65536, False, "- **Gate:** FAILED: effective length 8K < required 64K"),
        (65536, None, "- **Gate:** not decided (required 64K; effective length 8K)"),
    ],
)
def test_gate_line(report, required, passed, expected):
    r = copy.deepcopy(report)
    r["gate"] = {"required_effective_length": required, "passed": passed}
    # the text shows what the report says; it does not re-decide the gate
    assert expected in markdown(r)


def test_over_length_and_errors_are_marked():
    extra = {("vt", 131072, 0): {"over_length": 3}, ("cwe", 65536, 1): {"errors": 2, "over_length": 1}}
    md = markdown(_report(results=_results(extra=extra)))
    rows = _table(md, "## Effective context length")
    assert rows["vt"][5] == "10.0 †"
    assert rows["cwe"][4] == "2.0 †‡"
    assert rows["vt"][4] == "40.0"
    assert "† samples longer than the model's context window (scored as wrong): cwe at 64K (seed 1: 1 of 20); vt at 128K (seed 0: 3 of 20)" in md
    assert "‡ samples whose generation failed (scored as wrong): cwe at 64K (seed 1: 2 of 20)" in md


def test_mapreduce_table_and_side_by_side():
    mr = {t: [min(100.0, s + 90) for s in v] for t, v in BASE.items()}
    r = _report(results=_results() + _results("mapreduce", base=mr))
    md = markdown(r)
    s_mr = r["summary"]["mapreduce"]
    rows = _table(md, "## Map-reduce (chunked inference)")
    for task, scores in mr.items():
        assert rows[task][:6] == [f"{s:.1f}" for s in scores]
    assert rows["**Total**"][6] == f"{s_mr['avg']:.1f}"
    n_eff = format_effective_length(r["summary"]["native"]["effective_length"], LENGTHS)
    m_eff = format_effective_length(s_mr["effective_length"], LENGTHS)
    assert (n_eff, m_eff) == ("8K", "≥128K")
    assert "**native effective 8K vs map-reduce effective ≥128K**" in md
    cmp_rows = _table(md, "## Native vs map-reduce")
    assert cmp_rows["native"][0] == "8K"
    assert cmp_rows["map-reduce"] == ["≥128K", f"{s_mr['avg']:.1f}", f"{s_mr['wavg_inc']:.1f}", f"{s_mr['wavg_dec']:.1f}"]
    assert "48 native (4 tasks × 6 lengths × 2 seeds), 48 map-reduce" in md


def test_no_mapreduce_section_without_mapreduce(report):
    md = markdown(report)
    assert "Map-reduce" not in md and "map-reduce effective" not in md


def _with_depths(report, key="dict"):
    r = copy.deepcopy(report)
    for it in r["items"]:
        if it["task"] != "niah_single_2":
            continue
        base = it["score"]
        scores = {0: base, 50: max(0.0, base - 20), 100: base}
        if key == "dict":
            it["depth_scores"] = {str(d): s for d, s in scores.items()}
        else:  # parallel lists, depths as fractions
            it["depths"] = [d / 100 for d in scores]
            it["depth_scores"] = list(scores.values())
    return r


@pytest.mark.parametrize("key", ["dict", "lists"])
def test_depth_section(report, key):
    md = markdown(_with_depths(report, key))
    assert "## Depth sweep" in md
    rows = _table(md, "### niah_single_2")
    assert rows.pop("Depth") == ["4K", "8K", "16K", "32K", "64K", "128K"]
    assert list(rows) == ["0%", "50%", "100%"]
    means = BASE["niah_single_2"]
    assert rows["0%"] == [f"{s:.1f}" for s in means]
    # per seed: (s + d) - 20 and (s - d) - 20, none clipped at 0 here -> mean s - 20
    assert rows["50%"] == [f"{s - 20:.1f}" for s in means]
    assert "### vt" not in md


def test_no_depth_section_without_depths(report):
    assert "Depth" not in markdown(report)


def test_markdown_is_pure(report):
    before = copy.deepcopy(report)
    markdown(report)
    assert report == before


def test_an_interrupted_run_is_marked_under_the_title_and_a_complete_one_is_not(report):
    partial = _report(complete=False, extra={"interrupted": True, "items_expected": 48, "items_finished": 3})
    lines = markdown(partial).splitlines()
    assert lines[2] == '> **Interrupted** after 3 of 48 items: the tables are partial ("complete": false)'
    stopped = _report(complete=False, extra={"items_expected": 48, "items_finished": 3})
    assert markdown(stopped).splitlines()[2].startswith("> **Incomplete** after 3 of 48 items")
    assert "Interrupted" not in markdown(report) and "Incomplete" not in markdown(report)


def test_empty_report():
    r = build_report(model="m", backend="hf", tokenizer="t", haystack_corpus="noise", threshold=85.6, results=[])
    md = markdown(r)
    assert "No items in this report." in md


# ----------------------------------------------------------------- plots --
def _is_png(path):
    data = path.read_bytes()
    return data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000


def test_plot_scores_writes_pngs(tmp_path, report):
    pytest.importorskip("matplotlib")
    paths = plot_scores(report, tmp_path / "plots", prefix="run")
    assert [p.name for p in paths] == ["run.scores.png"]
    assert all(_is_png(p) for p in paths)


def test_plot_scores_mapreduce_and_depths(tmp_path, report):
    pytest.importorskip("matplotlib")
    r = _with_depths(_report(results=_results() + _results("mapreduce")))
    paths = plot_scores(r, tmp_path)
    assert [p.name for p in paths] == [
        "ruler.scores.png", "ruler.depth.niah_single_2.png",
        "ruler.scores.mapreduce.png", "ruler.depth.niah_single_2.mapreduce.png",
    ]
    assert all(_is_png(p) for p in paths)


def test_plot_scores_without_matplotlib(tmp_path, report, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(RulerUsageError) as info:
        plot_scores(report, tmp_path)
    assert info.value.parameter == "--ruler-plots"
    assert info.value.value == str(tmp_path)
    assert info.value.fix == 'pip install "pytest-ruler[plot]"'


# ---------------------------------------------------------------- render --
def test_render_report_next_to_json(tmp_path, report):
    pytest.importorskip("matplotlib")
    src = write_report(tmp_path / "ruler.json", report)
    text, written = render_report(src)
    assert [p.name for p in written] == ["ruler.md", "ruler.scores.png"]
    assert written[0].read_text(encoding="utf-8") == text
    assert "![ruler.scores](ruler.scores.png)" in text
    assert _is_png(written[1])


def test_render_report_out_dir_no_plots(tmp_path, report):
    src = write_report(tmp_path / "ruler.json", report)
    out = tmp_path / "out" / "deeper"
    text, written = render_report(src, out, plots=False)
    assert written == [out / "ruler.md"]
    assert "## Plots" not in text
    assert not list(out.glob("*.png"))


def test_render_report_without_matplotlib_keeps_markdown(tmp_path, report, monkeypatch):
    src = write_report(tmp_path / "ruler.json", report)
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(RulerUsageError) as info:
        render_report(src)
    assert "--no-plots" in info.value.fix and 'pytest-ruler[plot]' in info.value.fix
    assert (tmp_path / "ruler.md").exists()


def test_render_report_bad_path(tmp_path):
    with pytest.raises(RulerUsageError) as info:
        render_report(tmp_path / "missing.json")
    assert info.value.parameter == "REPORT.json"
