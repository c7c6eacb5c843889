"""``pytest-ruler cache info|clear``: what the prediction cache holds, and emptying it on purpose.

    pytest-ruler cache info  [--cache-dir DIR]
        the folder (default ``folders.predictions_dir()``: ``RULER_PREDICTIONS_DIR``, else the
        per-user cache folder), its file and size, the predictions in all and per model
        (``--ruler-model`` name and back end), the corrupt files moved aside
    pytest-ruler cache clear [--cache-dir DIR] [--model NAME] [--yes]
        removes every prediction (and the corrupt files moved aside), or those of one model;
        prints what it removed. It never runs by accident: on a terminal it asks first; without
        one (a script, CI) it needs ``--yes``, else it is a usage error that removes nothing.

A run that used ``--ruler-cache-dir`` (or ini ``ruler_cache_dir``) has its cache there: pass the
same folder as ``--cache-dir``. ``pytest --cache-clear`` leaves this cache alone (the run's
header says so). Reading and removing are :func:`run.cache.cache_contents` and
:func:`run.cache.clear_cache`, which never create a cache.

Public names: ``add_parser``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, Callable

from ..errors import RulerUsageError
from ..folders import PREDICTIONS_ENV, predictions_dir
from .cache import CacheContents, cache_contents, clear_cache

__all__ = ["add_parser"]


def _size(n: int) -> str:
    for unit in ("bytes", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return str(n)  # pragma: no cover


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _folder(ns: argparse.Namespace) -> tuple[Path, str]:
    if ns.cache_dir:
        return Path(ns.cache_dir).expanduser(), "--cache-dir"
    return predictions_dir(), f"the default; --cache-dir, {PREDICTIONS_ENV} or a run's --ruler-cache-dir name another"


def _engine_label(model: str | None, backend: str | None) -> str:
    return "written before the cache named its models" if model is None else f"{model} ({backend})"


def info_lines(contents: CacheContents, where: str) -> list[str]:
    lines = [f"prediction cache: {contents.folder} ({where})"]
    if not contents.exists:
        lines.append(f"no predictions yet (no {contents.file.name} there)")
    else:
        lines.append(f"file: {contents.file} ({_size(contents.size)})")
        lines.append(f"{_plural(contents.entries, 'prediction')}" + (":" if contents.by_engine else ""))
        lines += [f"  {_engine_label(m, b)}: {n}" for m, b, n in contents.by_engine]
    if contents.aside:
        lines.append(f"{_plural(len(contents.aside), 'corrupt file')} moved aside (removed by `pytest-ruler cache clear`): "
                     + ", ".join(p.name for p in contents.aside))
    return lines


def _cmd_info(ns: argparse.Namespace) -> int:
    folder, where = _folder(ns)
    for line in info_lines(cache_contents(folder), where):
        print(line)
    return 0


def _confirmed(question: str, ns: argparse.Namespace, stdin: Any, ask: Callable[[str], str] | None) -> bool:
    if ns.yes:
        return True
    if not stdin.isatty():
        raise RulerUsageError("--yes", None, f"not given, and without a terminal nothing can be asked: pass --yes to {question} "
                                             "(nothing was removed)")
    try:
        answer = (ask or input)(f"{question}? [y/N] ")
    except EOFError:  # Ctrl-D: no
        return False
    return answer.strip().lower() in ("y", "yes")


def _cmd_clear(ns: argparse.Namespace, stdin: Any = None, ask: Callable[[str], str] | None = None) -> int:
    folder, _ = _folder(ns)
    contents = cache_contents(folder)
    if ns.model is not None:
        count = sum(n for m, _, n in contents.by_engine if m == ns.model)
        if not count:
            known = ", ".join(contents.models) or "none"
            raise RulerUsageError("--model", ns.model, f"the cache in {folder} holds no predictions of it (its models: {known}); "
                                                       "name one of those, or clear all without --model")
        what = f"remove the {_plural(count, 'prediction')} of {ns.model} from {contents.file}"
    elif not contents.exists and not contents.aside:
        print(f"nothing to clear: no prediction cache in {folder}")
        return 0
    else:
        what = f"remove all {_plural(contents.entries, 'prediction')} ({_size(contents.size)}) from {contents.file}"
    if not _confirmed(what, ns, sys.stdin if stdin is None else stdin, ask):
        print("nothing removed")
        return 0
    done = clear_cache(folder, ns.model)
    of = f" of {ns.model}" if ns.model is not None else ""
    print(f"removed {_plural(done.removed, 'prediction')}{of} from {contents.file} (freed {_size(done.freed)}; "
          f"{_plural(done.kept, 'prediction')} kept)")
    for path in done.files:
        print(f"removed {path}")
    return 0


def add_parser(sub: Any) -> None:
    """The ``cache`` sub-command and its ``info`` and ``clear`` on ``pytest-ruler``'s sub-parsers."""
    c = sub.add_parser("cache", help="show or clear the prediction cache (pytest --cache-clear keeps it)")
    actions = c.add_subparsers(dest="cache_command", required=True)
    dir_help = f"the cache folder (default: {PREDICTIONS_ENV}, else the per-user cache folder; a run's --ruler-cache-dir)"
    i = actions.add_parser("info", help="the cache folder, its size and its predictions per model")
    i.add_argument("--cache-dir", metavar="DIR", help=dir_help)
    i.set_defaults(func=_cmd_info)
    cl = actions.add_parser("clear", help="remove every prediction, or one model's (--model); asks first, or needs --yes")
    cl.add_argument("--cache-dir", metavar="DIR", help=dir_help)
    cl.add_argument("--model", metavar="NAME", help="remove only this --ruler-model's predictions (see `pytest-ruler cache info`)")
    cl.add_argument("--yes", action="store_true", help="do not ask (needed without a terminal: scripts, CI)")
    cl.set_defaults(func=_cmd_clear)
