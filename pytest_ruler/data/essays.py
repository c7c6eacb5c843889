"""The essay corpus: RULER's Paul Graham essays fetched and turned into its JSON file.

``pytest-ruler download essays`` (``data.download``) calls :func:`download_essays`::

    ESSAY_TXT_NAMES (.txt, Kamradt's repository) + ESSAY_HTML_NAMES (paulgraham.com pages)
        ──► fetched 8 at a time (one retry each) ──► pages: essay_text_from_html
        ──► in RULER's order, each ending in a newline ──► PaulGrahamEssays.json {"text": ...}

Public names: :func:`essay_text_from_html` (re-exported by ``data.download``);
``download_essays`` for ``data.download``.

Pages are reduced to text with the standard library's ``html.parser`` (RULER
used html2text) and decoded with their declared charset; see ``data.download``
for how the corpus differs from RULER's. A page that answers with an HTTP
error is skipped with a warning; a connection failure stops the download.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from html.parser import HTMLParser
from pathlib import Path
from typing import BinaryIO

from .fetch import NETWORK_ERRORS, NetworkError, StatusError, describe, failure, log, open_url, write_atomically
from .sources import ESSAY_HTML_NAMES, ESSAY_TXT_NAMES

__all__ = ["essay_text_from_html"]

_ESSAY_WORKERS = 8


class _EssayText(HTMLParser):
    """Collects the text of the first ``<font>`` element (the essay on PG's pages)
    and, as a fallback, the text of the whole page."""

    _BREAKS = frozenset({"br"})
    _BLOCKS = frozenset(
        {"p", "div", "li", "ul", "ol", "tr", "table", "blockquote", "pre",
         "h1", "h2", "h3", "h4", "h5", "h6", "hr"}
    )  # fmt: skip
    _SKIP = frozenset({"script", "style", "title"})

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.essay: list[str] = []
        self.page: list[str] = []
        self._font_depth = 0
        self._font_seen = False
        self._skip = 0

    def _emit(self, text: str) -> None:
        self.page.append(text)
        if self._font_depth:
            self.essay.append(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in self._SKIP:
            self._skip += 1
        elif tag == "font":
            if self._font_depth:
                self._font_depth += 1
            elif not self._font_seen:
                self._font_seen = True
                self._font_depth = 1
        elif tag in self._BREAKS:
            self._emit("\n")
        elif tag in self._BLOCKS:
            self._emit("\n\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in self._SKIP:
            self._skip = max(0, self._skip - 1)
        elif tag == "font":
            if self._font_depth:
                self._font_depth -= 1
        elif tag in self._BLOCKS:
            self._emit("\n\n")

    def handle_data(self, data: str) -> None:
        if not self._skip:
            self._emit(re.sub(r"\s+", " ", data))


def _tidy(text: str) -> str:
    lines = [line.strip() for line in text.replace("\xa0", " ").split("\n")]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()


def essay_text_from_html(html: str) -> str:
    """A paulgraham.com page reduced to its essay: plain text, blank-line paragraphs.

    Takes the page's first ``<font>`` element, as RULER does, or the whole page's
    text when there is none; drops scripts and styles; decodes entities.
    """
    parser = _EssayText()
    parser.feed(html)
    parser.close()
    essay = _tidy("".join(parser.essay))
    return essay if essay else _tidy("".join(parser.page))


def _decode(body: bytes, charset: str | None) -> str:
    for encoding in (charset, "utf-8"):
        if encoding:
            try:
                return body.decode(encoding)
            except (LookupError, UnicodeDecodeError):
                pass
    return body.decode("cp1252", errors="replace")


def _fetch_text(url: str, timeout: float) -> tuple[bytes, str | None]:
    for attempt in (
        1,
        2,
    ):  # one retry: a single slow page should not end a long download
        try:
            with open_url(url, timeout) as response:
                return response.read(), response.headers.get_content_charset()
        except NetworkError:
            if attempt == 2:
                raise
        except NETWORK_ERRORS as exc:  # cut short while reading the body
            if attempt == 2:
                raise NetworkError(describe(exc), offline=False) from None
    raise AssertionError("unreachable")


def _fetch_essay(
    job: tuple[str, str, bool], timeout: float
) -> tuple[str, str | None, Exception | None]:
    name, url, is_html = job
    try:
        body, charset = _fetch_text(url, timeout)
    except (StatusError, NetworkError) as exc:
        return name, None, exc
    if is_html:
        return name, essay_text_from_html(_decode(body, charset)), None
    return name, _decode(body, charset or "utf-8"), None


def download_essays(target: Path, bases: Mapping[str, str], timeout: float) -> None:
    jobs = [
        (f"{n}.txt", bases["essays_txt"] + f"{n}.txt", False)
        for n in sorted(ESSAY_TXT_NAMES)
    ]
    jobs += [
        (f"{n}.html", bases["essays_html"] + f"{n}.html", True)
        for n in sorted(ESSAY_HTML_NAMES)
    ]
    all_urls = [url for _, url, _ in jobs]
    log(
        f"pytest-ruler: downloading {len(ESSAY_TXT_NAMES)} essays from "
        f"{bases['essays_txt']} "
        f"and {len(ESSAY_HTML_NAMES)} from {bases['essays_html']}"
    )

    texts: dict[str, str] = {}
    missing: list[tuple[str, str, Exception]] = []
    with ThreadPoolExecutor(max_workers=_ESSAY_WORKERS) as pool:
        results = pool.map(lambda job: _fetch_essay(job, timeout), jobs)
        for done, ((name, text, error), (_, url, _)) in enumerate(
            zip(results, jobs, strict=True), start=1
        ):
            if isinstance(error, NetworkError):
                pool.shutdown(wait=True, cancel_futures=True)
                raise failure("essays", url, error, all_urls, target)
            if error is not None or text is None:
                missing.append((name, url, error or StatusError("an empty page")))
            else:
                texts[name] = text
            if done % 25 == 0 or done == len(jobs):
                log(f"  essays: {done}/{len(jobs)}")

    if not texts:
        name, url, error = missing[0]
        raise failure("essays", url, error, all_urls, target)
    if missing:
        log(
            f"pytest-ruler: warning: {len(missing)} of {len(jobs)} essays could not be "
            "fetched "
            "and are left out (the corpus then differs from the paper's):"
        )
        for _, url, error in missing:
            log(f"  {url}: {error}")

    # RULER's order: the repository's .txt essays by name, then the pages by name.
    pieces = [texts[name] for name, _, _ in jobs if name in texts]
    corpus = "".join(p if p.endswith("\n") else p + "\n" for p in pieces)

    def fill(out: BinaryIO, tmp: Path) -> None:
        out.write(json.dumps({"text": corpus}).encode("ascii"))

    write_atomically(target, fill)
    log(f"  essays: {len(texts)} essays, {len(corpus.split())} words")
