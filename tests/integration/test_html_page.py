"""``--ruler-html=PATH``: the run's page, written at the run's end (one process and ``-n 2``), with the
verdict the terminal and the JSON report show, every sample, and a scripted run labelled as one (runs
of the plugin here use the scripted test engine, not a model); without matplotlib it is refused at
start-up, naming the plot extra."""

from __future__ import annotations

import html
import re
import sys

import pytest

from .helpers import SCRIPTED, XDIST, report, run

pytest.importorskip("matplotlib")
pytest.importorskip("matplotlib.backends.backend_svg")  # loaded before the in-process runs (conftest)

import pytest_ruler.pages.run_page  # noqa: E402,F401

ARGS = [*SCRIPTED, "--ruler-tasks=niah_single_1,vt", "--ruler-lengths=1k,2k", "--ruler-samples=2", "--ruler-report=r.json",
        "--ruler-html=out/run.html"]


@pytest.mark.parametrize("xdist", XDIST)
def test_the_run_writes_its_page_with_the_verdict_of_every_surface(pytester, xdist):
    result = run(pytester, *ARGS, *xdist)
    out = result.stdout.str()
    assert result.ret in (0, 1), out
    page = (pytester.path / "out" / "run.html").read_text(encoding="utf-8")
    data = report(pytester)
    line = data["verdict"]["line"]
    terminal = [ln for ln in out.splitlines() if ln.startswith("ruler verdict: ")]
    assert terminal == [line]  # the terminal's last ruler line, the JSON's verdict ...
    assert html.escape(line, quote=True) in page  # ... and the page's, word for word
    rows = re.findall(r'<tr class="sample (?:pass|fail)" data-task="([^"]+)" data-length="(\d+)"', page)
    assert len(rows) == sum(len(it["predictions"]) for it in data["items"]) == 2 * 2 * 2
    assert {t for t, _ in rows} == {"niah_single_1", "vt"} and {int(L) for _, L in rows} == {1024, 2048}
    assert 'id="scripted-banner"' in page and "NOT A MODEL" in page  # never taken for a model's run
    assert page.count("<svg") >= 2
    assert "out/run.html" in out.split("wrote:", 1)[1]


def test_without_matplotlib_the_run_is_refused_at_start_up(pytester, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    result = run(pytester, *ARGS)
    out = result.stdout.str() + result.stderr.str()
    assert result.ret == pytest.ExitCode.USAGE_ERROR, out
    assert "--ruler-html" in out and 'pip install "pytest-ruler[plot]"' in out and "plot extra" in out
    assert not (pytester.path / "out" / "run.html").exists() and not (pytester.path / "r.json").exists()
