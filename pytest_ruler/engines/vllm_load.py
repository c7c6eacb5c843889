"""What a vLLM load is made of, worked out from a config without vLLM: shared by the vllm and ray engines.

    EngineConfig + engine name + device ──VLLMLoad.plan(...)──► VLLMLoad
        .options       the engine's typed options (``vllm``'s, or ``ray``'s: vllm's plus Ray's own)
        .model_path    what vLLM loads (a GGUF becomes a prepared folder, :func:`.vllm_model.model_source`)
        .model_ident   the model part of the cache identity
        .model_config  the model's config.json, when it is local (None otherwise)
        .kwargs        the keyword arguments of ``vllm.LLM`` (:func:`.vllm_kwargs.llm_kwargs`)
    VLLMLoad ──.tokenizer()──► the tokenizer vLLM decodes with (the budget counts with the same one)
             ──.identity()──► the vllm engine's cache identity (:func:`.vllm_model.describe`)
             ──.sampling(request)──► ``vllm.SamplingParams`` arguments for one request

The vllm engine (:mod:`.vllm`) runs ``vllm.LLM(**load.kwargs)`` in this process; the ray engine
(:mod:`.ray_data`) hands the same arguments to Ray Data's vLLM stage. Each engine holds a
``VLLMLoad``: the ray engine is not a vllm engine, it uses the same plan.

Public names: ``VLLMLoad``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from ..tasks.tokenizer import Tokenizer, load_tokenizer
from .base import EngineConfig, GenerationRequest
from .options import engine_options
from .vllm_kwargs import llm_kwargs
from .vllm_model import describe, is_gguf, model_source, native_max_len, read_model_config
from .vllm_options import sampling_kwargs

__all__ = ["VLLMLoad"]


@dataclass
class VLLMLoad:
    """One engine's vLLM load (see the module docstring); ``kwargs`` may be completed by the engine
    (the ray engine sets the context it resolved)."""

    config: EngineConfig
    options: Mapping[str, Any]
    device: str
    model_path: str
    model_ident: Mapping[str, Any]
    model_config: Mapping[str, Any] | None
    kwargs: dict[str, Any]

    @classmethod
    def plan(cls, config: EngineConfig, backend: str, device: str) -> "VLLMLoad":
        """The load ``config`` asks for on ``device`` (``cpu``/``cuda``), reading ``backend``'s options.
        Raises RulerUsageError for a bad option or an unreadable model (no vLLM needed)."""
        options = engine_options(config, backend)  # typed, with the declared defaults
        model_path, model_ident = model_source(config)
        model_config = read_model_config(model_path, options["revision"])
        kwargs = llm_kwargs(config, model_config=model_config, model_path=model_path, device=device)
        return cls(config, options, device, model_path, model_ident, model_config, kwargs)

    def tokenizer(self) -> Tokenizer:
        """The tokenizer vLLM decodes with: for a GGUF model, the prepared folder holds this very one."""
        name = self.kwargs.get("tokenizer") or ((self.options["tokenizer"] or self.config.tokenizer) if is_gguf(self.config.model) else None)
        return load_tokenizer(name or self.config.model, trust_remote_code=self.kwargs["trust_remote_code"])

    def native_max_len(self) -> int | None:
        """The model's own context limit, from its config (None: not told)."""
        return native_max_len(self.model_config)

    def identity(self) -> dict[str, Any]:
        """The vllm engine's cache identity of this load (:func:`.vllm_model.describe`)."""
        return describe(self.config, model_path=self.model_path, model_ident=self.model_ident, device=self.device)

    @property
    def skip_special_tokens(self) -> bool:
        return bool(self.options["skip_special_tokens"])

    def sampling(self, request: GenerationRequest) -> dict[str, Any]:
        """``vllm.SamplingParams`` arguments for ``request``: greedy, bounded, the run's seed."""
        return sampling_kwargs(request, seed=self.kwargs.get("seed"), skip_special_tokens=self.skip_special_tokens)
