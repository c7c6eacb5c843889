"""The ``hf`` engine: transformers on CPU or CUDA, greedy, stops at EOS.

Model names mean what :mod:`pytest_ruler.models` says (an embedded alias, a
``.gguf`` file, a local folder, a Hugging Face id at the ``revision`` option): this
engine asks :func:`~pytest_ruler.models.sources.resolve` and loads what
:func:`~pytest_ruler.models.sources.weights_to_load` names (a GGUF is converted once
into an fp32 safetensors folder in the cache, :mod:`pytest_ruler.models.gguf`). The
start-up check is :func:`pytest_ruler.models.checks.check_model` (no weights loaded;
a Hub id neither cached nor reachable fails at once, naming the nearest alias).
``trust_remote_code`` is off unless the user passes it.

Options (``EngineConfig.options``): declared in :mod:`.hf_options` (``OPTIONS``, coerced by :mod:`.options`).
The context length is the model config's ``max_position_embeddings`` unless ``--ruler-max-model-len`` says
otherwise (:mod:`.context`, the same rule as the start-up check).

Progress inside a batch: when the session sets ``on_progress`` for a call,
each sub-batch reports its start and every decoding step to it (a
``StoppingCriteria`` that never stops), so a long batch shows how far it is.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any, Mapping, Sequence

from ..errors import RulerUsageError
from ..models.checks import check_model as check_model_name
from ..models.checks import config_context, safetensors_damage
from ..models.gguf import converted_gguf_folder
from ..models.sources import ModelSource, folder_identity, resolve, weights_to_load
from ..tasks.tokenizer import load_tokenizer
from .base import Completion, EngineBase, EngineConfig, GenerationRequest, ResultCallback, check_context
from . import gpus
from .core_share import CoreShare
from .gpus import worker_threads
from .hf_options import OPTIONS, dtype_choice
from .options import engine_options

# converted_gguf_folder, folder_identity, safetensors_damage: re-exported (they lived here once)
__all__ = ["OPTIONS", "HFEngine", "check_device", "check_model", "safetensors_damage", "converted_gguf_folder", "folder_identity", "resolve_model"]


def _model(config: EngineConfig) -> ModelSource:
    """What ``--ruler-model`` names, at this engine's ``revision`` option."""
    return resolve(config.model, "--ruler-model", revision=engine_options(config, "hf")["revision"])


def resolve_model(name: str) -> tuple[str, Path | None]:
    """(kind, path) of a model name: the older form of :func:`pytest_ruler.models.sources.resolve`."""
    source = resolve(name, "--ruler-model")
    return source.kind, source.path


def check_model(config: EngineConfig) -> int | None:
    """The start-up check of the model, without loading weights; returns its context length
    (:func:`pytest_ruler.models.checks.check_model`, at this engine's ``revision``)."""
    return check_model_name(config.model, revision=engine_options(config, "hf")["revision"])


def check_device(config: EngineConfig) -> None:
    """``--ruler-device`` names a GPU this process can see (asked without importing torch).

    The format (auto, cpu, cuda, cuda:N) is the option parser's; here ``cuda`` needs a
    visible GPU and ``cuda:N`` needs N below the visible count (indices count the
    devices ``CUDA_VISIBLE_DEVICES`` leaves, as torch does). When the count cannot be
    told (device files but no nvidia-smi), the load decides.
    """
    device = config.device
    if not device.startswith("cuda"):
        return
    if not gpus.gpu_visible():
        raise RulerUsageError("--ruler-device", device, "no CUDA device is visible to this process (CUDA_VISIBLE_DEVICES="
                              f"{os.environ.get('CUDA_VISIBLE_DEVICES', '<unset>')}); use --ruler-device=cpu or auto")
    seen = gpus.visible_gpus()
    _, _, index = device.partition(":")
    if seen and index and int(index) >= len(seen):
        n = len(seen)
        have = "cuda:0" if n == 1 else f"cuda:0 to cuda:{n - 1}"
        raise RulerUsageError("--ruler-device", device, f"this process sees {n} CUDA device{'s' if n != 1 else ''} ({have}); "
                              "pass one of them, cuda or auto")


def _device_and_dtype(config: EngineConfig, cuda_available: bool) -> tuple[str, str]:
    device = config.device
    if device == "auto":
        device = "cuda" if cuda_available else "cpu"
    return device, dtype_choice(config, device).dtype


