"""The cores follow the work (engines.core_share): a worker takes its finished peers' cores."""

from __future__ import annotations

import os
import subprocess
import sys

from pytest_ruler.engines.core_share import CoreShare, share_dir


def env(tmp_path, worker="gw0", count="2", run="abc123"):
    return {"PYTEST_XDIST_TESTRUNUID": run, "PYTEST_XDIST_WORKER": worker, "PYTEST_XDIST_WORKER_COUNT": count, "TMPDIR": str(tmp_path)}


def test_outside_xdist_there_is_no_share(tmp_path):
    assert share_dir({}) is None
    assert CoreShare.for_worker(2, {}) is None
    assert CoreShare.for_worker(2, env(tmp_path, count="1")) is None  # one worker: nothing to share
    assert share_dir({"PYTEST_XDIST_TESTRUNUID": "../../etc"}) is None  # never a path outside the temp folder


def make(tmp_path, worker, workers=2, cpus=2):
    share = CoreShare(tmp_path / "run", worker, cpus, workers)
    assert share.claim()
    return share


def test_a_worker_keeps_its_share_while_a_peer_works_or_starts(tmp_path):
    a = make(tmp_path, "gw0")
    assert a.threads() == 1  # gw1 has not claimed yet: it counts as working (still loading)
    b = make(tmp_path, "gw1")
    assert a.threads() == 1 and b.threads() == 1


def test_a_finished_peer_hands_over_its_cores(tmp_path):
    a, b = make(tmp_path, "gw0"), make(tmp_path, "gw1")
    b.release()
    assert a.threads() == 2 and a.working() == 1
    a.release()
    assert not (tmp_path / "run").exists()  # the last one out removes the run's folder


def test_four_workers_on_eight_cores(tmp_path):
    shares = [make(tmp_path, f"gw{i}", workers=4, cpus=8) for i in range(4)]
    assert [s.threads() for s in shares] == [2, 2, 2, 2]
    shares[0].release()
    assert shares[1].threads() == 2  # 8 // 3
    shares[2].release()
    assert shares[1].threads() == 4


def test_a_dead_peer_counts_as_finished(tmp_path):
    a = make(tmp_path, "gw0")
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True, check=True)
    (tmp_path / "run" / "gw1").write_text(dead.stdout.strip())
    assert a.threads() == 2


def test_an_unwritable_folder_leaves_the_fixed_share(tmp_path):
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    share = CoreShare(blocked / "run", "gw0", 2, 2)
    assert not share.claim()


def test_for_worker_claims_in_the_runs_folder(tmp_path, monkeypatch):
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    share = CoreShare.for_worker(2, env(tmp_path))
    assert share is not None and (tmp_path / "pytest-ruler-cores" / "abc123" / "gw0").read_text() == str(os.getpid())
    share.release()
