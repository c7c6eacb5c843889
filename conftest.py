"""Repo-level test setup: offline Hugging Face, pytester, opt-in markers.

Markers (declared in pyproject.toml):

- ``gpu``: needs a CUDA GPU; skipped, with the reason, where none is visible.
- ``network``: needs network access; skipped unless ``--run-network`` is given
  (never in CI: the suite runs offline).
- ``slow``: more than a few seconds; runs by default, ``-m "not slow"`` leaves it out.
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


def pytest_collection_modifyitems(config, items):
    from pytest_ruler.engines.gpus import gpu_visible

    no_gpu = None if gpu_visible() else pytest.mark.skip(reason="needs a CUDA GPU (marker gpu): none is visible here")
    offline = None if config.getoption("--run-network") else pytest.mark.skip(reason="needs network access (marker network): pass --run-network")
    for item in items:
        if no_gpu is not None and item.get_closest_marker("gpu"):
            item.add_marker(no_gpu)
        if offline is not None and item.get_closest_marker("network"):
            item.add_marker(offline)
