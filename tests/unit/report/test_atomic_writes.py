"""Every whole file an output writes is written atomically (issue 34, item 4): a write that fails half-way
leaves the earlier file whole (the Markdown, the PNGs, ``pytest-ruler report``'s Markdown); and a run that
finished no item keeps a complete report where it is (``report.reporters``: the json and markdown reporters)."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from pytest_ruler.report.build import build_report, write_report
from pytest_ruler.report.reporters import RunEnd, builtin_reporters
from pytest_ruler.results import ItemResult
from pytest_ruler.results.report import Report


def _item(task="vt", length=1024, score=100.0):
    return ItemResult(task=task, length=length, seed=0, mode="native", samples=2, score=score, threshold=85.6,
                      passed=score > 85.6, nulls=0, seconds=0.0)


def _report(items=(), **extra) -> Report:
    return Report.from_dict(build_report(model="m", backend="scripted", tokenizer="t", haystack_corpus="noise", threshold=85.6,
                                         results=list(items), extra=extra or None))


def _end(rep: Report, tmp_path: Path, said: list[str], **paths) -> RunEnd:
    config = SimpleNamespace(report=paths.get("report"), markdown=paths.get("markdown"), plots=paths.get("plots"), show_ci=False)
    return RunEnd(rep, None, config, say=said.append, environ={})


def _write(name: str, end: RunEnd) -> list[Path]:
    reporter = next(r for r in builtin_reporters() if r.name == name)
    return list(reporter.write(end) or [])


def _no_temporary_files(folder: Path) -> None:
    assert not [p.name for p in folder.iterdir() if p.name.endswith(".tmp")]


def test_a_markdown_write_that_fails_half_way_leaves_the_earlier_markdown_whole(tmp_path, monkeypatch):
    md = tmp_path / "keep.md"
    md.write_text("# RULER report: the earlier run\n")
    # a lone surrogate cannot be encoded as UTF-8: the write fails after it began
    monkeypatch.setattr("pytest_ruler.report.markdown.markdown", lambda *a, **k: "# RULER report: new\n" + "x" * 10000 + "\ud800")
    with pytest.raises(UnicodeEncodeError):
        _write("markdown", _end(_report([_item()]), tmp_path, [], markdown=md))
    assert md.read_text() == "# RULER report: the earlier run\n"
    _no_temporary_files(tmp_path)


def test_pytest_ruler_reports_markdown_is_written_atomically(tmp_path, monkeypatch):
    from pytest_ruler.report.render import render_report

    src = write_report(tmp_path / "r.json", _report([_item()]))
    (tmp_path / "r.md").write_text("earlier\n")
    monkeypatch.setattr("pytest_ruler.report.render.markdown", lambda *a, **k: "new\ud800")
    with pytest.raises(UnicodeEncodeError):
        render_report(src, plots=False)
    assert (tmp_path / "r.md").read_text() == "earlier\n"
    _no_temporary_files(tmp_path)


def test_a_plot_that_fails_half_way_leaves_the_earlier_png_whole(tmp_path, monkeypatch):
    figure = pytest.importorskip("matplotlib.figure")
    from pytest_ruler.report.plots import plot_scores

    png = tmp_path / "ruler.scores.png"
    png.write_bytes(b"the earlier plot")

    def half_a_png(self, fname, **kwargs):
        fh = open(fname, "wb") if isinstance(fname, (str, Path)) else fname
        fh.write(b"\x89PNG half")
        fh.flush()
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(figure.Figure, "savefig", half_a_png)
    with pytest.raises(OSError):
        plot_scores(_report([_item()]), tmp_path)
    assert png.read_bytes() == b"the earlier plot"
    _no_temporary_files(tmp_path)


def test_write_atomically_writes_bytes_and_text_with_the_usual_mode(tmp_path):
    from pytest_ruler.report.build import write_atomically

    assert write_atomically(tmp_path / "a" / "b.png", lambda fh: fh.write(b"\x89PNG"), binary=True).read_bytes() == b"\x89PNG"
    path = write_atomically(tmp_path / "c.md", lambda fh: fh.write("é"))
    assert path.read_text(encoding="utf-8") == "é" and path.stat().st_mode & 0o777 != 0o600


# ---------------------------------------------------------------- a run that finished no item


@pytest.mark.parametrize("earlier, kept", [
    ("complete", True),
    ("incomplete", False),  # a partial report is no complete one: replaced as before
    ("no items", False),
    ("not a report", False),
    ("not json", False),
])
def test_a_run_that_finished_no_item_replaces_only_what_is_not_a_complete_report(tmp_path, earlier, kept):
    target = tmp_path / "keep.json"
    data = json.loads(json.dumps(_report([_item(), _item(length=2048)]).to_dict()))
    if earlier == "incomplete":
        data["complete"] = False
    elif earlier == "no items":
        data["items"] = []
    text = {"not a report": json.dumps({"items": [1, 2]}), "not json": "{"}.get(earlier, json.dumps(data))
    target.write_text(text)
    said: list[str] = []
    written = _write("json", _end(_report([], items_expected=0, items_finished=0), tmp_path, said, report=target))
    if kept:
        assert target.read_text() == text and written == [tmp_path / "keep.incomplete.json"]
        assert said == [f"ruler: kept {target} (a complete report of 2 items): this run finished no item, "
                        f"so its report is {tmp_path / 'keep.incomplete.json'}"]
    else:
        assert json.loads(target.read_text())["items"] == [] and written == [target] and said == []


def test_a_run_that_finished_no_item_keeps_a_complete_markdown(tmp_path):
    from pytest_ruler.report.markdown import markdown

    md = tmp_path / "keep.md"
    md.write_text(markdown(_report([_item(), _item(task="cwe")])))
    earlier = md.read_text()
    said: list[str] = []
    written = _write("markdown", _end(_report([], items_expected=0, items_finished=0), tmp_path, said, markdown=md))
    assert md.read_text() == earlier and written == [tmp_path / "keep.incomplete.md"]
    assert said == [f"ruler: kept {md} (a complete report of 2 items): this run finished no item, "
                    f"so its Markdown is {tmp_path / 'keep.incomplete.md'}"]
    # an interrupted run's Markdown is no complete report: replaced
    partial = _report([_item()], interrupted=True, items_expected=3, items_finished=1).with_fields(complete=False)
    md.write_text(markdown(partial))
    assert _write("markdown", _end(_report([]), tmp_path, [], markdown=md)) == [md]
    assert "No items in this report." in md.read_text()
