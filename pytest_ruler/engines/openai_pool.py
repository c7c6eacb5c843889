"""The ``openai`` engine's endpoints: one server, or several behind one engine.

``--ruler-base-url`` given several times (ini: one URL per line) names several servers
that serve the same model (vLLM data parallel ranks, one server per GPU behind no
router, replicas behind a gateway that does not route by prefix). :class:`OpenAIPool`
is the engine's base class between the server probing (:mod:`.openai_server`) and the
engine (:mod:`.openai`):

    open_endpoints(config, options) ──► each URL's host looked up once (endpoint_address.locate,
        within the start-up timeout; a host that does not resolve is a server that does not
        answer); one transport per URL, in order; the first that answers is the engine's own (its
        probes run there); each asked GET /models. Refused at start, naming both values: one
        server given twice however spelt (endpoint_address.same_server: ``localhost`` and
        ``127.0.0.1``, ``//v1``, a default port), endpoints that serve the model differently
        (their /models cards differ) or report different context lengths. The start-up check
        (``check_endpoints``, strict) wants every endpoint up; an engine built mid-run (lazily,
        or in an xdist worker) starts with an endpoint that does not answer marked down
    dispatch(requests, run, one, on_result) ──► endpoints.EndpointPool: per endpoint at most
        ``concurrency`` (--ruler-max-concurrency) requests in flight; an xdist worker holds its
        share of those slots (endpoints.worker_limits over PYTEST_XDIST_WORKER /
        PYTEST_XDIST_WORKER_COUNT); a request's ``affinity`` key (the runner's: its item's
        task, length and seed) keeps the samples of one item on one endpoint, whose prefix
        cache then holds their shared opening (off: engine option ``affinity=false``)
        ──► one(index, request, via, move_on_drop) on the chosen endpoint's transport; with
        another endpoint up, a dropped connection is not retried there but raises
        EndpointDown: the endpoint is down for the rest of the run, its requests move, and
        the user is told once ("the server at URL stopped answering ...")
        ──► each Completion carries ``endpoint`` (the URL that answered, without credentials
        or query: ``display_url``) and ``moved_from`` (those that failed it)

``endpoints_key``: the endpoints as the cache identity holds them, in one spelling and sorted
(``endpoint_address.cache_url``), so ``B,A`` after ``A,B`` finds every prediction.

The per-endpoint counts of the report are tallied from those two fields, per item
(:mod:`pytest_ruler.results.endpoints`), so they reach an xdist controller with the items.

Public names: ``OpenAIPool``, ``xdist_worker``.
"""

from __future__ import annotations

import dataclasses
import os
import time
from typing import Any, Callable, Mapping, Sequence

from ..errors import RulerUsageError
from ..outside_text import shown
from .endpoint_address import EndpointAddress, cache_url, duplicate, locate
from .endpoints import EndpointPool, Job, worker_limits
from .openai_server import OpenAIServer, model_card
from .openai_transport import STARTUP_TIMEOUT, HTTPFailure, endpoint_urls, parse_base_url

__all__ = ["OpenAIPool", "xdist_worker"]

_CONTEXT = "max_model_len"


def xdist_worker(environ: Mapping[str, str] | None = None) -> tuple[int, int]:
    """(this worker's number, the number of workers): (0, 1) outside xdist."""
    env = os.environ if environ is None else environ
    name, count = env.get("PYTEST_XDIST_WORKER", ""), env.get("PYTEST_XDIST_WORKER_COUNT", "")
    try:
        return (int(name[2:]), max(1, int(count))) if name.startswith("gw") and count else (0, 1)
    except ValueError:
        return 0, 1


def _silent(t: OpenAIServer) -> str | None:
    """Why endpoint ``t`` does not answer at all (refused, dropped, timed out), or None when it answers."""
    try:
        t.get_json("/models")
    except HTTPFailure as exc:
        return exc.detail if exc.dropped or exc.timed_out else None
    return None


def _refuse_duplicates(located: Sequence[EndpointAddress]) -> None:
    """One server given twice (however spelt) would hold twice --ruler-max-concurrency: refused, naming both."""
    pair = duplicate(located)
    if pair is None:
        return
    a, b = pair
    where = sorted(a.addresses & b.addresses) or [a.host]
    raise RulerUsageError(
        "--ruler-base-url", b.given,
        f"{a.given} and {b.given} are one server ({where[0]} port {a.port}, path {a.path or '/'}); give each server's "
        "URL once (one server given twice would get twice --ruler-max-concurrency requests at once)")


