"""Inside a part, modules import each other at module level, one way, with no circle.

A circle held together by imports inside functions is still a circle: the function-level
import only hides it from Python's import machinery. This test reads every module of a
part with ``ast`` (nothing is imported), and finds

- the imports of the part's own modules made inside a function (``def``/``lambda``),
- the cycles among the part's modules, counting module-level, function-level and
  ``if TYPE_CHECKING:`` imports alike (each is a dependency of the module on the other).

Imports of other parts and of third-party libraries are not counted: a heavy library
(torch, vllm, transformers, scipy) imported inside the function that needs it is
intended, so that importing the package stays light.

Run it as a script for the numbers of every part::

    python tests/unit/test_part_imports.py [part ...]
"""

from __future__ import annotations

import ast
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "pytest_ruler"
CLEAN_PARTS = ("results", "engines", "tasks")  # the parts this test keeps free of both


@dataclass(frozen=True)
class Edge:
    source: str  # importing module, e.g. "results.table" ("tasks.ruler2.niah" in a subpackage)
    target: str  # imported module of the same part, e.g. "results.report" (a package: "tasks.ruler2.__init__")
    line: int
    where: str  # "module", "function" or "typing"


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE).with_suffix("").parts
    return ".".join(parts)  # "results.table", "results.__init__"


def _kind(stack: list[ast.AST]) -> str:
    if any(isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) for n in stack):
        return "function"
    for n in stack:
        if isinstance(n, ast.If) and "TYPE_CHECKING" in ast.unparse(n.test):
            return "typing"
    return "module"


def _walk(node: ast.AST, stack: list[ast.AST]):
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.Import, ast.ImportFrom)):
            yield child, _kind(stack)
        yield from _walk(child, stack + [child])


def part_edges(part: str) -> list[Edge]:
    """Every import, in a module of ``part`` (its subpackages included), of a module of the same part."""
    folder = PACKAGE / part
    if not (folder / "__init__.py").is_file():
        raise ValueError(f"part={part!r}: no package pytest_ruler/{part}/; use one of {sorted(p.parent.name for p in PACKAGE.glob('*/__init__.py'))}")
    paths = sorted(folder.rglob("*.py"))
    own = {_module_name(p) for p in paths}

    def resolve(dotted: str) -> str | None:  # "pytest_ruler.results.table.Report" -> "results.table"
        names = dotted.split(".")
        if names[:2] != ["pytest_ruler", part]:
            return None
        for end in range(len(names), 1, -1):  # the longest prefix that is a module or a package of the part
            candidate = ".".join(names[1:end])
            if candidate in own:
                return candidate
            if f"{candidate}.__init__" in own:
                return f"{candidate}.__init__"
        return None

    edges: list[Edge] = []
    for path in paths:
        src = _module_name(path)
        package = ".".join(("pytest_ruler", *path.parent.relative_to(PACKAGE).parts))  # what ``from .`` names here
        for node, where in _walk(ast.parse(path.read_text(encoding="utf-8")), []):
            targets: set[str | None] = set()
            if isinstance(node, ast.Import):
                targets = {resolve(a.name) for a in node.names}
            else:
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    module = ".".join(base + ([node.module] if node.module else []))
                else:
                    module = node.module or ""
                for alias in node.names:  # ``from . import table`` names a module, not a package attribute
                    t = resolve(f"{module}.{alias.name}")
                    named = f"{module}.{alias.name}".removeprefix("pytest_ruler.")
                    targets.add(t if t in (named, f"{named}.__init__") else resolve(module))
            targets.discard(None)
            edges += [Edge(src, t, node.lineno, where) for t in sorted(t for t in targets if t) if t != src]
    return edges


def find_cycles(edges: list[Edge]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), each sorted."""
    graph: dict[str, set[str]] = {}
    for e in edges:
        graph.setdefault(e.source, set()).add(e.target)
        graph.setdefault(e.target, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(out)


def summary(part: str) -> str:
    edges = part_edges(part)
    deferred = [e for e in edges if e.where == "function"]
    cycles = find_cycles(edges)
    lines = [f"{part}: {len(deferred)} function-level imports between its own modules "
             f"(in {len({e.source for e in deferred})} modules), {len(cycles)} circle(s)"
             + "".join(f"\n  circle of {len(c)}: {', '.join(c)}" for c in cycles)]
    lines += [f"  {e.source}:{e.line} -> {e.target}" for e in deferred]
    return "\n".join(lines)


@pytest.mark.parametrize("part", CLEAN_PARTS)
def test_no_function_level_import_between_a_parts_own_modules(part):
    deferred = [f"{e.source}:{e.line} imports {e.target} inside a function" for e in part_edges(part) if e.where == "function"]
    assert not deferred, ("move the import to the top of the module; if that makes a circle, move the code "
                          "to the module where it belongs:\n  " + "\n  ".join(deferred))


@pytest.mark.parametrize("part", CLEAN_PARTS)
def test_no_import_cycle_inside_a_part(part):
    cycles = find_cycles(part_edges(part))
    assert not cycles, f"import circles in {part}/: {cycles}"


def test_the_scan_sees_function_level_imports_and_cycles(tmp_path, monkeypatch):
    """The check can fail: a made-up part with a deferred import that closes a circle is caught."""
    pkg = tmp_path / "pytest_ruler" / "fake"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "model.py").write_text("import torch\n\ndef render():\n    from .view import show\n    from . import view\n    import torch.nn\n")
    (pkg / "view.py").write_text("from pytest_ruler.fake.model import render\nfrom typing import TYPE_CHECKING\n"
                                 "if TYPE_CHECKING:\n    from .model import render as r\n")
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", tmp_path / "pytest_ruler")
    edges = part_edges("fake")
    assert {(e.source, e.target, e.where) for e in edges} == {
        ("fake.model", "fake.view", "function"), ("fake.view", "fake.model", "module"), ("fake.view", "fake.model", "typing")}
    assert find_cycles(edges) == [["fake.model", "fake.view"]]
    assert find_cycles([e for e in edges if e.source != "fake.model"]) == []



def test_the_scan_reads_subpackages(tmp_path, monkeypatch):
    """A pack in a subpackage (``tasks.ruler2``) is part of its part: a circle through it is caught."""
    pkg = tmp_path / "pytest_ruler" / "fake"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "registry.py").write_text("from .sub import FAMILY\nfrom pytest_ruler.fake.sub.leaf import draft\n")
    (pkg / "sub" / "__init__.py").write_text("from .leaf import FAMILY\n")
    (pkg / "sub" / "leaf.py").write_text("from ...errors import RulerUsageError\nFAMILY = 1\n\ndef draft():\n    from ..registry import get\n")
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", tmp_path / "pytest_ruler")
    edges = part_edges("fake")
    assert {(e.source, e.target, e.where) for e in edges} == {
        ("fake.registry", "fake.sub.__init__", "module"), ("fake.registry", "fake.sub.leaf", "module"),
        ("fake.sub.__init__", "fake.sub.leaf", "module"), ("fake.sub.leaf", "fake.registry", "function")}
    assert find_cycles(edges) == [["fake.registry", "fake.sub.__init__", "fake.sub.leaf"]]

if __name__ == "__main__":
    for name in sys.argv[1:] or sorted(p.parent.name for p in PACKAGE.glob("*/__init__.py")):
        print(summary(name))
