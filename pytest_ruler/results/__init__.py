"""Results in the core (no pytest): what items produced, Table 3 over them, and the gate.

Data flow::

    ItemResult per item ──summarize_results(results, threshold, mode)──► a mode's summary
    [ItemResult] or a report dict ──report.Report──► the typed report: per mode its summary and
        Table 3, computed once from the items (a saved file: saved.read_report, the one reader)
    Report ──gate(report, required=..., baseline=...)──► Verdict

The plugin, the JSON/Markdown reports, the snapshot extension and the
``pytest-ruler gate`` command all go through these functions; none of them
aggregates or gates on its own.

Modules: ``item`` (ItemResult, the report SCHEMA), ``report`` (the typed report),
``saved`` (reading a saved report: types checked, the summary recomputed), ``rescore`` (its
items' scores re-derived from their sample scores and predictions), ``merge`` (shard
reports into the whole run's, through ``saved`` and ``report``), ``summary`` (cell_scores,
summarize_results, mapreduce_vs_native), ``aggregate`` (the paper's formulas:
Avg, wAvg, effective length), ``scoring`` (RULER's metrics; RULERv2's soft ones in
``soft_match``), ``relative`` (the relative pass mark ``rel:F``; its resolution in ``marks``),
``table`` (Table 3 and its notation), ``cells`` (Table 3's cells read back from a saved report),
``notation`` (the row order and effective-length notation that the model and the renderers share),
``gate`` (the verdict), ``baseline`` / ``stats`` / ``paired`` / ``regressions``
(comparing with an earlier report, paired on shared questions), ``intervals`` (error
bars and the effective length's confidence bound from per-sample scores).

Layers (each imports only those below it, at module level; tests/unit/test_part_imports.py
keeps it so): presentation (``table``, ``cells``) and the verdict (``gate``, ``merge``,
``relative.rejudge``) above the typed ``report``, above ``marks``, ``summary``,
``intervals``, ``item``, ``budgets``, ``notation`` and the pure ``aggregate``/``stats``.

Public names: ``ItemResult``, ``Verdict``, ``cell_scores``, ``gate``,
``mapreduce_vs_native``, ``summarize_results``.
"""

from .gate import Verdict, gate
from .item import ItemResult
from .summary import cell_scores, mapreduce_vs_native, summarize_results

__all__ = ["ItemResult", "Verdict", "cell_scores", "gate", "mapreduce_vs_native", "summarize_results"]
