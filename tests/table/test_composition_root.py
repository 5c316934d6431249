"""The daemon is a composition root: it builds its parts and wires nothing after (issue 31).

Before the redesign, ``TableDaemon.start`` built its parts and then reached into them
(``journal.db.defer = ...``, ``link.after_publication = ...``, a check's ``on_change``
set from outside), so what a part depends on could only be learnt by reading the whole
start-up. Now each part is given what it uses through its constructor (``build_parts`` in
``firmware_host/tableparts.py``) and the daemon holds the journal and the frozen
:class:`TableParts`. These tests read the two modules' source (``ast``) and fail on:

- an assignment to an attribute of anything but ``self`` (``x.y = ...``), or ``setattr``;
- a ``TableParts`` that is not frozen (a part swapped after start-up);
- a daemon attribute set outside ``__init__`` other than the journal and the parts
  (``start``), the stop flag, and what ``reload`` replaces (its configuration, the
  watchdog check, the console settings);
- a ``start`` of more than 100 lines (it says what runs in which order, nothing more).
"""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

from firmware_host.tableparts import TableParts

ROOT = Path(__file__).resolve().parents[2] / "firmware_host"
MODULES = [ROOT / "daemon.py", ROOT / "tableparts.py"]

# What may be (re)assigned on the daemon after __init__, and why.
LATE_ATTRIBUTES = {
    "journal",  # opened by start(), under the state directory's lock
    "parts",  # built by start() from the journal
    "_stopping",  # stop()
    "cfg",  # reload(): the new configuration
    "watchdog_check",  # reload()
    "console_settings",  # reload()
}


def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def _targets(node: ast.AST) -> list[ast.expr]:
    if isinstance(node, ast.Assign):
        out: list[ast.expr] = []
        for t in node.targets:
            out.extend(t.elts if isinstance(t, ast.Tuple) else [t])
        return out
    if isinstance(node, (ast.AugAssign, ast.AnnAssign)):
        return [node.target]
    return []


def _is_self(expr: ast.expr) -> bool:
    return isinstance(expr, ast.Name) and expr.id == "self"


def test_no_part_is_wired_from_outside() -> None:
    found = []
    for path in MODULES:
        for node in ast.walk(_tree(path)):
            for target in _targets(node):
                if isinstance(target, ast.Attribute) and not _is_self(target.value):
                    found.append(f"{path.name}:{node.lineno}: {ast.unparse(target)} = ...")
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "setattr"
            ):
                found.append(f"{path.name}:{node.lineno}: setattr(...)")
    assert not found, "a part wired after it was built:\n" + "\n".join(found)


def test_the_parts_are_frozen() -> None:
    params = TableParts.__dataclass_params__  # type: ignore[attr-defined]
    assert dataclasses.is_dataclass(TableParts) and params.frozen


def _daemon_class() -> ast.ClassDef:
    for node in _tree(ROOT / "daemon.py").body:
        if isinstance(node, ast.ClassDef) and node.name == "TableDaemon":
            return node
    raise AssertionError("TableDaemon not found in firmware_host/daemon.py")


def test_the_daemon_sets_only_its_late_attributes_outside_init() -> None:
    late = {}
    for fn in _daemon_class().body:
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) or fn.name == "__init__":
            continue
        for node in ast.walk(fn):
            for target in _targets(node):
                if (
                    isinstance(target, ast.Attribute)
                    and _is_self(target.value)
                    and target.attr not in LATE_ATTRIBUTES
                ):
                    late[f"{fn.name}:{node.lineno}"] = target.attr
    assert not late, f"daemon attributes set outside __init__: {late}"


def test_start_says_what_runs_in_which_order_and_no_more() -> None:
    for fn in _daemon_class().body:
        if isinstance(fn, ast.AsyncFunctionDef) and fn.name == "start":
            assert fn.end_lineno is not None
            length = fn.end_lineno - fn.lineno + 1
            assert length <= 100, f"TableDaemon.start is {length} lines"
            return
    raise AssertionError("TableDaemon.start not found")


def test_the_checks_fail_on_what_they_look_for(tmp_path: Path) -> None:
    """The AST walk finds a wiring assignment and a setattr when there is one."""
    source = "def f(link, after):\n    link.after = after\n    setattr(link, 'x', 1)\n"
    tree = ast.parse(source)
    wired = [
        ast.unparse(t)
        for n in ast.walk(tree)
        for t in _targets(n)
        if isinstance(t, ast.Attribute) and not _is_self(t.value)
    ]
    calls = [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "setattr"
    ]
    assert wired == ["link.after"] and len(calls) == 1
