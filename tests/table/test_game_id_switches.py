"""A game has one home (issues 13, 31): outside ``firmware_host/games/`` no code switches
on a game id; the rest asks the game what it says of itself (``Game.display``,
``Game.demo``, ``Game.result_device``...). The check reads the source with :mod:`ast`
and finds every comparison of a value with a game-id string literal (``==``, ``!=``,
``in`` a literal tuple, list or set, and ``match`` cases): in the runtime, the drivers,
the view, the demo (``tablesim/``: its croupier, players and printer play every game
from what the game describes) and the benchmarks.

A table keyed by game ids (``{"roulette": ..., "sicbo": ...}``, a set of them) is a
switch kept elsewhere: none in the runtime, the shared leaf or the demo either. A
lookup table keyed by a protocol's own vocabulary (the board protocol's game codes in
``drivers/board/codec.py``) and a benchmark's goal for one game (``bench/rules.py``)
are not the game's description and are not counted there.

Allowed: the games themselves (``firmware_host/games/``).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from firmware_host.games import GAME_IDS

ROOT = Path(__file__).resolve().parents[2]
SEARCHED = ("firmware_host", "drivers", "tableview", "tablesim", "bench", "tablecommon")
#: Where a table keyed by game ids is a switch too.
NO_TABLES = ("firmware_host", "tablesim", "tablecommon")
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


def tables(source: str) -> list[tuple[int, str]]:
    """(line, game id) of every dict key and set element that is a game-id literal."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        keys = (
            node.keys
            if isinstance(node, ast.Dict)
            else node.elts
            if isinstance(node, ast.Set)
            else []
        )
        found += [
            (k.lineno, k.value) for k in keys if isinstance(k, ast.Constant) and k.value in GAME_IDS
        ]
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
    assert tables(src) == [(5, "roulette")]
    assert tables('Z = {"mahjong"}\nn = {"x": 1}\n') == [(1, "mahjong")]


def test_no_game_id_switch_outside_the_games() -> None:
    bad = []
    for pkg in SEARCHED:
        files = sorted((ROOT / pkg).rglob("*.py"))
        assert files, pkg
        for path in files:
            if any(path.is_relative_to(a) for a in ALLOWED):
                continue
            source = path.read_text(encoding="utf-8")
            for line, game in switches(source):
                bad.append(f"{path.relative_to(ROOT)}:{line}: compares with {game!r}")
            if pkg in NO_TABLES:
                for line, game in tables(source):
                    bad.append(f"{path.relative_to(ROOT)}:{line}: a table keyed by {game!r}")
    assert not bad, "ask the game instead of switching on its id:\n" + "\n".join(bad)
