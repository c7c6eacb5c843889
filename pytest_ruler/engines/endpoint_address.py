"""Which server an endpoint URL names: one server spelt two ways is one endpoint, in any order.

``--ruler-base-url`` given several times names several servers of one model. The same server
spelt twice (``localhost`` and ``127.0.0.1``, ``127.1``, ``[::ffff:127.0.0.1]``, ``HOST:80``,
``//v1``) would double the concurrency bound on one server; and the cache key must not change
with the order or the spelling of the URLs. Data flow::

    canonical_url(url) ──► the URL in one spelling: scheme and host lower case, an IP literal in
        its standard form (netlookup.canonical_ip), the default port dropped, repeated slashes
        in the path made one, no trailing slash; credentials, query and fragment dropped
    locate(url, seconds) ──► EndpointAddress: the URL as given (``as_given``: for messages), that
        spelling, and the host's addresses (looked up
        once, within ``seconds``: netlookup.resolve; ``problem`` says why none were found)
    same_server(a, b) ──► the same scheme, port and path, and the same host: two IP literals,
        or an IP literal and a name, are the same host when their addresses meet; two names
        (neither ``localhost``) only when they are equal (a gateway may route by name, so two
        names of one address can be two servers)
    duplicate(located) ──► the first pair that is one server, or None
    cache_url(address) ──► the spelling the cache key holds: ``canonical_url``, with a loopback
        host (``localhost``, 127.0.0.0/8, ``::1``) written 127.0.0.1

Public names: ``EndpointAddress``, ``as_given``, ``cache_url``, ``canonical_url``, ``duplicate``, ``locate``, ``same_server``.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import re
import urllib.parse
from dataclasses import dataclass
from typing import Sequence

from ..netlookup import LookupTimeout, canonical_ip, resolve

__all__ = ["EndpointAddress", "as_given", "cache_url", "canonical_url", "duplicate", "locate", "same_server"]

_DEFAULT_PORTS = {"http": 80, "https": 443}
_LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback"})


@dataclass(frozen=True)
class EndpointAddress:
    """An endpoint URL as the comparison sees it (see the module docstring)."""

    given: str  # the URL as the user spelt it (as_given: no credentials, no query)
    scheme: str
    host: str  # lower case; an IP literal in its standard spelling
    port: int
    path: str
    addresses: frozenset[str] = frozenset()  # the host's addresses (standard spelling), empty when unknown
    problem: str | None = None  # why the host has no addresses (the lookup failed or took too long)
    timed_out: bool = False  # the lookup took longer than it had

    @property
    def literal(self) -> bool:
        return canonical_ip(self.host) is not None

    @property
    def canonical(self) -> str:
        return _url(self.scheme, self.host, self.port, self.path)

    def at(self, url: str) -> "EndpointAddress":
        """The same host at ``url``'s path (a server whose API root turned out to be at ``/v1``)."""
        return dataclasses.replace(self, path=_parts(url)[3])


def _parts(url: str) -> tuple[str, str, int, str]:
    parts = urllib.parse.urlsplit(str(url).strip())
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower().rstrip(".")
    host = canonical_ip(host) or host
    try:
        port = parts.port
    except ValueError:
        port = None
    port = port if port is not None else _DEFAULT_PORTS.get(scheme, 0)
    path = re.sub(r"/{2,}", "/", parts.path).rstrip("/")
    return scheme, host, port, path


def _url(scheme: str, host: str, port: int, path: str) -> str:
    shown = f"[{host}]" if ":" in host else host
    if port and port != _DEFAULT_PORTS.get(scheme):
        shown += f":{port}"
    return f"{scheme}://{shown}{path}"


def as_given(url: str) -> str:
    """``url`` as the user spelt it, less what may hold a secret (credentials, query, fragment), escaped."""
    from ..outside_text import shown

    raw = re.split(r"[?#]", str(url).strip(), maxsplit=1)[0]
    scheme, sep, rest = raw.partition("://")
    if sep:
        authority, slash, path = rest.partition("/")
        raw = f"{scheme}://{authority.rsplit('@', 1)[-1]}{slash}{path}"
    return shown(raw, limit=None)


def canonical_url(url: str) -> str:
    """``url`` in one spelling (see the module docstring)."""
    return _url(*_parts(url))


def locate(url: str, seconds: float) -> EndpointAddress:
    """``url``'s spelling and its host's addresses, looked up once within ``seconds``."""
    scheme, host, port, path = _parts(url)
    found, problem, late = frozenset(), None, False
    try:
        found = frozenset(canonical_ip(a) or a for a in resolve(host, port, seconds))
    except OSError as exc:  # LookupTimeout, LookupFailed
        problem, late = str(exc), isinstance(exc, LookupTimeout)
    return EndpointAddress(as_given(url), scheme, host, port, path, found, problem, late)


def _loopback(host: str) -> bool:
    if host in _LOOPBACK_NAMES:
        return True
    ip = canonical_ip(host)
    return ip is not None and ipaddress.ip_address(ip).is_loopback


def same_server(a: EndpointAddress, b: EndpointAddress) -> bool:
    """Whether ``a`` and ``b`` name one server (see the module docstring)."""
    if (a.scheme, a.port, a.path) != (b.scheme, b.port, b.path):
        return False
    if a.host == b.host:
        return True
    names = not a.literal and not b.literal and not (_loopback(a.host) or _loopback(b.host))
    if names:  # two host names: a gateway may route by name
        return False
    return bool(a.addresses & b.addresses)


def duplicate(located: Sequence[EndpointAddress]) -> tuple[EndpointAddress, EndpointAddress] | None:
    """The first two of ``located`` that name one server, or None."""
    for j, b in enumerate(located):
        for a in located[:j]:
            if same_server(a, b):
                return a, b
    return None


def cache_url(url: str) -> str:
    """The spelling of ``url`` in the cache key (see the module docstring)."""
    scheme, host, port, path = _parts(url)
    return _url(scheme, "127.0.0.1" if _loopback(host) else host, port, path)
