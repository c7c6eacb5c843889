"""``pytest --help`` where the plugin is installed, and ``pytest-ruler --version``.

The ruler options are shown in groups a user recognises (``options.GROUPS``), each option with
an upper-case metavar and its default.

argparse %-formats help strings, so a literal "95% intervals" in one option's help once
crashed ``pytest --help`` in every environment with the plugin installed (issue 19).
These run the installed entry point in a fresh interpreter, as a user's shell would.
"""

from __future__ import annotations

import re
import subprocess
import sys
from importlib import metadata

import pytest

from pytest_ruler import __version__
from pytest_ruler.options import DEFAULT_PRESET, GROUPS, OPTIONS, PRESETS, shown_default


def test_the_plugin_is_installed_as_a_pytest11_entry_point():
    names = {ep.name: ep.value for ep in metadata.entry_points(group="pytest11")}
    assert names.get("ruler") == "pytest_ruler.plugin"


@pytest.fixture(scope="module")
def pytest_help(tmp_path_factory) -> str:
    proc = subprocess.run([sys.executable, "-m", "pytest", "--help"], cwd=tmp_path_factory.mktemp("help"),
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    return proc.stdout


def test_pytest_help_exits_0_and_lists_every_ruler_option(pytest_help):
    missing = [f"--ruler-{opt.name}" for opt in OPTIONS if f"--ruler-{opt.name}" not in pytest_help]
    assert not missing, missing
    assert "95% interval" in pytest_help  # a literal % (it once crashed argparse), shown as written


def _sections(text: str) -> dict[str, str]:
    """pytest --help's option groups: {title: the group's lines}."""
    out: dict[str, str] = {}
    title = None
    for line in text.splitlines():
        if line and not line.startswith(" ") and line.endswith(":"):
            title = line[:-1]
            out[title] = ""
        elif title is not None:
            out[title] += line + "\n"
    return out


def test_pytest_help_shows_the_ruler_options_in_their_groups_in_order(pytest_help):
    sections = _sections(pytest_help)
    titles = [title for _, title in GROUPS]
    shown = [t for t in sections if t.startswith("pytest-ruler:")]
    assert shown == titles  # every group, in the order of options.GROUPS, and no other
    for opt in OPTIONS:
        title = dict(GROUPS)[opt.group]
        assert re.search(rf"^  --ruler-{re.escape(opt.name)}(=|\s)", sections[title], re.M), (opt.name, title)
    selection = sections[dict(GROUPS)["selection"]]
    assert "--ruler-model=NAME" in selection and "--ruler-tasks=LIST" in selection


def test_every_option_has_a_group_one_metavar_style_and_no_internal_words():
    keys = {key for key, _ in GROUPS}
    assert {opt.name for opt in OPTIONS if opt.group not in keys} == set()
    for opt in OPTIONS:
        assert opt.flag or re.fullmatch(r"[A-Z][A-Z0-9]*(=[A-Z]+|/[A-Z]+)?", opt.metavar or ""), (opt.name, opt.metavar)
        for word in ("identity()", "grounding literal", "grounding none", "twin item", "betting"):
            assert word not in opt.help, (opt.name, word)


def test_pytest_help_shows_the_defaults(pytest_help):
    text = " ".join(pytest_help.split())  # argparse wraps lines
    assert "--ruler-preset=NAME" in text and "[default: ci]" in text
    assert "[default: 85.6]" in text  # --ruler-threshold
    samples = PRESETS[DEFAULT_PRESET]["samples"]
    assert f"samples per item (task x length x seed) [default: the preset's ({DEFAULT_PRESET}: {samples})]" in text
    for opt in OPTIONS:
        if not opt.flag and shown_default(opt) is not None:
            assert f"[default: {shown_default(opt)}]" in text, opt.name


def test_pytest_ruler_version():
    proc = subprocess.run([sys.executable, "-m", "pytest_ruler.cli", "--version"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0
    assert proc.stdout.strip() == f"pytest-ruler {__version__}"
    assert __version__ == metadata.version("pytest-ruler")
