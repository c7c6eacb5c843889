"""The prediction cache: finished completions survive reruns, crashes, kills and ``pytest --cache-clear``.

One sqlite file (``predictions.sqlite``) under the cache dir: ``--ruler-cache-dir`` (ini
``ruler_cache_dir``), else the per-user folder :func:`pytest_ruler.folders.predictions_dir`
names (``RULER_PREDICTIONS_DIR``, else ``~/.cache/pytest-ruler/predictions`` or the platform's
cache folder), outside pytest's ``.pytest_cache``. The key of a prediction is a sha256 over
everything that changes an answer:

    engine identity (``engines.registry.engine_identity``: the back end's name, the engine
    class, and what the engine says of itself — model path + file hash, or hub id + revision;
    its options; dtype/device) + sampling parameters + the prompt token ids (which already
    include the chat template).

Secrets are never part of an identity, so never part of the file. Each
completion is committed as soon as it finishes (WAL mode, busy timeout), so
several xdist workers can write at once and a killed run keeps every finished
sample; a rerun of the same command makes zero engine calls. Only successful
completions are stored: an answer that came with an error (a malformed answer,
a failed request), an answer our code cut (``Completion.cut``) and over-length refusals are recomputed. A thinking model's reasoning, where the
engine got it apart from the answer, is kept with it (column ``reasoning``, added to an older file).
Each completion names the engine that wrote it (column ``engine``: a row of table ``engines``,
written by :meth:`PredictionCache.tag`: the ``--ruler-model`` name, the back end and the
identity, secrets scrubbed), so one model's answers can be listed and cleared; rows of an older
file have none.

A corrupt file is moved aside and replaced (a warning names both files); a
folder that cannot hold the database means a run without a cache, with one
warning. Neither fails an item.

``pytest-ruler cache info|clear`` (:mod:`pytest_ruler.run.cache_command`) read and empty a
cache folder through :func:`cache_contents` and :func:`clear_cache`, which never create one.

Public names: ``CacheContents``, ``CacheUnavailable``, ``Cleared``, ``PredictionCache``, ``cache_contents``,
``clear_cache``, ``prediction_key``.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import threading
import time
from array import array
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping

from ..engines.base import Completion, GenerationRequest, stable_json
from ..errors import RulerUsageError

__all__ = ["CacheContents", "CacheUnavailable", "Cleared", "PredictionCache", "cache_contents", "clear_cache", "prediction_key"]

FILE = "predictions.sqlite"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS completions (
    key TEXT PRIMARY KEY,
    text TEXT NOT NULL,
    prompt_tokens INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    finish_reason TEXT NOT NULL,
    seconds REAL NOT NULL,
    created REAL NOT NULL,
    reasoning TEXT,
    engine TEXT
)
"""
_ENGINES = """
CREATE TABLE IF NOT EXISTS engines (
    id TEXT PRIMARY KEY,
    model TEXT NOT NULL,
    backend TEXT NOT NULL,
    identity TEXT NOT NULL,
    created REAL NOT NULL
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
        self.path = self.folder / FILE
        self.notices: list[str] = []
        self.on_fault: Any = None
        self._writable = True
        self._tagged: set[str] = set()
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
            conn.execute(_ENGINES)
            columns = {row[1] for row in conn.execute("PRAGMA table_info(completions)")}
            if "reasoning" not in columns:  # a cache written before thinking models: its rows have none
                conn.execute("ALTER TABLE completions ADD COLUMN reasoning TEXT")
            if "engine" not in columns:  # written before the cache named its engines: its rows name none
                conn.execute("ALTER TABLE completions ADD COLUMN engine TEXT")
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

    def tag(self, model: str, backend: str, identity: Mapping[str, Any]) -> str | None:
        """The id under which this engine's completions are stored (``put(..., engine=)``): its row of
        table ``engines`` (the ``--ruler-model`` name, the back end, the identity with secrets
        scrubbed) is written once; None when it cannot be written (the completions are still kept)."""
        ident = hashlib.sha256(stable_json(identity).encode()).hexdigest()[:16]
        if ident in self._tagged:
            return ident
        from ..results.identity import scrubbed

        try:
            with self._lock:
                self._conn.execute("INSERT OR IGNORE INTO engines (id, model, backend, identity, created) VALUES (?, ?, ?, ?, ?)",
                                   (ident, model, backend, stable_json(scrubbed(identity)), time.time()))
        except sqlite3.Error:
            return None
        self._tagged.add(ident)
        return ident

    def put(self, key: str, completion: Completion, engine: str | None = None) -> None:
        """Keep a successful completion under ``key``; ``engine``: its engine's id (:meth:`tag`)."""
        if not completion.ok or completion.error is not None or completion.cut is not None or not self._writable:
            return
        try:
            with self._lock:
                self._conn.execute(
                    "INSERT OR REPLACE INTO completions (key, text, prompt_tokens, completion_tokens, finish_reason, seconds, created, reasoning, engine)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (key, completion.text, completion.prompt_tokens, completion.completion_tokens, completion.finish_reason,
                     completion.seconds, time.time(), completion.reasoning, engine),
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


# ---- what a cache folder holds, and emptying it (``pytest-ruler cache``) -------------------


