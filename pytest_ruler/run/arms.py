"""Arms: several engine configurations asked the same questions in one run (``--ruler-arm``).

    --ruler-arm=NAME:KEY=VALUE,... (repeatable) ──parsers.parse_arms(where, raw)──► (Arm, ...): the first is the reference
    RulerConfig, Arm ──arm_config(config, arm)──► the arm's RulerConfig (its backend, dtype, base_url, model,
        max_model_len and engine options; everything else, the samples included, is the run's)
    reference session, the other arms' sessions ──check_same_prompts(...)──► refused at start (RulerUsageError
        naming both arms) when an arm's tokenizer gives other token ids or its chat template other prompts

Keys (``ARM_KEYS``): ``backend``, ``dtype``, ``base_url``, ``model``, ``max_model_len``, and any engine option the
arm's back end declares (``--ruler-engine-option``'s keys: ``mode=empty`` for the scripted test engine,
``hf_overrides={...}`` or ``kv_cache_dtype=fp8`` for vllm). A JSON value may hold commas (``{...}``, ``[...]``,
quotes): only commas outside brackets and quotes separate pairs. An arm with no pair (``--ruler-arm=ref``)
is the run's own configuration.

Each arm has its own ``run.session.RulerSession`` (so its own engine, loaded lazily, and its own cache
identity: the engine identity keys the prediction cache), built by ``plugin.pytest_configure``; the
reference arm's is the run's session. Every arm generates the same samples (the tokenizer and the
template must agree: checked here at start; the prompt hashes of each pair of items are compared again
at the end, ``results.arms``). Items are interleaved item by item (``plugin.items``: per task, length and
seed, one item per arm in the order given), not sample by sample: an item's samples go to its
arm's engine in one batch.

``build_sessions(config, make)``: the reference arm's session with the others' in its ``arms`` (plugin.pytest_configure).

Public names: ``ARM_KEYS``, ``Arm``, ``arm_config``, ``build_sessions``, ``check_same_prompts``, ``parse_arms``.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Mapping

from ..errors import RulerUsageError
from ..parsers import ARM_KEYS, Arm, parse_arms

__all__ = ["ARM_KEYS", "Arm", "arm_config", "build_sessions", "check_same_prompts", "parse_arms"]  # Arm, parse_arms: parsers

PROBE = ("The special magic number for quiet-meadow is: 4711203. What is the special magic number? "
         "Année 2024 — naïve café, 東京, emoji \U0001F600; VAR QPX = 12345\n\tuuid 3f2a-9c1d. ")


def arm_config(config: Any, arm: Arm, where: str = "--ruler-arm") -> Any:
    """The arm's RulerConfig: the run's, with the arm's settings and engine options (checked against its back end)."""
    from ..engines import resolve_backend
    from ..engines.options import coerce_engine_options

    settings = dict(arm.settings)
    given = settings.get("backend", config.backend)
    backend = resolve_backend(given)
    base = coerce_engine_options(backend, dict(config.engine_options), drop_unknown=True)
    try:
        own = coerce_engine_options(backend, dict(arm.engine_options))
    except RulerUsageError as exc:
        raise RulerUsageError(f"{where} ({arm.name})", exc.value, exc.fix) from None
    if backend == "openai" and not settings.get("base_url", config.base_url):
        raise RulerUsageError(f"{where} ({arm.name})", given, "the openai back end needs base_url=http://HOST:PORT/v1 in the arm")
    return dataclasses.replace(config, **settings, engine_options={**base, **own})


def check_same_prompts(reference: Any, arms: Mapping[str, Any], reference_name: str) -> None:
    """Refuse (RulerUsageError naming both arms) an arm whose tokenizer gives other token ids than the
    reference's on a probe text, or whose chat template frames prompts otherwise: its samples would
    not be the reference's. Sessions whose tokenizer and template are the reference's are not loaded."""
    ref_c = reference.config
    for name, rs in arms.items():
        c = rs.config
        if (c.tokenizer or c.model) == (ref_c.tokenizer or ref_c.model) and c.trust_remote_code == ref_c.trust_remote_code:
            continue
        a, b = reference.tokenizer.encode(PROBE), rs.tokenizer.encode(PROBE)
        if list(a) != list(b):
            at = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
            raise RulerUsageError("--ruler-arm", f"{name}:model={c.model}",
                                  f"arm {name!r} ({rs.tokenizer.name}) and the reference arm {reference_name!r} "
                                  f"({reference.tokenizer.name}) tokenize differently (first difference at token {at} of a "
                                  "probe text), so they cannot be asked the same samples: compare models that share a tokenizer")
        fa, fb = reference.frame, rs.frame
        if (fa.head, fa.tail) != (fb.head, fb.tail):
            raise RulerUsageError("--ruler-arm", f"{name}:model={c.model}",
                                  f"arm {name!r} frames prompts with chat template {fb.name} and the reference arm "
                                  f"{reference_name!r} with {fa.name}: the prompts would differ; pass --ruler-chat-template "
                                  "(a Jinja file, or none) so both get the same prompts")


def build_sessions(config: Any, make: Callable[[Any], Any]) -> Any:
    """The reference arm's session (``make(its config)``), holding each other arm's in ``arms``."""
    arms = tuple(config.arms or ())
    if config.stop_when_decided:
        raise RulerUsageError("--ruler-stop-when-decided", True, "it plans the items of one engine; with --ruler-arm every "
                              "arm runs every item: drop one of the two options")
    reference = make(arm_config(config, arms[0]))
    reference.arm = arms[0].name
    for arm in arms[1:]:
        session = make(arm_config(config, arm))
        session.arm = arm.name
        reference.arms[arm.name] = session
    return reference
