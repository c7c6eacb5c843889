"""The lazily exporting packages (``pytest_ruler.lazy``): every export resolves, none bears a
submodule's name, and importing the package loads none of its modules."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LAZY = ("pytest_ruler.tasks", "pytest_ruler.engines")


@pytest.mark.parametrize("name", LAZY)
def test_every_export_resolves_and_none_is_a_submodules_name(name):
    package = importlib.import_module(name)
    submodules = {p.stem for p in Path(package.__file__).parent.glob("*.py")} | {
        p.parent.name for p in Path(package.__file__).parent.glob("*/__init__.py")}
    assert set(package.__all__) == set(package._EXPORTS)
    assert not set(package._EXPORTS) & submodules, "the import system would bind the submodule over the export"
    for export in package.__all__:
        assert getattr(package, export) is getattr(importlib.import_module(f"{name}.{package._EXPORTS[export]}"), export)
    with pytest.raises(AttributeError, match="no attribute 'no_such_name'"):
        package.no_such_name


@pytest.mark.parametrize("name", LAZY)
def test_importing_the_package_loads_none_of_its_modules(name):
    code = f"import json, sys, {name}; print(json.dumps(sorted(m for m in sys.modules if m.startswith('{name}.'))))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == []
