"""The per-run page and the history trend page in a real browser: headless Chromium (Debian's ``chromium``, which ``.ci/run``
installs) opens it from a file with the network off, runs its script, and this test reads what it
left: the DOM after the scripts ran (``--dump-dom``), the console (``--enable-logging=stderr``: an
uncaught error or a blocked load is a ``CONSOLE`` line), and a screenshot (``--screenshot``).

Checked: the page's script ran (``data-js="ready"``) with no error (no ``data-js-errors``, no console
line), the charts are SVG elements in the DOM, and the sample browser's filter works: opened as
``page.html#task=...&outcome=wrong``, the script shows exactly the rows this test counts in the report
(``data-shown``) and hides the others. A control: the same page with a failing script added is
caught both ways (the console line and the page's own mark), so the check can fail.

Without Chromium: skipped with the reason on a developer's machine, but a failure when ``CI`` is set
(``CI=true``): CI installs it, and a browser test that skips there would pass without testing.
Slow tier (``--run-slow``): each Chromium start takes seconds.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytest.importorskip("matplotlib")

from pytest_ruler.pages.run_page import write_run_page  # noqa: E402
from pytest_ruler.report.load import load_report  # noqa: E402

from .chromium import console_errors, open_page  # noqa: E402

ROOT = Path(__file__).resolve().parents[3]
REAL = ROOT / "bench" / "results" / "ruler2_smoke_2k" / "report.json"


@pytest.mark.slow
def test_the_run_page_in_headless_chromium(tmp_path):
    report = load_report(REAL)
    page = write_run_page(report, tmp_path / "run.html")

    dom, stderr = open_page(page, tmp_path)
    assert console_errors(stderr) == []
    html_tag = re.search(r"<html[^>]*>", dom).group(0)
    assert 'data-js="ready"' in html_tag and "data-js-errors" not in html_tag, html_tag
    assert len(re.findall(r"<svg\b", dom)) >= 2  # the charts are in the DOM

    task = "mk_niah_basic"
    expected = sum(float(p["score"]) < 1 for it in report.items if it.task == task for p in it.predictions)
    total = sum(len(it.predictions) for it in report.items)
    assert 0 < expected < total
    dom, stderr = open_page(page, tmp_path, fragment=f"#task={task}&outcome=wrong")
    assert console_errors(stderr) == []
    assert re.search(rf'id="shown-count" data-shown="{expected}"', dom), re.findall(r'<span id="shown-count"[^>]*>[^<]*', dom)
    rows = re.findall(r'<tr class="sample (?:pass|fail)"([^>]*)>', dom)
    assert len(rows) == total
    assert sum("hidden" not in attrs for attrs in rows) == expected
    assert all(f'data-task="{task}"' in a and 'data-outcome="wrong"' in a for a in rows if "hidden" not in a)

    # the control: a page whose script fails is caught both ways (the console line, the page's own mark)
    broken = tmp_path / "broken.html"
    broken.write_text(page.read_text(encoding="utf-8").replace("</body>", "<script>no_such_function();</script></body>"),
                      encoding="utf-8")
    dom, stderr = open_page(broken, tmp_path)
    assert any("no_such_function" in line for line in console_errors(stderr)), stderr[-2000:]
    assert "no_such_function" in re.search(r"<html[^>]*>", dom).group(0)

    shot = tmp_path / "run.png"
    open_page(page, tmp_path, screenshot=shot)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 10_000


@pytest.mark.parametrize("ci, outcome", [("true", "fail"), ("", "skip")])
def test_without_chromium_ci_fails_and_a_developer_skips(monkeypatch, ci, outcome):
    from _pytest.outcomes import Failed, Skipped

    from . import chromium as browser

    monkeypatch.setattr(browser.shutil, "which", lambda name: None)
    monkeypatch.setenv("CI", ci)
    with pytest.raises(Failed if outcome == "fail" else Skipped) as info:
        browser.chromium()
    assert "apt-get install -y chromium" in str(info.value)


@pytest.mark.slow
def test_the_trend_page_in_headless_chromium(tmp_path):
    """The history folder's trend page (``pytest-ruler history DIR --html OUT``): three runs of one
    model, opened in Chromium: no console error, the charts (effective length, Total per length, the
    heat maps) are SVG elements in the DOM, and each run is a row of the runs table."""
    from pytest_ruler.history.page import history_page
    from pytest_ruler.history.store import add_run, read_runs

    report = load_report(REAL)
    for label in ("v1", "v2", "v3"):
        add_run(tmp_path / "history", report, label=label)
    runs, skipped = read_runs(tmp_path / "history")
    assert len(runs) == 3 and skipped == []
    out = tmp_path / "trend.html"
    out.write_text(history_page(runs, tmp_path / "history", out), encoding="utf-8")

    dom, stderr = open_page(out, tmp_path)
    assert console_errors(stderr) == []
    assert len(re.findall(r"<svg\b", dom)) >= 3
    assert all(f">{label}<" in dom or f">{label} " in dom for label in ("v1", "v2", "v3")), dom[-3000:]
    shot = tmp_path / "trend.png"
    open_page(out, tmp_path, screenshot=shot)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 10_000
