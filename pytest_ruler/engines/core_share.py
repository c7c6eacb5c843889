"""The cores follow the work: an xdist worker whose peers have finished takes their cores.

Each xdist worker of a CPU run starts with its share of the cores (:func:`.gpus.worker_threads`:
``cpus // workers``). At the end of a run the workers do not finish together: the last items
run on one worker while the others have exited, and that worker would keep its share (one
core of two) while the rest of the machine sits idle. A run of 6 items on 2 cores measured
this tail: ``-n 2`` took 1.28x the wall time of ``-n 0`` on a Xeon (``bench/results/xdist_threads.json``);
with the sharing, on an EPYC, 0.94x (``bench/results/xdist_threads_epyc.json``; a fixed share: 0.93x).

    worker starts its engine ──CoreShare.claim()──► <tmp>/pytest-ruler-cores/<testrunuid>/<worker> (its pid)
    before each batch ─────────CoreShare.threads()─► cpus // (workers not finished), at least 1
    engine closes / process exits ── release() ──► the claim says "done"; a dead pid's claim counts as done

A worker that has not started yet counts as working (``PYTEST_XDIST_WORKER_COUNT`` minus the
finished ones), so the first worker up never takes the cores of one still loading.

Only a worker whose thread count the plugin chose takes part (the user's ``threads`` option or
``OMP_NUM_THREADS``/``MKL_NUM_THREADS`` stand, as in :func:`.gpus.worker_threads`), and only
under xdist (``PYTEST_XDIST_TESTRUNUID``: one folder per run, so two runs on one machine
never count each other). A claim that cannot be written (a read-only temp folder) leaves the
worker at its fixed share: nothing fails.

Public names: ``CoreShare``, ``share_dir``.
"""

from __future__ import annotations

import atexit
import os
import re
import tempfile
from pathlib import Path
from typing import Mapping

__all__ = ["CoreShare", "share_dir"]


def share_dir(env: Mapping[str, str] | None = None) -> Path | None:
    """The folder of this xdist run's claims, or None outside xdist."""
    env = os.environ if env is None else env
    run = env.get("PYTEST_XDIST_TESTRUNUID") or ""
    if not re.fullmatch(r"[0-9A-Za-z_-]{1,64}", run):
        return None
    return Path(tempfile.gettempdir()) / "pytest-ruler-cores" / run


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process of that number: alive
        return True
    except OSError:
        return False
    return True


class CoreShare:
    """One worker's claim on the run's cores (see the module docstring)."""

    def __init__(self, folder: Path, worker: str, cpus: int, workers: int):
        self.folder = folder
        self.worker = worker
        self.cpus = max(1, cpus)
        self.workers = max(1, workers)
        self._claim: Path | None = None

    @classmethod
    def for_worker(cls, cpus: int, env: Mapping[str, str] | None = None) -> "CoreShare | None":
        """This xdist worker's share, claimed; None outside xdist or when the claim cannot be written."""
        env = os.environ if env is None else env
        folder, worker = share_dir(env), env.get("PYTEST_XDIST_WORKER") or ""
        try:
            workers = int(env.get("PYTEST_XDIST_WORKER_COUNT") or 0)
        except ValueError:
            workers = 0
        if folder is None or workers < 2 or not re.fullmatch(r"gw\d+", worker):
            return None
        share = cls(folder, worker, cpus, workers)
        return share if share.claim() else None

    def claim(self) -> bool:
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            path = self.folder / self.worker
            path.write_text(str(os.getpid()))
        except OSError:
            return False
        self._claim = path
        atexit.register(self.release)
        return True

    def finished(self) -> int:
        """The workers of this run that are done (their claim says so, or their process is gone)."""
        count = 0
        try:
            entries = list(self.folder.iterdir())
        except OSError:
            return 0
        for path in entries:
            try:
                text = path.read_text().strip()
            except OSError:
                continue
            if text == "done" or (text.isdigit() and not _alive(int(text))):
                count += 1
        return count

    def working(self) -> int:
        """The workers still working or still starting (this one included)."""
        return max(1, self.workers - self.finished())

    def threads(self) -> int:
        """Torch threads for this worker now: the cores divided among the workers still working."""
        return max(1, self.cpus // self.working())

    def release(self) -> None:
        """This worker is done: its claim says so; the last one out removes the run's folder."""
        path, self._claim = self._claim, None
        if path is None:
            return
        try:
            path.write_text("done")
        except OSError:
            return
        if self.finished() >= self.workers:
            for entry in list(self.folder.glob("gw*")):
                try:
                    entry.unlink()
                except OSError:
                    pass
            try:
                self.folder.rmdir()
            except OSError:
                pass