@dataclass(frozen=True)
class CacheContents:
    """What a prediction cache folder holds: its file (``exists`` False: none yet), the bytes of
    the database with its -wal/-shm files, the completions in all and per engine
    (``(model, backend, count)``, model ``None`` for rows that name no engine: an older file),
    and the corrupt files moved aside."""

    folder: Path
    file: Path
    exists: bool
    size: int = 0
    entries: int = 0
    by_engine: tuple[tuple[str | None, str | None, int], ...] = ()
    aside: tuple[Path, ...] = ()

    @property
    def models(self) -> list[str]:
        return sorted({m for m, _, _ in self.by_engine if m is not None})


def _size(path: Path) -> int:
    return sum(p.stat().st_size for p in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")) if p.is_file())


def _aside(folder: Path) -> tuple[Path, ...]:
    return tuple(sorted(p for p in folder.glob(f"{FILE}.corrupt-*") if p.is_file())) if folder.is_dir() else ()


def _unreadable(path: Path, exc: Exception) -> RulerUsageError:
    return RulerUsageError("--cache-dir", str(path.parent), f"the prediction cache {path} cannot be read ({exc}); "
                                                             "`pytest-ruler cache clear` without --model removes it")


def _existing(path: Path) -> sqlite3.Connection:
    """The cache file opened for reading and writing, never created (``mode=rw``)."""
    conn = sqlite3.connect(path.resolve().as_uri() + "?mode=rw", uri=True, timeout=60, isolation_level=None)
    conn.execute("PRAGMA busy_timeout=60000")
    return conn


def _counts(conn: sqlite3.Connection) -> tuple[int, list[tuple[str | None, str | None, int]]]:
    total = conn.execute("SELECT COUNT(*) FROM completions").fetchone()[0]
    columns = {row[1] for row in conn.execute("PRAGMA table_info(completions)")}
    tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if "engine" not in columns or "engines" not in tables:
        return total, ([(None, None, total)] if total else [])
    rows = conn.execute("SELECT e.model, e.backend, COUNT(*) FROM completions c LEFT JOIN engines e ON c.engine = e.id "
                        "GROUP BY e.model, e.backend ORDER BY e.model, e.backend").fetchall()
    return total, [(m, b, n) for m, b, n in rows]


def cache_contents(folder: str | Path) -> CacheContents:
    """What ``folder`` holds (see :class:`CacheContents`); creates nothing. An unreadable file is a
    ``RulerUsageError`` naming it and the way to remove it."""
    folder = Path(folder)
    path = folder / FILE
    if not path.is_file():
        return CacheContents(folder, path, False, aside=_aside(folder))
    try:
        conn = _existing(path)
        try:
            total, by_engine = _counts(conn)
        finally:
            conn.close()
    except sqlite3.Error as exc:
        raise _unreadable(path, exc) from None
    return CacheContents(folder, path, True, _size(path), total, tuple(by_engine), _aside(folder))


@dataclass(frozen=True)
class Cleared:
    """What :func:`clear_cache` removed: completions, the bytes the files shrank by, files deleted."""

    removed: int
    kept: int
    freed: int
    files: tuple[Path, ...] = ()


def clear_cache(folder: str | Path, model: str | None = None) -> Cleared:
    """Remove the completions of ``folder``'s cache: all of them (and the corrupt files moved aside),
    or those ``model`` (a ``--ruler-model`` name) wrote. Rows are deleted inside the database, so a
    run using the cache meanwhile keeps a sound file; an unreadable file is deleted (``model``
    None) or refused (a ``RulerUsageError``)."""
    folder = Path(folder)
    path = folder / FILE
    files: list[Path] = []
    if model is None:
        for p in _aside(folder):
            p.unlink()
            files.append(p)
    if not path.is_file():
        return Cleared(0, 0, 0, tuple(files))
    before = _size(path)
    try:
        conn = _existing(path)
        try:
            removed, kept = _delete(conn, model)
        finally:
            conn.close()
    except sqlite3.DatabaseError as exc:
        if model is not None or not _is_corrupt(exc):
            raise _unreadable(path, exc) from None
        for p in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
            if p.exists():
                p.unlink()
                files.append(p)
        return Cleared(0, 0, before, tuple(files))
    return Cleared(removed, kept, max(0, before - _size(path)), tuple(files))


def _delete(conn: sqlite3.Connection, model: str | None) -> tuple[int, int]:
    rows = conn.execute("PRAGMA quick_check").fetchall()
    if rows != [("ok",)]:
        raise sqlite3.DatabaseError("database disk image is malformed")
    total, by_engine = _counts(conn)
    if model is None:
        conn.execute("DELETE FROM completions")
        if _has_engines(conn):
            conn.execute("DELETE FROM engines")
        removed = total
    else:
        removed = sum(n for m, _, n in by_engine if m == model)
        if removed:
            conn.execute("DELETE FROM completions WHERE engine IN (SELECT id FROM engines WHERE model = ?)", (model,))
            conn.execute("DELETE FROM engines WHERE model = ?", (model,))
    if removed:
        try:  # give the space back; a run using the cache right now keeps it busy: the rows are gone either way
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            conn.execute("VACUUM")
        except sqlite3.OperationalError:
            pass
    return removed, total - removed


def _has_engines(conn: sqlite3.Connection) -> bool:
    return conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'engines'").fetchone() is not None
