"""The statistics of the last rounds, as the game describes them (pure).

What boards show and pit staff expect over a window of the last settled rounds: the
last results, hot and cold numbers, and the counts behind the percentages. Which
figures a table has, and how they are counted, is the game's
(``Game.display.statistics``: roulette's chances, dozens and columns, fantan's numbers,
the dice games' totals, triples and faces; the shared counts are
``firmware_host.games.describe.number_statistics`` and
``firmware_host.games.dice.dice_statistics``). Only counts are computed: a percentage is
a display figure, made by the display from a count and ``rounds`` (the payload stays
exact: integers). A game without statistics (baccarat: its figures are its roads, on
the ``board`` topic) has none here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..games import get_game
from ..jsonio import JSON


def applies(game_id: str) -> bool:
    """Whether a ``game_id`` table has statistics."""
    return get_game(game_id).display.statistics is not None


def statistics(
    game_id: str, outcomes: Sequence[Mapping[str, Any]], *, last: int = 20
) -> dict[str, JSON] | None:
    """The statistics of a ``game_id`` table over ``outcomes`` (as published, newest
    first), or None where the game has none."""
    figures = get_game(game_id).display.statistics
    return None if figures is None else figures(outcomes, last=last)
