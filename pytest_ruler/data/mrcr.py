"""OpenAI's MRCR records (``openai/mrcr`` on the Hugging Face Hub): read them, and download them.

MRCR (multi-round co-reference resolution) hides 2, 4 or 8 identical requests ("write a poem
about tapirs") in a long synthetic chat; the last user turn asks the model to reproduce the
i-th answer to one of them, prefixed with a random string. A record's fields (the dataset's):

    prompt                    the chat, a JSON string of a list of {"role", "content"} messages
    answer                    the reference response, starting with random_string_to_prepend
    random_string_to_prepend  the prefix the response must start with
    n_needles                 2, 4 or 8
    desired_msg_index         the index of the message asked for, in the list
    total_messages            the list's length
    n_chars                   the characters of the messages' contents

Data flow::

    --ruler-mrcr PATH (or what `pytest-ruler download mrcr` left in the data folder)
        ──► read_mrcr(path) (data.registry reads it once per process and file state)
            folder: every *.parquet and *.jsonl under it, sorted by relative path
                    (the Hub's 2needle/2needle_0.parquet, 2needle_1.parquet, 4needle/..., 8needle/...)
            a .parquet file (needs pyarrow: pip install 'pytest-ruler[mrcr]')
            a JSON Lines file: one record per line, the same fields
        ──► MrcrData(records in dataset order, label)
            MrcrRecord: every field but the prompt; ``data.messages(record)`` parses the prompt
            when asked (a parquet file's prompt is read from its row group then: the whole data set
            is 1.4 GB of text, so only the records a run uses are held)

    download_mrcr(target) ──► huggingface_hub.snapshot_download("openai/mrcr", the *needle/*.parquet
        files) into a temporary folder ──► read_mrcr (format check) ──► renamed onto ``<data dir>/mrcr``

Public names: ``FIELDS``, ``HUB_REPO``, ``MrcrRecord``, ``MrcrData``, ``read_mrcr``, ``download_mrcr``.
"""

from __future__ import annotations

import functools
import json
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from ..errors import RulerDataError
from .registry import DataProblem

__all__ = ["FIELDS", "HUB_REPO", "MrcrData", "MrcrRecord", "download_mrcr", "read_mrcr"]

FIELDS = ("prompt", "answer", "random_string_to_prepend", "n_needles", "desired_msg_index", "total_messages", "n_chars")
_META = FIELDS[1:]  # every field but the prompt: read eagerly
HUB_REPO = "openai/mrcr"
HUB_URL = f"https://huggingface.co/datasets/{HUB_REPO}"
HUB_FILES = ("*needle/*.parquet",)
_PARQUET_HINT = "reading parquet files needs pyarrow: pip install 'pytest-ruler[mrcr]' (or pip install pyarrow)"


@dataclass(frozen=True)
class MrcrRecord:
    """One record, without its prompt (``MrcrData.messages`` parses that)."""

    position: int  # its index in the data set's order (files sorted by path, rows in file order)
    n_needles: int
    answer: str
    random_string: str
    desired_msg_index: int
    total_messages: int
    n_chars: int
    source: str  # file name and row, for messages
    prompt: str | None = field(default=None, repr=False, compare=False)  # JSON Lines: held; parquet: read when asked
    where: tuple[str, int, int] | None = field(default=None, repr=False, compare=False)  # parquet: (file, row group, row in it)


@dataclass(frozen=True, eq=False)
class MrcrData:
    records: tuple[MrcrRecord, ...]
    label: str
    path: str

    def messages(self, record: MrcrRecord) -> tuple[dict[str, str], ...]:
        """The record's chat, as the dataset's ``prompt`` says it; RulerDataError when it is no list of messages."""
        text = record.prompt if record.prompt is not None else _parquet_prompt(*record.where)  # type: ignore[misc]
        return parse_messages(text, record.source, self.path)


def _problem(path: str, what: str) -> RulerDataError:
    return RulerDataError("--ruler-mrcr", path, f"{what}. Expected OpenAI's MRCR records ({HUB_REPO}): a folder of its parquet "
                          "files, one parquet file, or JSON Lines with the fields " + ", ".join(FIELDS) +
                          "; get them with `pytest-ruler download mrcr`")


def parse_messages(text: Any, source: str, path: str) -> tuple[dict[str, str], ...]:
    try:
        messages = json.loads(text) if isinstance(text, str) else None
    except ValueError as exc:
        raise _problem(path, f"{source}: prompt is not JSON ({exc})") from None
    if not isinstance(messages, list) or not messages:
        raise _problem(path, f"{source}: prompt must be a JSON list of messages")
    out = []
    for m in messages:
        if not isinstance(m, dict) or not isinstance(m.get("role"), str) or not isinstance(m.get("content"), str):
            raise _problem(path, f"{source}: every message must be an object with a text role and content")
        out.append({"role": m["role"], "content": m["content"]})
    if out[-1]["role"] != "user":
        raise _problem(path, f"{source}: the last message must be the user's question (role user), not {out[-1]['role']!r}")
    return tuple(out)


