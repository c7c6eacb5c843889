"""Repo-level test setup: offline Hugging Face, pytester, opt-in markers."""

import os
import tempfile

# Tests never reach a hub: fail fast instead of waiting on the network.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

# Tests never see data a developer downloaded: the offline defaults are what CI has.
os.environ["RULER_DATA_DIR"] = tempfile.mkdtemp(prefix="ruler-test-data-")

pytest_plugins = ["pytester"]
