"""Benchmark: what the plugin costs a pytest run that does not use it (no --ruler-model).

Measurements per source tree, each in fresh subprocesses (median of ``--repeats``):

- ``import``: ``python -X importtime -c "import pytest; import pytest_ruler.plugin"``:
  the cumulative import time of ``pytest_ruler.plugin`` with pytest already imported, and
  the modules that import adds (all, and ours);
- per pytest command (``COMMANDS``: ``--version``, ``-VV``, ``--help``, one trivial test
  run without --ruler-model): wall time with the plugin and with it blocked
  (``-p no:ruler``; for the lone ``--version``, ``PYTEST_DISABLE_PLUGIN_AUTOLOAD=1``), the baseline, run in the same loop so the ratio holds on a loaded
  machine; and the ``pytest_ruler`` modules imported by the end of the command.

Trees: the working tree (``after``) and, with ``--before REF``, the package as committed
at REF (``git archive``), both on ``PYTHONPATH`` ahead of the installed copy.

    python bench/entry_import.py --before main [--repeats 15] [--out bench/results/entry_import.json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from io import BytesIO
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
IMPORTTIME = re.compile(r"^import time:\s+(\d+) \|\s+(\d+) \| (\s*)(\S+)$")


def _env(tree: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(tree)
    env.pop("PYTEST_ADDOPTS", None)
    env.pop("PYTEST_PLUGINS", None)
    env.pop("PYTEST_DISABLE_PLUGIN_AUTOLOAD", None)
    return env


def _importtime(stderr: str) -> dict[str, int]:
    """Module -> cumulative microseconds, from ``-X importtime`` output."""
    out = {}
    for line in stderr.splitlines():
        m = IMPORTTIME.match(line)
        if m:
            out[m.group(4)] = int(m.group(2))
    return out


def _run(args: list[str], tree: Path, cwd: Path, extra_env: dict[str, str] | None = None) -> tuple[float, subprocess.CompletedProcess]:
    started = time.perf_counter()
    done = subprocess.run(args, cwd=cwd, env={**_env(tree), **(extra_env or {})}, capture_output=True, text=True, timeout=300)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed in {cwd} ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    return seconds, done


def _ours(modules: dict[str, int]) -> list[str]:
    return sorted(m for m in modules if m == "pytest_ruler" or m.startswith("pytest_ruler."))


# pytest commands, each run with the plugin and with it blocked (-p no:ruler): the baseline.
# pytest >= 9 answers a lone --version before loading any plugin, so -VV (which loads every
# plugin and lists them) is the command that shows what the plugin costs at start-up.
COMMANDS = {
    "version": (["--version"], "empty"),
    "version_verbose": (["-VV"], "empty"),
    "help": (["--help"], "empty"),
    "plain_run": (["-q", "-p", "no:cacheprovider", "test_one.py"], "plain"),
}


def measure(tree: Path, repeats: int) -> dict:
    py = sys.executable
    work = Path(tempfile.mkdtemp(prefix="ruler-entry-bench-"))
    folders = {"empty": work / "empty", "plain": work / "plain"}
    for folder in folders.values():
        folder.mkdir()
    (folders["plain"] / "test_one.py").write_text("def test_one():\n    assert 1 + 1 == 2\n")
    probe = ("import sys, json, pytest; before = set(sys.modules); import pytest_ruler.plugin; "
             "print(json.dumps(sorted(set(sys.modules) - before)))")
    import_us: list[int] = []
    added: list[str] = []
    times: dict[str, list[float]] = {f"{name}{kind}": [] for name in COMMANDS for kind in ("", "_no_plugin")}
    ours: dict[str, list[str]] = {}
    for _ in range(repeats):  # interleaved: a load spike hits every series alike
        _, done = _run([py, "-X", "importtime", "-c", "import pytest; import pytest_ruler.plugin"], tree, folders["empty"])
        import_us.append(_importtime(done.stderr)["pytest_ruler.plugin"])
        _, done = _run([py, "-c", probe], tree, folders["empty"])
        added = json.loads(done.stdout)
        for name, (args, folder) in COMMANDS.items():
            cwd = folders[folder]
            _, done = _run([py, "-X", "importtime", "-m", "pytest", *args], tree, cwd)
            ours[name] = _ours(_importtime(done.stderr))
            times[name].append(_run([py, "-m", "pytest", *args], tree, cwd)[0])
            # a lone --version must stay lone to keep pytest's early exit: blocked by the environment
            blocked = ([py, "-m", "pytest", *args], {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}) if args == ["--version"] else \
                ([py, "-m", "pytest", *args, "-p", "no:ruler"], {})
            times[f"{name}_no_plugin"].append(_run(blocked[0], tree, cwd, blocked[1])[0])
    med = statistics.median
    out: dict = {
        "tree": str(tree),
        "import_plugin_ms": round(med(import_us) / 1000, 2),
        "import_plugin_ms_all": [round(u / 1000, 2) for u in import_us],
        "modules_added_by_import": len(added),
        "our_modules_added_by_import": len(_ours(dict.fromkeys(added, 0))),
        "other_modules_added_by_import": sorted(m for m in added if not m.startswith("pytest_ruler")),
    }
    for name in COMMANDS:
        with_s, without_s = med(times[name]), med(times[f"{name}_no_plugin"])
        out[name] = {
            "command": "pytest " + " ".join(COMMANDS[name][0]),
            "seconds": round(with_s, 4),
            "seconds_no_plugin": round(without_s, 4),
            "ratio": round(with_s / without_s, 3),
            "plugin_extra_ms": round((with_s - without_s) * 1000, 1),
            "our_modules": len(ours[name]),
            "our_module_names": ours[name],
        }
    return out


def archive(ref: str) -> Path:
    """The package as committed at ``ref``, extracted into a temporary folder."""
    data = subprocess.run(["git", "-C", str(ROOT), "archive", ref, "pytest_ruler"], capture_output=True, check=True).stdout
    target = Path(tempfile.mkdtemp(prefix="ruler-entry-before-"))
    with tarfile.open(fileobj=BytesIO(data)) as tar:
        tar.extractall(target, filter="data") if sys.version_info >= (3, 12) else tar.extractall(target)
    return target


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--before", help="a git ref to measure as 'before' (e.g. main)")
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "entry_import.json"))
    ns = ap.parse_args()
    result: dict = {
        "python": platform.python_version(),
        "pytest": subprocess.run([sys.executable, "-c", "import pytest; print(pytest.__version__)"], capture_output=True, text=True).stdout.strip(),
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f} at start",
        "repeats": ns.repeats,
        "commit": subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip(),
    }
    if ns.before:
        sha = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", ns.before], capture_output=True, text=True, check=True).stdout.strip()
        result["before"] = {"ref": f"{ns.before} ({sha})", **measure(archive(ns.before), ns.repeats)}
    result["after"] = {"ref": "working tree", **measure(ROOT, ns.repeats)}
    if ns.before:
        b, a = result["before"], result["after"]
        result["after_vs_before"] = {
            "import_plugin_ratio": round(a["import_plugin_ms"] / b["import_plugin_ms"], 3),
            "our_modules_added_by_import": f"{b['our_modules_added_by_import']} -> {a['our_modules_added_by_import']}",
            **{f"{name}_our_modules": f"{b[name]['our_modules']} -> {a[name]['our_modules']}" for name in COMMANDS},
            **{f"{name}_plugin_extra_ms": f"{b[name]['plugin_extra_ms']} -> {a[name]['plugin_extra_ms']}" for name in COMMANDS},
        }
    result["load_at_end"] = round(os.getloadavg()[0], 1)
    Path(ns.out).parent.mkdir(parents=True, exist_ok=True)
    Path(ns.out).write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({k: v for k, v in result.items() if k in ("after_vs_before",)} or result["after"], indent=2))
    print(f"wrote {ns.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
