"""Small MRCR data sets in the format of OpenAI's ``openai/mrcr``, made by the tests themselves.

A record is a made-up chat: ``turns`` user requests ("write a poem about tapirs") each answered by
the assistant with made-up text; ``n_needles`` of the requests are the same one, the others near
misses (same form, other subject; or same subject, other form); the last user turn asks for the
k-th answer to the repeated request, prefixed with a random string, in the data set's words. The
fields are the data set's: ``prompt`` (the JSON list of messages), ``answer`` (the random string,
then the asked-for answer), ``random_string_to_prepend``, ``n_needles``, ``desired_msg_index``,
``total_messages``, ``n_chars`` (the contents' characters).

``mrcr_oracle(messages)`` is what a perfect reader answers (the scripted test engines use it);
``ordinal(k)`` writes 1st, 2nd, 3rd, 4th, ...
"""

from __future__ import annotations

import json
import random
import re
import string
from pathlib import Path

FORMS = ("poem", "short story", "riddle", "blog post", "limerick", "song")
SUBJECTS = ("tapirs", "frogs", "lighthouses", "rivers", "clocks", "owls", "glaciers", "kites", "lanterns", "orchards")
WORDS = ("amber", "bright", "calm", "distant", "early", "feather", "gentle", "hollow", "ivory", "jolly", "kind", "lonely",
         "misty", "narrow", "olive", "patient", "quiet", "rusty", "silver", "tender", "umber", "velvet", "wild", "yellow",
         "morning", "evening", "water", "stone", "window", "garden", "meadow", "harbor", "candle", "forest", "valley")
ASK = re.compile(r"Prepend (\S+) to the (\d+)(?:st|nd|rd|th) \(1 indexed\) (.+)\. Do not include any other text in your response\.")


def ordinal(k: int) -> str:
    return f"{k}{'th' if 10 <= k % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(k % 10, 'th')}"


def _text(rng: random.Random, words: int) -> str:
    lines = []
    for _ in range(max(1, words // 8)):
        lines.append(" ".join(rng.choice(WORDS) for _ in range(8)).capitalize() + ",")
    return "\n".join(lines)[:-1] + "."


def make_record(n_needles: int, turns: int, seed: int, *, words: int = 32) -> dict:
    """One record of ``turns`` requests (at least ``n_needles``), in the data set's format."""
    rng = random.Random(f"mrcr-test|{n_needles}|{turns}|{seed}")
    form, subject = rng.choice(FORMS), rng.choice(SUBJECTS)
    needles = sorted(rng.sample(range(turns), n_needles))
    messages: list[dict[str, str]] = []
    for i in range(turns):
        if i in needles:
            f, s = form, subject
        elif rng.random() < 0.5:
            f, s = form, rng.choice([x for x in SUBJECTS if x != subject])
        else:
            f, s = rng.choice([x for x in FORMS if x != form]), subject
        messages.append({"role": "user", "content": f"write a {f} about {s}"})
        messages.append({"role": "assistant", "content": _text(rng, words)})
    k = rng.randrange(n_needles)
    desired = 2 * needles[k] + 1
    prefix = "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(10))
    messages.append({"role": "user", "content": f"Prepend {prefix} to the {ordinal(k + 1)} (1 indexed) {form} about {subject}. "
                                                "Do not include any other text in your response."})
    return {"prompt": json.dumps(messages), "answer": prefix + messages[desired]["content"], "random_string_to_prepend": prefix,
            "n_needles": n_needles, "desired_msg_index": desired, "total_messages": len(messages),
            "n_chars": sum(len(m["content"]) for m in messages)}


def make_records(turns: tuple[int, ...] = (6, 9, 12, 16, 20, 26, 34, 44, 56), needles: tuple[int, ...] = (2, 4, 8),
                 per_size: int = 1) -> list[dict]:
    """Records of each needle count at each size (turn counts: about 45 tokens a turn with SmolLM2's
    tokenizer, so the default sizes span the bins 512, 1K, 2K and 4K)."""
    return [make_record(n, max(t, n), s) for n in needles for t in turns for s in range(per_size)]


def write_jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def write_parquet(path: Path, records: list[dict], row_group_size: int = 4) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.Table.from_pylist(records), str(path), row_group_size=row_group_size)
    return path


def mrcr_oracle(messages: list[dict]) -> str:
    """A perfect reader's answer: the random string, then the asked-for answer ("" when the question is not MRCR's)."""
    found = ASK.fullmatch(messages[-1]["content"])
    if not found:
        return ""
    prefix, k, topic = found.group(1), int(found.group(2)), found.group(3)
    answers = [messages[i + 1]["content"] for i in range(0, len(messages) - 2, 2) if messages[i]["content"] == f"write a {topic}"]
    return prefix + answers[k - 1] if len(answers) >= k else ""
