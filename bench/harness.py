"""The benchmarks' shared harness: run one arm (a command, usually pytest with the plugin) in a
fresh process and read its report; withhold a ratio between arms that the machine's load can explain.

Data flow::

    pytest_command(args, report)  ──►  run_arm(name, command, cwd=, env=, unset=, timeout=, report=)
        one fresh process; wall time; 1-minute load average before and after; exit status;
        the output kept in a log; the JSON report read
    ──►  Arm(name, rc, wall_s, load_before, load_after, report, ...)   .items .scores() .samples_used .summary
    ──►  ratio(numerator, denominator, arms, cores=, tolerance=)  ──►  Ratio(value, reason)
         value None and reason naming the loads when the load can explain the ratio

The load rule (``load_reason``): a ratio between arms is written as null, with the reason, when

- an arm started with the 1-minute load average above the cores this process may use (other
  work had the machine before the arm began), or
- the arms' start loads differ by more than ``tolerance`` (the arms did not find the same
  machine: other work, not the arms, would be measured).

The load at an arm's end is recorded and named, but decides nothing: it includes the arm's own
processes (an arm of N busy threads lifts it toward N by itself). One arm's load lingers into the
next arm's start (the 1-minute average decays over about a minute): ``--cooldown`` waits before
each arm. The processor (``pytest_ruler.engines.processor``) goes with the figures (``machine``).

Scripts run as ``python bench/NAME.py`` put the repository root on ``sys.path`` and import
``bench.harness``; an arm's process gets the root first on ``PYTHONPATH`` (it measures this
checkout) unless the caller's ``env`` sets ``PYTHONPATH`` itself.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import subprocess
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
# every arm's pytest: quiet, no pytest cache between arms, no hypothesis plugin start-up
PYTEST_FLAGS = ("-q", "-p", "no:cacheprovider", "-p", "no:hypothesispytest")
DEFAULT_TOLERANCE = 1.0  # load-average points two arms' start loads may differ by and keep a ratio
OK_CODES = (0, 1)  # pytest's 1: some items failed, a result; 2 and above: a usage error or a crash

__all__ = ["Arm", "ArmFailed", "DEFAULT_TOLERANCE", "PYTEST_FLAGS", "ROOT", "Ratio", "add_load_options", "cpus",
           "load_reason", "machine", "pytest_command", "ratio", "run_arm"]


class ArmFailed(SystemExit):
    """An arm that did not give a result (exit status, timeout, or a missing output). A
    ``SystemExit``: a bench script stops with the message, as it did before the harness."""


def cpus() -> int:
    """The cores this process may run on (its affinity where the system says, else every core)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def machine() -> dict[str, Any]:
    """What goes with a benchmark's figures: Python's version, the cores, the processor (model, flags)."""
    from pytest_ruler.engines.processor import this_processor

    return {"python": platform.python_version(), "cpus": cpus(), "processor": this_processor().summary()}


def pytest_command(args: Iterable[str], report: Path | str | None = None, *, launcher: Sequence[str] | None = None) -> list[str]:
    """A pytest command line with the plugin's ``args`` (and ``--ruler-report`` when ``report``).
    ``launcher`` runs pytest under another program that takes ``pytest ARGS...`` (bench/vllm_timing.py);
    by default ``python -m pytest`` with this interpreter."""
    head = [*(launcher if launcher is not None else (sys.executable, "-m")), "pytest"]
    return [*head, *PYTEST_FLAGS, *args, *([f"--ruler-report={report}"] if report is not None else [])]


