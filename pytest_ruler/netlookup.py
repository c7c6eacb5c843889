"""Host-name lookups with a deadline: ``socket.getaddrinfo`` honours no timeout of its own.

A resolver that hangs (a dead DNS server, a VPN half up) holds ``getaddrinfo`` for as long as
the system's resolver retries (minutes), and ``socket.create_connection`` and every HTTP
library built on it look the name up before their connect timeout starts. So the lookup runs
in a daemon thread that the caller waits on for at most the time it has:

    resolve(host, port, seconds) ──► the addresses (numeric strings, the resolver's order, no
        repeats), or LookupTimeout (it did not finish in time; the thread is left to end on its
        own) / LookupFailed (the name does not resolve). An IP literal is its own address.
    connect((host, port), timeout) ──► resolve within ``timeout``, then connect to each address in
        turn, as ``socket.create_connection`` would (a drop-in for ``http.client``'s
        ``_create_connection``)
    canonical_ip(text) ──► an IP literal in one spelling (``127.1`` and ``0x7f.0.0.1`` are
        127.0.0.1, an IPv4-mapped IPv6 address is its IPv4 address), None for a name

Used by the data downloads (:mod:`pytest_ruler.data.fetch`), the HTTP transport's deadline
(:mod:`pytest_ruler.engines.http_deadline`) and the comparison of endpoints
(:mod:`pytest_ruler.engines.endpoint_address`).

Public names: ``LookupFailed``, ``LookupTimeout``, ``canonical_ip``, ``connect``, ``resolve``.
"""

from __future__ import annotations

import ipaddress
import re
import socket
import threading
from typing import Any

__all__ = ["LookupFailed", "LookupTimeout", "canonical_ip", "connect", "resolve"]

_LEGACY_IPV4 = re.compile(r"(?:0[xX][0-9a-fA-F]*|[0-9]+)(?:\.(?:0[xX][0-9a-fA-F]*|[0-9]+)){0,3}")


class LookupTimeout(socket.timeout):
    """The name lookup did not finish within its deadline."""


class LookupFailed(OSError):
    """The name does not resolve (the resolver's own error is in the message)."""


def canonical_ip(text: str) -> str | None:
    """``text`` as an IP address in its standard spelling, or None when it is a name."""
    host = text.strip().strip("[]")
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        if not _LEGACY_IPV4.fullmatch(host):
            return None
        try:  # the forms inet_aton takes and URLs still carry: 127.1, 0x7f.0.0.1, 2130706433
            return socket.inet_ntoa(socket.inet_aton(host))
        except OSError:
            return None
    mapped = getattr(address, "ipv4_mapped", None)
    return str(mapped or address)


def resolve(host: str, port: int | None, seconds: float) -> list[str]:
    """The addresses ``host`` resolves to, waiting at most ``seconds`` for the lookup."""
    literal = canonical_ip(host)
    if literal is not None:
        return [literal]
    found: dict[str, Any] = {}

    def lookup() -> None:
        try:
            found["infos"] = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except (OSError, UnicodeError) as exc:
            found["error"] = exc

    worker = threading.Thread(target=lookup, name=f"ruler-resolve-{host}", daemon=True)
    worker.start()
    worker.join(max(0.0, seconds))
    if worker.is_alive():
        raise LookupTimeout(f"the name lookup of {host!r} did not finish within {seconds:.3g} s")
    if "error" in found:
        raise LookupFailed(f"the host name {host!r} does not resolve ({found['error']})")
    return list(dict.fromkeys(str(info[4][0]) for info in found["infos"]))


def connect(address: tuple[str, int], timeout: Any = None, source_address: tuple[str, int] | None = None,
            **_: Any) -> socket.socket:
    """``socket.create_connection`` whose name lookup ends with ``timeout`` too (no number: the
    socket library's own lookup and default timeout)."""
    host, port = address
    seconds = timeout if isinstance(timeout, (int, float)) and not isinstance(timeout, bool) else None
    if seconds is None:
        return socket.create_connection(address, source_address=source_address)
    failure: OSError | None = None
    for ip in resolve(host, port, seconds):
        try:
            return socket.create_connection((ip, port), timeout, source_address)
        except OSError as exc:  # the next address, as create_connection would
            failure = exc
    raise failure or LookupFailed(f"the host name {host!r} resolves to no address")
