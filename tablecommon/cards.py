"""Playing cards and shoes, as data: the one card notation of the rules core
(``firmware_host.games.cards`` is this module) and of the shoe's driver and simulator.

Notation (input and output, documented in ``docs/rules/cards.md``): a card is its
rank then its suit, two characters: ranks ``A 2 3 4 5 6 7 8 9 T J Q K`` and suits
``S H C D`` (spades, hearts, clubs, diamonds), e.g. ``AS``, ``TD``, ``7H``. On input
``10`` is accepted for ``T`` and letters may be lower case; output is canonical.

A shoe is the ordered list of cards as they will leave it, with the cut card's
position and the burn cards as data; shuffling is not done here (no randomness): a
simulator or a real shuffler provides the order.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from .errors import OutcomeError

RANKS = "A23456789TJQK"
#: Suits in the stud poker order of 61/2004 art. 8 (spades > hearts > clubs > diamonds).
SUITS = "SHCD"
SUIT_NAMES = {"S": "spades", "H": "hearts", "C": "clubs", "D": "diamonds"}


@dataclass(frozen=True, slots=True, order=True)
class Card:
    """A card. ``rank`` is 1 (ace) .. 13 (king); ``suit`` one of ``S H C D``."""

    rank: int
    suit: str

    def __post_init__(self) -> None:
        if not 1 <= self.rank <= 13 or self.suit not in SUITS or len(self.suit) != 1:
            raise OutcomeError(
                f"not a card: rank {self.rank!r} suit {self.suit!r}", code="CARD_INVALID"
            )

    @staticmethod
    def parse(text: object) -> Card:
        if not isinstance(text, str):
            raise OutcomeError(
                f"a card is a string such as 'AS' or 'TD', got {text!r}", code="CARD_INVALID"
            )
        t = text.strip().upper()
        if t.startswith("10"):
            t = "T" + t[2:]
        if len(t) != 2 or t[0] not in RANKS or t[1] not in SUITS:
            raise OutcomeError(
                f"not a card: {text!r} (rank A,2-9,T,J,Q,K then suit S,H,C,D, e.g. 'AS', 'TD')",
                code="CARD_INVALID",
            )
        return Card(RANKS.index(t[0]) + 1, t[1])

    def __str__(self) -> str:
        return RANKS[self.rank - 1] + self.suit

    def __repr__(self) -> str:
        return f"Card({str(self)!r})"

    @property
    def is_face(self) -> bool:
        return self.rank >= 11

    @property
    def is_ten_value(self) -> bool:
        """10, J, Q, K (blackjack and baccarat count them alike)."""
        return self.rank >= 10


def parse_cards(items: Iterable[str] | str) -> tuple[Card, ...]:
    """Parse ``["AS", "TD"]`` or ``"AS TD"`` / ``"AS,TD"``."""
    if isinstance(items, str):
        items = items.replace(",", " ").split()
    return tuple(Card.parse(c) for c in items)


def cards_str(cards: Iterable[Card]) -> list[str]:
    return [str(c) for c in cards]


def deck() -> tuple[Card, ...]:
    """One 52-card deck in a fixed order (suits S H C D, ranks A..K)."""
    return tuple(Card(r, s) for s in SUITS for r in range(1, 14))


def shoe_composition(decks: int) -> Counter[Card]:
    """How many of each card an N-deck shoe holds."""
    if not 1 <= decks <= 12:
        raise OutcomeError(f"a shoe holds 1 to 12 decks, got {decks}", code="SHOE_INVALID")
    return Counter({c: decks for c in deck()})


@dataclass(frozen=True, slots=True)
class Shoe:
    """A shoe as data: the card order, how many are burnt, where the cut card is.

    ``cut_position`` is the index of the first card *behind* the cut card: when the
    next card to deal has that index, the current round is the shoe's last.
    """

    decks: int
    order: tuple[Card, ...]
    burn: int = 0
    cut_position: int | None = None

    def __post_init__(self) -> None:
        want = shoe_composition(self.decks)
        have = Counter(self.order)
        if have != want:
            missing = sorted(str(c) for c in (want - have).elements())
            extra = sorted(str(c) for c in (have - want).elements())
            raise OutcomeError(
                f"shoe of {self.decks} decks does not match its cards: missing {missing[:10]}, extra {extra[:10]}",
                code="SHOE_INVALID",
            )
        if not 0 <= self.burn < len(self.order):
            raise OutcomeError(f"burn count {self.burn} outside the shoe", code="SHOE_INVALID")
        if self.cut_position is not None and not self.burn <= self.cut_position <= len(self.order):
            raise OutcomeError(
                f"cut card position {self.cut_position} outside the shoe", code="SHOE_INVALID"
            )

    def deal_order(self) -> Sequence[Card]:
        """The cards in dealing order, after the burnt ones."""
        return self.order[self.burn :]


def check_deck(cards: Iterable[Card], decks: int) -> tuple[list[Card], list[Card]]:
    """A deck check: (missing, extra) cards against an N-deck composition."""
    want = shoe_composition(decks)
    have = Counter(cards)
    return sorted((want - have).elements()), sorted((have - want).elements())
