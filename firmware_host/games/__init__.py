"""The rules core: pure implementations of the Macau regulations.

No I/O, no asyncio, no clock, no randomness: every function here takes its inputs
(outcome, bets, rules, money settings) and returns frozen records. The daemon, the
CLI and the benchmarks all use it through :func:`get_game`.

A game is one folder (``roulette/``, ``blackjack/``...: its rules, its deal, its
settlement) whose package exports ``GAME``; the modules here at the top are what the
games share (``base``, ``errors``, ``money``, ``options``, ``cards``, ``dice``,
``jackpot``, ``banker``, ``describe``). A new game is its folder and one line of
:data:`GAME_MODULES`; a game from outside the folders (a test's toy game, a plug-in)
is added with :func:`register_game`.
"""

from __future__ import annotations

import importlib
from typing import Any

from .base import Bet, BetResult, DiscreteGame, Game, Limits, MathReport, Settlement, Totals
from .errors import UnknownGame
from .money import MoneyRules, Rounding, Verdict

#: Game ids, the same in the CLI, the configuration and MQTT -> the folder (package)
#: holding the game. The one line a new game adds.
GAME_MODULES: dict[str, str] = {
    "roulette": "roulette",
    "sicbo": "sicbo",
    "fish-prawn-crab": "fish_prawn_crab",
    "fantan": "fantan",
    "baccarat": "baccarat",
    "blackjack": "blackjack",
    "stud-poker": "stud_poker",
    "super-pan-9": "super_pan_9",
    "paikao": "paikao",
    "mahjong": "mahjong",
}

GAME_IDS = tuple(GAME_MODULES)

_cache: dict[str, Game[Any, Any]] = {}
_registered: dict[str, Game[Any, Any]] = {}


def register_game(game: Game[Any, Any]) -> None:
    """Add a game from outside the game folders (a test's toy game, a plug-in): the
    configuration, the table and the demo then take it as any other (:func:`get_game`,
    :func:`game_ids`). Its id must be new."""
    if game.game_id in GAME_MODULES or game.game_id in _registered:
        raise ValueError(f"game {game.game_id!r} is already known")
    _registered[game.game_id] = game


def unregister_game(game_id: str) -> None:
    """Forget a game added by :func:`register_game` (the folders' stay)."""
    _registered.pop(game_id, None)


def game_ids() -> tuple[str, ...]:
    """Every game id: the folders' (:data:`GAME_IDS`), then the registered ones."""
    return (*GAME_IDS, *_registered)


def get_game(game_id: str) -> Game[Any, Any]:
    """The game object for ``game_id`` (one of :func:`game_ids`)."""
    game = _cache.get(game_id) or _registered.get(game_id)
    if game is not None:
        return game
    module_name = GAME_MODULES.get(game_id)
    if module_name is None:
        raise UnknownGame(f"unknown game {game_id!r}; known games: {', '.join(GAME_IDS)}")
    try:
        module = importlib.import_module(f"{__name__}.{module_name}")
    except ModuleNotFoundError as exc:
        if exc.name == f"{__name__}.{module_name}":
            raise UnknownGame(f"game {game_id!r} is not implemented in this build") from exc
        raise
    found = getattr(module, "GAME", None)
    if not isinstance(found, Game):
        raise UnknownGame(
            f"game {game_id!r} is not implemented in this build (no GAME in {module.__name__})"
        )
    _cache[game_id] = found
    return found


def available_games() -> list[str]:
    """Game ids whose implementation is present."""
    out = []
    for gid in GAME_IDS:
        try:
            get_game(gid)
        except UnknownGame:
            continue
        out.append(gid)
    return out


__all__ = [
    "GAME_IDS",
    "Bet",
    "BetResult",
    "DiscreteGame",
    "Game",
    "Limits",
    "MathReport",
    "MoneyRules",
    "Rounding",
    "Settlement",
    "Totals",
    "Verdict",
    "game_ids",
    "get_game",
    "register_game",
    "unregister_game",
]
