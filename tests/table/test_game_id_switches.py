"""A game has one home (issue 13): outside ``firmware_host/games/`` no code switches on a
game id. The check reads the source with :mod:`ast` and finds every comparison of a
value with a game-id string literal (``==``, ``!=``, ``in`` a literal tuple, list or
set, and ``match`` cases). A lookup table keyed by a protocol's own vocabulary (the
board protocol's game codes, say) is not a switch and is not counted.

Allowed: the game registry itself (``firmware_host/games/``) and the demo's own
package (``tablesim/``, which plays every game as a dealer would).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from firmware_host.games import GAME_IDS

ROOT = Path(__file__).resolve().parents[2]
SEARCHED = ("firmware_host", "drivers", "tableview")
ALLOWED = (ROOT / "firmware_host" / "games",)


def _literals(node: ast.AST) -> Iterator[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        yield node.value
    elif isinstance(node, ast.Tuple | ast.List | ast.Set):
        for elt in node.elts:
            yield from _literals(elt)


def switches(source: str) -> list[tuple[int, str]]:
    """(line, game id) of every comparison with a game-id literal in ``source``."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            for side in (node.left, *node.comparators):
                found += [(node.lineno, v) for v in _literals(side) if v in GAME_IDS]
        elif isinstance(node, ast.MatchValue):
            found += [(node.lineno, v) for v in _literals(node.value) if v in GAME_IDS]
    return found


def test_the_checker_sees_each_kind_of_switch() -> None:
    src = (
        'if g == "roulette": pass\n'
        'x = g in ("sicbo", "other")\n'
        "match g:\n"
        '    case "fantan": pass\n'
        'RANGES = {"roulette": (0, 36)}\n'  # a table keyed by game: not a switch
    )
    assert switches(src) == [(1, "roulette"), (2, "sicbo"), (4, "fantan")]


def test_no_game_id_switch_outside_the_games() -> None:
    bad = []
    for pkg in SEARCHED:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            if any(path.is_relative_to(a) for a in ALLOWED):
                continue
            for line, game in switches(path.read_text(encoding="utf-8")):
                bad.append(f"{path.relative_to(ROOT)}:{line}: compares with {game!r}")
    assert not bad, "ask the game instead of switching on its id:\n" + "\n".join(bad)
