"""Running items, without pytest: the run's state, the prediction cache, start-up checks.

Data flow::

    RulerConfig ──► RulerSession (tokenizer, chat frame, engine, cache: built lazily)
        item (task × length × seed) ──► run_item / run_mapreduce_item ──► ItemResult
    preflight.check_start(session): every check that can fail before a model loads

Modules: ``session`` (RulerSession), ``cache`` (PredictionCache), ``cache_command``
(``pytest-ruler cache info|clear``), ``preflight``
(check_start), ``progress`` (the bar or plain lines of a long engine call), ``runner``
(the work of one item), ``batching`` (cross-item batching, samples shared with a
map-reduce twin), ``sequential`` (early stopping).
"""
