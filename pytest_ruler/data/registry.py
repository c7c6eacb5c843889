"""Every kind of data a task may read, in one registry: its option, how to get it, its reader.

A task family says which kinds it needs (``Family.data_needs(args)``, ``tasks.family``); this
registry says, for each kind, what the run, the start-up check and the CLI need to know::

    kind name ──► DataKind(option, download, file, reader, expected, shape, fallback)
        option    the command-line option that points at it (``--ruler-squad``)
        download  the command that fetches it (``pytest-ruler download squad``), or None
        file      what that download writes in the data folder (used when no path is given)
        reader    path ──► the parsed data; raises DataProblem("what is wrong")
        fallback  what is read when no path is given at all (essays: the offline corpus), or None

    read_data(kind, path) ──► stat (path, size, mtime of each file) ──► one in-process cache
        ──► kind.reader(path) ──► a DataProblem or an OSError becomes one RulerDataError naming
            the option, the path, what is wrong, what was expected and how to get it

A plugin or conftest adds a kind with ``register_data_kind(DataKind(...))`` (from a conftest:
``registry.data(kind)`` in a ``pytest_ruler_register`` hook); a kind whose option is not one of
pytest-ruler's own is read from that pytest option (the conftest declares it).

Public names: ``DataKind``, ``DataProblem``, ``register_data_kind``, ``data_kind``, ``data_kinds``,
``read_data``, ``clear_data_cache``, ``given_paths``, ``default_paths``, ``missing_data``, ``missing_message``.
"""

from __future__ import annotations

import functools
import importlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

from ..errors import RulerDataError, RulerUsageError

__all__ = ["DataKind", "DataProblem", "clear_data_cache", "data_kind", "data_kinds", "default_paths", "given_paths", "missing_data",
           "missing_message", "read_data", "register_data_kind"]


class DataProblem(Exception):
    """What is wrong with a data file or folder, raised by a reader; :func:`read_data` turns it
    into a RulerDataError that names the option, the path and how to get good data."""


Reader = Callable[[Path], Any]


@dataclass(frozen=True)
class DataKind:
    """One kind of data (see the module docstring)."""

    name: str
    option: str
    reader: Reader
    expected: str  # what a good file is, for messages: "the SQuAD v2.0 dev set (dev-v2.0.json)"
    download: str | None = None  # the command that fetches it
    file: str | None = None  # the name the download writes in the data folder
    shape: str = "file"  # "file", "folder" or "file or folder"
    fallback: Callable[[], Any] | None = None  # read when no path is given (None: the data is required)
    generate_flag: str | None = None  # `pytest-ruler generate`'s flag for it (built-in kinds)

    @property
    def dest(self) -> str:
        """The argparse dest of :attr:`option` (``--ruler-squad`` ──► ``ruler_squad``)."""
        return self.option.lstrip("-").replace("-", "_")

    def how_to_get(self) -> str:
        where = f"pass the {self.shape} with {self.option} PATH"
        return f"get it with `{self.download}` or {where}" if self.download else where

    def error(self, path: object, problem: str) -> RulerDataError:
        error = RulerDataError(self.option, str(path), f"{problem}. Expected {self.expected}; {self.how_to_get()}")
        error.problem = problem  # type: ignore[attr-defined]  # the bare reason, for callers
        return error


def _lazy(module: str, name: str) -> Callable[..., Any]:
    """A reader imported on first use: the registry loads none of the readers' modules."""

    def call(*args: Any) -> Any:
        return getattr(importlib.import_module(f"pytest_ruler.data.{module}"), name)(*args)

    call.__qualname__ = f"{module}.{name}"
    return call


