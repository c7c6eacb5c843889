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
completions are stored: errors and over-length refusals are recomputed.

Public names: ``PredictionCache``, ``prediction_key``.
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
import time
from array import array
from pathlib import Path
from typing import Any, Iterable, Mapping

from .engines.base import Completion, GenerationRequest, stable_json

__all__ = ["PredictionCache", "prediction_key"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS completions (
    key TEXT PRIMARY KEY,
    text TEXT NOT NULL,
    prompt_tokens INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    finish_reason TEXT NOT NULL,
    seconds REAL NOT NULL,
    created REAL NOT NULL
)
"""


def prediction_key(identity: Mapping[str, Any], request: GenerationRequest) -> str:
    ids = hashlib.sha256(array("q", request.prompt_ids).tobytes()).hexdigest()
    sampling = {"temperature": 0.0, "max_tokens": request.max_tokens, "stop": list(request.stop)}
    payload = stable_json({"v": 1, "engine": identity, "sampling": sampling, "prompt_ids": ids, "n": request.prompt_tokens})
    return hashlib.sha256(payload.encode()).hexdigest()


class PredictionCache:
    """A thread- and process-safe key → Completion store (see the module docstring)."""

    def __init__(self, folder: str | Path):
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.path = self.folder / "predictions.sqlite"
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(self.path, timeout=60, isolation_level=None, check_same_thread=False)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=NORMAL")
        self._conn.execute(_SCHEMA)

    def get_many(self, keys: Iterable[str]) -> dict[str, Completion]:
        keys = list(dict.fromkeys(keys))
        found: dict[str, Completion] = {}
        with self._lock:
            for start in range(0, len(keys), 500):
                chunk = keys[start:start + 500]
                marks = ",".join("?" * len(chunk))
                rows = self._conn.execute(
                    f"SELECT key, text, prompt_tokens, completion_tokens, finish_reason, seconds FROM completions WHERE key IN ({marks})",
                    chunk,
                ).fetchall()
                for key, text, pt, ct, fr, sec in rows:
                    found[key] = Completion(text, pt, ct, fr, sec)
        return found

    def put(self, key: str, completion: Completion) -> None:
        if not completion.ok:
            return
        with self._lock:
            self._conn.execute(
                "INSERT OR REPLACE INTO completions VALUES (?, ?, ?, ?, ?, ?, ?)",
                (key, completion.text, completion.prompt_tokens, completion.completion_tokens, completion.finish_reason, completion.seconds, time.time()),
            )

    def __len__(self) -> int:
        with self._lock:
            return self._conn.execute("SELECT COUNT(*) FROM completions").fetchone()[0]

    def close(self) -> None:
        with self._lock:
            self._conn.close()
