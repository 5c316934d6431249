"""P'ai Kao's table (eight places, sixteen tiles a game) and its house options
(:class:`PaiKaoRules`)."""

from __future__ import annotations

from dataclasses import dataclass

from ..banker import SETTLEMENT_ORDERS
from ..options import option

REGULATION = "195/92/M"
#: Places at every table, the banker's included (art. 3 (a)); all receive tiles (art. 2 (d)).
PLACES = 8
#: Tiles dealt in one game: 8 places x 2 (art. 2 (a), (d)).
TILES_PER_GAME = 16


@dataclass(frozen=True, slots=True)
class PaiKaoRules:
    settlement_order: str = option(
        "served",
        choices=SETTLEMENT_ORDERS,
        doc="Order bets are paid or collected within the banker's capital: 'served' place by "
        "place from the first place served, right to left, each place's bets in the order "
        "placed; 'placed' strictly in the order placed",
        cite="195/92/M art. 2 (c), art. 5 (c) and (e)",
    )
    casino_co_bank: int = option(
        0,
        range=(0, 10**12),
        doc="Capital (minor units) the casino co-banks after the banker and the co-banking "
        "players in each game when the outcome does not say; 0: none",
        cite="195/92/M art. 5 (e)",
    )
