"""Super Pan 9's house options (:class:`SuperPan9Rules`) and the order of its hands:
points (art. 6), the higher card (art. 7 2)) and the banker's ties (art. 8)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..banker import SETTLEMENT_ORDERS
from ..cards import Card
from ..options import option

REGULATION = "261/96/M"
#: Decks in play: "um baralho normal de 52 cartas" (art. 1 1)).
DECKS = 1
EQUAL_HIGH_CARD = ("next-card", "banker")


@dataclass(frozen=True, slots=True)
class SuperPan9Rules:
    places: int = option(
        9,
        range=(2, 26),
        doc="Places at the table, the banker's included; every place receives two cards",
        cite="261/96/M art. 3 1) (at least two), art. 1 1) (one 52-card deck: at most 26 hands)",
    )
    equal_high_card: str = option(
        "next-card",
        choices=EQUAL_HIGH_CARD,
        doc="Equal points and equal highest cards: 'next-card' compares the other card and the "
        "banker wins only when both ranks are equal; 'banker' gives it to the banker at once",
        cite="261/96/M art. 7 2), art. 8 (gap: the largest cards tie)",
    )
    settlement_order: str = option(
        "served",
        choices=SETTLEMENT_ORDERS,
        doc="Order bets are paid or collected within the banker's capital: 'served' place by "
        "place from the first place served, right to left, each place's bets in the order "
        "placed; 'placed' strictly in the order placed",
        cite="261/96/M art. 2 3), art. 5 3) and 5)",
    )
    casino_co_bank: int = option(
        0,
        range=(0, 10**12),
        doc="Capital (minor units) the casino co-banks behind the banker and the co-banking "
        "players in each game when the outcome does not say; 0: none",
        cite="261/96/M art. 5 5)",
    )


# -- hands: art. 6-8 ------------------------------------------------------------------------


def card_points(card: Card) -> int:
    """Ace 1, two to nine their face, ten and pictures 0 (art. 6 1))."""
    return card.rank if card.rank <= 9 else 0


def hand_points(cards: Sequence[Card]) -> int:
    """Sum of the two cards' points, only the last digit counting (art. 6 2))."""
    return sum(card_points(c) for c in cards) % 10


def hand_key(cards: Sequence[Card], equal_high_card: str = "next-card") -> tuple[int, ...]:
    """A key whose order is the order of hands: the higher key wins, equal keys go to
    the banker (art. 7-8). Cards rank K > Q > J > 10 > 9 ... > 2 > A (art. 6 1)).
    """
    hi, lo = sorted((c.rank for c in cards), reverse=True)
    if equal_high_card == "banker":
        return (hand_points(cards), hi)
    return (hand_points(cards), hi, lo)


def place_beats_banker(
    place: Sequence[Card], banker: Sequence[Card], equal_high_card: str = "next-card"
) -> bool:
    return hand_key(place, equal_high_card) > hand_key(banker, equal_high_card)
