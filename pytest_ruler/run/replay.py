"""Record and replay on the run's side: where an item's samples come from, the start-up checks, the report's fields.

    --ruler-record=DIR   samples are generated as always; each standard item's samples are also written
                         to DIR (run.recording: the format), the item's file put in place when it has them
    --ruler-replay=DIR   nothing is generated: each item's samples are read back from DIR, and the items are
                         the recorded ones (task x length x seed)

Data flow::

    plugin.config.build_config ──replay_settings(run, given)──► the recorded tasks, lengths, seeds,
        samples and depths (an option that contradicts the recording is refused: it names the option,
        the value, what the recording holds and the fix)
    run.preflight.check_start ──check_samples(session)──► record: the folder takes this recording
        (manifest written); replay: each selected item's task is the one recorded (family, arguments,
        answer tokens, metric), and this run's tokenizer re-tokenizes the recorded text into the recorded
        ids (the first sample of every item, then every sample while START_CHECK_TOKENS last); refused
        otherwise, naming --ruler-replay, the folder, the first differing sample and the fix
    runner ──session.item_samples(spec, length, seed, n)──► item_samples: generated (and recorded), or
        replayed (every sample's ids checked again before it goes to the engine)
    run.outcome ──report_fields(session)──► the report's ``record`` / ``replay`` (report.schema_replay)

The blind-reader rule holds as in a generated run: a replayed sample's request carries its prompt
text and ids only; its recorded answers stay with the grader.

Public names: ``START_CHECK_TOKENS``, ``check_samples``, ``header_lines``, ``item_samples``, ``recordable``, ``recorded_haystack``,
``report_fields``, ``replay_settings``.
"""

from __future__ import annotations

import itertools
from typing import Any, Callable, Iterator, Mapping

from ..errors import RulerUsageError
from ..lengths import format_length
from .recording import FORMAT, Recording, new_manifest, spec_record, start_recording, tokenizer_identity

__all__ = ["START_CHECK_TOKENS", "check_samples", "header_lines", "item_samples", "recordable", "recorded_haystack", "report_fields",
           "replay_settings"]

#: prompt tokens the start-up check re-tokenizes beyond each item's first sample (the rest: as each is replayed)
START_CHECK_TOKENS = 1 << 20


def _task_order(task: str) -> tuple[int, str]:
    from ..tasks import task_names

    names = task_names()
    return (names.index(task) if task in names else len(names), task)


def _named(raw: Any) -> set[str]:
    """The names typed in a list option's raw value (comma-separated, or an ini list)."""
    parts = raw if isinstance(raw, (list, tuple)) else str(raw).replace("\n", ",").split(",")
    return {str(p).strip() for p in parts if str(p).strip()}


def replay_settings(run: Mapping[str, Any], given: Callable[[str], Any]) -> dict[str, Any]:
    """The RulerConfig values a replay takes from its recording (``run``: the values read so far, tasks resolved;
    ``given(name)``: the option's raw value when the user set it, else None). See the module docstring."""
    folder = run["replay"]
    if run.get("record") is not None:
        raise RulerUsageError("--ruler-record", str(run["record"]), "a replay generates nothing, so there is nothing to record; "
                              "drop --ruler-record (the replayed folder is the recording)")
    if run.get("no_suite"):
        raise RulerUsageError("--ruler-replay", str(folder), "--ruler-no-suite leaves the standard suite out, and a replay runs "
                              "the recorded suite items; drop one of the two options")
    rec = Recording.open(folder)
    cells = set(rec.items)
    tasks = sorted({c[0] for c in cells}, key=_task_order)
    lengths = sorted({c[1] for c in cells})
    seeds = sorted({c[2] for c in cells})
    where = f"{folder} holds"
    out: dict[str, Any] = {}

    raw = given("tasks")
    if raw is None:
        out["tasks"] = tuple(tasks)
    else:
        unrecorded = [t for t in run["tasks"] if t not in tasks]
        chosen = tuple(t for t in run["tasks"] if t in tasks)
        named = [t for t in unrecorded if t in _named(raw)]  # a name typed, not one a glob or pack brought in
        if named or not chosen:
            what = f"{', '.join(named)} {'is' if len(named) == 1 else 'are'} not recorded" if named else "it selects no recorded task"
            raise RulerUsageError("--ruler-tasks", raw, f"{what} ({where} {', '.join(tasks)}); select among those, or drop "
                                  "--ruler-tasks to replay them all")
        out["tasks"] = chosen
    for name, key, recorded, shown in (("lengths", "lengths", lengths, format_length), ("seeds", "seeds", seeds, str)):
        raw = given(name)
        if raw is None:
            out[key] = tuple(recorded)
            continue
        unrecorded = [v for v in run[key] if v not in recorded]
        if unrecorded:
            raise RulerUsageError(f"--ruler-{name}", raw, f"{', '.join(map(shown, unrecorded))} {'is' if len(unrecorded) == 1 else 'are'} "
                                  f"not recorded ({where} {', '.join(map(shown, recorded))}); select among those, or drop "
                                  f"--ruler-{name} to replay them all")
        out[key] = tuple(run[key])
    selected = [rec.items[c] for c in sorted(cells) if c[0] in out["tasks"] and c[1] in out["lengths"] and c[2] in out["seeds"]]
    if not selected:
        raise RulerUsageError("--ruler-replay", str(folder), "no recorded item is in the selection of --ruler-tasks, --ruler-lengths and "
                              "--ruler-seeds; select recorded ones, or drop those options")
    counts = {item.cell: item.samples for item in selected}
    raw = given("samples")
    if raw is None:
        out["samples"] = max(counts.values())
    else:
        fewest = min(counts, key=lambda c: counts[c])
        if run["samples"] > counts[fewest]:
            task, length, seed = fewest
            raise RulerUsageError("--ruler-samples", raw, f"{task}[{length}-seed{seed}] has {counts[fewest]} recorded samples; a replay "
                                  f"runs the first N recorded samples of each item, so give at most {counts[fewest]}, or drop --ruler-samples")
    recorded_depths = (rec.manifest.get("generator") or {}).get("depths")
    recorded_depths = tuple(float(d) for d in recorded_depths) if recorded_depths else None
    raw = given("depths")
    if raw is not None and tuple(run.get("depths") or ()) != tuple(recorded_depths or ()):
        raise RulerUsageError("--ruler-depths", raw, f"the depths are part of the recorded prompts ({folder} was recorded with "
                              f"{'depths ' + ','.join(f'{d:g}' for d in recorded_depths) if recorded_depths else 'random depths'}); drop --ruler-depths")
    out["depths"] = recorded_depths
    return out


