"""``pytest-ruler download mmlu|hotpotqa-train``: the data of RULERv2's MMLU and qa tasks.

    mmlu: data.tar (MMLU's release) ──fetch.stream──► a temporary file ──► its test/ and
        auxiliary_train/ CSV files unpacked into a temporary folder ──data.mmlu.load_mmlu
        (format check)──► renamed onto ``<data dir>/mmlu``
    hotpotqa-train: hotpot_train_v1.1.json ──fetch.stream (fetch.write_atomically)──►
        data.ruler2_qa.load_hotpot_haystack (format check) ──► ``hotpotqa_train.json``

Neither source publishes a digest, so the files are checked for format only. A failure
is a :class:`~pytest_ruler.data.fetch.RulerDownloadError` saying how to supply the data by
hand; nothing partial is left behind.

Public names: ``download_ruler2``.
"""

from __future__ import annotations

import shutil
import tarfile
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import BinaryIO

from .fetch import NetworkError, RulerDownloadError, StatusError, by_hand, failure, log, open_url, stream, write_atomically
from .sources import REMOTE_FILES

__all__ = ["download_ruler2"]


def download_ruler2(kind: str, target: Path, bases: Mapping[str, str], timeout: float) -> None:
    url = bases[kind] + REMOTE_FILES[kind]
    log(f"pytest-ruler: downloading {kind} from {url}")
    try:
        if kind == "mmlu":
            _mmlu(url, target, timeout)
        else:
            _hotpot_train(url, target, timeout)
    except (StatusError, NetworkError) as exc:
        raise failure(kind, url, exc, [url], target) from None


def _hotpot_train(url: str, target: Path, timeout: float) -> None:
    from .ruler2_qa import load_hotpot_haystack

    def fill(out: BinaryIO, tmp: Path) -> None:
        with open_url(url, timeout) as response:
            stream(response, out, "hotpotqa-train")
        out.flush()
        try:
            haystack = load_hotpot_haystack(tmp)
        except Exception as exc:
            raise RulerDownloadError("hotpotqa-train", url, f"the file is not usable ({exc})", by_hand("hotpotqa-train", [url], target)) from None
        log(f"  hotpotqa-train: {len(haystack.docs)} paragraphs")

    write_atomically(target, fill)


def _mmlu(url: str, target: Path, timeout: float) -> None:
    from .mmlu import load_mmlu

    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".mmlu.") as work:
        tar = Path(work) / "data.tar"
        with open_url(url, timeout) as response, tar.open("wb") as out:
            stream(response, out, "mmlu")
        folder = Path(work) / "mmlu"
        with tarfile.open(tar) as archive:
            for member in archive.getmembers():
                parts = Path(member.name).parts
                if member.isfile() and len(parts) == 3 and parts[1] in ("test", "auxiliary_train") and parts[2].endswith(".csv"):
                    dest = folder / parts[1] / parts[2]  # only the two splits' CSV files, by their base names
                    dest.parent.mkdir(parents=True, exist_ok=True)
                    source = archive.extractfile(member)
                    if source is not None:
                        dest.write_bytes(source.read())
        try:
            data = load_mmlu(folder)
        except Exception as exc:
            raise RulerDownloadError("mmlu", url, f"the archive is not usable ({exc})", by_hand("mmlu", [url], target)) from None
        log(f"  mmlu: {len(data.test)} test questions, {len(data.auxiliary_train)} auxiliary_train questions")
        if target.exists():
            shutil.rmtree(target)
        folder.rename(target)
