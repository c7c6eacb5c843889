"""Recorded samples on disk (``--ruler-record=DIR``, read back by ``--ruler-replay=DIR``): the format.

A recording is a folder, plain files only, versioned by ``FORMAT`` (``pytest-ruler-samples/1``)::

    DIR/manifest.json                    the run that recorded: format, created (ISO 8601 UTC),
                                         pytest_ruler (version), tokenizer {name, source, digest},
                                         chat_template (the frame's name: base, chat:<model>, a file),
                                         generator {depths}, model, backend (informational)
    DIR/samples/<task>-<length>-seed<seed>.jsonl
                                         one item (task x length x seed), one JSON object per line,
                                         one line per sample, in index order

A sample's line is ``pytest-ruler generate``'s RULER JSONL object (``Sample.to_ruler_json``: index,
input, outputs, length, answer_prefix, task, seed, target_length, prompt_tokens,
tokens_to_generate, metadata: the depth, the haystack, the tokenizer's and template's names) and
what a replay needs to send exactly the same prompt:

    prompt_ids     the token ids of input + answer_prefix (what engines receive)
    prompt_hash    runner.prompt_hash: the report's per-prediction hash of the same question
    ids_sha256     sha256 of the ids (int64 little-endian): equal ids, equal digest
    context_span, task_span   [start, end) character offsets in input of the haystack and of the
                   task text (unframed); null for a family that does not say where its context is
                   (map-reduce chunks the haystack with them)
    spec           the task's family, arguments, tokens_to_generate and metric

Writes are atomic: an item's samples stream into a temporary file beside its final name as they
are generated (memory stays flat), and ``os.replace`` puts it in place when the item has its
samples (``ItemWriter.commit``); an item that never finished (Ctrl-C, a crash, a kill) leaves no
file, so an interrupted run keeps exactly the items it finished. The manifest is written the same
way, once, when the run starts (``start_recording``). Each item is written by the process that
runs it, so xdist workers never write the same file at once.

Reading: ``Recording.open(folder)`` checks the folder, the manifest and its format (a recording of
another format is refused naming the option, the value and the fix) and lists the items from the
file names; ``Recording.samples(cell)`` parses an item's lines back into ``Sample`` objects.

Public names: ``FORMAT``, ``MANIFEST``, ``SAMPLES_DIR``, ``ItemWriter``, ``Recorder``, ``RecordedItem``, ``new_manifest``,
``Recording``, ``ids_digest``, ``item_file``, ``sample_line``, ``sample_from_line``,
``start_recording``, ``tokenizer_identity``.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import sys
import tempfile
import urllib.parse
from array import array
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping, Sequence

from ..errors import RulerUsageError
from ..report.build import write_atomically
from ..report.provenance import package_versions
from ..tasks.base import Sample
from .runner import prompt_hash

__all__ = ["FORMAT", "MANIFEST", "SAMPLES_DIR", "ItemWriter", "RecordedItem", "Recorder", "Recording", "ids_digest",
           "item_file", "new_manifest", "sample_from_line", "spec_record", "sample_line", "start_recording", "tokenizer_identity"]

FORMAT = "pytest-ruler-samples/1"
MANIFEST = "manifest.json"
SAMPLES_DIR = "samples"
_FILE = re.compile(r"^(?P<task>.+)-(?P<length>[1-9][0-9]*)-seed(?P<seed>[0-9]+)\.jsonl$")
_REQUIRED = ("index", "input", "outputs", "answer_prefix", "task", "seed", "target_length", "prompt_tokens",
             "tokens_to_generate", "prompt_ids")

Cell = tuple[str, int, int]


def item_file(task: str, length: int, seed: int) -> str:
    """The file name of an item's samples (the task name quoted so that any name is one safe file name)."""
    return f"{urllib.parse.quote(task, safe='')}-{length}-seed{seed}.jsonl"


def ids_digest(ids: Sequence[int]) -> str:
    """sha256 of token ids as int64 little-endian: two samples with equal ids have equal digests."""
    data = array("q", ids)
    if sys.byteorder == "big":  # pragma: no cover - the digest is of little-endian bytes everywhere
        data.byteswap()
    return hashlib.sha256(data.tobytes()).hexdigest()


