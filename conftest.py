"""Repo-level test setup: offline Hugging Face, pytester, opt-in markers.

Markers (declared in pyproject.toml):

- ``gpu``: needs a CUDA GPU; skipped, with the reason, where none is visible.
- ``network``: needs network access; skipped unless ``--run-network`` is given
  (never in CI: the suite runs offline).
- ``slow``: the slow tier: over about 30 s on 2 quiet CPU cores (real models at several lengths,
  engine and server start-ups, data-parallel vLLM); skipped, with the reason, unless
  ``--run-slow`` is given, so ``python -m pytest`` stays under 15 minutes on such a machine.
  ``python -m pytest --run-slow -m slow`` runs the slow tier alone; CI runs both.
"""

import os
import tempfile

import pytest

# Tests never reach a hub: fail fast instead of waiting on the network.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

# Tests never see data a developer downloaded: the offline defaults are what CI has.
os.environ["RULER_DATA_DIR"] = tempfile.mkdtemp(prefix="ruler-test-data-")

pytest_plugins = ["pytester"]


def pytest_addoption(parser):
    parser.addoption("--run-network", action="store_true", default=False, help="run the tests marked network (they reach the internet)")
    parser.addoption("--run-slow", action="store_true", default=False, help="run the tests marked slow (the slow tier: real models at "
                     "several lengths, engine start-ups; CI runs them)")


def pytest_collection_modifyitems(config, items):
    from pytest_ruler.engines.gpus import gpu_visible

    no_gpu = None if gpu_visible() else pytest.mark.skip(reason="needs a CUDA GPU (marker gpu): none is visible here")
    offline = None if config.getoption("--run-network") else pytest.mark.skip(reason="needs network access (marker network): pass --run-network")
    slow = None if config.getoption("--run-slow") else pytest.mark.skip(reason="slow tier (marker slow): pass --run-slow (CI does)")
    for item in items:
        if no_gpu is not None and item.get_closest_marker("gpu"):
            item.add_marker(no_gpu)
        if offline is not None and item.get_closest_marker("network"):
            item.add_marker(offline)
        if slow is not None and item.get_closest_marker("slow"):
            item.add_marker(slow)
