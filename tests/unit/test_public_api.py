"""The package's public names: ``pytest_ruler.load_report(path)`` reads a saved report back, typed;
every name in ``__all__`` resolves and is documented in the package docstring."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import pytest_ruler
from pytest_ruler import RulerUsageError

ROOT = Path(__file__).resolve().parents[2]
SAVED = ROOT / "bench" / "results" / "sequential_real" / "seq.json"


def test_load_report_returns_the_typed_report_with_its_tables_computed_from_the_items():
    report = pytest_ruler.load_report(SAVED)
    assert isinstance(report, pytest_ruler.Report)
    assert all(isinstance(r, pytest_ruler.ItemResult) for r in report.items) and report.items
    stored = json.loads(SAVED.read_text(encoding="utf-8"))
    assert report.model == stored["model"] and report.modes == ["native"]
    native = report.mode("native")
    assert native.summary["per_length"] == stored["summary"]["native"]["per_length"]
    assert native.effective_length == stored["summary"]["native"]["effective_length"]
    assert [r.score for r in report.items] == [it["score"] for it in stored["items"]]


def test_load_report_refuses_an_edited_report_naming_the_file(tmp_path):
    data = json.loads(SAVED.read_text(encoding="utf-8"))
    data["items"][0]["score"] = "high"
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(data))
    with pytest.raises(RulerUsageError) as exc:
        pytest_ruler.load_report(path)
    assert str(path) in str(exc.value) and "score" in str(exc.value)


def test_every_public_name_resolves_and_is_documented():
    doc = pytest_ruler.__doc__
    for name in pytest_ruler.__all__:
        assert getattr(pytest_ruler, name) is not None, name
        assert f"``{name}``" in doc or f"``{name}(" in doc, name
    assert "load_report" in pytest_ruler.__all__


def test_importing_the_package_stays_cheap():
    """load_report is a lazy export: importing pytest_ruler imports neither the report reader nor numpy."""
    code = ("import sys, pytest_ruler; print(sorted(m for m in ('pytest_ruler.report.load', 'pytest_ruler.results.report', "
            "'numpy', 'torch') if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert proc.stdout.strip() == "[]", proc.stderr