def tokenizer_identity(tokenizer: Any) -> dict[str, Any]:
    """The tokenizer's name, where it came from, and a digest of its serialised form (informational:
    the replay's check is that it re-tokenizes the recorded text into the recorded ids)."""
    digest = None
    try:
        digest = hashlib.sha256(tokenizer.backend.to_str().encode("utf-8")).hexdigest()[:16]
    except Exception:  # a tokenizer without a serialised form: named only
        pass
    return {"name": str(getattr(tokenizer, "name", tokenizer)), "source": str(getattr(tokenizer, "source", "") or ""), "digest": digest}


def _spans(sample: Sample) -> tuple[list[int] | None, list[int] | None]:
    """(context_span, task_span) of ``sample.input``, or (None, None) when the family does not say."""
    if not sample.context or not sample.around_context:
        return None, None
    before, after = sample.around_context
    task_text = before + sample.context + after
    t0 = sample.input.rfind(task_text)
    if t0 < 0:
        return None, None
    c0 = t0 + len(before)
    return [c0, c0 + len(sample.context)], [t0, t0 + len(task_text)]


def sample_line(sample: Sample, spec: Any) -> str:
    """One sample as its JSON line (the module docstring), without the newline."""
    ids = list(sample.prompt_ids or ())
    context_span, task_span = _spans(sample)
    record = {
        **sample.to_ruler_json(),
        "prompt_ids": ids,
        "prompt_hash": prompt_hash(sample),
        "ids_sha256": ids_digest(ids),
        "context_span": context_span,
        "task_span": task_span,
        "spec": spec_record(spec),
    }
    return json.dumps(record, ensure_ascii=False, default=_plain)


def _plain(value: Any) -> Any:
    """JSON for the few non-JSON values a sample's metadata or a spec's arguments may hold (tuples are lists already)."""
    if isinstance(value, (set, frozenset)):
        return sorted(value)
    if isinstance(value, Path):
        return str(value)
    return repr(value)


def spec_record(spec: Any) -> dict[str, Any]:
    """A task spec as plain JSON values (what a recording compares the replaying run's task with)."""
    return json.loads(json.dumps({"family": spec.family, "args": dict(spec.args), "tokens_to_generate": spec.tokens_to_generate,
                                  "metric": spec.metric}, default=_plain, sort_keys=True))


def sample_from_line(line: str, where: str) -> tuple[Sample, dict[str, Any]]:
    """A recorded line back as a ``Sample`` (and the line's object); a malformed one is refused naming ``where`` (file:line)."""
    try:
        obj = json.loads(line)
    except ValueError as exc:
        raise RulerUsageError("--ruler-replay", where, f"not a JSON line ({exc}); record the samples again with --ruler-record") from None
    missing = [k for k in _REQUIRED if not isinstance(obj, dict) or k not in obj]
    if missing:
        raise RulerUsageError("--ruler-replay", where, f"the sample lacks {', '.join(missing)}; record the samples again with --ruler-record")
    ids = obj["prompt_ids"]
    if not isinstance(ids, list) or not all(isinstance(i, int) and not isinstance(i, bool) for i in ids):
        raise RulerUsageError("--ruler-replay", where, "prompt_ids must be a list of integers; record the samples again with --ruler-record")
    text = obj["input"]
    context = around = None
    c, t = obj.get("context_span"), obj.get("task_span")
    if c and t:
        context, around = text[c[0]:c[1]], (text[t[0]:c[0]], text[c[1]:t[1]])
    sample = Sample(task=str(obj["task"]), index=int(obj["index"]), seed=int(obj["seed"]), target_length=int(obj["target_length"]),
                    input=text, answer_prefix=str(obj["answer_prefix"]), outputs=tuple(str(o) for o in obj["outputs"]),
                    prompt_tokens=int(obj["prompt_tokens"]), tokens_to_generate=int(obj["tokens_to_generate"]),
                    metadata=dict(obj.get("metadata") or {}), prompt_ids=tuple(ids), context=context, around_context=around)
    return sample, obj


