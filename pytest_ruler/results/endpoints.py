"""Per-endpoint counts: which server answered what, how fast, from how much cache, and failovers.

An engine over several endpoints (the ``openai`` engine with ``--ruler-base-url`` given
more than once; one endpoint counts too) marks each completion with ``endpoint`` (the URL
that answered, without credentials or query) and ``moved_from`` (the endpoints that failed
it first). Data flow::

    runner.NativeWork.receive, runner.run_mapreduce (CallRecord.served) ──tally(into, completion)──►
        ItemResult.endpoints
        {url: {"requests", "seconds", "prompt_tokens", "cached_tokens"?, "moved_off"}}
        (engine calls only, each on its own endpoint — a think budget's thinking and answer
        calls both, ``Completion.calls``; a cache hit was answered by no endpoint; ``cached_tokens``
        only where the server reports its prefix cache; ``moved_off``: requests that left
        this endpoint because it went down)
    Report ──endpoint_total(items)──► the report's top-level ``endpoints``: the same per URL,
        summed over the items, with ``cached_share`` (cached / prompt tokens, None when the
        server did not say) and ``seconds`` rounded
    endpoint_lines(total) ──► the terminal's lines: one per endpoint when there are several,
        and one naming each endpoint that went down and how many requests moved off it

Per item, so the counts reach an xdist controller with the items (each worker's engine
has its own pool). Public names: ``endpoint_lines``, ``endpoint_total``, ``failover_notes``, ``tally``.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

__all__ = ["endpoint_lines", "endpoint_total", "failover_notes", "tally"]


def tally(into: dict[str, dict[str, Any]], completion: Any) -> None:
    """Count one engine answer into an item's per-endpoint record ``into``: each engine call it
    folds (``Completion.calls``: a think budget's thinking and answer calls) on its own endpoint."""
    calls = getattr(completion, "calls", None)
    for call in (completion,) if calls is None else calls:
        _count(into, call)


def _count(into: dict[str, dict[str, Any]], call: Any) -> None:
    for url in getattr(call, "moved_from", ()) or ():
        into.setdefault(url, _empty())["moved_off"] += 1
    url = getattr(call, "endpoint", None)
    if not url:
        return
    rec = into.setdefault(url, _empty())
    rec["requests"] += 1
    rec["seconds"] = round(rec["seconds"] + float(call.seconds or 0.0), 3)
    rec["prompt_tokens"] += int(call.prompt_tokens or 0)
    if call.cached_tokens is not None:
        rec["cached_tokens"] = rec.get("cached_tokens", 0) + int(call.cached_tokens)


def _empty() -> dict[str, Any]:
    return {"requests": 0, "seconds": 0.0, "prompt_tokens": 0, "moved_off": 0}


def endpoint_total(items: Iterable[Any]) -> dict[str, dict[str, Any]] | None:
    """The items' per-endpoint records summed, with ``cached_share``; None when no item has one."""
    total: dict[str, dict[str, Any]] = {}
    for item in items:
        for url, rec in (getattr(item, "endpoints", None) or {}).items():
            out = total.setdefault(url, _empty())
            for key in ("requests", "prompt_tokens", "moved_off"):
                out[key] += int(rec.get(key, 0))
            out["seconds"] += float(rec.get("seconds", 0.0))
            if rec.get("cached_tokens") is not None:
                out["cached_tokens"] = out.get("cached_tokens", 0) + int(rec["cached_tokens"])
    if not total:
        return None
    for rec in total.values():
        rec["seconds"] = round(rec["seconds"], 3)
        cached = rec.get("cached_tokens")
        rec["cached_share"] = round(cached / rec["prompt_tokens"], 4) if cached is not None and rec["prompt_tokens"] else None
    return {url: total[url] for url in sorted(total)}


def failover_notes(total: Mapping[str, Mapping[str, Any]] | None) -> list[str]:
    """One line per endpoint that went down mid-run, with how many requests moved off it."""
    out = []
    for url, rec in (total or {}).items():
        moved = int(rec.get("moved_off", 0))
        if moved:
            others = [u for u in (total or {}) if u != url and (total or {})[u].get("requests")]
            out.append(f"endpoint {url} failed mid-run: {moved} request{'s' if moved != 1 else ''} moved to "
                       f"{', '.join(others) or 'no other endpoint'} (failover; see the report's endpoints)")
    return out


def endpoint_lines(total: Mapping[str, Mapping[str, Any]] | None) -> list[str]:
    """The terminal's per-endpoint lines (several endpoints, or a failover), without the failover notes."""
    if not total or len(total) < 2:
        return []
    parts = []
    for url, rec in total.items():
        share = rec.get("cached_share")
        parts.append(f"{url} {rec['requests']} requests, {rec['seconds']:.1f} s"
                     + (f", prefix cache {100 * share:.0f}% of prompt tokens" if share is not None else ""))
    return ["endpoints: " + "; ".join(parts)]
