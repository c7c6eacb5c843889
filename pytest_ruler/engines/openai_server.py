"""What an OpenAI-compatible server serves, and how it wants its prompts.

:class:`OpenAIServer` sits between the transport (:mod:`.openai_transport`)
and the engine (:mod:`.openai`):

    _served_entry()     ──► GET {base}/models (and {base}/v1/models when that is 404),
                            10 s for both together: the server answers and serves the model
    model_card(entry)   ──► what /models says about the model, for the cache identity
                            (vLLM: root, max_model_len; llama.cpp: its meta; others: what
                            they offer), without fields that change per call (created,
                            permission ids); ``tells_models_apart`` says whether it names
                            more than the model's name and owner
    _choose_endpoint    ──► one-token probes of /completions: token ids, text, or chat

``startup_error(exc)``: the start-up check's error for ``exc`` (also the pool's, for a host that
does not resolve).

Every server-given text in an error (model names, error bodies) is shown
escaped and scrubbed (:func:`~pytest_ruler.outside_text.shown`).

Public names: ``OpenAIServer``, ``model_card``, ``tells_models_apart``.
"""

from __future__ import annotations

import logging
import time
from typing import Any, Mapping

from ..errors import RulerUsageError
from ..outside_text import shown
from ..secrets import API_KEY_ENV, scrub
from .openai_transport import STARTUP_TIMEOUT, HTTPFailure, OpenAITransport, display_url
from .options import PARAMETER

__all__ = ["OpenAIServer", "model_card", "tells_models_apart"]

log = logging.getLogger("pytest_ruler.engines.openai")

# /models fields that change from one call to the next (vLLM stamps each listing) or say nothing
_VOLATILE = frozenset({"created", "permission", "permissions", "object"})
# fields that name the model without telling two models served under that name apart
_NAME_ONLY = frozenset({"id", "owned_by"})


def _clean(value: Any) -> Any:
    """A /models value as the identity keeps it: strings scrubbed, URLs without user info or query."""
    if isinstance(value, str):
        return display_url(value) if "://" in value else scrub(value)
    if isinstance(value, Mapping):
        return {str(k): _clean(v) for k, v in value.items() if k not in _VOLATILE}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    return value


def model_card(entry: Mapping[str, Any]) -> dict[str, Any]:
    """What the server's ``/models`` entry says about the model, minus the per-call fields."""
    return {str(k): _clean(v) for k, v in entry.items() if k not in _VOLATILE}


def tells_models_apart(card: Mapping[str, Any]) -> bool:
    """Whether the card says more than the model's name and owner (a path, a size, a context)."""
    return any(v not in (None, "", [], {}) for k, v in card.items() if k not in _NAME_ONLY)