_BUILTIN: tuple[DataKind, ...] = (
    DataKind("essays", "--ruler-essays", _lazy("essay_corpus", "read_essays"),
             "a .txt file, a folder of .txt files or RULER's {\"text\": ...} JSON (PaulGrahamEssays.json)",
             "pytest-ruler download essays", "PaulGrahamEssays.json", "file or folder", _lazy("essay_corpus", "offline_corpus"), "--essays"),
    DataKind("squad", "--ruler-squad", _lazy("qa", "read_squad"), "the SQuAD v2.0 dev set (dev-v2.0.json)",
             "pytest-ruler download squad", "squad.json", generate_flag="--squad"),
    DataKind("hotpotqa", "--ruler-hotpotqa", _lazy("qa", "read_hotpotqa"),
             "the HotpotQA dev set, distractor setting (hotpot_dev_distractor_v1.json)", "pytest-ruler download hotpotqa", "hotpotqa.json",
             generate_flag="--hotpotqa"),
    DataKind("mmlu", "--ruler-mmlu", _lazy("mmlu", "read_mmlu"),
             "a folder with test/ and auxiliary_train/ CSV files (MMLU's data.tar) or test.jsonl and auxiliary_train.jsonl "
             "(Hugging Face cais/mmlu records)", "pytest-ruler download mmlu", "mmlu", "folder", generate_flag="--mmlu"),
    DataKind("hotpotqa-train", "--ruler-hotpotqa-train", _lazy("ruler2_qa", "read_haystack"),
             "HotpotQA's train set (hotpot_train_v1.1.json)", "pytest-ruler download hotpotqa-train", "hotpotqa_train.json",
             generate_flag="--hotpotqa-train"),
    DataKind("mrcr", "--ruler-mrcr", _lazy("mrcr", "read_mrcr"), "OpenAI's MRCR records (openai/mrcr): a folder of its parquet files, "
             "one parquet file, or JSON Lines with the same fields", "pytest-ruler download mrcr", "mrcr", "file or folder",
             generate_flag="--mrcr"),
)
_KINDS: dict[str, DataKind] = {k.name: k for k in _BUILTIN}


def register_data_kind(kind: DataKind, *, replace: bool = False) -> DataKind:
    """Make ``kind`` something a family may need (``Family.data_needs``) and the run may read."""
    if not isinstance(kind, DataKind):
        raise RulerUsageError("data kind", repr(kind), "register a pytest_ruler.data.registry.DataKind(name, option, reader, expected, ...)")
    if not kind.name or any(c in kind.name for c in " ,=") or not kind.option.startswith("--"):
        raise RulerUsageError("data kind", kind.name, "give a name without spaces, commas or '=' and an option that starts with --")
    if any(k.name == kind.name for k in _BUILTIN):
        raise RulerUsageError("data kind", kind.name, "is a built-in kind of data; register the new kind under another name")
    if kind.name in _KINDS and _KINDS[kind.name] != kind and not replace:
        raise RulerUsageError("data kind", kind.name, "is already registered; pass replace=True or pick another name")
    _KINDS[kind.name] = kind
    return kind


def data_kind(name: str) -> DataKind:
    if name not in _KINDS:
        raise RulerUsageError("data kind", name, f"choose one of: {', '.join(_KINDS)} (or register it: pytest_ruler.data.registry.register_data_kind)")
    return _KINDS[name]


def data_kinds() -> tuple[DataKind, ...]:
    """Every kind known now, the built-in ones first."""
    return tuple(_KINDS.values())


def _stamp(kind: DataKind, given: object) -> tuple[str, tuple]:
    """(resolved path, what changes when its content does), or the DataProblem of a path that is not there."""
    path = Path(os.fspath(given)).expanduser()  # type: ignore[arg-type]
    if not path.exists():
        raise DataProblem(f"no such {kind.shape}")
    if kind.shape == "file" and path.is_dir():
        raise DataProblem("it is a directory, not a file")
    if kind.shape == "folder" and not path.is_dir():
        raise DataProblem("it is a file, not a folder")
    path = path.resolve()
    files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
    return str(path), tuple((str(p), p.stat().st_size, p.stat().st_mtime_ns) for p in files)


