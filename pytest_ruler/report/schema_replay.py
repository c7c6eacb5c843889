"""The report's ``record`` and ``replay`` fields (``--ruler-record``, ``--ruler-replay``; run.replay writes them).

    replay_fields() ──► {"record": ..., "replay": ...}: the schema's nodes, added to ``build_schema`` in one line

A replayed run's report says where its samples came from (the folder, its manifest's run and tokenizer,
each item's file and the file's sha256); each prediction's ``prompt_hash`` is the recorded sample's. A
recording run's report lists the items its folder holds at the run's end.

Public names: ``replay_fields``.
"""

from __future__ import annotations

from .schema_blocks import Node, arr, obj, opt, t

__all__ = ["replay_fields"]


def _items(desc: str) -> Node:
    return arr(desc, obj("One recorded item.", {
        "task": t("string", "Task."), "length": t("integer", "Length in tokens."), "seed": t("integer", "Seed."),
        "samples": t("integer", "Samples the file holds.", minimum=0),
        "file": t("string", "The file, relative to the folder (samples/<task>-<length>-seed<seed>.jsonl)."),
        "sha256": t("string", "sha256 of the file's bytes: the exact samples."),
    }, required=("task", "length", "seed", "samples", "file", "sha256")))


def _tokenizer(desc: str) -> Node:
    return obj(desc, {
        "name": t("string", "Its name (--ruler-tokenizer, else the model's)."),
        "source": t("string", "Where it was loaded from."),
        "digest": opt("string", "sha256 (16 hex) of its serialised form; informational, the check is re-tokenizing the text."),
    }, nullable=True)


def replay_fields() -> dict[str, Node]:
    """The schema of the top-level ``record`` and ``replay`` entries."""
    return {
        "record": obj("--ruler-record=DIR: the samples of this run were saved there (format pytest-ruler-samples/1).", {
            "to": t("string", "The folder."),
            "format": t("string", "The recording's format."),
            "items": _items("The items the folder holds at the run's end."),
        }, required=("to", "format", "items")),
        "replay": obj("--ruler-replay=DIR: this run generated nothing; it ran the samples recorded there.", {
            "from": t("string", "The folder."),
            "format": t("string", "The recording's format."),
            "recorded": obj("The run that recorded them (its manifest.json).", {
                "created": opt("string", "When, ISO 8601 UTC."),
                "pytest_ruler": opt("string", "The pytest-ruler version."),
                "tokenizer": _tokenizer("Its tokenizer."),
                "chat_template": opt("string", "Its prompt template (chat:<model>, base, or a file)."),
                "model": opt("string", "Its --ruler-model."),
                "backend": opt("string", "Its engine."),
            }),
            "tokenizer": _tokenizer("This run's tokenizer, which reproduced the recorded token ids."),
            "checked_at_start": opt("integer", "Samples re-tokenized at start (every item's first, then more within a token "
                                    "budget); the others were checked as they were replayed.", minimum=0),
            "items": _items("The items replayed."),
        }, required=("from", "format", "items")),
    }