class ItemWriter:
    """One item's samples, streamed into a temporary file and put in place by ``commit`` (atomic)."""

    def __init__(self, folder: Path, cell: Cell):
        self.cell = cell
        self.path = folder / SAMPLES_DIR / item_file(*cell)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, self.tmp = tempfile.mkstemp(dir=self.path.parent, prefix=f".{self.path.name}.", suffix=".tmp")
        self._fh: Any = os.fdopen(fd, "w", encoding="utf-8")
        self.samples = 0

    def add(self, sample: Sample, spec: Any) -> None:
        self._fh.write(sample_line(sample, spec) + "\n")
        self.samples += 1

    def commit(self) -> Path:
        """The file in place, whole (flushed and synced first); the writer is done."""
        fh, self._fh = self._fh, None
        if fh is not None:
            fh.flush()
            os.fsync(fh.fileno())
            fh.close()
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(self.tmp, 0o666 & ~umask)  # an ordinary file (mkstemp makes 0600)
            os.replace(self.tmp, self.path)
        return self.path

    def discard(self) -> None:
        """An item that did not finish: its temporary file goes, nothing is put in place."""
        fh, self._fh = self._fh, None
        if fh is not None:
            fh.close()
            with contextlib.suppress(OSError):
                os.unlink(self.tmp)


def _write_json(path: Path, data: Mapping[str, Any]) -> None:
    text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    write_atomically(path, lambda fh: fh.write(text))


def start_recording(folder: Path, manifest: Mapping[str, Any]) -> None:
    """Check ``folder`` can take this run's recording and write its manifest (the controller, once).

    An empty or new folder takes it; a folder holding a recording of the same tokenizer and template
    takes it too (its items are added or replaced: a rerun of an interrupted recording); anything
    else is refused, naming --ruler-record, the folder and the fix.
    """
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise RulerUsageError("--ruler-record", str(folder), "this is a file; pass a folder for the recorded samples")
    old_path = folder / MANIFEST
    if old_path.is_file():
        try:
            old = json.loads(old_path.read_text(encoding="utf-8"))
        except ValueError:
            old = {}
        same = (isinstance(old, dict) and old.get("format") == FORMAT and old.get("tokenizer") == manifest.get("tokenizer")
                and old.get("chat_template") == manifest.get("chat_template") and old.get("generator") == manifest.get("generator"))
        if not same:
            raise RulerUsageError("--ruler-record", str(folder), "it holds a recording made with another tokenizer, template or "
                                  "generator settings (its manifest.json differs); pass a new folder, or remove this one")
    elif folder.is_dir() and any(p.name != SAMPLES_DIR for p in folder.iterdir()):
        raise RulerUsageError("--ruler-record", str(folder), "the folder is not empty and holds no recording (no manifest.json); "
                              "pass a new or empty folder")
    try:
        (folder / SAMPLES_DIR).mkdir(parents=True, exist_ok=True)
        _write_json(old_path, manifest)
    except OSError as exc:
        raise RulerUsageError("--ruler-record", str(folder), f"cannot write there ({exc.strerror or exc}); pass a folder you can write") from None


def new_manifest(*, tokenizer: Any, chat_template: str, depths: Sequence[float] | None, model: str, backend: str) -> dict[str, Any]:
    """The manifest of a recording made now (see the module docstring)."""
    version = package_versions().get("pytest-ruler")
    return {"format": FORMAT, "created": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"), "pytest_ruler": version,
            "tokenizer": tokenizer_identity(tokenizer), "chat_template": chat_template,
            "generator": {"depths": list(depths) if depths else None}, "model": model, "backend": backend}