class HFEngine(EngineBase):
    """Greedy generation with transformers (see the module docstring).

    ``on_progress`` (EngineBase), when the session sets it for a call, is called when a
    sub-batch starts and at each decoding step."""

    name = "hf"

    @staticmethod
    def describe(config: EngineConfig) -> Mapping[str, Any]:
        """The cache identity, without loading the model (no torch import; threads are not in it: hf_options)."""
        _, model_identity = weights_to_load(_model(config))
        device, dtype = _device_and_dtype(config, gpus.gpu_visible())
        return {
            "engine": "hf",
            "model": model_identity,
            "tokenizer": config.tokenizer or None,
            "dtype": dtype,
            "device": "cuda" if device.startswith("cuda") else "cpu",
            "trust_remote_code": bool(config.trust_remote_code),
            # hf_overrides change the model: in the identity when given (absent otherwise, so older cache keys hold)
            **({"hf_overrides": dict(overrides)} if (overrides := engine_options(config, "hf")["hf_overrides"]) else {}),
        }

    @staticmethod
    def preflight(config: EngineConfig) -> int | None:
        """The start-up check (:func:`check_device`, then :func:`check_model`): no weights are loaded."""
        check_device(config)
        return check_model(config)

    def __init__(self, config: EngineConfig):
        try:
            import torch
            import transformers
        except ImportError as exc:
            raise RulerUsageError("--ruler-backend", "hf", 'the transformers engine needs torch and transformers: pip install torch==2.13.0 (CPU) then pip install "pytest-ruler[hf]"') from exc
        self.config = config
        opts = engine_options(config, "hf")
        share = None if opts["threads"] else worker_threads()  # an xdist worker's share of the cores, unless the user set them
        threads = opts["threads"] or share
        if threads:
            torch.set_num_threads(threads)
        # on CPU, a worker whose peers have finished takes their cores (engines.core_share)
        self._cores = CoreShare.for_worker(gpus.allowed_cpu_count()) if share else None
        self._threads = threads
        device, dtype_name = _device_and_dtype(config, torch.cuda.is_available())
        if device.startswith("cuda") and not torch.cuda.is_available():
            raise RulerUsageError("--ruler-device", config.device, "no CUDA device is visible; use --ruler-device=cpu or auto")
        self.device = device
        dtype = getattr(torch, dtype_name, None)
        if not isinstance(dtype, torch.dtype):
            raise RulerUsageError("--ruler-dtype", config.dtype, "use auto, float32, bfloat16 or float16")
        self.dtype = dtype_name
        revision = opts["revision"]
        # the tokenizer first: it is cheap, and a GGUF without one should say so before any conversion
        self.tokenizer = load_tokenizer(config.tokenizer or config.model, trust_remote_code=config.trust_remote_code)
        source, _ = weights_to_load(_model(config))
        started = time.perf_counter()
        overrides = opts["hf_overrides"] or {}
        extra = {"config": _overridden(transformers, source, overrides, config.trust_remote_code, revision)} if overrides else {}
        try:
            model = transformers.AutoModelForCausalLM.from_pretrained(
                source, dtype=dtype, trust_remote_code=config.trust_remote_code, revision=revision, **extra
            )
        except Exception as exc:
            raise RulerUsageError("--ruler-model", config.model, f"transformers could not load it ({type(exc).__name__}: {exc}); pass a local folder, a .gguf file, or a Hugging Face id present in the local cache") from exc
        self.model = model.to(device).eval()
        self.load_seconds = time.perf_counter() - started
        context = self.context_length(config, config_context(model.config.to_dict()))
        if context.tokens is None:
            raise RulerUsageError("--ruler-max-model-len", None, "the model config has no max_position_embeddings; pass the context length explicitly")
        self.max_context = context.tokens
        eos = model.generation_config.eos_token_id if model.generation_config is not None else None
        eos = eos if eos is not None else model.config.eos_token_id
        self.eos_ids = [eos] if isinstance(eos, int) else list(eos or [])
        if self.tokenizer.eos_token:
            tid = self.tokenizer.backend.token_to_id(self.tokenizer.eos_token)
            if tid is not None and tid not in self.eos_ids:
                self.eos_ids.append(tid)
        self.pad_id = self.eos_ids[0] if self.eos_ids else 0
        self.batch_size = int(config.batch_size or opts["batch_size"] or (8 if device.startswith("cuda") else 4))
        self._identity = dict(self.describe(config))
        self._identity["device"] = "cuda" if device.startswith("cuda") else "cpu"

    def identity(self) -> Mapping[str, Any]:
        return dict(self._identity)

    def generate(self, requests: Sequence[GenerationRequest], on_result: ResultCallback | None = None) -> list[Completion]:
        results: list[Completion | None] = [None] * len(requests)
        run, refused = check_context(requests, self.max_context)
        for i, c in refused.items():
            results[i] = c
            if on_result:
                on_result(i, c)
        # group by max_tokens so a batch shares its stopping budget; longest first pads least
        order = sorted(run, key=lambda i: (requests[i].max_tokens, -requests[i].prompt_tokens))
        for start in range(0, len(order), self.batch_size):
            batch = order[start:start + self.batch_size]
            self._follow_cores()
            for i, c in zip(batch, self._generate_batch([requests[i] for i in batch])):
                results[i] = c
                if on_result:
                    on_result(i, c)
        return [c for c in results if c is not None]

    def _generate_batch(self, batch: Sequence[GenerationRequest]) -> list[Completion]:
        import torch

        started = time.perf_counter()
        width = max(r.prompt_tokens for r in batch)
        ids = torch.full((len(batch), width), self.pad_id, dtype=torch.long)
        mask = torch.zeros((len(batch), width), dtype=torch.long)
        for row, r in enumerate(batch):  # left padding: generation continues at the right edge
            ids[row, width - r.prompt_tokens:] = torch.tensor(r.prompt_ids, dtype=torch.long)
            mask[row, width - r.prompt_tokens:] = 1
        max_new = max(r.max_tokens for r in batch)
        try:
            with torch.inference_mode():
                out = self.model.generate(
                    **self._steps(batch, width, max_new),
                    input_ids=ids.to(self.device),
                    attention_mask=mask.to(self.device),
                    max_new_tokens=max_new,
                    do_sample=False,
                    num_beams=1,
                    temperature=None,
                    top_p=None,
                    top_k=None,
                    eos_token_id=self.eos_ids or None,
                    pad_token_id=self.pad_id,
                )
        except Exception as exc:  # a failing batch is recorded, the run goes on
            message = f"{type(exc).__name__}: {exc}"
            return [Completion("", r.prompt_tokens, 0, "error", 0.0, message) for r in batch]
        seconds = (time.perf_counter() - started) / len(batch)
        completions = []
        for row, r in enumerate(batch):
            new = out[row, width:].tolist()[: r.max_tokens]
            finish = "length"
            for k, tok in enumerate(new):
                if tok in self.eos_ids:
                    new, finish = new[:k], "stop"
                    break
            text = self.tokenizer.backend.decode(new, skip_special_tokens=True)
            for s in r.stop:
                cut = text.find(s)
                if cut >= 0:
                    text, finish = text[:cut], "stop"
            completions.append(Completion(text, r.prompt_tokens, len(new), finish, seconds))
        return completions

    def _steps(self, batch: Sequence[GenerationRequest], width: int, max_new: int) -> dict[str, Any]:
        """``generate`` keywords that report each decoding step to ``on_progress`` (none without it)."""
        report = self.on_progress
        if report is None:
            return {}
        from transformers import StoppingCriteria, StoppingCriteriaList

        prompt_tokens = sum(r.prompt_tokens for r in batch)

        class _Step(StoppingCriteria):  # never stops anything: it only reports
            def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
                import torch

                report(len(batch), prompt_tokens, int(input_ids.shape[-1]) - width, max_new)
                return torch.zeros(input_ids.shape[0], dtype=torch.bool, device=input_ids.device)

        report(len(batch), prompt_tokens, 0, max_new)
        return {"stopping_criteria": StoppingCriteriaList([_Step()])}

    def _follow_cores(self) -> None:
        if self._cores is None or self.device.startswith("cuda"):
            return
        threads = self._cores.threads()
        if threads != self._threads:
            import torch

            torch.set_num_threads(threads)
            self._threads = threads

    def close(self) -> None:
        if getattr(self, "_cores", None) is not None:
            self._cores.release()
        self.model = None


def _overridden(transformers: Any, source: Any, overrides: Mapping[str, Any], trust_remote_code: bool, revision: Any) -> Any:
    """The model's config with ``hf_overrides`` applied: a dict value merged into the config's own dict
    (``rope_parameters``), anything else set; a key the config does not have is refused (a typo changes nothing)."""
    cfg = transformers.AutoConfig.from_pretrained(source, trust_remote_code=trust_remote_code, revision=revision)
    for key, value in overrides.items():
        if not hasattr(cfg, key):
            raise RulerUsageError("hf_overrides", key, f"the model's config has no {key!r}; its keys: {', '.join(sorted(cfg.to_dict()))}")
        current = getattr(cfg, key)
        setattr(cfg, key, {**current, **value} if isinstance(current, dict) and isinstance(value, Mapping) else value)
    return cfg
