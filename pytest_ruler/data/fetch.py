"""Fetching one URL and keeping the file only when it is whole.

The network half of ``pytest-ruler download`` (``data.download``, ``data.essays``):

    URL ──► open_url (User-Agent; "connecting to HOST" on stderr before the first wait on a host;
            ``timeout`` bounds the name lookup too: netlookup.connect; HTTP errors and network
            errors told apart)
        ──► stream (body to a file, progress to stderr, a cut-short body is an error)
        ──► write_atomically (temporary file beside the target, renamed on success only)
    digest(path, algorithm): what ``data.download`` compares with the published digest.

A failure becomes a :class:`RulerDownloadError` (``failure``) whose message
says whether the machine seems offline or the server answered with an error,
and how to supply the file by hand (``by_hand``).

Public names: :class:`RulerDownloadError` (re-exported by ``data.download``).
For the other ``data`` modules: ``StatusError`` (the server answered with an
error status), ``NetworkError`` (no usable answer), ``NETWORK_ERRORS``, ``log``,
``by_hand``, ``failure``, ``open_url``, ``forget_hosts``, ``describe``, ``stream``,
``write_atomically``, ``digest``.
"""

from __future__ import annotations

import hashlib
import http.client
import os
import socket
import sys
import tempfile
import threading
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO, cast

from pytest_ruler.errors import RulerDataError
from pytest_ruler.netlookup import LookupTimeout, connect

from .sources import DATA_FILES, OPTIONS

__all__ = ["RulerDownloadError"]

USER_AGENT = "pytest-ruler-download/1 (+https://pypi.org/project/pytest-ruler/)"
CHUNK = 1 << 20
NETWORK_ERRORS = (urllib.error.URLError, http.client.HTTPException, OSError)


class RulerDownloadError(RulerDataError):
    """A download that could not finish; its message says how to supply the file."""

    def __init__(self, kind: str, url: str, reason: str, fix: str) -> None:
        super().__init__(f"pytest-ruler download {kind}", url, fix)
        self.kind = kind
        self.url = url
        self.reason = reason
        self.args = (f"could not download {kind} from {url}: {reason}. {fix}",)


class StatusError(Exception):
    """The server answered, with an error status."""


class NetworkError(Exception):
    """No usable answer. ``offline``: no connection was made at all."""

    def __init__(self, message: str, *, offline: bool = True) -> None:
        super().__init__(message)
        self.offline = offline


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def by_hand(kind: str, urls: list[str], target: Path) -> str:
    option = OPTIONS[kind]
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


def failure(
    kind: str, url: str, exc: Exception, urls: list[str], target: Path
) -> RulerDownloadError:
    fix = by_hand(kind, urls, target)
    if isinstance(exc, StatusError):
        reason = f"the server answered {exc}"
    elif isinstance(exc, NetworkError) and not exc.offline:
        reason = str(exc)
    else:
        host = urllib.parse.urlsplit(url).hostname or url
        reason = f"{exc}; this machine seems to be offline, or {host} cannot be reached"
    return RulerDownloadError(kind, url, reason, fix)


class _HTTPConnection(http.client.HTTPConnection):
    """A connection whose name lookup ends with its timeout (``netlookup.connect``)."""

    def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        super().__init__(*args, **kwargs)
        self._create_connection = connect


class _HTTPSConnection(http.client.HTTPSConnection):
    def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        super().__init__(*args, **kwargs)
        self._create_connection = connect


class _HTTPHandler(urllib.request.HTTPHandler):
    def http_open(self, req):  # type: ignore[no-untyped-def]
        return self.do_open(_HTTPConnection, req)


class _HTTPSHandler(urllib.request.HTTPSHandler):
    def https_open(self, req):  # type: ignore[no-untyped-def]
        return self.do_open(_HTTPSConnection, req, context=self._context)


_said_hosts: set[str] = set()  # hosts this download has said it connects to (``forget_hosts`` at each start)
_said_lock = threading.Lock()


def forget_hosts() -> None:
    """A new download: its first request to each host says so again."""
    with _said_lock:
        _said_hosts.clear()


def _say_connecting(url: str, timeout: float) -> None:
    """Say, once per host and download, that it connects there (the line before a wait)."""
    host = urllib.parse.urlsplit(url).hostname or url
    with _said_lock:
        if host in _said_hosts:
            return
        _said_hosts.add(host)
    log(f"  connecting to {host} (name lookup and connection: at most {timeout:g} s each) ...")


def open_url(url: str, timeout: float) -> http.client.HTTPResponse:
    """Open ``url`` within ``timeout`` seconds per step: the name lookup (``socket.getaddrinfo``
    has no timeout of its own: ``netlookup.resolve`` waits on it in a thread), the connection
    and each read. A line on stderr says where it connects, before the first wait on a host."""
    request = urllib.request.Request(url, headers={"User-Agent": USER_AGENT})
    _say_connecting(url, timeout)
    try:
        opener = urllib.request.build_opener(_HTTPHandler, _HTTPSHandler)  # the environment's proxies, as urlopen
        response = opener.open(request, timeout=timeout)
        return cast(http.client.HTTPResponse, response)
    except urllib.error.HTTPError as exc:
        exc.close()
        raise StatusError(f"HTTP {exc.code} {exc.reason}") from None
    except ValueError as exc:  # not a URL urllib can open
        raise NetworkError(f"bad URL ({exc})") from None
    except NETWORK_ERRORS as exc:
        raise NetworkError(describe(exc)) from None


def describe(exc: BaseException) -> str:
    if isinstance(exc, urllib.error.URLError) and not isinstance(exc.reason, str):
        exc = exc.reason
    if isinstance(exc, LookupTimeout):
        return str(exc)
    if isinstance(exc, (socket.timeout, TimeoutError)):
        return "the connection timed out"
    text = str(exc) or type(exc).__name__
    return text


def stream(response: http.client.HTTPResponse, out: BinaryIO, label: str) -> int:
    """Copy the body to ``out``; raise ``NetworkError`` when it is cut short."""
    total = response.length  # None when the server sends no Content-Length
    got = 0
    next_report = 0.1
    try:
        while chunk := response.read(CHUNK):
            out.write(chunk)
            got += len(chunk)
            if total and got / total >= next_report and got < total:
                log(
                    f"  {label}: {got / total:4.0%} "
                    f"({got / 1e6:.1f} of {total / 1e6:.1f} MB)"
                )
                next_report = (int(got / total * 10) + 1) / 10
    except NETWORK_ERRORS as exc:
        raise NetworkError(
            f"the connection broke after {got} bytes ({describe(exc)})", offline=False
        ) from None
    expected = response.headers.get("Content-Length")
    if expected is not None and expected.isdigit() and got < int(expected):
        raise NetworkError(
            f"the connection closed after {got} of {expected} bytes", offline=False
        )
    return got


def write_atomically(target: Path, fill: Callable[[BinaryIO, Path], None]) -> None:
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


def digest(path: Path, algorithm: str) -> str:
    h = hashlib.new(algorithm, usedforsecurity=False)
    with path.open("rb") as f:
        while block := f.read(CHUNK):
            h.update(block)
    return h.hexdigest()
