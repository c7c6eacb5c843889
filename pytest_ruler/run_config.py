"""A run's configuration: :class:`RulerConfig`, the typed values of the ``--ruler-*`` options.

Data flow::

    options.OPTIONS ──spec_default(name)──► RulerConfig's field defaults (one default per option)
    plugin.config.build_config(pytest_config) ──► RulerConfig(...) ──► the run (run.session, plugin)

A field that an option sets takes that option's default (``options.spec_default``), so
``RulerConfig(model=m)`` is what ``--ruler-model=m`` alone gives. A new option adds its field here.

Public names: ``RulerConfig``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from .options import spec_default

__all__ = ["RulerConfig"]


def _default_tasks() -> tuple[str, ...]:
    """RulerConfig's tasks when none are given: the default preset's, resolved (the registry's names)."""
    from .tasks import resolve_tasks

    return tuple(t.name for t in resolve_tasks(spec_default("tasks")))


@dataclass(frozen=True)
class RulerConfig:
    """A run's configuration. A field that an option sets takes that option's default
    (``spec_default``), so ``RulerConfig(model=m)`` is what ``--ruler-model=m`` alone gives."""

    model: str
    backend: str = spec_default("backend")
    base_url: str | tuple[str, ...] | None = spec_default("base-url")  # several: a tuple (--ruler-base-url repeated)
    tokenizer: str | None = spec_default("tokenizer")
    tasks: tuple[str, ...] = field(default_factory=_default_tasks)  # the names, resolved
    lengths: tuple[int, ...] = spec_default("lengths")
    lengths_given: bool = True  # False: the lengths come from the preset, not --ruler-lengths / ini
    samples: int = spec_default("samples")
    seeds: tuple[int, ...] = spec_default("seeds")
    depths: tuple[float, ...] | None = spec_default("depths")
    threshold: Any = spec_default("threshold")  # a score, or a parsers.RelativeMark (rel:F)
    task_thresholds: Mapping[str, float] = field(default_factory=dict)  # the ini key ruler_task_thresholds
    preset: str = spec_default("preset")
    required_effective_length: int | None = spec_default("require-effective-length")
    baseline: Path | None = spec_default("baseline")
    baseline_alpha: float = spec_default("baseline-alpha")
    baseline_test: str = spec_default("baseline-test")
    show_ci: bool = spec_default("ci")  # --ruler-ci: intervals in the terminal and Markdown tables
    gate_confidence: float | None = spec_default("gate-confidence")  # gate on the effective length's lower bound
    arms: tuple[Any, ...] | None = spec_default("arm")  # --ruler-arm: run.arms.Arm each, the first the reference
    noninferiority_margin: float | None = spec_default("noninferiority-margin")  # points (results.noninferiority)
    sequential: bool = spec_default("sequential")  # anytime-valid early stopping per item
    stop_when_decided: bool = spec_default("stop-when-decided")  # run.decided: only what the verdict needs
    report: Path | None = spec_default("report")
    markdown: Path | None = spec_default("markdown")
    plots: Path | None = spec_default("plots")
    html: Path | None = spec_default("html")  # --ruler-html: the run's page (pages.run_page)
    history: Path | None = spec_default("history")  # --ruler-history: the history folder (history.store)
    label: str | None = spec_default("label")  # --ruler-label (None: history.store.default_label when one is needed)
    chat_template: str = spec_default("chat-template")
    think_budget: int | None = spec_default("think-budget")  # thinking tokens apart from the answer's (run.reasoning)
    chat_template_kwargs: Mapping[str, Any] = field(default_factory=dict)  # --ruler-chat-template-kwargs
    think_start: str = spec_default("think-start")
    think_end: str = spec_default("think-end")
    cache_dir: Path | None = spec_default("cache-dir")
    no_cache: bool = spec_default("no-cache")
    only: bool = spec_default("only")
    no_suite: bool = spec_default("no-suite")  # the plugin is configured, the standard suite is not collected
    max_model_len: int | None = spec_default("max-model-len")
    dtype: str = spec_default("dtype")
    device: str = spec_default("device")
    batch_size: int | None = spec_default("batch-size")
    batch_items: int = spec_default("batch-items")
    trust_remote_code: bool = spec_default("trust-remote-code")
    engine_options: Mapping[str, Any] = field(default_factory=dict)  # --ruler-engine-option and the engines' own options, typed
    essays: str | None = spec_default("essays")
    squad: str | None = spec_default("squad")
    hotpotqa: str | None = spec_default("hotpotqa")
    mmlu: str | None = spec_default("mmlu")
    hotpotqa_train: str | None = spec_default("hotpotqa-train")
    mrcr: str | None = spec_default("mrcr")
    mapreduce: bool = spec_default("mapreduce")
    mapreduce_config: Any = None  # a mapreduce.MapReduceConfig (None: its defaults)
    required_mapreduce_effective_length: int | None = spec_default("require-mapreduce-effective-length")
    record: Path | None = spec_default("record")  # --ruler-record=DIR (run.recording, run.replay)
    replay: Path | None = spec_default("replay")  # --ruler-replay=DIR: the samples come from a recording
    shard: Any = spec_default("shard")  # a shard.Shard: --ruler-shard=i/N (None: every item)

    @property
    def gated(self) -> bool:
        """A gate, a baseline, arms or a relative mark decides the run (results.verdict): the exit code is
        the verdict's, and the suite's items are measurements that serve it (plugin.items)."""
        return (self.required_effective_length is not None or self.required_mapreduce_effective_length is not None
                or self.baseline is not None or bool(self.arms) or not isinstance(self.threshold, (int, float)))

    def threshold_for(self, task: str) -> float:
        """An item's mark at run time. Under rel:F the mark needs the base score, known only at the
        run's end (results.relative): items pass at run time on a score above 0, then are re-judged."""
        if not isinstance(self.threshold, (int, float)):
            return 0.0
        return self.task_thresholds.get(task, self.threshold)


