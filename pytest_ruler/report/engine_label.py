"""What ran a report's items, in words a chart title or a page header can show: the back end, and
whether it was a model at all.

    Report ──engine_label(report)──► EngineLabel(backend, scripted, text)
        backend   the report's ``backend`` (hf, vllm, openai, ray, scripted or a registered name)
        scripted  True when the items came from a test engine, not a model: the backend is
                  ``scripted``, or the backend, the engine's class or its own description (the
                  report's ``engine``) says scripted, fake, mock, dummy, stub or "not a model"
        text      "hf" / "scripted engine: a test engine, NOT A MODEL"
    Report ──run_title(report, what)──► "RULER, smollm2-135m on hf: score vs length" (the PNG plots'
        and the HTML page's titles; a scripted run's title says it is not a model)

A scripted run's numbers are the plumbing's, never a model's: every picture of one says so.

Public names: ``EngineLabel``, ``engine_label``, ``run_title``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ..outside_text import shown
from ..results.report import as_report

__all__ = ["EngineLabel", "engine_label", "run_title"]

_TEST_ENGINE = re.compile(r"\b(scripted|fake|mock|dummy|stub)\b|not a model", re.IGNORECASE)
SCRIPTED_TEXT = "scripted engine: a test engine, NOT A MODEL"


@dataclass(frozen=True)
class EngineLabel:
    backend: str
    scripted: bool
    text: str


def engine_label(report: Any) -> EngineLabel:
    """The report's back end and whether it is a test engine (see the module docstring)."""
    r = as_report(report)
    backend = shown(r.backend, 80)
    engine = r.field("engine")
    said = [backend]
    if isinstance(engine, dict):
        said += [str(engine.get(k) or "") for k in ("backend", "class", "engine", "engine_identity")]
    scripted = any(_TEST_ENGINE.search(s.replace("_", " ")) for s in said if s)
    return EngineLabel(backend, scripted, f"{backend}: {SCRIPTED_TEXT}" if scripted and backend != "scripted" else
                       SCRIPTED_TEXT if scripted else backend)


def run_title(report: Any, what: str = "") -> str:
    """``RULER, <model> on <backend>[: what]``; a test engine's run is titled as one."""
    r = as_report(report)
    label = engine_label(r)
    head = f"RULER, {shown(r.model, 80)} on {label.text}"
    return f"{head}: {what}" if what else head
