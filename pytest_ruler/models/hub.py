"""Hugging Face Hub ids: is the model on this machine, can the Hub be reached.

A name that is no embedded alias, no file and no folder can only be a Hub id.
When it is not in the local Hugging Face cache and the Hub cannot be reached
(``HF_HUB_OFFLINE``, or its host does not resolve or accept a connection),
:func:`check_hub_name` refuses it at once, naming the option the user typed and
the nearest alias, instead of a minute of Hub retries.

Public names: ``hub_cached``, ``hub_offline``, ``check_hub_name``.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import RulerUsageError
from .embedded import EMBEDDED_ALIASES, nearest_alias

__all__ = ["check_hub_name", "hub_cached", "hub_offline"]


def hub_cached(name: str) -> bool:
    """Whether the Hugging Face cache on this machine holds anything of the model ``name``."""
    try:
        from huggingface_hub import constants
    except ImportError:
        return False
    folder = Path(constants.HF_HUB_CACHE) / ("models--" + name.replace("/", "--"))
    return (folder / "snapshots").is_dir()


def hub_offline() -> str | None:
    """Why the Hub cannot be reached, or None when it may be (checked in about a second at most).

    ``HF_HUB_OFFLINE``/``TRANSFORMERS_OFFLINE`` say it outright; otherwise the
    Hub's host name must resolve and its HTTPS port accept a connection (one
    attempt, in the same 3 s; neither honours a proxy, so with an HTTPS proxy set
    the Hub is assumed reachable). Without this, huggingface_hub spends about a
    minute in retries before it says the same (a firewall that drops packets
    lets the name resolve and the connections hang).
    """
    try:
        from huggingface_hub import constants

        if constants.HF_HUB_OFFLINE:
            return "HF_HUB_OFFLINE is set"
        endpoint = constants.ENDPOINT
    except ImportError:
        endpoint = "https://huggingface.co"
    if os.environ.get("TRANSFORMERS_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on"):
        return "TRANSFORMERS_OFFLINE is set"
    if any(os.environ.get(k) for k in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy")):
        return None
    import socket
    import threading
    import time
    from urllib.parse import urlsplit

    host = urlsplit(endpoint).hostname or "huggingface.co"
    failed: list[str] = []

    port = urlsplit(endpoint).port or 443

    def lookup() -> None:
        try:
            found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except OSError:
            failed.append(f"{host} does not resolve (no network)")
            return
        stage.append("connect")
        try:
            family, kind, proto, _, address = found[0]
            with socket.socket(family, kind, proto) as probe:
                probe.settimeout(max(0.1, limit - (time.monotonic() - started)))
                probe.connect(address)
        except OSError as exc:
            failed.append(f"{host}:{port} does not accept connections ({exc.strerror or type(exc).__name__})")

    limit, stage = 3.0, ["resolve"]
    started = time.monotonic()
    worker = threading.Thread(target=lookup, daemon=True)
    worker.start()
    worker.join(limit)
    if worker.is_alive():
        return f"{host} did not resolve within 3 s" if stage[-1] == "resolve" else f"{host}:{port} did not answer within 3 s"
    return failed[0] if failed else None


def check_hub_name(name: str, parameter: str) -> None:
    """Refuse at once a name that can only be a Hub id the machine cannot get.

    ``name`` is not an alias and not a path here. When the local Hugging Face
    cache has it, or the Hub may be reachable, this passes (the load decides);
    offline and not cached, it raises :class:`RulerUsageError` naming
    ``parameter`` (the option the user typed) with the nearest alias.
    """
    if name in EMBEDDED_ALIASES or hub_cached(name):
        return
    why = hub_offline()
    if why is None:
        return
    raise RulerUsageError(
        parameter, name,
        f"it is not an embedded model, a file or a folder, and not in the local Hugging Face cache, "
        f"while the Hub cannot be reached ({why}).{nearest_alias(name)} "
        f"Embedded: {', '.join(EMBEDDED_ALIASES)}; or pass a local .gguf file or model folder",
    )
