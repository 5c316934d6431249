"""No import circle anywhere in ``firmware_host``, ``drivers`` or ``tablecommon`` (issue
13), and the layers of issue 31: ``tablecommon`` is a leaf, ``drivers`` imports nothing
of ``firmware_host``, the rules core (``firmware_host/games``) stays pure.

The graph is built from the source with :mod:`ast`: an edge for every ``import`` and
``from ... import`` statement of a module, at module level and inside functions (a lazy
import only hides a circle until the function runs); imports under
``if TYPE_CHECKING:`` are left out (they never run). ``from pkg import name`` counts as
an import of ``pkg.name`` when that is a module of the packages, else of ``pkg``.

Modules loaded by name count too (:func:`string_imports_of`): a module that calls
``importlib.import_module`` depends on every module its string constants name, a
literal (``import_module("drivers.registry")``) or an entry of a registry of module names
(``SECTION_MODULES``, ``"drivers.shoe.driver:ShoeDriver"``); when it loads names relative
to itself (``import_module(f"{__name__}.{name}")``, ``import_module(name, __package__)``),
the names of its registries resolve under its package (``GAME_MODULES``' folders).
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("firmware_host", "drivers", "tablecommon")
#: Every top-level package of the project (what a leaf may not import).
PROJECT = (*PACKAGES, "tablesim", "tableview", "flooringest", "tablefleet", "bench")


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


def _is_import_module(call: ast.Call) -> bool:
    f = call.func
    return (isinstance(f, ast.Attribute) and f.attr == "import_module") or (
        isinstance(f, ast.Name) and f.id == "import_module"
    )


def _names_itself(node: ast.AST) -> bool:
    """Whether ``node`` (a module name being built) uses ``__name__`` or ``__package__``."""
    return any(
        isinstance(n, ast.Name) and n.id in ("__name__", "__package__") for n in ast.walk(node)
    )


def string_imports_of(name: str, path: Path, known: set[str]) -> set[str]:
    """The modules of ``known`` that module ``name`` loads by name (see the module's
    docstring): none unless it calls ``import_module``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and _is_import_module(n)]
    if not calls:
        return set()
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    relative = any(
        (c.args and _names_itself(c.args[0])) or len(c.args) > 1 or c.keywords for c in calls
    )
    out: set[str] = set()
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Constant) and isinstance(node.value, str)):
            continue
        text = node.value.partition(":")[0]
        candidates = [text]
        if relative and text.startswith("."):
            candidates.append(
                _resolve(
                    name,
                    path.name == "__init__.py",
                    len(text) - len(text.lstrip(".")),
                    text.lstrip(".") or None,
                )
            )
        elif relative:
            candidates.append(f"{package}.{text}")
        out.update(c for c in candidates if c in known and c != name)
    return out


def graph_of(mods: dict[str, Path]) -> dict[str, set[str]]:
    """Module -> the modules it imports, by statement or by name."""
    known = set(mods)
    return {
        name: imports_of(name, path, known) | string_imports_of(name, path, known)
        for name, path in mods.items()
    }


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


def test_the_checker_follows_modules_loaded_by_name(tmp_path: Path) -> None:
    pkg = tmp_path / "p"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(
        "import importlib\n"
        'FOLDERS = {"one": "sub_one", "two": "sub_two"}\n'
        "def load(k):\n"
        '    return importlib.import_module(f"{__name__}.{FOLDERS[k]}")\n'
    )
    (pkg / "config.py").write_text(
        "import importlib\n"
        'MODULES = ("q.settings", "q.registry:Thing")\n'
        'def kinds():\n    return importlib.import_module("q.kinds")\n'
        'NOT_A_MODULE = "q.nothing"\n'
    )
    (pkg / "plain.py").write_text('NAME = "q.settings"\n')  # named, never loaded
    known = {
        "p",
        "p.sub_one",
        "p.sub_two",
        "p.config",
        "p.plain",
        "q.settings",
        "q.registry",
        "q.kinds",
    }
    assert string_imports_of("p", pkg / "__init__.py", known) == {"p.sub_one", "p.sub_two"}
    assert string_imports_of("p.config", pkg / "config.py", known) == {
        "q.settings",
        "q.registry",
        "q.kinds",
    }
    assert string_imports_of("p.plain", pkg / "plain.py", known) == set()


def test_no_import_circle_in_firmware_host_drivers_or_tablecommon() -> None:
    graph = graph_of(modules())
    assert sum(len(v) for v in graph.values()) > 200  # the graph is really built
    # the loads by name are followed: the configuration's sections, the games' folders
    assert "drivers.registry" in graph["firmware_host.config"]
    assert "firmware_host.games.roulette" in graph["firmware_host.games"]
    found = cycles(graph)
    assert not found, "import circle(s): " + "; ".join(" -> ".join(c) for c in found)


def _outside(graph: dict[str, set[str]], sources: str, allowed: tuple[str, ...]) -> list[str]:
    """Every edge from a module of ``sources`` to a module not under ``allowed``."""
    return sorted(
        f"{m} -> {t}"
        for m, targets in graph.items()
        if m == sources or m.startswith(sources + ".")
        for t in targets
        if not any(t == a or t.startswith(a + ".") for a in allowed)
    )


def test_drivers_import_nothing_of_firmware_host() -> None:
    graph = graph_of(modules())
    assert _outside(graph, "drivers", ("drivers", "tablecommon")) == []


def _project_imports(path: Path) -> set[str]:
    """The project modules (any top-level package of :data:`PROJECT`) ``path`` imports,
    by statement or by name (a leaf loads nothing by name)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
        elif isinstance(node, ast.Call) and _is_import_module(node):
            names.add("<import_module>")
    return {n for n in names if n == "<import_module>" or n.split(".")[0] in PROJECT}


def test_tablecommon_is_a_leaf() -> None:
    found = {
        str(p.relative_to(ROOT)): sorted(hits)
        for p in sorted((ROOT / "tablecommon").rglob("*.py"))
        if (hits := {h for h in _project_imports(p) if not h.startswith("tablecommon")})
    }
    assert found == {}


#: What the rules core may not import: I/O, the clock, randomness, concurrency.
IMPURE = {
    "asyncio", "datetime", "io", "os", "pathlib", "random", "secrets", "socket",
    "sqlite3", "subprocess", "sys", "threading", "time",
}  # fmt: skip
#: What of the project the rules core may import besides itself: the shared pure facts.
PURE_SHARED = (
    "tablecommon.errors",
    "tablecommon.values",
    "tablecommon.cards",
    "tablecommon.wheel",
    "firmware_host.jsonio",
)


def test_the_rules_core_stays_pure() -> None:
    graph = graph_of(modules())
    assert _outside(graph, "firmware_host.games", ("firmware_host.games", *PURE_SHARED)) == []
    found = []
    for p in sorted((ROOT / "firmware_host" / "games").rglob("*.py")):
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom) and node.level == 0
                else []
            )
            found += [f"{p.relative_to(ROOT)}: {n}" for n in names if n.split(".")[0] in IMPURE]
    assert found == []
