"""What a model name means: the model sources behind ``--ruler-model`` and ``--ruler-tokenizer``.

One part answers, for the engines (``hf``, ``vllm``) and the tokenizer alike::

    --ruler-model ─► sources.resolve ─► ModelSource(kind, path, embedded, revision)
                          │   embedded.py  the embedded aliases (smollm2-135m, gemma3-270m),
                          │                their GGUF file, assembled once; did-you-mean
                          │   hub.py       Hub ids: in the local cache? Hub reachable?
                          ▼
         checks.check_model (start-up: config, whole weights, context length)
         gguf.py            GGUF → fp32 safetensors folder / tokenizer.json, once, in the cache
         sources.weights_to_load (what transformers loads, the model's cache identity)

It imports nothing above it (no task family, no engine) and nothing heavy at import:
torch and transformers only inside the conversions. Submodules load on first use.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

_EXPORTS = {
    "EMBEDDED_ALIASES": "embedded", "EmbeddedModel": "embedded", "embedded_gguf_path": "embedded", "nearest_alias": "embedded",
    "check_hub_name": "hub", "hub_cached": "hub", "hub_offline": "hub",
    "ModelSource": "sources", "folder_identity": "sources", "names_gguf": "sources", "resolve": "sources",
    "weights_to_load": "sources",
    "converted_gguf_folder": "gguf", "gguf_tokenizer_files": "gguf",
    "check_model": "checks", "safetensors_damage": "checks",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'pytest_ruler.models' has no attribute {name!r}")
    return getattr(import_module(f"{__name__}.{module}"), name)
