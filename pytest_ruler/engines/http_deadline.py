"""An httpx transport whose timeout is a deadline for the whole request.

httpx's timeouts bound each network operation: a server that trickles one
byte every 0.5 s never trips a 5 s read timeout, and holds the request as
long as it likes (headers included, which httpx reads before any code of ours
sees the response). This transport bounds the request itself:

    httpx.Client.send(request with extensions["deadline"] = time.monotonic() + S)
        ──► DeadlineTransport.handle_request
            ──► httpcore.ConnectionPool (keep-alive, proxy from the environment)
                ──► _DeadlineBackend / _DeadlineStream: every host-name lookup,
                    connect, TLS handshake, read and write waits at most the time left
        ──► the response body, read under the same deadline

so the request ends, with ``httpx.ReadTimeout`` (or ``ConnectTimeout``,
``WriteTimeout``), within one socket operation of its deadline, however the
server paces its bytes. The deadline of the request running in a thread is
kept in a thread-local: httpcore's sync pool does all the I/O of a request in
the thread that sends it. A request without a ``deadline`` extension has only
httpx's per-operation timeouts.

Host names: the socket library's lookup (``getaddrinfo``) honours no timeout, and
httpcore's connect does it inside ``socket.create_connection``; a resolver that hangs
would hold the request (and the start-up check) as long as it likes. So the backend
looks the name up itself (:func:`pytest_ruler.netlookup.resolve`), in a daemon thread it waits on for at most the time left
(``ConnectTimeout`` when that passes; the thread is left to finish on its own), then
connects to the addresses found, in order, as ``create_connection`` would. TLS still
checks the certificate against the host name (httpcore passes it as the SNI name).

Proxies: those of the environment (``http_proxy``, ``https_proxy``,
``no_proxy``), as ``urllib`` reads them, for the base URL's host. TLS: the
system's certificate store (``ssl.create_default_context``, which also reads
``SSL_CERT_FILE``/``SSL_CERT_DIR``), as ``urllib`` used it.

Public names: ``DeadlineTransport``.
"""

from __future__ import annotations

import contextlib
import ssl
import threading
import time
import typing
import urllib.request

import httpcore
import httpx

from ..errors import RulerUsageError
from ..netlookup import LookupTimeout, resolve
from ..secrets import SECRET_MARK

__all__ = ["DeadlineTransport"]

_active = threading.local()

# httpcore's exceptions and the httpx ones a client expects from a transport
_EXCEPTIONS: tuple[tuple[type[Exception], type[httpx.TransportError]], ...] = (
    (httpcore.ConnectTimeout, httpx.ConnectTimeout),
    (httpcore.ReadTimeout, httpx.ReadTimeout),
    (httpcore.WriteTimeout, httpx.WriteTimeout),
    (httpcore.PoolTimeout, httpx.PoolTimeout),
    (httpcore.ConnectError, httpx.ConnectError),
    (httpcore.ReadError, httpx.ReadError),
    (httpcore.WriteError, httpx.WriteError),
    (httpcore.ProxyError, httpx.ProxyError),
    (httpcore.UnsupportedProtocol, httpx.UnsupportedProtocol),
    (httpcore.RemoteProtocolError, httpx.RemoteProtocolError),
    (httpcore.LocalProtocolError, httpx.LocalProtocolError),
)


@contextlib.contextmanager
def _deadline_of(request: httpx.Request) -> typing.Iterator[None]:
    """Map httpcore's errors to httpx's, and keep the request's deadline for the I/O below."""
    before = getattr(_active, "deadline", None)
    _active.deadline = request.extensions.get("deadline")
    try:
        yield
    except Exception as exc:
        for core, mapped in _EXCEPTIONS:
            if isinstance(exc, core):
                raise mapped(str(exc), request=request) from exc
        raise
    finally:
        _active.deadline = before


def _left(timeout: float | None, error: type[Exception]) -> float | None:
    """``timeout`` cut to the time left before the running request's deadline."""
    deadline = getattr(_active, "deadline", None)
    if deadline is None:
        return timeout
    left = deadline - time.monotonic()
    if left <= 0:
        raise error("the request's deadline passed")
    return left if timeout is None else min(timeout, left)


