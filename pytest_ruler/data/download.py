"""Fetch the data RULER uses but cannot generate: Paul Graham essays, SQuAD, HotpotQA (and RULERv2's MMLU, HotpotQA train).

This is what ``pytest-ruler download essays|squad|hotpotqa`` runs. It needs a
network connection; everything else in pytest-ruler runs offline and takes these
files through ``--ruler-essays``, ``--ruler-squad`` and ``--ruler-hotpotqa``.

Data flow of :func:`download`::

    kind ──► sources (file name, URLs, mirrors, digests)
      squad, hotpotqa: each URL in turn ("downloading KIND from URL", then once per host
          "connecting to HOST" on stderr before any wait) ──► fetch.open_url (the timeout bounds
          the name lookup, the connection and each read) ──► fetch.stream into a temporary
          file ──► digest check (default sources) ──► data.qa.load_qa (format check)
          ──► renamed onto the target (fetch.write_atomically)
      essays: essays.download_essays (fetch, reduce pages to text, one JSON file)
      mmlu, hotpotqa-train: download_ruler2.download_ruler2 (RULERv2's tasks)
      mrcr: mrcr.download_mrcr (the Hub's parquet files, through huggingface_hub)

The sources live in ``data.sources``, the network code in ``data.fetch``, the
essay conversion in ``data.essays``; the names below are importable from here.

Public names:

- :func:`download` — fetch one kind of data into a folder and return the file.
- :func:`default_data_dir` — where downloads go: ``$RULER_DATA_DIR``, else
  ``$XDG_CACHE_HOME/pytest-ruler/data`` (``~/.cache/pytest-ruler/data``).
- :func:`data_file` — the file :func:`download` writes for a kind.
- :func:`essay_text_from_html` — a paulgraham.com page reduced to its essay text.
- :class:`RulerDownloadError` — a download that could not finish; its message
  says how to supply the file by hand.
- ``DOWNLOAD_KINDS``, ``DATA_FILES``, ``DEFAULT_BASE_URLS``, ``MIRRORS``,
  ``EXPECTED_DIGESTS``, ``ESSAY_TXT_NAMES``, ``ESSAY_HTML_NAMES`` — the sources.

Choices and differences from RULER:

- The default SQuAD and HotpotQA sources are checked against the published
  digests of the files the paper used; a mismatch is an error. Files from a
  caller's ``base_urls`` are only checked for format (they parse as the dataset).
- Essay pages are reduced to text with the standard library's ``html.parser``
  (RULER used html2text): the text inside the page's first ``<font>`` element,
  ``<br>``/``<p>`` as line breaks, no line wrapping, no Markdown escapes. Pages
  are decoded with their declared charset (RULER's ``unicode_escape`` decoding
  garbled non-ASCII). The corpus is therefore close to, not byte-identical with,
  RULER's; the same essays in the same order: the ``.txt`` files sorted by name,
  then the pages sorted by name, each ending in a newline.
- An essay page that answers with an HTTP error is skipped with a warning (as in
  RULER, pages do disappear); a connection failure stops the download.
- Files are written atomically (temporary file in the same folder, then rename),
  so a failed download never leaves a partial file or clobbers a good one.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Mapping
from pathlib import Path
from typing import BinaryIO

from pytest_ruler.errors import RulerDataError, RulerUsageError

from . import sources as _sources
from .essays import download_essays, essay_text_from_html
from .fetch import NetworkError, RulerDownloadError, StatusError, by_hand, digest, failure, forget_hosts, log, open_url, stream, write_atomically
from .sources import DATA_FILES, DEFAULT_BASE_URLS, DOWNLOAD_KINDS, ESSAY_HTML_NAMES, ESSAY_TXT_NAMES, EXPECTED_DIGESTS, MIRRORS
from .sources import OPTIONS, REMOTE_FILES, check_kind, data_file, default_data_dir

# the sources' public names are this module's too; download() reads DEFAULT_BASE_URLS, MIRRORS
# and EXPECTED_DIGESTS through this module, so patching them here (as the tests do) takes effect
__all__ = [*_sources.__all__, "RulerDownloadError", "download", "essay_text_from_html"]


def download(
    kind: str,
    dest: Path | None = None,
    *,
    base_urls: Mapping[str, str] | None = None,
    timeout: float = 30,
) -> Path:
    """Fetch ``kind`` (essays, squad or hotpotqa) into folder ``dest``; return the file.

    ``dest`` defaults to :func:`default_data_dir`. ``base_urls`` overrides the
    base URL of any source key in :data:`DEFAULT_BASE_URLS` (for mirrors and
    tests). Progress goes to stderr. Raises :class:`RulerDownloadError` when the
    data cannot be fetched, and nothing is written then.
    """
    kind = check_kind(kind)
    bases = dict(DEFAULT_BASE_URLS)
    overridden: set[str] = set()
    for key, url in (base_urls or {}).items():
        if key not in DEFAULT_BASE_URLS:
            raise RulerUsageError(
                "base_urls", key, f"known keys are: {', '.join(DEFAULT_BASE_URLS)}"
            )
        if not isinstance(url, str) or urllib.parse.urlsplit(url).scheme not in (
            "http",
            "https",
        ):
            raise RulerUsageError(
                f"base_urls[{key!r}]", url, "give an http(s) base URL"
            )
        bases[key] = url if url.endswith("/") else url + "/"
        overridden.add(key)
    if not isinstance(timeout, (int, float)) or timeout <= 0:
        raise RulerUsageError("timeout", timeout, "give a positive number of seconds")

    folder = Path(dest).expanduser() if dest is not None else default_data_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise RulerUsageError(
            "dest", str(folder), f"cannot create it ({exc})"
        ) from None
    target = folder / DATA_FILES[kind]

    forget_hosts()  # each host's first request says "connecting to HOST" (fetch.open_url)
    if kind == "essays":
        download_essays(target, bases, timeout)
    elif kind == "mrcr":  # the MRCR pack's records, from the Hugging Face Hub
        from .mrcr import download_mrcr

        download_mrcr(target, timeout, log)
    elif kind in ("mmlu", "hotpotqa-train"):  # RULERv2's data
        from .download_ruler2 import download_ruler2

        download_ruler2(kind, target, bases, timeout)
    else:
        urls = [bases[kind] + REMOTE_FILES[kind]]
        if kind not in overridden:
            urls.extend(MIRRORS.get(kind, ()))
        _download_dataset(
            kind, urls, target, verify=kind not in overridden, timeout=timeout
        )
    log(f"pytest-ruler: wrote {target}")
    return target


def _download_dataset(
    kind: str, urls: list[str], target: Path, *, verify: bool, timeout: float
) -> None:
    from pytest_ruler.data.qa import load_qa  # the reader checks the format

    failures: list[tuple[str, Exception]] = []
    for url in urls:
        log(f"pytest-ruler: downloading {kind} from {url}")

        def fill(out: BinaryIO, tmp: Path, url: str = url) -> None:
            with open_url(url, timeout) as response:
                size = stream(response, out, kind)
            out.flush()
            if verify:
                algorithm, expected = EXPECTED_DIGESTS[kind]
                actual = digest(tmp, algorithm)
                if actual != expected:
                    raise RulerDownloadError(
                        kind,
                        url,
                        f"the file ({size} bytes) has {algorithm} {actual}, "
                        f"not {expected}, "
                        "so it is not the file the RULER paper used",
                        "Check the source, or pass a file you trust with "
                        f"{OPTIONS[kind]} PATH "
                        "(scores on it are then not comparable with the paper's)",
                    )
            try:
                dataset = load_qa(kind, tmp, cache=False)
            except RulerDataError as exc:
                raise RulerDownloadError(
                    kind,
                    url,
                    f"the file is not usable ({getattr(exc, 'problem', exc.fix)})",
                    by_hand(kind, urls, target),
                ) from None
            log(
                f"  {kind}: {size / 1e6:.1f} MB, {len(dataset.items)} questions, "
                f"{len(dataset.docs)} documents"
            )

        try:
            write_atomically(target, fill)
            return
        except (StatusError, NetworkError) as exc:
            log(f"  {kind}: failed: {exc}")
            failures.append((url, exc))
    # Report the primary source; mirrors only add that they failed too.
    error = failure(kind, failures[0][0], failures[0][1], urls, target)
    if len(failures) > 1:
        also = ", ".join(f"{u} ({e})" for u, e in failures[1:])
        error.reason += f"; the mirror failed too: {also}"
        error.args = (
            f"could not download {kind} from {error.url}: {error.reason}. {error.fix}",
        )
    raise error
