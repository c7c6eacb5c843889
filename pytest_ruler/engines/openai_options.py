"""Options of the ``openai`` engine (import-light: no HTTP client is imported).

``OPTIONS`` declares what :class:`~pytest_ruler.engines.openai.OpenAIEngine`
reads from ``EngineConfig.options``; :mod:`.options` coerces the values once.

Public names: ``OPTIONS``, ``ENDPOINTS``, ``MAX_CONCURRENCY``, ``PROMPT_FORMATS``.
"""

from __future__ import annotations

from .declaration import EngineOption

__all__ = ["ENDPOINTS", "MAX_CONCURRENCY", "OPTIONS", "PROMPT_FORMATS"]

# requests in flight per endpoint, at most: vLLM's largest default batch (--max-num-seqs 1024 on
# large GPUs); more only wait in the server's queue, each holding a connection (a file descriptor
# of the 1024 a process gets by default) and a thread here. Above it: refused at start.
MAX_CONCURRENCY = 1024

ENDPOINTS = ("auto", "completions", "chat")
PROMPT_FORMATS = ("auto", "ids", "text")

OPTIONS: tuple[EngineOption, ...] = (
    EngineOption("concurrency", "int", 8, "requests in flight per endpoint, at most 1024 (with xdist: per endpoint for the "
                 "whole run, each worker holding its share). With --ruler-base-url given several times each endpoint gets this "
                 "many. No more threads are started than requests are waiting; above 1024 (vLLM's largest default batch) "
                 "requests would only wait in the server's queue, so a larger value is refused at start",
                 minimum=1, maximum=MAX_CONCURRENCY, cli="max-concurrency"),
    EngineOption(
        "timeout", "float", None,
        "seconds a request may take in all, however slowly the server sends its answer; by default 120 s plus 5 s "
        "per 1K prompt tokens (140 s at 4K, 760 s at 128K), since a non-streamed long prompt sends nothing until it "
        "is done. The start-up check (GET /models) takes at most 10 s in all, or this long when given",
        minimum=0.001,
    ),
    EngineOption(
        "max_retries", "int", 5,
        "retries after 429, 5xx and dropped connections, with exponential backoff and jitter; Retry-After (seconds "
        "or a date) is honoured, up to 120 s. A request that timed out is retried once only (a hung server stays "
        "hung), and no retry starts more than 10 minutes after the first attempt's deadline",
        minimum=0,
    ),
    EngineOption("retry_backoff", "float", 1.0, "the first retry delay in seconds (doubled per retry, at most 30 s)", minimum=0.0),
    EngineOption(
        "endpoint", "choice", "auto",
        "completions, chat, or auto (completions, falling back to chat when the server answers 404/405 for it)",
        choices=ENDPOINTS,
    ),
    EngineOption(
        "prompt_format", "choice", "auto",
        "ids or text for the completions prompt; auto sends token ids when the server accepts them (vLLM, "
        "OpenAI do), so what was budgeted is exactly what runs",
        choices=PROMPT_FORMATS,
    ),
    EngineOption(
        "max_context", "int", None,
        "the model's context when the server does not say (--ruler-max-model-len overrides every other source)",
        minimum=1,
    ),
    EngineOption(
        "extra_body", "json", None,
        "JSON fields added to every request, for server-specific sampling settings. llama.cpp servers apply "
        'repeat_penalty 1.1 even at temperature 0; when /models says the server is llama.cpp the engine sends '
        '{"repeat_penalty": 1.0} itself (extra_body overrides it)',
        mapping=True,
    ),
    EngineOption(
        "affinity", "bool", True,
        "several endpoints: keep the samples of one item (task, length, seed) on one endpoint, whose prefix cache "
        "then holds their shared opening (false: each request to the least loaded endpoint)",
    ),
)