def recordable(session: Any, spec: Any) -> bool:
    """Whether ``spec`` is the registered task of its name as this run sets it (a user test's own TaskSpec is not recorded:
    a replay could not name it)."""
    from .runner import task_spec

    try:
        return task_spec(session, spec.name)[0] == spec
    except RulerUsageError:
        return False


def item_samples(session: Any, spec: Any, length: int, seed: int, n: int) -> Iterator[Any]:
    """An item's ``n`` samples: generated (and recorded with --ruler-record), or read back with --ruler-replay."""
    config = session.config
    if config.replay is not None:
        return _replayed(session, (spec.name, length, seed), n)
    from ..tasks import iter_samples

    samples = iter_samples(spec, length, samples=n, seed=seed, ctx=session.generation_context)
    if config.record is not None and recordable(session, spec):
        samples = session.recorder.recording(spec, length, seed, samples)
    return samples


def _mismatch(folder: Any, item: Any, index: int, ids: Any, got: list[int], tokenizer: Any, recorded: Any) -> RulerUsageError:
    at = next((i for i, (a, b) in enumerate(zip(ids, got)) if a != b), min(len(ids), len(got)))
    return RulerUsageError(
        "--ruler-replay", str(folder),
        f"this run's tokenizer ({tokenizer.name}) does not reproduce the recorded token ids: {item.task}[{item.length}-seed{item.seed}] "
        f"sample {index} ({item.path.name}) differs at token {at} ({len(got)} tokens against {len(ids)} recorded); the samples were "
        f"recorded with the tokenizer {recorded.get('name')} ({recorded.get('source') or 'no source'}): replay on an engine "
        "whose model has that tokenizer, or pass it with --ruler-tokenizer")


def _replayed(session: Any, cell: tuple[str, int, int], n: int) -> Iterator[Any]:
    rec = session.recording
    if cell not in rec.items:
        task, length, seed = cell
        raise RulerUsageError("--ruler-replay", str(rec.folder), f"{task}[{length}-seed{seed}] is not recorded there, and a replay "
                              "generates nothing; ask for a recorded item, or run without --ruler-replay")
    tok = session.tokenizer
    for sample, _ in rec.samples(cell, n):
        got = tok.encode(sample.prompt)
        if list(sample.prompt_ids or ()) != got:
            raise _mismatch(rec.folder, rec.items[cell], sample.index, sample.prompt_ids or (), got, tok, rec.manifest.get("tokenizer") or {})
        yield sample


def _selected(session: Any) -> list[Any]:
    c = session.config
    rec = session.recording
    return [rec.items[cell] for cell in sorted(rec.items, key=lambda x: (x[1], _task_order(x[0]), x[2]))
            if cell[0] in c.tasks and cell[1] in c.lengths and cell[2] in c.seeds]


