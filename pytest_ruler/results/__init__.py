"""Results in the core (no pytest): what items produced, Table 3 over them, and the gate.

Data flow::

    ItemResult per item ──summarize_results(results, threshold, mode)──► a mode's summary
    JSON report (items + summaries) ──gate(report, required=..., baseline=...)──► Verdict

The plugin, the JSON/Markdown reports, the snapshot extension and the
``pytest-ruler gate`` command all go through these functions; none of them
aggregates or gates on its own.

Public names: ``ItemResult``, ``Verdict``, ``cell_scores``, ``gate``,
``mapreduce_vs_native``, ``summarize_results``.
"""

from .gate import Verdict, gate
from .item import ItemResult
from .summary import cell_scores, mapreduce_vs_native, summarize_results

__all__ = ["ItemResult", "Verdict", "cell_scores", "gate", "mapreduce_vs_native", "summarize_results"]
