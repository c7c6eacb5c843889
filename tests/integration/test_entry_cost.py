"""What the plugin costs a pytest run that does not use it: pytest imports the entry module
(``pytest11``) and calls ``pytest_addhooks`` and ``pytest_addoption``; nothing else of
pytest_ruler may load (the timings are bench/entry_import.py's; this is the deterministic
part: which modules load, and how many).

Importing the entry module loads 7 of our modules (at most ``IMPORT_LIMIT``: 8); a run without
``--ruler-*`` options adds the hook specs, 8 in all (at most ``RUN_LIMIT``: 8), and no torch or
numpy. Before the option spec kept the engines' flags as data (``options.ENGINE_FLAGS``), the
import loaded 21 and the run 22 (the engines' declarations, registry, GPU and processor probes).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
IMPORT_LIMIT = 8  # issue 36, item 6: importing the plugin without activating it
RUN_LIMIT = 8  # a whole pytest run without --ruler-* options (measured: 8)

# the entry module and its stash keys, the option spec and its parsers (errors, lengths); in a run, the hook specs
ENTRY = {
    "pytest_ruler", "pytest_ruler.plugin", "pytest_ruler.plugin.keys", "pytest_ruler.plugin.hookspecs",
    "pytest_ruler.options", "pytest_ruler.parsers", "pytest_ruler.lengths", "pytest_ruler.errors",
}
HEAVY = ("torch", "numpy", "transformers", "vllm", "tokenizers")


def _probe(tmp_path: Path, code: str) -> dict:
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=tmp_path, capture_output=True, text=True,
                          timeout=300, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def _loaded_by(tmp_path: Path, *args: str) -> tuple[set[str], list[str]]:
    """Our modules and the heavy libraries loaded by a pytest run of one trivial test with ``args``."""
    (tmp_path / "test_one.py").write_text("def test_one():\n    assert 1 + 1 == 2\n")
    found = _probe(tmp_path, f"""
        import json, sys
        import pytest
        rc = pytest.main({list(args)!r} + ["-q", "-p", "no:cacheprovider", "test_one.py"])
        print(json.dumps({{"rc": int(rc), "modules": sorted(m for m in sys.modules if m.split(".")[0] == "pytest_ruler"),
                          "heavy": [m for m in {HEAVY!r} if m in sys.modules]}}))
    """)
    assert found["rc"] == 0, found
    return set(found["modules"]), found["heavy"]


def test_importing_the_plugin_loads_at_most_8_of_our_modules(tmp_path):
    found = _probe(tmp_path, """
        import json, sys
        import pytest_ruler.plugin
        print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] == "pytest_ruler")))
    """)
    assert len(found) <= IMPORT_LIMIT, found
    assert set(found) <= ENTRY, sorted(set(found) - ENTRY)


def test_a_run_without_ruler_options_loads_only_the_entry(tmp_path):
    loaded, heavy = _loaded_by(tmp_path)
    assert loaded <= ENTRY, sorted(loaded - ENTRY)
    assert len(loaded) <= RUN_LIMIT, sorted(loaded)
    assert "pytest_ruler.plugin" in loaded and "pytest_ruler.options" in loaded  # the plugin was loaded at all
    assert heavy == [], heavy


def test_with_a_model_the_rest_is_imported(tmp_path):
    """The check can fail: the same probe sees the run's modules once the suite is active."""
    loaded, _ = _loaded_by(tmp_path, "--ruler-model=smollm2-135m", "--ruler-backend=scripted", "--ruler-no-suite", "--ruler-no-cache")
    assert {"pytest_ruler.run.session", "pytest_ruler.plugin.terminal", "pytest_ruler.tasks.registry",
            "pytest_ruler.engines.options", "pytest_ruler.shard"} <= loaded
    assert len(loaded) > RUN_LIMIT