class OpenAIServer(OpenAITransport):
    """Server probing of the openai engine. The engine subclass supplies ``tokenizer`` and
    ``extra_body``, which the one-token probes of :meth:`_choose_endpoint` send."""

    def _served_entry(self) -> dict[str, Any]:
        """GET /models (at most 10 s, or ``timeout``, in all): the server must answer and serve ``self.model``."""
        deadline = time.monotonic() + (self.timeout or STARTUP_TIMEOUT)
        try:
            data = self.get_json("/models", deadline=deadline)
        except HTTPFailure as exc:
            if exc.status == 404 and not self._base.rstrip("/").endswith("/v1"):
                alt = self._base + "/v1"
                try:
                    data = self.get_json("/models", base=alt, deadline=deadline)
                except HTTPFailure:
                    data = None
                if data is not None:
                    log.info("openai engine: %s has no /models; using %s", self.base_url, display_url(alt))
                    self._base, self.base_url = alt, display_url(alt)
                    return self._pick_model(data)
            raise self.startup_error(exc) from None
        return self._pick_model(data)

    def startup_error(self, exc: HTTPFailure) -> RulerUsageError:
        """The start-up check's error for a server that did not answer as it should (``exc``): refused
        key, no answer in time, unreachable (a host that does not resolve too), or another status."""
        url = self.base_url
        if exc.status in (401, 403):
            have = "is set but was refused" if self._key else "is not set"
            return RulerUsageError(
                "--ruler-base-url", url,
                f"the server refused the request (HTTP {exc.status}): the API key from {API_KEY_ENV} {have}; "
                f"export {API_KEY_ENV} with the server's key",
            )
        if exc.timed_out:
            return RulerUsageError(
                "--ruler-base-url", url,
                f"the server did not answer GET {url}/models within {self.timeout or STARTUP_TIMEOUT:g} s; check that it is "
                "up and not overloaded (or pass --ruler-engine-option=timeout=SECONDS to wait longer)",
            )
        if exc.status is None:
            return RulerUsageError(
                "--ruler-base-url", url,
                f"the OpenAI-compatible server is unreachable ({exc.detail}); start it first, e.g. "
                f"`vllm serve MODEL --port 8000`, then pass its API root, e.g. http://127.0.0.1:8000/v1",
            )
        return RulerUsageError(
            "--ruler-base-url", url,
            f"GET {url}/models answered HTTP {exc.status} ({exc.detail}); is this the API root of an "
            "OpenAI-compatible server (it usually ends in /v1)?",
        )

    def _pick_model(self, data: Any) -> dict[str, Any]:
        entries = data.get("data") if isinstance(data, dict) else None
        if not isinstance(entries, list):
            raise RulerUsageError(
                "--ruler-base-url", self.base_url,
                "GET /models did not return an OpenAI model list; is this an OpenAI-compatible server?",
            )
        served = [e for e in entries if isinstance(e, dict) and "id" in e]
        for entry in served:
            if entry["id"] == self.model:
                return entry
        names = ", ".join(repr(scrub(str(e["id"]))) for e in served[:20]) or "none"
        if len(served) > 20:
            names += f" and {len(served) - 20} more"
        raise RulerUsageError(
            "--ruler-model", self.model,
            f"the server at {self.base_url} does not serve this model; it serves: {shown(names, limit=2000)}. "
            "Pass one of these with --ruler-model (and the matching --ruler-tokenizer if it is not a local name)",
        )

    def _choose_endpoint(self, endpoint: str, prompt_format: str) -> tuple[str, str]:
        """Probe /completions with one-token requests: which endpoint, ids or text.

        Token ids first (exactly what was budgeted). Servers that want text say
        so differently: 400/422, or 500 from llama-cpp-python (its validation
        error). A 5xx is only taken as "no ids" when a text probe then works
        and the ids probe fails a second time, so a transient error never
        switches a vLLM server to text. Text is sent with
        ``add_special_tokens: false`` (vLLM: no BOS, as counted) or, when a
        strict server refuses that field, without it.
        """
        if endpoint == "chat":
            return "chat", "messages"
        if prompt_format in ("auto", "ids"):
            try:
                self._probe("ids", retries=0 if prompt_format == "auto" else 2)
                return "completions", "ids"
            except HTTPFailure as exc:
                if exc.status in (404, 405):
                    return self._no_completions(endpoint, exc)
                if prompt_format == "ids" or not (exc.status in (400, 422) or exc.retryable):
                    raise self._probe_error(exc) from None
                ids_failure = exc
            self._probe_text()  # raises when text fails too
            if ids_failure.status not in (400, 422):
                try:
                    self._probe("ids", retries=0)
                except HTTPFailure:
                    pass
                else:  # the first failure was transient after all
                    return "completions", "ids"
            log.info("openai engine: %s refuses token-id prompts (%s); sending text", self.base_url, ids_failure.detail)
            return "completions", "text"
        self._probe_text()
        return "completions", "text"

    def _probe(self, fmt: str, *, retries: int, no_bos_field: bool = False) -> None:
        body: dict[str, Any] = {"model": self.model, "max_tokens": 1, "temperature": 0, **self.extra_body}
        if fmt == "ids":
            body["prompt"] = self.tokenizer.encode("Hello") or [0]
        else:
            body["prompt"] = "Hello"
            if no_bos_field:
                body["add_special_tokens"] = False
        self.post_json("/completions", body, retries=retries)

    def _probe_text(self) -> None:
        try:
            self._probe("text", retries=2, no_bos_field=True)
            self._no_bos_field = True
            return
        except HTTPFailure as exc:
            if exc.status not in (400, 422):
                raise self._probe_error(exc) from None
        try:  # a strict server that refuses the add_special_tokens field
            self._probe("text", retries=2)
        except HTTPFailure as exc:
            raise self._probe_error(exc) from None
        self._no_bos_field = False

    def _no_completions(self, endpoint: str, exc: HTTPFailure) -> tuple[str, str]:
        if endpoint == "auto":
            log.info("openai engine: %s has no /completions; using /chat/completions", self.base_url)
            return "chat", "messages"
        raise RulerUsageError(
            PARAMETER, f"endpoint={endpoint}",
            f"the server at {self.base_url} has no /completions endpoint (HTTP {exc.status}); use 'chat' or 'auto'",
        )

    def _probe_error(self, exc: HTTPFailure) -> RulerUsageError:
        return RulerUsageError(
            "--ruler-base-url", self.base_url,
            f"a one-token test completion failed ({exc}); check the model name, the options and the server's log",
        )