def read_data(kind: str | DataKind, path: str | os.PathLike[str] | None, *, reader: Reader | None = None, cache: bool = True) -> Any:
    """The data of ``kind`` at ``path``, parsed once per process and file state (``reader``: another
    reading of the same file, e.g. RULERv2's HotpotQA questions). ``None``: the kind's fallback, or
    a RulerDataError saying how to get the data. ``cache=False`` parses afresh and keeps nothing
    (a download checks a file before keeping it). Raises RulerDataError."""
    k = kind if isinstance(kind, DataKind) else data_kind(kind)
    read = reader or k.reader
    if path is None or path == "":
        if k.fallback is None:
            get = f"run `{k.download}` (when online) and pass" if k.download else "pass"
            cli = f", or with {k.generate_flag}=PATH to `pytest-ruler generate`" if k.generate_flag else ""
            raise RulerDataError(k.option, None, f"no {k.shape} given, and {k.expected} is needed: {get} the {k.shape} "
                                 f"with {k.option}=PATH to pytest{cli}")
        return _cached(k.name, k.fallback, None, ()) if cache else k.fallback()
    try:
        resolved, stamp = _stamp(k, path)
        return _cached(k.name, read, resolved, stamp) if cache else read(Path(resolved))
    except DataProblem as exc:
        raise k.error(os.fspath(path), str(exc)) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise k.error(os.fspath(path), f"cannot read it ({getattr(exc, 'strerror', None) or exc})") from None


@functools.lru_cache(maxsize=8)
def _cached(name: str, read: Callable[..., Any], resolved: str | None, stamp: tuple) -> Any:
    # name and stamp are only part of the key: a file changed on disk is read again
    return read() if resolved is None else read(Path(resolved))


def clear_data_cache() -> None:
    """Forget every parsed data set held by this process."""
    _cached.cache_clear()


def default_paths(given: Mapping[str, str | None], data_dir: Path | None = None) -> dict[str, str | None]:
    """Every kind's path: the one given, else what ``pytest-ruler download`` wrote in the data
    folder (``$RULER_DATA_DIR`` or the cache's), else None."""
    from .sources import default_data_dir

    folder = data_dir if data_dir is not None else default_data_dir()
    out: dict[str, str | None] = {}
    for k in data_kinds():
        path = given.get(k.name)
        if path is None and k.file is not None:
            there = folder / k.file
            path = str(there) if (there.is_dir() if k.shape == "folder" else there.exists()) else None
        out[k.name] = None if path is None else str(path)
    return out


def missing_data(needs: Iterable[str], paths: Mapping[str, str | None]) -> list[DataKind]:
    """The kinds among ``needs`` that have no path and no fallback (their items cannot run)."""
    return [k for k in map(data_kind, needs) if not paths.get(k.name) and k.fallback is None]


def missing_message(task: str, kind: DataKind) -> str:
    """Why ``task`` is skipped: its ``kind`` of data is missing, and how to get it."""
    get = f"run `{kind.download}` (when online) or pass {kind.option}=PATH" if kind.download else f"pass {kind.option}=PATH"
    return f"{task} needs the {kind.name} data: {get}"


def given_paths(config: Any, getoption: Callable[[str], Any] | None = None) -> dict[str, str | None]:
    """Each kind's path as the run was given it: for one of pytest-ruler's own options the
    RulerConfig field (``--ruler-squad``: ``config.squad``, which also reads the ini key), else
    ``getoption(kind.dest)``, the pytest option a plugin declared with its kind."""
    out: dict[str, str | None] = {}
    for k in data_kinds():
        own = k.option[len("--ruler-"):].replace("-", "_") if k.option.startswith("--ruler-") else None
        if own is not None and hasattr(config, own):
            value = getattr(config, own)
        else:
            value = getoption(k.dest) if getoption is not None else None
        out[k.name] = None if value is None else str(value)
    return out
