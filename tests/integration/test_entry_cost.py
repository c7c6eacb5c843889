"""A pytest run without --ruler-model imports the plugin's entry module and the option spec,
nothing else of pytest_ruler (the timings are bench/entry_import.py's; this is the
deterministic part: which modules load)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# the entry module, its stash keys and hook specs, the option spec and what it declares
ENTRY = {
    "pytest_ruler", "pytest_ruler.plugin", "pytest_ruler.plugin.keys", "pytest_ruler.plugin.hookspecs",
    "pytest_ruler.options", "pytest_ruler.parsers", "pytest_ruler.lengths", "pytest_ruler.errors",
    "pytest_ruler.engines", "pytest_ruler.engines.base", "pytest_ruler.engines.context", "pytest_ruler.engines.options",
    "pytest_ruler.engines.registry", "pytest_ruler.engines.hf_options", "pytest_ruler.engines.vllm_options",
    "pytest_ruler.engines.openai_options", "pytest_ruler.engines.scripted_options",
    "pytest_ruler.shard", "pytest_ruler.engines.ray_options",  # --ruler-shard's parser; the ray engine's declarations
    # the declaration type (below the registry), the dtype's reasons (hf_options), the registry's auto (gpus)
    "pytest_ruler.engines.declaration", "pytest_ruler.engines.processor", "pytest_ruler.engines.gpus",
}


def _loaded_by(tmp_path: Path, *args: str) -> set[str]:
    (tmp_path / "test_one.py").write_text("def test_one():\n    assert 1 + 1 == 2\n")
    code = textwrap.dedent(f"""
        import json, sys
        import pytest
        rc = pytest.main({list(args)!r} + ["-q", "-p", "no:cacheprovider", "test_one.py"])
        print(json.dumps({{"rc": int(rc), "modules": sorted(m for m in sys.modules if m.split(".")[0] == "pytest_ruler")}}))
    """)
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["rc"] == 0, done.stdout
    return set(found["modules"])


def test_a_run_without_a_model_loads_only_the_entry(tmp_path):
    loaded = _loaded_by(tmp_path)
    assert loaded <= ENTRY, sorted(loaded - ENTRY)
    assert "pytest_ruler.plugin" in loaded and "pytest_ruler.options" in loaded  # the plugin was loaded at all


def test_with_a_model_the_rest_is_imported(tmp_path):
    """The check can fail: the same probe sees the run's modules once the suite is active."""
    loaded = _loaded_by(tmp_path, "--ruler-model=smollm2-135m", "--ruler-backend=scripted", "--ruler-no-suite", "--ruler-no-cache")
    assert {"pytest_ruler.run.session", "pytest_ruler.plugin.terminal", "pytest_ruler.tasks.registry"} <= loaded
