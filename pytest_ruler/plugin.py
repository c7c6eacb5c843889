"""The pytest entry point (``pytest11``: ``ruler = pytest_ruler.plugin``).

It registers nothing yet: the options, items, summary and gate arrive with the
plugin work (issues 3 and 4). It must stay import-light — no torch,
transformers or vllm at import — so plain ``pytest`` is unchanged by it.
"""
