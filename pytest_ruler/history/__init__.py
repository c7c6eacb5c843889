"""Every run kept: a history folder of complete runs, its trend page and its export for chart actions.

Data flow::

    a run's end ──reporter.history_reporter (--ruler-history=DIR, --ruler-label=TEXT)──► store.add_run
    pytest-ruler merge SHARD.json ... --out M.json --history DIR ──► store.add_run (the merged report)
    store: DIR/<created>_<label>.json (the report) + DIR/index.json (rebuilt from the files, locked, renamed)
    pytest-ruler history DIR ──store.read_runs──► [Run]
        --html OUT                               ──page.history_page──► one self-contained HTML file
        --format github-action-benchmark         ──export.benchmark_entries──► the customBiggerIsBetter JSON list
    groups.group_of: runs of another model or other settings are kept apart

The package imports nothing itself (a run's end imports ``history.store`` only); the public names are
its modules': ``store.add_run``, ``store.default_label``, ``store.read_runs``, ``store.rebuild_index``,
``command.history_command``, ``page.history_page``, ``export.benchmark_entries``.
"""