def _record(row: dict[str, Any], position: int, source: str, **where: Any) -> MrcrRecord:
    missing = [f for f in (FIELDS if "prompt" in where else _META) if row.get(f) is None]
    if missing:
        raise DataProblem(f"{source} has no {', '.join(missing)} (a record needs {', '.join(FIELDS)})")
    ints = {}
    for f in ("n_needles", "desired_msg_index", "total_messages", "n_chars"):
        v = row[f]
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise DataProblem(f"{source}: {f} must be a non-negative integer, not {v!r}")
        ints[f] = v
    for f in ("answer", "random_string_to_prepend"):
        if not isinstance(row[f], str) or not row[f]:
            raise DataProblem(f"{source}: {f} must be non-empty text")
    if "prompt" in where and not isinstance(where["prompt"], str):
        raise DataProblem(f"{source}: prompt must be text (a JSON list of messages)")
    return MrcrRecord(position, ints["n_needles"], row["answer"], row["random_string_to_prepend"], ints["desired_msg_index"],
                      ints["total_messages"], ints["n_chars"], source, where.get("prompt"), where.get("where"))


def _read_jsonl(path: Path, start: int) -> list[MrcrRecord]:
    out = []
    with path.open(encoding="utf-8") as fh:
        for number, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except ValueError as exc:
                raise DataProblem(f"{path.name} line {number} is not JSON ({exc})") from None
            if not isinstance(row, dict):
                raise DataProblem(f"{path.name} line {number} is not a JSON object")
            out.append(_record(row, start + len(out), f"{path.name} line {number}", prompt=row.get("prompt")))
    return out


def _pyarrow() -> Any:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise DataProblem(_PARQUET_HINT) from None
    return pq


def _read_parquet(path: Path, start: int) -> list[MrcrRecord]:
    pq = _pyarrow()
    try:
        pf = pq.ParquetFile(str(path))
    except Exception as exc:  # pyarrow's own errors: not a parquet file
        raise DataProblem(f"{path.name} is not a readable parquet file ({exc})") from None
    names = set(pf.schema_arrow.names)
    missing = [f for f in FIELDS if f not in names]
    if missing:
        raise DataProblem(f"{path.name} has no column {', '.join(missing)} (a record needs {', '.join(FIELDS)})")
    out: list[MrcrRecord] = []
    for group in range(pf.num_row_groups):
        rows = pf.read_row_group(group, columns=list(_META)).to_pylist()
        for k, row in enumerate(rows):
            out.append(_record(row, start + len(out), f"{path.name} row {len(out)}", where=(str(path), group, k)))
    return out


@functools.lru_cache(maxsize=2)
def _row_group_prompts(path: str, group: int) -> tuple[str, ...]:
    return tuple(_pyarrow().ParquetFile(path).read_row_group(group, columns=["prompt"]).column(0).to_pylist())


def _parquet_prompt(path: str, group: int, row: int) -> str:
    return _row_group_prompts(path, group)[row]


def _files(path: Path) -> list[Path]:
    if path.is_dir():
        found = sorted((p for p in path.rglob("*") if p.is_file() and p.suffix in (".parquet", ".jsonl")
                        and not any(part.startswith(".") for part in p.relative_to(path).parts)),
                       key=lambda p: p.relative_to(path).as_posix())
        if not found:
            raise DataProblem("the folder holds no .parquet or .jsonl file")
        return found
    return [path]


def read_mrcr(path: Path) -> MrcrData:
    """Every record under ``path`` in the data set's order; raises DataProblem (the registry says which option)."""
    records: list[MrcrRecord] = []
    for f in _files(Path(path)):
        if f.suffix == ".parquet":
            records += _read_parquet(f, len(records))
        else:
            records += _read_jsonl(f, len(records))
    if not records:
        raise DataProblem("it holds no record")
    counts = {n: sum(r.n_needles == n for r in records) for n in sorted({r.n_needles for r in records})}
    label = f"mrcr ({Path(path).name}: " + ", ".join(f"{c} {n}-needle" for n, c in counts.items()) + " records)"
    return MrcrData(tuple(records), label, str(path))


def download_mrcr(target: Path, timeout: float, log: Any = print) -> None:
    """The data set's parquet files from the Hub into the folder ``target`` (replaced only when whole)."""
    from .fetch import RulerDownloadError

    by_hand = (f"Download the parquet files of {HUB_URL} ({', '.join(HUB_FILES)}) on a machine that is online and pass "
               f"their folder with --ruler-mrcr PATH, or put it at {target}")
    try:
        from huggingface_hub import snapshot_download
    except ImportError:
        raise RulerDownloadError("mrcr", HUB_URL, "huggingface_hub is not installed (transformers brings it: "
                                 "pip install 'pytest-ruler[hf]', or pip install huggingface_hub)", by_hand) from None
    log(f"pytest-ruler: downloading mrcr from {HUB_URL}")
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".mrcr.") as work:
        folder = Path(work) / "mrcr"
        try:
            snapshot_download(repo_id=HUB_REPO, repo_type="dataset", allow_patterns=list(HUB_FILES), local_dir=str(folder),
                              etag_timeout=timeout)
        except Exception as exc:  # the Hub client's own errors: offline, refused, not found
            raise RulerDownloadError("mrcr", HUB_URL, f"{type(exc).__name__}: {exc}", by_hand) from None
        shutil.rmtree(folder / ".cache", ignore_errors=True)  # the client's bookkeeping, not data
        try:
            data = read_mrcr(folder)
        except (DataProblem, RulerDataError) as exc:
            raise RulerDownloadError("mrcr", HUB_URL, f"the files are not usable ({exc})", by_hand) from None
        log(f"  mrcr: {len(data.records)} records ({data.label})")
        if target.exists():
            shutil.rmtree(target)
        folder.rename(target)


def needle_counts(records: Iterable[MrcrRecord]) -> list[int]:
    return sorted({r.n_needles for r in records})
