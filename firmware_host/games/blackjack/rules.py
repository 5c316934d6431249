"""Blackjack's pay table fixed by 56/2004, the house options of art. 21
(:class:`BlackjackRules`) and the points of a hand (art. 8, 10 1), 15)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction

from ..cards import Card
from ..errors import ConfigError
from ..options import option

# -- the pay table fixed by the text ----------------------------------------------

#: A blackjack wins one and a half times the stake (art. 10 2), 5)).
BLACKJACK_ODDS = Fraction(3, 2)
#: Even money for a blackjack against an ace, ten or face (art. 10 3)).
EVEN_MONEY_ODDS = Fraction(1)
#: Five cards without busting: half the stake (art. 19 1)).
FIVE_CARD_ODDS = Fraction(1, 2)
#: Suited 6-7-8 or three 7s: three times the stake (art. 15).
SPECIAL_PRIZE_ODDS = Fraction(3)
#: Insurance pays twice its amount (art. 12 2)).
INSURANCE_ODDS = Fraction(2)
#: Surrender loses half the stake (art. 18 1)).
SURRENDER_LOSS = Fraction(1, 2)
#: Any pair, 11 to 1 for every pair formed (art. 14 1), art. 13 1) (2)).
PAIR_ODDS = Fraction(11)
#: Sevens (art. 14 2)): (number of sevens, all of one suit) -> odds.
SEVENS_ODDS: Mapping[tuple[int, bool], Fraction] = {
    (2, False): Fraction(50),
    (2, True): Fraction(150),
    (3, False): Fraction(500),
    (3, True): Fraction(5000),
}
#: Over / under 13 (art. 14 3)).
OVER_UNDER_ODDS = Fraction(1)

PROCEDURES = ("shoe", "metal_box", "face_up")


ACTIONS = ("hit", "stand", "double", "split", "surrender", "insurance", "even_money", "five_card")
#: The decisions that keep a hand waiting for its player (stand and insurance do not).
PLAY_ACTIONS = ("hit", "double", "split", "surrender", "even_money", "five_card")
HAND_STATUSES = ("open", "stood", "bust", "surrendered", "even_money", "five_card", "special")


def _half_to_one(value: Fraction) -> str | None:
    if not Fraction(1, 2) <= value <= 1:
        return f"{value} is outside 1/2..1 of the original stake"
    return None


@dataclass(frozen=True, slots=True)
class BlackjackRules:
    """House options of 56/2004 art. 21 (each needs the DICJ's authorisation)."""

    any_pair: bool = option(
        True,
        section="pay_table",
        doc="Offer the 'any pair' side bet, 11:1 for every pair of a place",
        cite="56/2004 art. 13 1), art. 14 1)",
    )
    sevens: bool = option(
        True,
        section="pay_table",
        doc="Offer the 'sevens' side bet, 50/150/500/5000:1",
        cite="56/2004 art. 13 2), art. 14 2)",
    )
    over_under_13: bool = option(
        True,
        section="pay_table",
        doc="Offer the 'over / under 13' side bet, 1:1",
        cite="56/2004 art. 13 3), art. 14 3)",
    )
    special_prize: bool = option(
        True,
        section="pay_table",
        doc="Pay the special prize (3 times the stake, at once) for suited 6-7-8 or three 7s",
        cite="56/2004 art. 15",
    )
    procedure: str = option(
        "shoe",
        choices=PROCEDURES,
        doc="shoe: first procedure with a shoe or shuffler (dealer's second card after the "
        "players); metal_box: one deck, dealer's hole card dealt before the players play; "
        "face_up: second procedure (players' cards face up, dealer's second card after)",
        cite="56/2004 art. 5 2)",
    )
    decks: int = option(
        6,
        range=(1, 12),
        doc="Decks of 52 cards in play (the metal box holds one)",
        cite="56/2004 art. 1 2), 3)",
    )
    double: str = option(
        "any_two",
        choices=("any_two", "eleven"),
        doc="any_two: double on the first two cards of a hand, split hands included; "
        "eleven: only when the first two cards total 11",
        cite="56/2004 art. 17",
    )
    max_split_hands: int = option(
        4,
        range=(4, 8),
        doc="Most hands a place may hold after splitting ('four or more')",
        cite="56/2004 art. 16 1)",
    )
    resplit_aces: bool = option(
        True,
        doc="Aces may be split again when a split ace receives an ace",
        cite="56/2004 art. 16 3)",
    )
    resplit: bool = option(
        True,
        doc="A split hand (not aces) receiving a card of the same rank may be split again, "
        "unless the player already declined a split",
        cite="56/2004 art. 16 5)",
    )
    five_card: bool = option(
        True,
        doc="A hand of five cards not over 21 may take half its stake as a win when the "
        "dealer's first card is not an ace",
        cite="56/2004 art. 19",
    )
    double_loss_limited: bool = option(
        False,
        doc="Against a dealer's blackjack a doubled hand loses only its original stake",
        cite="56/2004 art. 10 7)",
    )
    insurance_min: Fraction = option(
        Fraction(1, 2),
        doc="Smallest insurance the house accepts, as a fraction of the original stake",
        cite="56/2004 art. 12 1)",
        check=_half_to_one,
    )
    insurance_max: Fraction = option(
        Fraction(1),
        doc="Largest insurance the house accepts, as a fraction of the original stake",
        cite="56/2004 art. 12 1)",
        check=_half_to_one,
    )
    burn: str = option(
        "none",
        choices=("none", "round", "round_and_dealer"),
        doc="Burn cards inside a round (shoe or shuffler): none; one at the start of each "
        "round; one at the start and one before the dealer's second card",
        cite="56/2004 art. 4 2)",
    )
    shared_place: int = option(
        1,
        choices=(1, 2, 3),
        doc="Several bettors on one place: 1 the seated player decides; 2 at most "
        "place_limit bettors, the seated (or closest) one decides; 3 the largest stake "
        "decides, the seated player on equal stakes",
        cite="56/2004 art. 20 1)",
    )
    place_limit: int = option(
        3,
        range=(1, 3),
        doc="Most bettors on one place under shared_place = 2",
        cite="56/2004 art. 20 1) (2)",
    )

    def __post_init__(self) -> None:
        if self.procedure == "metal_box" and self.decks != 1:
            raise ConfigError(
                f"the metal box holds one deck (56/2004 art. 1 3), art. 2 2) 3)); "
                f"set decks = 1, not {self.decks}"
            )
        if self.procedure == "metal_box" and self.burn != "none":
            raise ConfigError(
                "burn cards inside a round are for the shoe or shuffler only (56/2004 art. 4 2))"
            )
        if self.insurance_min > self.insurance_max:
            raise ConfigError(
                f"insurance_min {self.insurance_min} is above insurance_max {self.insurance_max}"
            )


# -- hands ---------------------------------------------------------------------


def card_points(card: Card) -> int:
    """Art. 8: faces count 10, an ace 1 (or 11, see :func:`hand_total`), others their pips."""
    return 10 if card.rank >= 10 else card.rank


def hand_total(cards: Iterable[Card]) -> tuple[int, bool]:
    """(best total, soft): an ace counts 11 when that does not pass 21 (art. 8)."""
    total = 0
    ace = False
    for c in cards:
        r = c.rank
        if r == 1:
            ace = True
            total += 1
        else:
            total += 10 if r >= 10 else r
    if ace and total <= 11:
        return total + 10, True
    return total, False


def is_natural(cards: Sequence[Card]) -> bool:
    """An ace and a ten or face as the first two cards (art. 10 1))."""
    return (
        len(cards) == 2
        and {cards[0].rank == 1, cards[1].rank == 1} == {True, False}
        and (cards[0].rank >= 10 or cards[1].rank >= 10)
    )


def is_special(cards: Sequence[Card]) -> bool:
    """Suited 6-7-8 or three 7s (art. 15)."""
    if len(cards) != 3:
        return False
    ranks = sorted(c.rank for c in cards)
    if ranks == [7, 7, 7]:
        return True
    return ranks == [6, 7, 8] and len({c.suit for c in cards}) == 1
