"""The runtime never imports the simulation tooling (issue 13 part 6).

``tablesim`` (the demo, its croupier, simulated players, the floor client, the test
brokers) uses ``firmware_host`` and ``drivers``; they never import it at module
level, so a production table loads none of it. The one exception is ``tablectl
demo``, whose command function imports the demo when it runs.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RUNTIME = ("firmware_host", "drivers")
#: Modules that may import tablesim inside a function (the ``tablectl demo`` command).
LAZY_ALLOWED = {"firmware_host/subcommands/daemon.py"}


def _is_tablesim(name: str | None) -> bool:
    return name is not None and (name == "tablesim" or name.startswith("tablesim."))


def tablesim_imports(source: str) -> list[tuple[int, bool]]:
    """(line, at module level) of every import of tablesim in ``source``; an import
    inside a function body runs only when the function is called."""
    found: list[tuple[int, bool]] = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Import):
                if any(_is_tablesim(a.name) for a in child.names):
                    found.append((child.lineno, not in_function))
            elif (
                isinstance(child, ast.ImportFrom)
                and child.level == 0
                and _is_tablesim(child.module)
            ):
                found.append((child.lineno, not in_function))
            inner = in_function or isinstance(
                child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda
            )
            visit(child, inner)

    visit(ast.parse(source), False)
    return found


def test_the_checker_tells_module_level_from_lazy_imports() -> None:
    src = (
        "import tablesim.demo\n"
        "from tablesim import players\n"
        "try:\n    from tablesim.broker import free_port\nexcept ImportError:\n    pass\n"
        "class A:\n    import tablesim\n"
        "def f():\n    from tablesim.demo import run_demo\n"
        "import tablesimulator\n"
        "from .tablesim import x\n"
    )
    assert tablesim_imports(src) == [(1, True), (2, True), (4, True), (8, True), (10, False)]


def test_no_runtime_module_imports_tablesim_at_module_level() -> None:
    offenders = []
    lazy = []
    for package in RUNTIME:
        for path in sorted((ROOT / package).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            for line, module_level in tablesim_imports(path.read_text(encoding="utf-8")):
                if module_level:
                    offenders.append(f"{rel}:{line}")
                elif rel not in LAZY_ALLOWED:
                    lazy.append(f"{rel}:{line}")
    assert not offenders, f"runtime modules importing tablesim at module level: {offenders}"
    assert not lazy, f"only the demo command may import tablesim (lazily): {lazy}"


def test_loading_every_runtime_module_and_the_cli_loads_no_tablesim() -> None:
    """What the checker cannot see (importlib, a re-export): import everything the
    daemon and the CLI can load, then look at what was loaded."""
    code = (
        "import importlib, pkgutil, sys\n"
        f"for pkg in {RUNTIME!r}:\n"
        "    root = importlib.import_module(pkg)\n"
        "    for m in pkgutil.walk_packages(root.__path__, pkg + '.'):\n"
        "        if not m.name.endswith('__main__'):\n"
        "            importlib.import_module(m.name)\n"
        "from firmware_host.cli import build_parser\n"
        "build_parser()\n"
        "print(sorted(n for n in sys.modules if n.split('.')[0] == 'tablesim'))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]", f"loaded: {proc.stdout.strip()}"


#: The daemon's insides: the demo meets the table at its table file, its start and
#: stop, the simulators' wire protocols and the MQTT topics, never through these.
DAEMON_INSIDES = {"engine", "procedure", "drivers", "link", "journal", "floor_requests"}


def test_tablesim_reaches_into_no_daemon_insides() -> None:
    offenders = []
    for path in sorted((ROOT / "tablesim").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and node.attr in DAEMON_INSIDES:
                offenders.append(f"{path.relative_to(ROOT).as_posix()}:{node.lineno} .{node.attr}")
    assert not offenders, f"the demo reads the daemon's insides: {offenders}"


def test_the_runtime_never_imports_the_floor_ingest() -> None:
    """Issue 18: ``flooringest`` (the floor's side) is its own package; the table's
    runtime names it only in tablectl's subcommand list (``firmware_host/cli.py``,
    imported when the CLI is built), and loading every runtime module loads none of it."""
    offenders = []
    for package in RUNTIME:
        for path in sorted((ROOT / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                names: list[str] = []
                if isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names = [node.module]
                if any(n == "flooringest" or n.startswith("flooringest.") for n in names):
                    offenders.append(f"{path.relative_to(ROOT).as_posix()}:{node.lineno}")
    assert not offenders, f"runtime modules importing the floor ingest: {offenders}"
    code = (
        "import importlib, pkgutil, sys\n"
        f"for pkg in {RUNTIME!r}:\n"
        "    root = importlib.import_module(pkg)\n"
        "    for m in pkgutil.walk_packages(root.__path__, pkg + '.'):\n"
        "        if not m.name.endswith('__main__') and m.name != 'firmware_host.cli':\n"
        "            importlib.import_module(m.name)\n"
        "print(sorted(n for n in sys.modules if n.split('.')[0] in ('flooringest', 'asyncpg')))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]", f"loaded: {proc.stdout.strip()}"
    # The subcommand list loads only the light CLI module, never the driver.
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys\nfrom firmware_host.cli import build_parser\nbuild_parser()\n"
            "print(sorted(n for n in sys.modules if n.split('.')[0] in ('asyncpg',) "
            "or n in ('flooringest.worker', 'flooringest.store')))\n",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]", f"loaded: {proc.stdout.strip()}"
