"""What a run costs in time before it runs: the engine's speed remembered from an earlier run.

    an earlier run's ETA (RunClock: seconds per prompt token, measured) ──remember(folder, key, rate)──►
        <prediction cache folder>/throughput.json  {key: {"seconds_per_token", "tokens", "measured"}}
    a new run's start-up line ──recall(folder, key)──► "about 3h10m at 1.2 ms per prompt token
        (measured 2026-12-07 with this engine, processor and process count)", or None: the line then
        says that no time estimate is known yet and that an ETA follows the first item

The key (:func:`speed_key`) is everything that sets the speed and is known before the engine
loads: the engine identity (model, dtype, engine options: the cache key's), the processor's
model name, this process's CPU count and the number of processes running items (``-n``).
A run of another shape measures its own. The rate is the ETA's own measurement (wall-clock
seconds over the prompt tokens the engine read, model load left out), so the estimate is for
the run's token upper bound and errs high by as much as prompts fall short of their length.
The file lives beside the predictions (``--ruler-cache-dir``); ``--ruler-no-cache`` neither
reads nor writes it. A damaged or unwritable file is ignored: an estimate is never worth an error.

Public names: ``speed_key``, ``recall``, ``remember``, ``FILE``.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any, Mapping

__all__ = ["FILE", "recall", "remember", "speed_key"]

FILE = "throughput.json"


def speed_key(identity: Mapping[str, Any], processor: str, cpus: int, processes: int) -> str | None:
    """The key of a run's speed, or None when the engine identity is not fully known before the load."""
    if not identity or identity.get("engine") is None:
        return None
    text = json.dumps({"identity": identity, "processor": processor, "cpus": cpus, "processes": processes},
                      sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def _read(folder: Path) -> dict[str, Any]:
    try:
        data = json.loads((folder / FILE).read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def recall(folder: Path | None, key: str | None) -> dict[str, Any] | None:
    """The remembered speed for ``key``: ``{"seconds_per_token", "tokens", "measured"}``, or None."""
    if folder is None or key is None:
        return None
    entry = _read(folder).get(key)
    if not isinstance(entry, dict):
        return None
    rate = entry.get("seconds_per_token")
    if not isinstance(rate, (int, float)) or isinstance(rate, bool) or not 0 < rate < 3600:
        return None
    return entry


def remember(folder: Path | None, key: str | None, seconds_per_token: float, tokens: int) -> None:
    """Keeps the speed measured for ``key`` (atomically; never raises)."""
    if folder is None or key is None or not 0 < seconds_per_token < 3600 or tokens <= 0:
        return
    try:
        folder.mkdir(parents=True, exist_ok=True)
        data = _read(folder)
        data[key] = {"seconds_per_token": seconds_per_token, "tokens": int(tokens), "measured": time.strftime("%Y-%m-%d")}
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".throughput-", suffix=".tmp")
        with os.fdopen(fd, "w") as f:
            json.dump(data, f, indent=1, sort_keys=True)
        os.replace(tmp, folder / FILE)
    except OSError:
        try:
            os.unlink(tmp)  # type: ignore[possibly-undefined]
        except (OSError, UnboundLocalError, NameError):
            pass
