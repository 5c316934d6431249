"""No import circle anywhere in ``firmware_host`` or ``drivers`` (issue 13).

The graph is built from the source with :mod:`ast`: an edge for every ``import`` and
``from ... import`` statement of a module, at module level and inside functions (a lazy
import only hides a circle until the function runs); imports under
``if TYPE_CHECKING:`` are left out (they never run). ``from pkg import name`` counts as
an import of ``pkg.name`` when that is a module of the two packages, else of ``pkg``.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("firmware_host", "drivers")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py")}


def _is_type_checking(node: ast.If) -> bool:
    t = node.test
    return (isinstance(t, ast.Name) and t.id == "TYPE_CHECKING") or (
        isinstance(t, ast.Attribute) and t.attr == "TYPE_CHECKING"
    )


def _resolve(current: str, is_package: bool, level: int, module: str | None) -> str:
    if level == 0:
        return module or ""
    base = current.split(".") if is_package else current.split(".")[:-1]
    if level > 1:
        base = base[: len(base) - (level - 1)]
    return ".".join([*base, *([module] if module else [])])


def imports_of(name: str, path: Path, known: set[str]) -> set[str]:
    """The modules of ``known`` that module ``name`` imports."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    is_package = path.name == "__init__.py"
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child):
                for stmt in child.orelse:
                    visit_one(stmt)
                continue
            visit_one(child)

    def visit_one(child: ast.AST) -> None:
        if isinstance(child, ast.Import):
            found.update(a.name for a in child.names)
        elif isinstance(child, ast.ImportFrom):
            base = _resolve(name, is_package, child.level, child.module)
            found.add(base)
            found.update(f"{base}.{a.name}" for a in child.names)
        visit(child)

    visit(tree)
    out = set()
    for target in found:
        while target and target not in known:
            target = target.rpartition(".")[0]
        if target and target != name:
            out.add(target)
    return out


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected component of more than one module (Tarjan), each as a
    closed path through it, sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0

    def strongconnect(v: str) -> None:
        nonlocal counter
        index[v] = low[v] = counter
        counter += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                strongconnect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(_path_through(sorted(comp), graph))

    for v in sorted(graph):
        if v not in index:
            strongconnect(v)
    return found


def _path_through(component: list[str], graph: dict[str, set[str]]) -> list[str]:
    """A shortest circle from the component's first module back to itself."""
    start = component[0]
    members = set(component)
    paths = {start: [start]}
    queue = [start]
    while queue:
        v = queue.pop(0)
        for w in sorted(graph[v] & members):
            if w == start:
                return [*paths[v], start]
            if w not in paths:
                paths[w] = [*paths[v], w]
                queue.append(w)
    return component


def test_the_checker_finds_a_circle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c", "a"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_the_checker_reads_lazy_imports_and_skips_type_checking(tmp_path: Path) -> None:
    src = tmp_path / "m.py"
    src.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from firmware_host import daemon\n"
        "def f():\n    from drivers import registry\n"
    )
    got = imports_of("firmware_host.m", src, {"firmware_host.daemon", "drivers.registry"})
    assert got == {"drivers.registry"}


def test_no_import_circle_in_firmware_host_or_drivers() -> None:
    mods = modules()
    known = set(mods)
    graph = {name: imports_of(name, path, known) for name, path in mods.items()}
    assert sum(len(v) for v in graph.values()) > 200  # the graph is really built
    found = cycles(graph)
    assert not found, "import circle(s): " + "; ".join(" -> ".join(c) for c in found)
