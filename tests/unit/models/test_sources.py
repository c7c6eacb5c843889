"""What a model name means (``pytest_ruler.models``): one resolver for the engines and the
tokenizer, and what loading a tokenizer costs in modules (issue 36, item 2)."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_ruler.errors import RulerUsageError
from pytest_ruler.models import gguf, sources
from pytest_ruler.models.sources import ModelSource, names_gguf, resolve, weights_to_load

ROOT = Path(__file__).resolve().parents[3]
PACKAGE = ROOT / "pytest_ruler"


def _folder(tmp_path: Path) -> Path:
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"max_position_embeddings": 2048}))
    (folder / "model.safetensors").write_bytes(b"x" * 16)
    return folder


def test_an_embedded_alias_is_its_gguf_file(monkeypatch, tmp_path):
    path = tmp_path / "SmolLM2.gguf"
    monkeypatch.setattr(sources, "embedded_gguf_path", lambda alias, parameter: path)
    source = resolve("smollm2-135m")
    assert source.kind == "gguf" and source.path == path and source.embedded is not None
    assert source.embedded.alias == "smollm2-135m" and source.is_gguf


def test_a_gguf_path_must_exist(tmp_path):
    with pytest.raises(RulerUsageError) as err:
        resolve(str(tmp_path / "missing.gguf"))
    assert err.value.parameter == "--ruler-model" and "this .gguf file does not exist" in err.value.fix
    (tmp_path / "here.gguf").write_bytes(b"GGUF")
    found = resolve(str(tmp_path / "here.gguf"))
    assert found == ModelSource(str(tmp_path / "here.gguf"), "gguf", tmp_path / "here.gguf")


def test_a_folder_is_known_by_its_files(tmp_path):
    folder = _folder(tmp_path)
    source = resolve(str(folder), revision="abc")
    assert source.kind == "folder" and source.path == folder
    before = source.identity()
    assert before["folder"] == str(folder.resolve()) and "revision" not in before  # a folder has no Hub revision
    (folder / "model.safetensors").write_bytes(b"y" * 17)
    assert source.identity()["content"] != before["content"]
    assert weights_to_load(source) == (str(folder), source.identity())


def test_a_hub_id_carries_its_revision():
    assert resolve("org/model", revision="v2").identity() == {"hub_id": "org/model", "revision": "v2"}
    assert weights_to_load(resolve("org/model")) == ("org/model", {"hub_id": "org/model", "revision": "main"})


@pytest.mark.parametrize("name", ["./no/such/model", "/no/such/model", "a/b/c", "~/nowhere"])
def test_a_path_that_is_not_there_is_refused(name):
    with pytest.raises(RulerUsageError) as err:
        resolve(name, "--ruler-model")
    assert err.value.value == name and "no such file or folder" in err.value.fix
    assert "smollm2-135m" in err.value.fix  # the accepted forms name the embedded models


@pytest.mark.parametrize(("name", "nearest"), [("./smollm2-135", "smollm2-135m"), ("/models/gemma3-270m.gguf", "gemma3-270m")])
def test_a_missing_path_close_to_an_alias_says_did_you_mean(name, nearest):
    with pytest.raises(RulerUsageError) as err:
        resolve(name)
    assert err.value.fix.endswith(f"Did you mean {nearest!r}?")


def test_a_tokenizer_json_is_a_tokenizer_not_a_model(tmp_path):
    tok = tmp_path / "tokenizer.json"
    tok.write_text("{}")
    assert resolve(str(tok), "tokenizer", tokenizer=True).kind == "tokenizer_file"
    with pytest.raises(RulerUsageError, match="this is a file, not a model folder"):
        resolve(str(tok), "--ruler-model")


@pytest.mark.parametrize("name", ["", "   "])
def test_an_empty_name_is_refused_naming_the_option(name):
    with pytest.raises(RulerUsageError) as err:
        resolve(name, "--ruler-tokenizer", tokenizer=True)
    assert err.value.parameter == "--ruler-tokenizer" and "tokenizer.json" in err.value.fix


def test_names_gguf_from_the_name_alone():
    assert names_gguf("smollm2-135m") and names_gguf("gemma3-270m") and names_gguf("/x/Model.GGUF")
    assert not names_gguf("org/model") and not names_gguf("./folder")


def test_a_gguf_is_loaded_from_its_conversion_and_known_by_its_digest(monkeypatch, tmp_path):
    (tmp_path / "m.gguf").write_bytes(b"GGUF")
    converted = tmp_path / "converted"
    monkeypatch.setattr(gguf, "converted_gguf_folder", lambda path, name=None: (converted, "ab" * 32))
    assert weights_to_load(resolve(str(tmp_path / "m.gguf"))) == (str(converted), {"gguf": "m.gguf", "sha256": "ab" * 32})
    with pytest.raises(ValueError, match="converted file's sha256"):
        resolve(str(tmp_path / "m.gguf")).identity()


def test_the_gguf_cache_key_follows_the_file(tmp_path):
    path = tmp_path / "m.gguf"
    path.write_bytes(b"GGUF")
    key = gguf.gguf_key(path)
    assert key == gguf.gguf_key(path) and len(key) == 16
    path.write_bytes(b"GGUF2")
    assert gguf.gguf_key(path) != key


def _loaded_by(statement: str, *, ours: bool = True) -> list[str]:
    """The modules a fresh interpreter loads for ``statement`` (ours only, unless asked)."""
    code = f"import sys; before = set(sys.modules); {statement}; print('\\n'.join(sorted(set(sys.modules) - before)))"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env={"PYTHONPATH": str(ROOT), "PATH": ""},
                         capture_output=True, text=True, timeout=120, check=True).stdout
    return [m for m in out.split() if not ours or m.split(".")[0] == "pytest_ruler"]


def test_loading_the_tokenizer_module_loads_a_handful_of_ours_and_no_family():
    """Before the model-source part, this import loaded 21 of our modules: every family,
    the registry and the RULERv2 pack, through ``tasks/__init__``."""
    ours = _loaded_by("from pytest_ruler.tasks.tokenizer import load_tokenizer")
    allowed = {"pytest_ruler", "pytest_ruler.errors", "pytest_ruler.folders", "pytest_ruler.lazy", "pytest_ruler.tasks",
               "pytest_ruler.tasks.tokenizer"}
    assert len(ours) <= 11, ours  # 10, and pytest_ruler.lazy (tasks/__init__ exports its names through it)
    assert all(m in allowed or m.startswith("pytest_ruler.models") for m in ours), ours

def test_the_models_part_imports_nothing_heavy():
    loaded = {m.split(".")[0] for m in _loaded_by("import pytest_ruler.models.checks, pytest_ruler.tasks.tokenizer", ours=False)}
    assert not loaded & {"torch", "transformers", "vllm", "tokenizers", "huggingface_hub"}, loaded


def test_the_task_package_still_answers_its_names_on_first_use():
    ours = _loaded_by("from pytest_ruler.tasks import get_task; get_task('niah_single_1')")
    assert "pytest_ruler.tasks.niah" in ours and "pytest_ruler.tasks.registry" in ours


def _engine_imports(path: Path) -> set[str]:
    """Every module of ``pytest_ruler.engines`` that ``path`` imports, at module level or in a function."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level == 1:
                found |= {node.module} if node.module else {a.name for a in node.names}
            elif (node.module or "").startswith("pytest_ruler.engines."):
                found.add(node.module.rsplit(".", 1)[1])
        elif isinstance(node, ast.Import):
            found |= {a.name.rsplit(".", 1)[1] for a in node.names if a.name.startswith("pytest_ruler.engines.")}
    return found


@pytest.mark.parametrize("module", ["vllm.py", "vllm_model.py", "vllm_options.py", "ray_data.py", "openai.py", "scripted.py"])
def test_no_other_engine_imports_the_hf_engine(module):
    """What a model name means is the models part's: the vLLM engine asks it, not the hf engine."""
    assert "hf" not in _engine_imports(PACKAGE / "engines" / module)


def test_the_scan_sees_an_import_of_the_hf_engine(tmp_path):
    path = tmp_path / "x.py"
    path.write_text("def f():\n    from .hf import check_model\n")
    assert "hf" in _engine_imports(path)


def test_no_module_of_the_models_part_or_the_tokenizer_is_over_450_lines():
    files = [*sorted((PACKAGE / "models").glob("*.py")), PACKAGE / "tasks" / "tokenizer.py", PACKAGE / "engines" / "hf.py"]
    long = {f.name: n for f in files if (n := len(f.read_text(encoding="utf-8").splitlines())) > 450}
    assert not long, long
