"""Per-endpoint counts: which server answered what, how fast, from how much cache, and failovers.

An engine over several endpoints (the ``openai`` engine with ``--ruler-base-url`` given
more than once; one endpoint counts too) marks each completion with ``endpoint`` (the URL
that answered, without credentials or query) and ``moved_from`` (the endpoints that failed
it first). Data flow::

    runner.NativeWork.receive, runner.run_mapreduce (CallRecord.served) ──tally(into, completion)──►
        ItemResult.endpoints
        {url: {"requests", "seconds", "prompt_tokens", "cached_tokens"?, "cached_untrusted"?, "moved_off"}}
        (engine calls only, each on its own endpoint — a think budget's thinking and answer
        calls both, ``Completion.calls``; a cache hit was answered by no endpoint; ``cached_tokens``
        only where the server reports its prefix cache; ``moved_off``: requests that left
        this endpoint because it went down)
    Report ──endpoint_total(items)──► the report's top-level ``endpoints``: the same per URL,
        summed over the items, with ``cached_share`` (cached / prompt tokens, None when the
        server did not say) and ``seconds`` rounded
    endpoint_lines(total) ──► the terminal's lines: one per endpoint when there are several,
        and one naming each endpoint that went down and how many requests moved off it

A server's prefix-cache count is trusted only when it can be true (``trusted_cached``: a count
no larger than the prompt it was reported for). One that cannot (a server that says 10^12 tokens
of a 4K prompt came from its cache) is left out of every sum and counted instead: per item
``prefix_cache["untrusted"]`` (``count_prefix_cache`` into the accumulator the runner keeps,
``prefix_cache_record``), per endpoint ``cached_untrusted``; ``prefix_cache_notes(items)`` is the
report's warning that says so (run.outcome adds it to ``warnings``), so a share is never above 1.

Per item, so the counts reach an xdist controller with the items (each worker's engine
has its own pool). Public names: ``count_prefix_cache``, ``endpoint_lines``, ``endpoint_total``,
``failover_notes``, ``prefix_cache_notes``, ``prefix_cache_record``, ``tally``, ``trusted_cached``.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

__all__ = ["count_prefix_cache", "endpoint_lines", "endpoint_total", "failover_notes", "prefix_cache_notes",
           "prefix_cache_record", "tally", "trusted_cached"]


def tally(into: dict[str, dict[str, Any]], completion: Any) -> None:
    """Count one engine answer into an item's per-endpoint record ``into``: each engine call it
    folds (``Completion.calls``: a think budget's thinking and answer calls) on its own endpoint."""
    calls = getattr(completion, "calls", None)
    for call in (completion,) if calls is None else calls:
        _count(into, call)


def trusted_cached(cached: Any, prompt: Any) -> bool:
    """Whether a reported count of prompt tokens served from the prefix cache can be true: a count
    (an int, not negative) no larger than the prompt it was reported for."""
    return (isinstance(cached, int) and not isinstance(cached, bool) and isinstance(prompt, int)
            and 0 <= cached <= prompt)


def count_prefix_cache(into: dict[str, int], completion: Any) -> None:
    """Count one engine answer's prefix-cache report into an item's ``prefix_cache`` accumulator
    (``{"prompt_tokens": 0, "cached_tokens": 0}``); a count that cannot be true is left out and
    counted as ``untrusted``."""
    cached = getattr(completion, "cached_tokens", None)
    if cached is None:
        return
    prompt = int(completion.prompt_tokens or 0)
    if not trusted_cached(cached, prompt):
        into["untrusted"] = into.get("untrusted", 0) + 1
        return
    into["prompt_tokens"] += prompt
    into["cached_tokens"] += cached


def prefix_cache_record(into: Mapping[str, int]) -> dict[str, int]:
    """An item's ``prefix_cache`` entry from its accumulator: {} when no answer reported one."""
    return dict(into) if into.get("prompt_tokens") or into.get("untrusted") else {}


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
    if call.cached_tokens is None:
        return
    if trusted_cached(call.cached_tokens, int(call.prompt_tokens or 0)):
        rec["cached_tokens"] = rec.get("cached_tokens", 0) + int(call.cached_tokens)
    else:  # a count that cannot be true (more than the prompt): left out, counted
        rec["cached_untrusted"] = rec.get("cached_untrusted", 0) + 1


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
            untrusted = int(rec.get("cached_untrusted", 0))
            if rec.get("cached_tokens") is not None:
                if trusted_cached(rec["cached_tokens"], rec.get("prompt_tokens")):
                    out["cached_tokens"] = out.get("cached_tokens", 0) + int(rec["cached_tokens"])
                else:  # a saved record that cannot be true (from before this check, or edited)
                    untrusted += int(rec.get("requests", 0)) or 1
            if untrusted:
                out["cached_untrusted"] = out.get("cached_untrusted", 0) + untrusted
    if not total:
        return None
    for rec in total.values():
        rec["seconds"] = round(rec["seconds"], 3)
        cached = rec.get("cached_tokens")
        rec["cached_share"] = round(cached / rec["prompt_tokens"], 4) if cached is not None and rec["prompt_tokens"] else None
    return {url: total[url] for url in sorted(total)}


def prefix_cache_notes(items: Iterable[Any]) -> list[str]:
    """The report's warning when an engine reported prefix-cache counts that cannot be true (more
    tokens from the cache than the prompt had): how many answers, at which endpoints; [] when none."""
    items = list(items)
    answers = 0
    for item in items:
        if getattr(item, "mode", "native") == "native":
            record = getattr(item, "prefix_cache", None) or {}
            answers += int(record.get("untrusted", 0))
            if record.get("prompt_tokens") is not None and not trusted_cached(record.get("cached_tokens", 0), record["prompt_tokens"]):
                answers += 1  # a saved item whose own counts cannot be true
        else:  # a map-reduce twin's calls are counted per endpoint only
            answers += sum(int(rec.get("cached_untrusted", 0)) for rec in (getattr(item, "endpoints", None) or {}).values())
    if not answers:
        return []
    where = [f"{url} ({rec['cached_untrusted']})" for url, rec in (endpoint_total(items) or {}).items() if rec.get("cached_untrusted")]
    return [f"the engine reported more prompt tokens served from its prefix cache than the prompt had (cached_tokens > "
            f"prompt_tokens) for {answers} answer{'s' if answers != 1 else ''}"
            + (f", at {', '.join(where)}" if where else "")
            + "; those counts are not trusted and are left out of the prefix-cache share"]


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
