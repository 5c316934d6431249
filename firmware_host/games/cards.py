"""Playing cards and shoes, as data: the shared card notation
(:mod:`tablecommon.cards`, which the shoe's driver reads too), under the rules core's
own name. Notation: ``docs/rules/cards.md``."""

from __future__ import annotations

from tablecommon.cards import (
    RANKS,
    SUIT_NAMES,
    SUITS,
    Card,
    Shoe,
    cards_str,
    check_deck,
    deck,
    parse_cards,
    shoe_composition,
)

__all__ = [
    "RANKS",
    "SUITS",
    "SUIT_NAMES",
    "Card",
    "Shoe",
    "cards_str",
    "check_deck",
    "deck",
    "parse_cards",
    "shoe_composition",
]