def _check_replay(session: Any) -> int:
    """Each selected item's task is the recorded one, and this run's tokenizer reproduces the recorded ids; the samples checked."""
    from .runner import task_spec

    rec = session.recording
    tok = session.tokenizer
    recorded_tok = rec.manifest.get("tokenizer") or {}
    items = _selected(session)
    checked = spent = 0

    def check(item: Any, sample: Any) -> None:
        nonlocal checked, spent
        got = tok.encode(sample.prompt)
        if list(sample.prompt_ids or ()) != got:
            raise _mismatch(rec.folder, item, sample.index, sample.prompt_ids or (), got, tok, recorded_tok)
        checked += 1
        spent += len(got)

    for item in items:  # every item's first sample, and its task
        for sample, obj in rec.samples(item.cell, 1):
            try:
                now = spec_record(task_spec(session, item.task)[0])
            except RulerUsageError:
                raise RulerUsageError("--ruler-replay", str(rec.folder), f"the recorded task {item.task} is not a task of this run; "
                                      "register it (a pytest_ruler_register hook), or replay without it (--ruler-tasks)") from None
            if obj.get("spec") is not None and obj["spec"] != now:
                raise RulerUsageError("--ruler-replay", str(rec.folder), f"{item.task} was recorded as {obj['spec']}, and this run's "
                                      f"{item.task} is {now}: its answers would be bounded or graded otherwise; replay with the "
                                      "pytest-ruler version that recorded it, or record it again")
            check(item, sample)
    for item in items:  # then the others, while the budget lasts (the rest are checked as they are replayed)
        for sample, _ in itertools.islice(rec.samples(item.cell, session.config.samples), 1, None):
            if spent >= START_CHECK_TOKENS:
                return checked
            check(item, sample)
    return checked


def check_samples(session: Any) -> None:
    """The start-up checks of record and replay (the module docstring); raises RulerUsageError."""
    c = session.config
    if c.record is not None:
        if c.no_suite:
            raise RulerUsageError("--ruler-record", str(c.record), "--ruler-no-suite leaves the standard suite out, so no sample would "
                                  "be recorded; drop one of the two options")
        start_recording(c.record, new_manifest(tokenizer=session.tokenizer, chat_template=session.frame.name, depths=c.depths,
                                               model=c.model, backend=session.backend))
    if c.replay is not None:
        session.replay_checked = _check_replay(session)


def header_lines(session: Any) -> list[str]:
    """The header's line on where the samples come from (none for a generated, unrecorded run)."""
    c = session.config
    if c.replay is not None:
        rec = session.recording
        items = _selected(session)
        m = rec.manifest
        return [f"ruler: replaying {len(items)} recorded item{'s' if len(items) != 1 else ''} from {rec.folder} (recorded "
                f"{m.get('created')} by {m.get('model')} on {m.get('backend')}, tokenizer {(m.get('tokenizer') or {}).get('name')}, "
                f"template {m.get('chat_template')}): nothing is generated"]
    if c.record is not None:
        return [f"ruler: recording each item's samples to {c.record} ({FORMAT})"]
    return []


def _item_entry(item: Any) -> dict[str, Any]:
    return {"task": item.task, "length": item.length, "seed": item.seed, "samples": item.samples,
            "file": f"samples/{item.path.name}", "sha256": item.sha256()}


def report_fields(session: Any) -> dict[str, Any]:
    """The report's ``record`` and ``replay`` entries (report.schema_replay); {} for a generated, unrecorded run."""
    c = session.config
    if c.replay is not None:
        rec = session.recording
        m = rec.manifest
        return {"replay": {
            "from": str(rec.folder), "format": m.get("format"),
            "recorded": {k: m.get(k) for k in ("created", "pytest_ruler", "tokenizer", "chat_template", "model", "backend")},
            "tokenizer": tokenizer_identity(session.tokenizer),
            "checked_at_start": getattr(session, "replay_checked", None),
            "items": [_item_entry(i) for i in _selected(session)],
        }}
    if c.record is not None:
        try:
            items = list(Recording.open(c.record, "--ruler-record").items.values())
        except RulerUsageError:  # nothing recorded (no item finished)
            items = []
        return {"record": {"to": str(c.record), "format": FORMAT, "items": [_item_entry(i) for i in items]}}
    return {}


def recorded_haystack(session: Any, task: str) -> str:
    """What a replayed task's haystack was, as its first recorded sample says."""
    rec = session.recording
    return next((s.metadata.get("haystack_corpus", "") for cell in sorted(rec.items) if cell[0] == task
                 for s, _ in rec.samples(cell, 1)), "")
