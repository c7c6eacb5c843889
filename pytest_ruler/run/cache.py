"""The prediction cache: finished completions survive reruns, crashes and kills.

One sqlite file (``predictions.sqlite``) under the cache dir — by default
pytest's ``.pytest_cache/d/ruler``, or ``--ruler-cache-dir``. The key of a
prediction is a sha256 over everything that changes an answer:

    engine identity (model path + file hash, or hub id + revision; back end and
    its options; dtype/device) + sampling parameters + the prompt token ids
    (which already include the chat template).

Secrets are never part of an identity, so never part of the file. Each
completion is committed as soon as it finishes (WAL mode, busy timeout), so
several xdist workers can write at once and a killed run keeps every finished
sample; a rerun of the same command makes zero engine calls. Only successful
completions are stored: an answer that came with an error (a malformed answer,
a failed request) and over-length refusals are recomputed. A thinking model's reasoning, where the
engine got it apart from the answer, is kept with it (column ``reasoning``, added to an older file).

A corrupt file is moved aside and replaced (a warning names both files); a
folder that cannot hold the database means a run without a cache, with one
warning. Neither fails an item.

Public names: ``PredictionCache``, ``prediction_key``.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import threading
import time
from array import array
from pathlib import Path
from typing import Any, Iterable, Mapping

from ..engines.base import Completion, GenerationRequest, stable_json

__all__ = ["CacheUnavailable", "PredictionCache", "prediction_key"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS completions (
    key TEXT PRIMARY KEY,
    text TEXT NOT NULL,
    prompt_tokens INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    finish_reason TEXT NOT NULL,
    seconds REAL NOT NULL,
    created REAL NOT NULL,
    reasoning TEXT
)
"""


def prediction_key(identity: Mapping[str, Any], request: GenerationRequest) -> str:
    ids = hashlib.sha256(array("q", request.prompt_ids).tobytes()).hexdigest()
    sampling = {"temperature": 0.0, "max_tokens": request.max_tokens, "stop": list(request.stop)}
    payload = stable_json({"v": 1, "engine": identity, "sampling": sampling, "prompt_ids": ids, "n": request.prompt_tokens})
    return hashlib.sha256(payload.encode()).hexdigest()


class CacheUnavailable(RuntimeError):
    """The cache folder cannot hold a database (not writable, not a folder): run without a cache."""


_CORRUPT = ("file is not a database", "database disk image is malformed", "malformed", "not a database")


def _is_corrupt(exc: sqlite3.DatabaseError) -> bool:
    return not isinstance(exc, sqlite3.OperationalError) or any(m in str(exc) for m in _CORRUPT)


class PredictionCache:
    """A thread- and process-safe key → Completion store (see the module docstring).

    Opening checks the database (``PRAGMA quick_check``). A corrupt file is moved
    aside as ``predictions.sqlite.corrupt-<time>`` (with its -wal/-shm) and a fresh
    one is started; ``notices`` says so, naming both files. A folder that cannot
    hold a database raises :class:`CacheUnavailable`. A write that fails mid-run
    turns writing off with one call of ``on_fault(message)``; reads keep working.
    """

    def __init__(self, folder: str | Path):
        self.folder = Path(folder)
        self.path = self.folder / "predictions.sqlite"
        self.notices: list[str] = []
        self.on_fault: Any = None
        self._writable = True
        self._lock = threading.Lock()
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise CacheUnavailable(f"the cache folder {self.folder} cannot be created ({exc.strerror or exc}); running without the prediction cache (pass a writable --ruler-cache-dir, or --ruler-no-cache)") from None
        try:
            self._conn = self._open()
        except sqlite3.DatabaseError as exc:
            if not _is_corrupt(exc):
                raise CacheUnavailable(f"the cache {self.path} cannot be opened for writing ({exc}); running without the prediction cache (pass a writable --ruler-cache-dir, or --ruler-no-cache)") from None
            aside = self._move_aside()
            self.notices.append(f"the prediction cache {self.path} was corrupt ({exc}); moved it to {aside} and started a fresh cache (finished predictions in it are not reused)")
            try:
                self._conn = self._open()
            except sqlite3.DatabaseError as again:
                raise CacheUnavailable(f"the cache {self.path} cannot be recreated ({again}); running without the prediction cache") from None

    def _open(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, timeout=60, isolation_level=None, check_same_thread=False)
        try:
            rows = conn.execute("PRAGMA quick_check").fetchall()
            if rows != [("ok",)]:
                raise sqlite3.DatabaseError("database disk image is malformed: " + "; ".join(str(r[0]) for r in rows[:3]))
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute(_SCHEMA)
            columns = {row[1] for row in conn.execute("PRAGMA table_info(completions)")}
            if "reasoning" not in columns:  # a cache written before thinking models: its rows have none
                conn.execute("ALTER TABLE completions ADD COLUMN reasoning TEXT")
        except BaseException:
            conn.close()
            raise
        return conn

    def _move_aside(self) -> Path:
        stamp = time.strftime("%Y%m%d-%H%M%S")
        aside = self.path.with_name(f"{self.path.name}.corrupt-{stamp}")
        n = 1
        while aside.exists():
            n += 1
            aside = self.path.with_name(f"{self.path.name}.corrupt-{stamp}-{n}")
        os.replace(self.path, aside)
        for suffix in ("-wal", "-shm"):
            side = self.path.with_name(self.path.name + suffix)
            if side.exists():
                os.replace(side, aside.with_name(aside.name + suffix))
        return aside

    def get_many(self, keys: Iterable[str]) -> dict[str, Completion]:
        try:
            return self._get_many(keys)
        except sqlite3.Error as exc:  # damaged after opening: recompute rather than fail the item
            if self.on_fault is not None:
                self.on_fault(f"cannot read the prediction cache {self.path} ({exc}); recomputing")
            return {}

    def _get_many(self, keys: Iterable[str]) -> dict[str, Completion]:
        keys = list(dict.fromkeys(keys))
        found: dict[str, Completion] = {}
        with self._lock:
            for start in range(0, len(keys), 500):
                chunk = keys[start:start + 500]
                marks = ",".join("?" * len(chunk))
                rows = self._conn.execute(
                    f"SELECT key, text, prompt_tokens, completion_tokens, finish_reason, seconds, reasoning FROM completions WHERE key IN ({marks})",
                    chunk,
                ).fetchall()
                for key, text, pt, ct, fr, sec, reasoning in rows:
                    found[key] = Completion(text, pt, ct, fr, sec, reasoning=reasoning)
        return found

    def put(self, key: str, completion: Completion) -> None:
        if not completion.ok or completion.error is not None or not self._writable:
            return
        try:
            with self._lock:
                self._conn.execute(
                    "INSERT OR REPLACE INTO completions (key, text, prompt_tokens, completion_tokens, finish_reason, seconds, created, reasoning)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (key, completion.text, completion.prompt_tokens, completion.completion_tokens, completion.finish_reason,
                     completion.seconds, time.time(), completion.reasoning),
                )
        except sqlite3.Error as exc:  # a full disk, a file made read-only: the run goes on without storing
            self._writable = False
            if self.on_fault is not None:
                self.on_fault(f"cannot write the prediction cache {self.path} ({exc}); this run's further predictions are not cached")

    def __len__(self) -> int:
        with self._lock:
            return self._conn.execute("SELECT COUNT(*) FROM completions").fetchone()[0]

    def close(self) -> None:
        with self._lock:
            self._conn.close()