def _card(entry: Mapping[str, Any]) -> dict[str, Any]:
    """What /models says about the model, but its context (compared on its own)."""
    return {k: v for k, v in model_card(entry).items() if k != _CONTEXT}


class OpenAIPool(OpenAIServer):
    """The endpoints of the openai engine (see the module docstring); the engine supplies ``_one``
    and ``_failed``."""

    endpoints: list[OpenAIServer]
    pool: EndpointPool | None = None

    # ------------------------------------------------------------------ start

    @classmethod
    def check_endpoints(cls, config: Any, options: Mapping[str, Any]) -> dict[str, Any]:
        """The start-up check of every endpoint (GET /models, compared; each must answer); the first one's entry."""
        probe = cls.__new__(cls)
        try:
            return probe.open_endpoints(config, options, strict=True, pool=False)
        finally:
            probe.close_endpoints()

    def served(self) -> dict[str, Any]:
        """GET /models at this endpoint: its entry for the model (refused at start when it has none)."""
        return self._served_entry()

    def open_endpoints(self, config: Any, options: Mapping[str, Any], *, strict: bool = False, pool: bool = True) -> dict[str, Any]:
        """Connect to every endpoint, in order; the first that answers is this object's own transport (the
        engine's probes run there) and its GET /models entry is returned. The others are checked against
        it. ``strict`` (the start-up check): every endpoint must answer. Otherwise (an engine built
        mid-run: lazily, or in an xdist worker) an endpoint that does not answer at all is down from the
        start, said once, as long as one answers. ``pool``: then build the pool."""
        urls = endpoint_urls(config.base_url)
        located = self._locate(urls, options)
        self.endpoints, down, entry = [], {}, None
        for n, url in enumerate(urls):
            last = n == len(urls) - 1
            mine = entry is None
            if mine:
                self.close_transport()
            t = self if mine else OpenAIServer()
            t.connect(config, dict(options), url=url)
            why = located[n].problem  # the host does not resolve: the server cannot answer
            if why is not None and (strict or (mine and last)):
                if t is not self:
                    t.close_transport()
                raise t.startup_error(HTTPFailure(why, detail=why, timed_out=located[n].timed_out))
            if why is None and not (strict or (mine and last)):
                why = _silent(t)
            if why is not None:
                if mine:  # the next endpoint may be this engine's own; this one keeps a transport of its own
                    t = OpenAIServer()
                    t.connect(config, dict(options), url=url)
                down[len(self.endpoints)] = why
                self.endpoints.append(t)
                continue
            self.endpoints.append(t)
            if mine:
                entry = self._served_entry()
            else:
                self._compare(t, entry, t._served_entry())
            located[n] = located[n].at(t.base_url)  # its API root may have moved to /v1 (openai_server)
        _refuse_duplicates(located)
        if pool:
            worker, workers = xdist_worker()
            limits = worker_limits(options["concurrency"], len(self.endpoints), worker, workers)
            self.pool = EndpointPool([t.base_url for t in self.endpoints], limits, affinity=bool(options.get("affinity", True)))
            for e, why in down.items():
                self.pool.stats[e].down = why
                self._notice(f"the server at {self.endpoints[e].base_url} does not answer ({shown(why)}); the run goes on with "
                             "the other endpoints")
        assert entry is not None  # the last URL raises when no endpoint answers
        return entry

    @staticmethod
    def _locate(urls: Sequence[str], options: Mapping[str, Any]) -> list[EndpointAddress]:
        """Each URL's form checked, its host looked up once (within the start-up timeout), and the same
        server given twice refused, before anything is sent."""
        seconds = options.get("timeout") or STARTUP_TIMEOUT
        for url in urls:
            parse_base_url(url)  # its form first: a scheme, a host, no credentials
        located = [locate(url, seconds) for url in urls]
        _refuse_duplicates(located)
        return located

    def _compare(self, other: OpenAIServer, ours: Mapping[str, Any], theirs: Mapping[str, Any]) -> None:
        a, b = self.base_url, other.base_url
        if ours.get(_CONTEXT) != theirs.get(_CONTEXT):
            raise RulerUsageError(
                "--ruler-base-url", b,
                f"the endpoints report different context lengths for {shown(repr(self.model))}: {a} says "
                f"{shown(ours.get(_CONTEXT))}, {b} says {shown(theirs.get(_CONTEXT))}; serve the model with the same "
                "--max-model-len on every endpoint (the length budget and the cache need one context)")
        if _card(ours) != _card(theirs):
            raise RulerUsageError(
                "--ruler-base-url", b,
                f"the endpoints serve different models under the name {shown(repr(self.model))}: {a} says "
                f"{shown(_card(ours), limit=400)}, {b} says {shown(_card(theirs), limit=400)}; give endpoints that "
                "serve the same model (one prediction cache and one score cover them all)")

    def close_endpoints(self) -> None:
        """Stop the pool's threads and close every endpoint's connections (idempotent)."""
        pool, self.pool = self.pool, None
        if pool is not None:
            pool.close()
        for other in getattr(self, "endpoints", []):
            if other is not self:
                other.close_transport()
        self.close_transport()

    @property
    def endpoint_urls(self) -> list[str]:
        """The endpoints as shown (no credentials, no query)."""
        return [t.base_url for t in getattr(self, "endpoints", None) or [self]]

    @property
    def endpoints_key(self) -> str | list[str]:
        """The endpoints as the cache key holds them: in one spelling each (``endpoint_address.cache_url``),
        sorted (several), so neither their order nor their spelling changes the key."""
        urls = sorted(cache_url(u) for u in self.endpoint_urls)
        return urls[0] if len(urls) == 1 else urls

    # ------------------------------------------------------------------ requests

    def dispatch(self, requests: Sequence[Any], run: Sequence[int], results: list, on_result: Callable[[int, Any], None] | None,
                 *, wait_notice: float) -> None:
        """Answer ``requests[i]`` for ``i`` in ``run`` over the pool, into ``results``; ``on_result`` here as each
        finishes; a line through ``on_wait`` when none has finished for ``wait_notice`` seconds."""
        pool = self.pool
        assert pool is not None, "open_endpoints() first"
        for other in self.endpoints:
            if other is not self:
                other.on_wait = self.on_wait
        urls = self.endpoint_urls
        down = {e for e, s in enumerate(pool.stats) if s.down is not None}
        started = time.monotonic()

        def send(e: int, job: Job) -> Any:
            others_up = any(s.down is None for k, s in enumerate(pool.stats) if k != e)
            return self._one(job.index, job.payload, via=self.endpoints[e], move_on_drop=others_up)

        def fail(job: Job, why: str) -> Any:
            return self._failed(job.payload, why, time.perf_counter())

        def done(job: Job, completion: Any, e: int | None) -> None:
            completion = dataclasses.replace(completion, endpoint=None if e is None else urls[e],
                                             moved_from=tuple(urls[m] for m in job.moved_from))
            results[job.index] = completion
            for k, s in enumerate(pool.stats):
                if s.down is not None and k not in down:
                    down.add(k)
                    self._notice(f"the server at {urls[k]} stopped answering ({shown(s.down)}); its requests moved to the "
                                 f"other endpoints ({', '.join(u for j, u in enumerate(urls) if j not in down) or 'none left'})")
            self._say_notices()
            if on_result is not None:
                on_result(job.index, completion)

        def waiting(left: int) -> None:
            if self.on_wait is not None:
                where = f"the server at {urls[0]}" if len(urls) == 1 else f"the servers at {', '.join(urls)}"
                self.on_wait(f"ruler: waiting for {where}: {left} request{'s' if left != 1 else ''} in flight, "
                             f"{time.monotonic() - started:.0f} s so far ({len(run) - left} of {len(run)} done)")

        jobs = [Job(i, getattr(requests[i], "affinity", None), requests[i]) for i in run]
        pool.run(jobs, send, fail, done, tick=wait_notice, on_tick=waiting)

    def moves(self, exc: HTTPFailure, move_on_drop: bool) -> bool:
        """Whether ``exc`` should move the request to another endpoint (raise :class:`EndpointDown`)."""
        return move_on_drop and exc.dropped

