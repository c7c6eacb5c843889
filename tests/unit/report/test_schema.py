"""The published JSON Schema of the report (``pytest-ruler/1``): shipped as package data, printed by
``pytest-ruler schema``, and met by every committed report under bench/results/ (fresh reports:
tests/integration/test_report_schema.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_ruler.cli import main
from pytest_ruler.report.schema import build_schema, report_schema, strict_schema, validate_report

jsonschema = pytest.importorskip("jsonschema")  # the test extra

ROOT = Path(__file__).resolve().parents[3]
#: committed pytest-ruler/1 reports that do not meet the schema, with why (none today: every one validates)
LEGACY: dict[str, str] = {}


def committed_reports() -> list[Path]:
    """Every committed JSON file under bench/results/ whose "schema" is pytest-ruler/1 (bench files have their own)."""
    out = []
    for path in sorted((ROOT / "bench" / "results").rglob("*.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            continue
        if isinstance(data, dict) and data.get("schema") == "pytest-ruler/1":
            out.append(path)
    return out


def test_the_schema_is_a_valid_2020_12_schema_and_the_shipped_file_is_current():
    schema = report_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema == build_schema()  # schema.json is docs_gen's output (tests/unit/test_docs_reference.py checks its text)
    assert schema["properties"]["schema"]["const"] == "pytest-ruler/1"


def test_there_are_committed_reports_and_each_validates():
    reports = committed_reports()
    assert len(reports) >= 10  # the premise: bench/results/ holds pytest-ruler/1 reports of several versions
    failing = {}
    for path in reports:
        name = str(path.relative_to(ROOT))
        problems = validate_report(json.loads(path.read_text(encoding="utf-8")))
        if name in LEGACY:
            assert problems, f"{name} validates now: drop it from LEGACY"
        elif problems:
            failing[name] = problems[:3]
    assert not failing, failing


def test_committed_reports_have_no_field_the_schema_does_not_describe():
    for path in committed_reports():
        assert validate_report(json.loads(path.read_text(encoding="utf-8")), strict=True) == [], path


@pytest.fixture
def good() -> dict:
    return json.loads((ROOT / "bench/results/sequential_real/seq.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize(("where", "value", "message"), [
    (("items", 0, "score"), "97.5", "items[0].score: '97.5' is not of type 'number'"),
    (("items", 0, "length"), 4.5, "items[0].length: 4.5 is not of type 'integer'"),
    (("items", 0, "mode"), "chunked", "items[0].mode: 'chunked' is not one of ['native', 'mapreduce']"),
    (("threshold",), 101, "threshold: 101 is greater than the maximum of 100"),
    (("summary", "native", "effective_length"), "4k", "summary.native.effective_length: '4k' is not of type 'integer', 'null'"),
    (("gate", "passed"), "yes", "gate.passed: 'yes' is not of type 'boolean', 'null'"),
    (("schema",), "pytest-ruler/2", "schema: 'pytest-ruler/1' was expected"),
])
def test_a_report_with_a_wrong_typed_field_is_rejected(good, where, value, message):
    assert validate_report(good) == []  # the premise: the report validates as committed
    node = good
    for key in where[:-1]:
        node = node[key]
    node[where[-1]] = value
    assert message in validate_report(good)


def test_a_report_without_a_required_field_is_rejected(good):
    del good["items"][0]["task"]
    del good["model"]
    assert validate_report(good) == ["(the report): 'model' is a required property", "items[0]: 'task' is a required property"]


def test_strict_validation_names_an_undescribed_field(good):
    good["items"][0]["colour"] = "red"
    assert validate_report(good) == []  # the schema is open: fields may be added within pytest-ruler/1
    assert any("'colour' was unexpected" in p for p in validate_report(good, strict=True))
    assert strict_schema(build_schema())["properties"]["engine"]["additionalProperties"] is True  # an engine's own entries


def test_pytest_ruler_schema_prints_the_shipped_schema(capsys, tmp_path):
    assert main(["schema"]) == 0
    assert json.loads(capsys.readouterr().out) == report_schema()
    assert main(["schema", "--out", str(tmp_path / "s.json")]) == 0
    assert json.loads((tmp_path / "s.json").read_text()) == report_schema()


def test_the_schema_ships_as_package_data():
    """The installed package reads it through importlib.resources (a wheel lists it in package-data)."""
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+

    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    assert "schema.json" in setuptools["package-data"]["pytest_ruler.report"]
    proc = subprocess.run([sys.executable, "-c", "from pytest_ruler.report.schema import report_schema; "
                           "print(report_schema()['title'])"], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert proc.stdout.strip() == "pytest-ruler report (pytest-ruler/1)", proc.stderr
