"""pytest-ruler installs as the docs say (docs/install.md: a wheel built from the repository).

A wheel built from a copy of this tree is installed with ``--no-deps`` into a fresh virtual
environment; the commands then run from a folder outside the source tree, without
``PYTHONPATH``, so what they import is the installed wheel. The fresh environment reaches its
dependencies (pytest, tokenizers, numpy, ...) through a ``.pth`` line naming the running
interpreter's site-packages, added after the install, so that pip never sees another
pytest-ruler, and nothing is downloaded. Marked slow: it builds and installs a package
(about 20-40 s on 2 CPU cores).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


def _run(args: list, cwd: Path, env: dict | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    done = subprocess.run([str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{args} exited {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


def _package_files(folder: Path) -> set[str]:
    """Every file of the package a wheel must carry (modules and data), as wheel paths."""
    return {p.relative_to(folder.parent).as_posix() for p in folder.rglob("*")
            if p.is_file() and "__pycache__" not in p.parts and p.suffix not in (".pyc", ".pyo")}


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(the fresh environment's python, its bin folder, an outside folder, an environment without PYTHONPATH)."""
    base = tmp_path_factory.mktemp("wheel")
    src = base / "src"
    src.mkdir()
    # a copy: building in place would leave build/ and *.egg-info in the checkout
    shutil.copytree(ROOT / "pytest_ruler", src / "pytest_ruler", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, src / name)
    dist = base / "dist"
    # offline: setuptools from this environment (no build isolation), no dependencies fetched
    _run([sys.executable, "-m", "pip", "wheel", src, "--no-deps", "--no-build-isolation", "--no-index", "-w", dist], cwd=base)
    wheels = sorted(dist.glob("pytest_ruler-*.whl"))
    assert len(wheels) == 1, wheels
    with zipfile.ZipFile(wheels[0]) as zf:
        names = set(zf.namelist())
    missing = _package_files(src / "pytest_ruler") - names
    assert not missing, f"files of the package that the wheel leaves out: {sorted(missing)}"

    env_dir = base / "venv"
    _run([sys.executable, "-m", "venv", env_dir], cwd=base)
    bindir = env_dir / ("Scripts" if os.name == "nt" else "bin")
    python = bindir / ("python.exe" if os.name == "nt" else "python")
    _run([python, "-m", "pip", "install", "--no-deps", "--no-index", wheels[0]], cwd=base)
    # only now the dependencies: this interpreter's site-packages, after the fresh environment's own
    fresh_site = Path(_run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], cwd=base).stdout.strip())
    outer = dict.fromkeys(sysconfig.get_paths()[k] for k in ("purelib", "platlib"))
    (fresh_site / "zz_outer_dependencies.pth").write_text("".join(f"{p}\n" for p in outer))

    outside = base / "elsewhere"
    outside.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "PYTEST_ADDOPTS", "PYTEST_PLUGINS")}
    env["PYTHONNOUSERSITE"] = "1"
    return python, bindir, outside, env, env_dir


def test_the_installed_wheel_is_what_imports(installed):
    python, _, outside, env, env_dir = installed
    code = ("import importlib.metadata as m, pytest_ruler; d = m.distribution('pytest-ruler'); "
            "print(pytest_ruler.__file__); print(d.locate_file('')); print(d.version)")
    where, dist_root, version = _run([python, "-c", code], cwd=outside, env=env).stdout.split()
    assert Path(where).resolve().is_relative_to(env_dir.resolve()), where
    assert Path(dist_root).resolve().is_relative_to(env_dir.resolve()), dist_root
    assert not Path(where).resolve().is_relative_to(ROOT), where
    assert version


def test_the_console_script_runs_from_the_wheel(installed):
    _, bindir, outside, env, _ = installed
    script = bindir / ("pytest-ruler.exe" if os.name == "nt" else "pytest-ruler")
    assert script.is_file(), "the wheel installed no pytest-ruler command"
    out = _run([script, "--help"], cwd=outside, env=env).stdout
    for command in ("generate", "score", "report", "gate", "compare", "merge"):
        assert command in out, f"pytest-ruler --help does not list {command!r}:\n{out}"


def test_pytest_help_lists_the_ruler_options_through_the_entry_point(installed):
    python, _, outside, env, _ = installed
    out = _run([python, "-m", "pytest", "--help"], cwd=outside, env=env).stdout
    for option in ("--ruler-model", "--ruler-preset", "--ruler-require-effective-length", "--ruler-report", "--ruler-backend"):
        assert option in out, f"pytest --help (plugin from the installed wheel) does not list {option}"
    # the plugin is the wheel's, registered by its pytest11 entry point
    plugins = _run([python, "-c", "import importlib.metadata as m; "
                    "print([e.value for e in m.entry_points(group='pytest11') if e.dist.name == 'pytest-ruler'])"],
                   cwd=outside, env=env).stdout
    assert "pytest_ruler.plugin" in plugins, plugins
