"""The generated reference pages (docs/reference/options.md, report.md) and the shipped report schema
(pytest_ruler/report/schema.json) are what ``python -m pytest_ruler.docs_gen`` writes now: an option or
a report field cannot change without its page. Fix a failure by running that command and committing."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_ruler import docs_gen
from pytest_ruler.options import GROUPS, OPTIONS, option_dest, shown_default
from pytest_ruler.report.schema import build_schema

ROOT = Path(__file__).resolve().parents[2]
FILES = docs_gen.generated(ROOT)


@pytest.mark.parametrize("path", sorted(FILES), ids=lambda p: str(p.relative_to(ROOT)))
def test_the_committed_file_is_what_the_generator_writes_now(path):
    assert path.is_file(), f"{path.relative_to(ROOT)} is missing: run python -m pytest_ruler.docs_gen"
    assert path.read_text(encoding="utf-8") == FILES[path](), \
        f"{path.relative_to(ROOT)} is stale: run python -m pytest_ruler.docs_gen and commit the result"


def test_the_options_page_has_every_option_its_ini_key_default_and_group():
    page = docs_gen.options_page()
    for opt in OPTIONS:
        row = next((ln for ln in page.splitlines() if ln.startswith(f"| `--ruler-{opt.name}")), None)
        assert row is not None, opt.name
        assert f"`{option_dest(opt.name)}`" in row
        default = shown_default(opt)
        shown = "off" if opt.flag else "-" if default is None else f"`{default}`" if opt.default is not None else docs_gen._md(default)
        assert f"| {shown} |" in row, opt.name
        section = page[: page.index(row)].rsplit("\n## ", 1)[-1].split("\n", 1)[0]
        title = dict(GROUPS)[opt.group].removeprefix("pytest-ruler: ")
        assert section.lower() == title.lower(), (opt.name, section)


def test_the_report_page_has_every_field_of_the_schema():
    page = docs_gen.report_page()
    schema = build_schema()
    for name in schema["properties"]:
        assert f"| `{name}` |" in page, name
    for part, node in schema["$defs"].items():
        assert f"## `{part}`" in page
        for name in node.get("properties", {}):
            assert f"| `{name}` |" in page, (part, name)
    assert "| `items` | array of [item](#item) | *required* |" in page


def test_check_names_a_stale_file_and_writes_nothing(tmp_path, capsys):
    assert docs_gen.main(["--root", str(tmp_path)]) == 0  # writes all three
    assert docs_gen.main(["--root", str(tmp_path), "--check"]) == 0
    page = tmp_path / "docs" / "reference" / "options.md"
    page.write_text(page.read_text() + "a hand edit\n")
    assert docs_gen.main(["--root", str(tmp_path), "--check"]) == 1
    assert "options.md" in capsys.readouterr().err and page.read_text().endswith("a hand edit\n")