@dataclass
class Arm:
    """One finished run of an arm: what a bench compares."""

    name: str
    command: list[str]
    rc: int | None  # None: killed at the timeout
    wall_s: float
    load_before: float
    load_after: float
    output: str = field(repr=False)
    log: Path | None = None
    report: dict[str, Any] | None = field(default=None, repr=False)
    processor: dict[str, Any] | None = None

    @property
    def items(self) -> list[dict[str, Any]]:
        return list((self.report or {}).get("items", []))

    @property
    def summary(self) -> dict[str, Any]:
        return dict((self.report or {}).get("summary", {}))

    @property
    def samples_used(self) -> int:
        """Samples generated and scored over every item (a sequential item may stop early)."""
        return sum(int(i.get("samples_used", len(i.get("sample_scores", [])))) for i in self.items)

    def scores(self, key: str = "{task}@{length}/{seed}") -> dict[str, float]:
        """Each item's score under ``key`` formatted with the item's fields."""
        return {key.format(**i): i["score"] for i in self.items}

    def predictions(self) -> dict[tuple, str]:
        """Every sample's prediction by (task, length, seed, sample index)."""
        return {(i["task"], i["length"], i["seed"], p["index"]): p["prediction"] for i in self.items for p in i.get("predictions", [])}

    def record(self, **extra: Any) -> dict[str, Any]:
        """The run as a bench writes it (JSON)."""
        return {"arm": self.name, "wall_s": round(self.wall_s, 2), "load_before": round(self.load_before, 2),
                "load_after": round(self.load_after, 2), "exit": self.rc, **extra}


