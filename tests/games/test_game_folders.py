"""A game is one folder and one registry line (issue 13).

Each game lives in ``firmware_host/games/<module>/`` (its rules, its deal, its
settlement); the registry ``GAME_MODULES`` in ``firmware_host/games/__init__.py`` names
it; the modules at the top of ``games/`` are the pieces every game shares. Nothing else
in ``firmware_host`` imports a game's folder: the daemon, the table, the configuration
and ``tablectl`` reach a game only through ``get_game``, so adding one touches its
folder and the registry line (and, outside the code, its rules page).
"""

from __future__ import annotations

import ast
import importlib
import json
from pathlib import Path
from typing import Any

from firmware_host.games import GAME_IDS, GAME_MODULES, available_games, get_game
from firmware_host.games.base import Game

ROOT = Path(__file__).resolve().parents[2]
GAMES = ROOT / "firmware_host" / "games"

#: The pieces every game shares, at the top of games/.
#: "describe": what a game says of itself beside its rules (its board, statistics, words,
#: its demo). "roads": the scoreboard roads (bead plate, big road and its derived roads) of any
#: banker/player/tie sequence, shared like cards and dice (baccarat uses them today).
#: "edges": a bet's exact house edge as settled, and its theoretical win (issue 34).
SHARED = {
    "base", "money", "options", "cards", "dice", "errors", "jackpot", "banker", "roads",
    "describe", "edges",
}  # fmt: skip


def test_the_registry_and_the_game_folders_agree() -> None:
    folders = {p.parent.name for p in GAMES.glob("*/__init__.py")}
    assert folders == set(GAME_MODULES.values())
    assert len(set(GAME_MODULES.values())) == len(GAME_MODULES)
    assert tuple(GAME_MODULES) == GAME_IDS


def test_the_top_of_games_holds_only_the_shared_pieces() -> None:
    modules = {p.stem for p in GAMES.glob("*.py")} - {"__init__"}
    assert modules == SHARED


def test_each_folder_exports_its_game_under_its_registry_id() -> None:
    for game_id, module in GAME_MODULES.items():
        package = importlib.import_module(f"firmware_host.games.{module}")
        game = package.GAME
        assert isinstance(game, Game)
        assert game.game_id == game_id
        assert get_game(game_id) is game
        assert isinstance(game.default_rules(), game.rules_type)
    assert available_games() == list(GAME_IDS)


def _game_imports(path: Path, root: Path = ROOT) -> list[str]:
    """The game folders ``path`` (a module under ``root``) imports:
    ``firmware_host.games.<game>...``, absolute or relative."""
    folders = set(GAME_MODULES.values())
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: resolved from the module's own path
                parts = list(path.relative_to(root).with_suffix("").parts)[: -node.level]
                base = ".".join([*parts, *([node.module] if node.module else [])])
            names = [base, *(f"{base}.{a.name}" for a in node.names)]
        for name in names:
            parts = name.split(".")
            if parts[:2] == ["firmware_host", "games"] and len(parts) > 2 and parts[2] in folders:
                found.append(name)
    return found


def test_nothing_outside_games_imports_a_game_folder() -> None:
    found = {
        str(p.relative_to(ROOT)): hits
        for p in sorted((ROOT / "firmware_host").rglob("*.py"))
        if GAMES not in p.parents and (hits := _game_imports(p))
    }
    assert found == {}


def test_the_import_check_sees_a_game_import(tmp_path: Path) -> None:
    sub = tmp_path / "firmware_host" / "table"
    sub.mkdir(parents=True)
    mod = sub / "m.py"
    mod.write_text(
        "import firmware_host.games.base\n"
        "from firmware_host.games.roulette import GAME\n"
        "from ..games.blackjack import deal\n"
        "from ..games import get_game\n"
    )
    assert _game_imports(mod, tmp_path) == [
        "firmware_host.games.roulette",
        "firmware_host.games.roulette.GAME",
        "firmware_host.games.blackjack",
        "firmware_host.games.blackjack.deal",
    ]


def _enum(schema: str, *path: str) -> list[str]:
    node: Any = json.loads((ROOT / "firmware_host" / "schemas" / schema).read_text())
    for key in path:
        node = node[key]
    return list(node["enum"])


def test_the_published_schemas_name_every_game_and_board() -> None:
    """What the floor is told to expect (``round.json``, ``state.json``: the game;
    ``board.json``: the layout) names every game of the folders and every board layout
    a game declares (``Game.display.board``): a new game adds its id there, and its
    layout if it has a board."""
    assert _enum("round.json", "properties", "game") == list(GAME_IDS)
    assert _enum("state.json", "properties", "game") == list(GAME_IDS)
    layouts = [b.layout for g in GAME_IDS if (b := get_game(g).display.board) is not None]
    published = _enum("board.json", "properties", "layout")
    assert sorted(x for x in published if x is not None) == sorted(layouts)
    # null: a game without a lit layout still has a board (its history, issue 33)
    assert (None in published) == (len(layouts) < len(GAME_IDS))
