"""No import circle, lazy imports included: a module that imports one that imports it back
(even inside a function) cannot be read, moved or tested alone, and its load order decides
what works. Both halves are checked: the package and the CDK app. The package is checked twice:
module by module, and floor by floor, each subpackage and each top-level module one unit, so
that ``a/x.py -> b/y.py -> a/z.py`` (no module circle, but two packages that need each other)
fails too."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def modules(folder: Path, package: str) -> dict[str, Path]:
    found = {}
    for path in folder.rglob("*.py"):
        parts = list(path.relative_to(folder).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join([package, *parts] if package else parts)] = path
    return found


def imports(found: dict[str, Path]) -> dict[str, set[str]]:
    """Each module's imports of the others, at any depth of its code (TYPE_CHECKING too)."""
    graph: dict[str, set[str]] = {name: set() for name in found}
    for name, path in found.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                targets = [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
            else:
                continue
            for target in targets:
                while target and target not in found:
                    target = target.rpartition(".")[0]
                if target and target != name and not name.startswith(f"{target}."):  # a package's own parts load it
                    graph[name].add(target)
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan's, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_package_has_no_import_circle():
    assert circles(imports(modules(ROOT / "shared" / "citewell", "citewell"))) == []


def units(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """The graph between units: ``citewell.answers.extractive.units`` belongs to ``citewell.answers``, a
    top-level module is its own unit; imports inside a unit are left out."""
    def unit(name: str) -> str:
        return ".".join(name.split(".")[:2])

    joined: dict[str, set[str]] = {}
    for name, targets in graph.items():
        joined.setdefault(unit(name), set()).update(unit(t) for t in targets if unit(t) != unit(name))
    return joined


def test_no_two_packages_of_the_package_import_each_other():
    assert circles(units(imports(modules(ROOT / "shared" / "citewell", "citewell")))) == []


def test_a_package_circle_is_found_where_modules_make_none():
    graph = {"citewell.a.x": {"citewell.b.y"}, "citewell.b.y": {"citewell.a.z"}, "citewell.a.z": set()}
    assert circles(graph) == [] and circles(units(graph)) == [["citewell.a", "citewell.b"]]


def test_the_cdk_app_has_no_import_circle():
    assert circles(imports(modules(ROOT / "infra", ""))) == []


def test_a_circle_is_found_when_there_is_one():
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
