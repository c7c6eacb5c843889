"""``pytest --help`` where the plugin is installed, and ``pytest-ruler --version``.

argparse %-formats help strings, so a literal "95% intervals" in one option's help once
crashed ``pytest --help`` in every environment with the plugin installed (issue 19).
These run the installed entry point in a fresh interpreter, as a user's shell would.
"""

from __future__ import annotations

import subprocess
import sys
from importlib import metadata

from pytest_ruler import __version__
from pytest_ruler.options import OPTIONS


def test_the_plugin_is_installed_as_a_pytest11_entry_point():
    names = {ep.name: ep.value for ep in metadata.entry_points(group="pytest11")}
    assert names.get("ruler") == "pytest_ruler.plugin"


def test_pytest_help_exits_0_and_lists_every_ruler_option(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "pytest", "--help"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    assert "RULER long-context tests (pytest-ruler)" in proc.stdout
    missing = [f"--ruler-{opt.name}" for opt in OPTIONS if f"--ruler-{opt.name}" not in proc.stdout]
    assert not missing, missing
    assert "95% interval" in proc.stdout  # a literal % (it once crashed argparse), shown as written


def test_pytest_ruler_version():
    proc = subprocess.run([sys.executable, "-m", "pytest_ruler.cli", "--version"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0
    assert proc.stdout.strip() == f"pytest-ruler {__version__}"
    assert __version__ == metadata.version("pytest-ruler")