class _DeadlineStream(httpcore.NetworkStream):
    def __init__(self, stream: httpcore.NetworkStream) -> None:
        self._stream = stream

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._stream.read(max_bytes, _left(timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._stream.write(buffer, _left(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self._stream.close()

    def start_tls(self, ssl_context: typing.Any, server_hostname: str | None = None, timeout: float | None = None) -> httpcore.NetworkStream:
        return _DeadlineStream(self._stream.start_tls(ssl_context, server_hostname, _left(timeout, httpcore.ConnectTimeout)))

    def get_extra_info(self, info: str) -> typing.Any:
        return self._stream.get_extra_info(info)


def _addresses(host: str, port: int, within: float) -> list[str]:
    """The addresses ``host`` resolves to, looked up in a thread waited on for at most ``within`` seconds
    (:func:`pytest_ruler.netlookup.resolve`)."""
    try:
        return resolve(host, port, within)
    except LookupTimeout as exc:
        raise httpcore.ConnectTimeout(str(exc)) from None
    except OSError as exc:
        raise httpcore.ConnectError(str(exc)) from None


class _DeadlineBackend(httpcore.NetworkBackend):
    def __init__(self) -> None:
        self._backend = httpcore.SyncBackend()

    def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                    socket_options: typing.Iterable[typing.Any] | None = None) -> httpcore.NetworkStream:
        within = _left(timeout, httpcore.ConnectTimeout)
        if within is None:  # no bound asked for: the socket library's own lookup
            return _DeadlineStream(self._backend.connect_tcp(host, port, None, local_address, socket_options))
        failure: Exception | None = None
        for address in _addresses(host, port, within):
            try:
                stream = self._backend.connect_tcp(address, port, _left(timeout, httpcore.ConnectTimeout), local_address, socket_options)
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:  # the next address, as create_connection would
                failure = exc
                continue
            return _DeadlineStream(stream)
        raise failure if failure is not None else httpcore.ConnectError(f"the host name {host!r} has no address")

    def connect_unix_socket(self, path: str, timeout: float | None = None,
                            socket_options: typing.Iterable[typing.Any] | None = None) -> httpcore.NetworkStream:
        return _DeadlineStream(self._backend.connect_unix_socket(path, _left(timeout, httpcore.ConnectTimeout), socket_options))

    def sleep(self, seconds: float) -> None:
        self._backend.sleep(seconds)


class _DeadlineBody(httpx.SyncByteStream):
    """The response body, read under the deadline of the request that asked for it."""

    def __init__(self, stream: typing.Iterable[bytes], request: httpx.Request) -> None:
        self._stream, self._request = stream, request

    def __iter__(self) -> typing.Iterator[bytes]:
        parts = iter(self._stream)
        while True:
            with _deadline_of(self._request):
                try:
                    part = next(parts)
                except StopIteration:
                    return
            yield part

    def close(self) -> None:
        close = getattr(self._stream, "close", None)
        if close is not None:
            with _deadline_of(self._request):
                close()


def _environment_proxy(base_url: str) -> httpcore.Proxy | None:
    url = httpx.URL(base_url)
    given = urllib.request.getproxies().get(url.scheme)
    if not given or urllib.request.proxy_bypass(url.host):
        return None
    try:
        proxy = httpx.Proxy(given)  # parses user info out of the URL
    except (ValueError, httpx.InvalidURL):
        raise RulerUsageError(f"the environment variable {url.scheme}_proxy", SECRET_MARK,
                              "it is not a proxy URL (http://HOST:PORT); fix or unset it") from None
    target = httpcore.URL(scheme=proxy.url.raw_scheme, host=proxy.url.raw_host, port=proxy.url.port, target=proxy.url.raw_path)
    return httpcore.Proxy(target, auth=proxy.auth, headers=proxy.headers.raw)


class DeadlineTransport(httpx.BaseTransport):
    """httpcore's connection pool over sockets that honour each request's ``deadline`` extension."""

    def __init__(self, base_url: str, *, max_connections: int, keepalive_expiry: float = 30.0) -> None:
        self._pool = httpcore.ConnectionPool(
            ssl_context=ssl.create_default_context(),  # the system's CAs, as urllib trusted (httpx would use certifi's)
            proxy=_environment_proxy(base_url),
            max_connections=max_connections,
            max_keepalive_connections=max_connections,
            keepalive_expiry=keepalive_expiry,
            network_backend=_DeadlineBackend(),
        )

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        core = httpcore.Request(
            method=request.method,
            url=httpcore.URL(scheme=request.url.raw_scheme, host=request.url.raw_host, port=request.url.port, target=request.url.raw_path),
            headers=request.headers.raw,
            content=request.stream,
            extensions=request.extensions,
        )
        with _deadline_of(request):
            if "deadline" in request.extensions:  # waiting for a free connection counts too
                timeouts = dict(request.extensions.get("timeout") or {})
                timeouts["pool"] = _left(timeouts.get("pool"), httpcore.PoolTimeout)
                core.extensions = {**core.extensions, "timeout": timeouts}
            response = self._pool.handle_request(core)
        return httpx.Response(status_code=response.status, headers=response.headers,
                              stream=_DeadlineBody(typing.cast(typing.Iterable[bytes], response.stream), request),
                              extensions=response.extensions)

    def close(self) -> None:
        self._pool.close()