class Recorder:
    """Writes the samples a run generates into its recording folder (one ``ItemWriter`` per item in flight)."""

    def __init__(self, folder: Path):
        self.folder = Path(folder)
        self._open: dict[Cell, ItemWriter] = {}

    def recording(self, spec: Any, length: int, seed: int, samples: Iterable[Sample]) -> Iterator[Sample]:
        """``samples`` as they come, each written to the item's file; the file is put in place when they end."""
        cell = (spec.name, length, seed)
        old = self._open.pop(cell, None)
        if old is not None:  # the same item generated again in this process (a map-reduce twin's own): the newest wins
            old.discard()
        writer = self._open[cell] = ItemWriter(self.folder, cell)
        for sample in samples:
            writer.add(sample, spec)
            yield sample
        self.finish(cell)

    def finish(self, cell: Cell) -> Path | None:
        """Put an item's file in place with the samples it has (an item stopped early has fewer)."""
        writer = self._open.pop(cell, None)
        return writer.commit() if writer is not None and writer.samples else None

    def close(self) -> None:
        """The run ends: items still open never finished; their temporary files go."""
        for writer in self._open.values():
            writer.discard()
        self._open.clear()


@dataclass(frozen=True)
class RecordedItem:
    """One recorded item: its cell, its file and how many samples it holds."""

    task: str
    length: int
    seed: int
    path: Path

    @property
    def cell(self) -> Cell:
        return self.task, self.length, self.seed

    @property
    def samples(self) -> int:
        return _count_lines(self.path)

    def sha256(self) -> str:
        h = hashlib.sha256()
        with open(self.path, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
        return h.hexdigest()


def _count_lines(path: Path) -> int:
    n = 0
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            n += block.count(b"\n")
    return n


@dataclass(frozen=True)
class Recording:
    """A recording folder, read: its manifest and its items (``open`` checks both)."""

    folder: Path
    manifest: Mapping[str, Any]
    items: Mapping[Cell, RecordedItem]

    @classmethod
    def open(cls, folder: Path | str, parameter: str = "--ruler-replay") -> "Recording":
        folder = Path(folder).expanduser()
        if not folder.is_dir():
            raise RulerUsageError(parameter, str(folder), "no such folder; pass a folder written by --ruler-record=DIR")
        path = folder / MANIFEST
        if not path.is_file():
            raise RulerUsageError(parameter, str(folder), "it holds no manifest.json, so it is no recording; pass a folder written by --ruler-record=DIR")
        try:
            manifest = json.loads(path.read_text(encoding="utf-8"))
        except (ValueError, UnicodeDecodeError) as exc:
            raise RulerUsageError(parameter, str(folder), f"its manifest.json is not JSON ({exc}); record the samples again with --ruler-record") from None
        got = manifest.get("format") if isinstance(manifest, dict) else None
        if got != FORMAT:
            raise RulerUsageError(parameter, str(folder), f"its format is {got!r}, and this pytest-ruler reads {FORMAT!r}; replay it "
                                  "with the pytest-ruler version that recorded it (manifest.json's pytest_ruler), or record it again")
        items: dict[Cell, RecordedItem] = {}
        samples_dir = folder / SAMPLES_DIR
        for p in sorted(samples_dir.glob("*.jsonl")) if samples_dir.is_dir() else []:
            m = _FILE.match(p.name)
            if m is None:
                continue
            task = urllib.parse.unquote(m["task"])
            items[(task, int(m["length"]), int(m["seed"]))] = RecordedItem(task, int(m["length"]), int(m["seed"]), p)
        if not items:
            raise RulerUsageError(parameter, str(folder), "it holds no recorded item (samples/*.jsonl): the recording run finished "
                                  "none; record the samples again with --ruler-record")
        return cls(folder, manifest, items)

    def samples(self, cell: Cell, limit: int | None = None) -> Iterator[tuple[Sample, dict[str, Any]]]:
        """An item's samples in file order (the first ``limit``), each with its line's object."""
        item = self.items[cell]
        with open(item.path, encoding="utf-8") as fh:
            for n, line in enumerate(fh, 1):
                if limit is not None and n > limit:
                    return
                if not line.strip():
                    continue
                sample, obj = sample_from_line(line, f"{item.path}:{n}")
                if (sample.task, sample.target_length, sample.seed) != cell:
                    raise RulerUsageError("--ruler-replay", f"{item.path}:{n}", f"the sample is of {sample.task} at {sample.target_length} "
                                          f"seed {sample.seed}, not of the item its file names; record the samples again with --ruler-record")
                yield sample, obj
