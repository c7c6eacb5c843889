"""No module of ``pytest_ruler`` reaches into another's private names.

Read from the source with ``ast`` (nothing is imported). A private name is one with a
leading underscore that is not a dunder. Three shapes are refused:

- ``from .x import _y``: importing another module's private name (aliasing a public name
  to a private one, ``import parse_length as _length``, is fine);
- ``x._y`` where ``x`` is a name this module imported (a module, a class, a function) or
  any other object but ``self`` and ``cls``, unless ``_y`` is this module's own: defined here
  (a ``def``, a class or an assignment) or a member its classes use on ``self``
  (``self._y``), e.g. a second instance of the same class;
- ``getattr(x, "_y")`` (and ``setattr``, ``hasattr``, ``delattr``) under the same rule.
"""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "pytest_ruler"


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _own_names(tree: ast.AST) -> set[str]:
    """The private names a module owns: defined in it, or members its classes use on self / cls."""
    own: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            own.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            own.add(node.id)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            own.add(node.target.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
            own.add(node.attr)
    return {n for n in own if _private(n)}


def private_access(source: str) -> list[str]:
    """Each reach into another module's private name in ``source``, as ``line: what``."""
    tree = ast.parse(source)
    own = _own_names(tree)
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            found += [f"{node.lineno}: from {'.' * node.level}{node.module or ''} import {a.name}"
                      for a in node.names if _private(a.name)]
        elif isinstance(node, ast.Import):
            found += [f"{node.lineno}: import {a.name}" for a in node.names if any(_private(p) for p in a.name.split(".")[1:])]
        elif isinstance(node, ast.Attribute) and _private(node.attr) and node.attr not in own:
            if not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")):
                found.append(f"{node.lineno}: {ast.unparse(node)}")
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("getattr", "setattr", "hasattr", "delattr")
              and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str)
              and _private(node.args[1].value) and node.args[1].value not in own
              and not (isinstance(node.args[0], ast.Name) and node.args[0].id in ("self", "cls"))):
            found.append(f"{node.lineno}: {ast.unparse(node)}")
    return found


def test_no_module_reaches_into_another_modules_privates():
    found = {str(p.relative_to(PACKAGE.parent)): hits for p in sorted(PACKAGE.rglob("*.py"))
             if (hits := private_access(p.read_text(encoding="utf-8")))}
    assert not found, "make the name public (and list it in the module's __all__), or keep the use in its module:\n" + "\n".join(
        f"  {path}:{hit}" for path, hits in found.items() for hit in hits)


@pytest.mark.parametrize("source, hits", [
    ("from .vllm_options import _CONTEXT_KEYS, llm_kwargs\n", ["1: from .vllm_options import _CONTEXT_KEYS"]),
    ("from ..run import preflight\npreflight._engine_context(s)\n", ["2: preflight._engine_context"]),
    ("def f(session):\n    return session._context_checked\n", ["2: session._context_checked"]),
    ("def f(o):\n    return getattr(o, '_raw', None)\n", ["2: getattr(o, '_raw', None)"]),
    ("import pytest_ruler.engines._factory as f\n", ["1: import pytest_ruler.engines._factory"]),
])
def test_the_check_finds_each_shape(source, hits):
    """The check can fail: each refused shape, in a made-up module."""
    assert private_access(source) == hits


def test_a_modules_own_privates_and_public_aliases_are_fine():
    source = textwrap.dedent("""
        from .lengths import parse_length as _length
        from . import sources as _sources
        _CACHE = {}

        class Engine:
            def _entry(self):
                return self._seen

            @classmethod
            def probe(cls):
                other = cls.__new__(cls)
                return other._entry(), other._seen, _CACHE, _sources.public, _length("4k"), getattr(self, "_x", None)
    """)
    assert private_access(source) == []