def _environment(env: Mapping[str, str] | None, unset: Iterable[str]) -> dict[str, str]:
    merged = dict(os.environ)
    if not (env and "PYTHONPATH" in env):
        merged["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    merged.update(env or {})
    for name in unset:
        merged.pop(name, None)
    return merged


def run_arm(name: str, command: Sequence[str], *, cwd: Path | str, env: Mapping[str, str] | None = None,
            unset: Iterable[str] = (), timeout: float | None = None, report: Path | str | None = None,
            require: Iterable[Path | str] = (), log: Path | str | None = None, ok_codes: Iterable[int] | None = OK_CODES,
            cooldown: float = 0.0) -> Arm:
    """Run ``command`` as the arm ``name`` in a fresh process in ``cwd``; wait ``cooldown`` seconds first.

    ``env``: variables set over this process's environment; ``unset``: variables removed (e.g.
    ``OMP_NUM_THREADS``). ``timeout``: seconds before the process is killed. ``report``: the JSON
    report the arm writes (removed first, read after). ``require``: other files it must write.
    The output goes to ``log`` (default ``cwd/NAME.log``). Raises ``ArmFailed`` on a timeout, an
    exit status outside ``ok_codes`` (None: any) or a missing report or required file.
    """
    cwd = Path(cwd)
    if timeout is not None and timeout <= 0:
        raise ValueError(f"run_arm(timeout={timeout!r}) for arm {name!r}: a timeout is a positive number of seconds, or None for none")
    report_path = Path(cwd, report) if report is not None else None
    if report_path is not None:
        report_path.unlink(missing_ok=True)
    log_path = Path(cwd, log) if log is not None else cwd / f"{name}.log"
    if cooldown > 0:
        time.sleep(cooldown)
    before = os.getloadavg()[0]
    start = time.monotonic()
    rc, output = _run(list(command), cwd, _environment(env, unset), timeout)
    wall = time.monotonic() - start
    after = os.getloadavg()[0]
    log_path.write_text(output)
    from pytest_ruler.engines.processor import this_processor

    arm = Arm(name, list(command), rc, wall, before, after, output, log_path, None, this_processor().summary())
    problem = _problem(arm, timeout, ok_codes, report_path, [Path(cwd, p) for p in require])
    if problem:
        raise ArmFailed(f"arm {name}: {problem}; log {log_path}:\n{output[-3000:]}")
    if report_path is not None:
        arm.report = json.loads(report_path.read_text())
    return arm


def _run(command: list[str], cwd: Path, env: dict[str, str], timeout: float | None) -> tuple[int | None, str]:
    """The exit status (None: killed at the timeout) and the output, stderr after stdout. The arm runs
    in a session of its own, so a timeout (or an interrupted bench) ends its workers too."""
    proc = subprocess.Popen(command, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
        return proc.returncode, out + err
    except subprocess.TimeoutExpired:
        _kill(proc)
        out, err = proc.communicate()
        return None, out + err
    except BaseException:
        _kill(proc)
        raise


def _kill(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        proc.kill()


def _problem(arm: Arm, timeout: float | None, ok_codes: Iterable[int] | None, report: Path | None, require: list[Path]) -> str:
    if arm.rc is None:
        return f"killed after the timeout of {timeout} s (run_arm(timeout=...); raise it or make the arm smaller)"
    if ok_codes is not None and arm.rc not in tuple(ok_codes):
        return f"exit {arm.rc} (a result exits {' or '.join(map(str, ok_codes))})"
    missing = [str(p) for p in ([report] if report is not None else []) + require if not p.is_file()]
    return f"exit {arm.rc}, it wrote no {', '.join(missing)}" if missing else ""


@dataclass(frozen=True)
class Ratio:
    """A ratio between arms, or None with the reason the machine's load could explain it."""

    value: float | None
    reason: str | None = None


def _loads(arm: Arm | Mapping[str, Any]) -> tuple[str, float, float]:
    if isinstance(arm, Arm):
        return arm.name, arm.load_before, arm.load_after
    return str(arm.get("arm", arm.get("name", "?"))), float(arm["load_before"]), float(arm["load_after"])


def load_reason(arms: Sequence[Arm | Mapping[str, Any]], *, cores: int | None = None,
                tolerance: float = DEFAULT_TOLERANCE) -> str | None:
    """Why the machine's load could explain a ratio between ``arms`` (runs or their records with
    ``load_before``/``load_after``), or None when it could not (pure but for the default ``cores``)."""
    if not arms:
        raise ValueError("load_reason(arms=[]): a ratio compares runs; pass the runs of both arms")
    if tolerance < 0:
        raise ValueError(f"load_reason(tolerance={tolerance!r}): a tolerance is a load difference >= 0, e.g. {DEFAULT_TOLERANCE}")
    cores = cpus() if cores is None else cores
    loads = [_loads(a) for a in arms]
    starts = [b for _, b, _ in loads]
    why = []
    busy = [f"{n} {b:.2f}" for n, b, _ in loads if b > cores]
    if busy:
        why.append(f"the 1-minute load average was above the {cores} cores when an arm started ({', '.join(busy)})")
    spread = max(starts) - min(starts)
    if spread > tolerance:
        why.append(f"the arms' start loads differ by {spread:.2f} ({min(starts):.2f} to {max(starts):.2f}), "
                   f"more than the tolerance {tolerance}")
    if not why:
        return None
    named = ", ".join(f"{n} {b:.2f} -> {a:.2f}" for n, b, a in loads)
    return f"{'; '.join(why)}: other work on the machine, not the arms, could explain the ratio (1-minute load at start -> end: {named})"


def ratio(numerator: float, denominator: float, arms: Sequence[Arm | Mapping[str, Any]], *, cores: int | None = None,
          tolerance: float = DEFAULT_TOLERANCE, digits: int = 3) -> Ratio:
    """``numerator / denominator`` (rounded to ``digits``), or null with ``load_reason``'s reason."""
    if not denominator:
        raise ValueError(f"ratio(denominator={denominator!r}): the baseline arm's figure must be non-zero")
    why = load_reason(arms, cores=cores, tolerance=tolerance)
    return Ratio(None, why) if why else Ratio(round(numerator / denominator, digits))


def add_load_options(ap: argparse.ArgumentParser, *, cooldown: float = 0.0) -> None:
    """``--cooldown`` (seconds before each arm) and ``--load-tolerance`` (the ratio rule's tolerance)."""
    ap.add_argument("--cooldown", type=float, default=cooldown, help="seconds to wait before each arm (the last arm's load decays)")
    ap.add_argument("--load-tolerance", type=float, default=DEFAULT_TOLERANCE,
                    help="largest difference of the arms' start loads (1-minute average) with a ratio; beyond it the ratio is null")
