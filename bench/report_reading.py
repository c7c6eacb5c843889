"""Benchmark: `pytest-ruler report` and `gate` on a 200,000-item report (issue 23: it ran more than 300 s).

Every saved report is read through the one reader (results.saved.read_report): the JSON is parsed,
every field's type checked, the items typed and each mode's summary computed from them, then
compared with the stored one; the renderers read that one typed report. This measures it on two
shapes of 200,000 items, in this process:

- ``seeds``: 6 tasks x 4 lengths x many seeds, 4 per-sample scores each (so the summary's error
  bars and confidence bounds are computed over 800,000 samples);
- ``tasks``: 200,000 distinct task names at one length, no per-sample scores (a table of 200,000
  rows);
- ``paper``: the paper preset's 13 tasks x 6 lengths x 500 samples, every sample with its prediction
  and answers (``--items`` does not apply): each read re-scores its 39,000 predictions
  (results.rescore; ``rescore_s`` times that step alone); ``ruler2``: the same for RULERv2's 12 tasks,
  whose soft matches compute word error rates.

Baseline, same process and file: ``json.loads`` of the report (what any reader pays). The ratio
is each command's wall time over that parse. Files are written under a temporary folder (setup
not timed).

    python bench/report_reading.py [--items 200000] [--shapes seeds,tasks,paper,ruler2] [--out bench/results/report_reading.json]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import platform
import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pytest_ruler.cli import main as cli  # noqa: E402
from pytest_ruler.results import ItemResult  # noqa: E402
from pytest_ruler.results.report import Report  # noqa: E402
from pytest_ruler.results.rescore import items_disagreement  # noqa: E402


def _sample(rng: random.Random, metric: str, i: int) -> tuple[str, list[str]]:
    """A made-up prediction and its answers: RULER's numbers, or RULERv2's phrases (soft-matched against
    20-300 words of chatter, most not containing them) and letters."""
    if metric in ("all", "part"):
        answers = [f"{rng.randrange(10**6, 10**7)}" for _ in range(1 + i % 3)]
        return f"The special magic numbers are: {', '.join(a if rng.random() < 0.8 else '0' for a in answers)}.", answers
    if metric == "multichoice":
        return f"Reasoning ... so \\boxed{{{rng.choice('ABCD')}}}", [rng.choice("ABCD")]
    words = [f"w{rng.randrange(400)}" for _ in range(rng.randrange(20, 300))]
    answers = [" ".join(f"w{rng.randrange(400)}" for _ in range(rng.randrange(2, 12))) for _ in range(1 + i % 2)]
    if rng.random() < 0.3:
        words.insert(rng.randrange(len(words)), answers[0])
    return " ".join(words), answers


def _paper(samples: int = 500, pack: str | None = None) -> list[ItemResult]:
    """The paper preset's shape: its 13 tasks (or a pack's: ``ruler2``) x 6 lengths, ``samples`` samples each,
    every sample with its prediction and answers (as run.runner writes them: scores rounded to 4 digits)."""
    from pytest_ruler.results.scoring import get_metric, sample_scorer
    from pytest_ruler.tasks.registry import PACKS, STANDARD_TASKS

    rng = random.Random(0)
    out = []
    for task, spec in (PACKS[pack] if pack else STANDARD_TASKS).items():
        per = sample_scorer(spec.metric)
        for length in (4096, 8192, 16384, 32768, 65536, 131072):
            preds, answers = map(list, zip(*(_sample(rng, spec.metric, i) for i in range(samples))))
            scores = tuple(round(per(p, a), 4) for p, a in zip(preds, answers))
            records = tuple({"index": i, "prediction": p, "answers": a, "score": s, "prompt_hash": f"{i:016x}"}
                            for i, (p, a, s) in enumerate(zip(preds, answers, scores)))
            score = round(get_metric(spec.metric)(preds, answers), 4)
            out.append(ItemResult(task=task, length=length, seed=0, mode="native", samples=samples, score=score, threshold=85.6,
                                  passed=score > 85.6, nulls=0, seconds=0.1, sample_scores=scores, predictions=records,
                                  sample_hashes=tuple(r["prompt_hash"] for r in records)))
    return out


def _results(shape: str, n: int) -> list[ItemResult]:
    if shape in ("paper", "ruler2"):
        return _paper(pack=None if shape == "paper" else shape)
    rng = random.Random(0)
    out = []
    tasks = ["niah_single_1", "niah_single_2", "vt", "cwe", "fwe", "qa_1"]
    lengths = [4096, 8192, 16384, 32768]
    for i in range(n):
        if shape == "seeds":
            task, length, seed = tasks[i % 6], lengths[i // 6 % 4], i // 24
            per = tuple(float(rng.random() < 0.93 - 0.05 * lengths.index(length)) for _ in range(4))
            hashes = tuple(f"{task}-{length}-{seed}-{k}" for k in range(4))
        else:
            task, length, seed, per, hashes = f"task{i:06d}", 4096, 0, (), ()
        score = 100.0 * sum(per) / len(per) if per else float(rng.randrange(0, 101))
        out.append(ItemResult(task=task, length=length, seed=seed, mode="native", samples=len(per) or 1, score=score,
                              threshold=85.6, passed=score > 85.6, nulls=0, seconds=0.1, sample_scores=per, sample_hashes=hashes))
    return out


def _timed(argv: list[str]) -> tuple[float, int]:
    sink = io.StringIO()
    t = time.perf_counter()
    with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
        code = cli(argv)
    return time.perf_counter() - t, code


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--items", type=int, default=200_000)
    ap.add_argument("--shapes", default="seeds,tasks")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "report_reading.json"))
    ns = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for shape in ns.shapes.split(","):
            path = Path(tmp) / f"{shape}.json"
            t = time.perf_counter()
            report = Report.of_results(_results(shape, ns.items), threshold=85.6, model="bench", backend="scripted",
                                       tokenizer="t", haystack_corpus="essays: bench")
            path.write_text(json.dumps(report.to_dict()), encoding="utf-8")
            setup = time.perf_counter() - t
            t = time.perf_counter()
            json.loads(path.read_text(encoding="utf-8"))
            parse = time.perf_counter() - t
            row = {"shape": shape, "items": len(report.items), "file_mb": round(path.stat().st_size / 2**20, 1),
                   "setup_s": round(setup, 2), "json_parse_s": round(parse, 2)}
            t = time.perf_counter()
            found = items_disagreement(report.items)  # the re-derivation alone (results.rescore), inside every read
            row["rescore_s"], row["rescore_found"] = round(time.perf_counter() - t, 2), found
            for name, argv in (("report_no_plots", ["report", str(path), "--no-plots", "--out", str(Path(tmp) / shape)]),
                               ("report_with_plots", ["report", str(path), "--out", str(Path(tmp) / f"{shape}-plots")]),
                               ("gate", ["gate", str(path), "--require-effective-length=4k"])):
                seconds, code = _timed(argv)
                row[f"{name}_s"] = round(seconds, 2)
                row[f"{name}_exit"] = code
                row[f"{name}_ratio_to_parse"] = round(seconds / parse, 1)
            rows.append(row)
            print(json.dumps(row), flush=True)
    out = {"bench": "report_reading", "python": platform.python_version(), "machine": platform.machine(),
           "note": "wall seconds in one process on a shared, loaded machine; ratio = command / json.loads of the same file",
           "rows": rows}
    Path(ns.out).parent.mkdir(parents=True, exist_ok=True)
    Path(ns.out).write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
