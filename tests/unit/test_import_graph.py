"""The package's parts import each other one way only: no cycle between parts.

Read from the source (every ``import`` statement, at module level or inside a
function: a lazy import is still a dependency), so the test needs nothing imported.
A part is a sub-package of ``pytest_ruler`` (plugin, run, tasks, engines, mapreduce,
results, report, data, models); each top-level module (errors, options, ...) is a node of its
own, so a cycle through one of them counts too.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "pytest_ruler"
PARTS = ("plugin", "run", "tasks", "engines", "mapreduce", "results", "report", "data", "models", "history", "pages")


def _module(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _node(module: str) -> str | None:
    """The graph node of a module: its part, a top-level module's name, None for the package."""
    names = module.split(".")
    return names[1] if len(names) > 1 else None


def imports_of(path: Path) -> set[str]:
    """Every pytest_ruler module ``path`` imports (names imported from a package count as modules)."""
    module = _module(path)
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            found.add(target)
            found |= {f"{target}.{a.name}" for a in node.names}  # from . import hookspecs
    return {m for m in found if m.split(".")[0] == "pytest_ruler"}


def part_graph() -> dict[str, dict[str, list[str]]]:
    """node -> {imported node: [the importing modules]} (within-node imports left out)."""
    graph: dict[str, dict[str, list[str]]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        src = _node(_module(path))
        if src is None:
            continue
        for target in imports_of(path):
            dst = _node(target)
            if dst is None or dst == src or not ((PACKAGE / dst).is_dir() or (PACKAGE / f"{dst}.py").is_file()):
                continue  # the package itself, the same node, or a name such as pytest_ruler.__version__
            graph.setdefault(src, {}).setdefault(dst, []).append(_module(path))
    return graph


def find_cycle(graph: dict[str, dict[str, list[str]]]) -> list[str] | None:
    """One cycle of ``graph`` as a list of nodes (first == last), or None."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, {})):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def test_every_part_is_in_the_graph():
    present = {p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").is_file()}
    assert present == set(PARTS), "a new part: add it to PARTS (and think about where it sits)"


def test_no_import_cycle_between_parts():
    graph = part_graph()
    cycle = find_cycle(graph)
    if cycle:
        steps = [f"{a} -> {b} ({', '.join(sorted(set(graph[a][b])))})" for a, b in zip(cycle, cycle[1:])]
        pytest.fail("import cycle between parts:\n  " + "\n  ".join(steps))


@pytest.mark.parametrize("lower,upper", [("tasks", "mapreduce"), ("tasks", "engines"), ("mapreduce", "tasks"),
                                         ("data", "tasks"), ("engines", "run"), ("results", "report"),
                                         ("models", "tasks"), ("models", "engines")])
def test_a_lower_part_does_not_import_an_upper_one(lower, upper):
    assert upper not in part_graph().get(lower, {}), part_graph()[lower][upper]


def test_only_the_plugin_imports_pytest():
    """The core knows nothing about pytest: tasks, engines, map-reduce, results, report and run are plain code."""
    users = sorted(_module(p) for p in PACKAGE.rglob("*.py") if {"pytest", "_pytest"} & {m.split(".")[0] for m in _all_imports(p)})
    assert users and all(m.startswith("pytest_ruler.plugin") for m in users), users


def _all_imports(path: Path) -> set[str]:
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            out.add(node.module)
    return out


def test_the_cycle_finder_finds_a_cycle():
    """The check can fail: a made-up graph with a cycle through three parts is caught."""
    graph = {"a": {"b": ["a.x"]}, "b": {"c": ["b.y"]}, "c": {"a": ["c.z"]}, "d": {"a": ["d.w"]}}
    assert find_cycle(graph) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b": []}, "b": {}}) is None
