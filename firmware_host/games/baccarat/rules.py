"""Baccarat's pay table fixed by 55/2004 (art. 17, 18), the house options the DICJ may
authorise (art. 19: :class:`BaccaratRules`) and what they say of the shoe (the burn,
art. 2; the last coup, art. 3)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction

from ..cards import Card
from ..errors import RoundStateError
from ..options import option

#: Art. 18: 5% of the banker's winnings.
COMMISSION = Fraction(5, 100)
#: Art. 17: prizes, "to one".
ODDS: Mapping[str, int] = {"player": 1, "banker": 1, "tie": 8, "player_pair": 11, "banker_pair": 11}

#: Art. 12 options for player/banker bets when a coup ends in a tie.
TIE_OPTIONS: Mapping[str, str] = {
    "withdraw": "returned to the player (55/2004 art. 12 1))",
    "keep": "kept on the layout for the next coup (55/2004 art. 12 2))",
    "change": "kept for the next coup; the player may change the amount, up or down "
    "(55/2004 art. 12 3) (1))",
    "switch": "kept for the next coup; the player may move it between player and banker "
    "(55/2004 art. 12 3) (2))",
}


# -- house options (art. 19) -------------------------------------------------------


@dataclass(frozen=True, slots=True)
class BaccaratRules:
    """55/2004 fixes every prize and the commission (art. 17, 18); the house chooses
    among the alternatives of art. 2, 3, 7 and 12 with the DICJ's authorisation
    (art. 19), and the number of decks (art. 1 1))."""

    decks: int = option(8, range=(6, 12), doc="Decks in the shoe", cite="55/2004 art. 1 1)")
    pairs_offered: bool = option(
        True,
        section="pay_table",
        doc="The layout offers the player pair and banker pair bets (11:1)",
        cite="55/2004 art. 13 4), art. 17 3)",
    )
    dealing: str = option(
        "shoe",
        choices=("shoe", "shuffler_dealer"),
        doc="shoe: cards from a shoe after the art. 2 1) burn; shuffler_dealer: an automatic "
        "shuffler-dealer, cards face up, no burn, returned to the machine after each coup",
        cite="55/2004 art. 1 3), art. 2 3), art. 7 2), art. 19",
    )
    burn: str = option(
        "by_decks",
        choices=("by_decks", "first_card"),
        doc="Cards burnt at the start of a shoe: by_decks burns as many cards as there are "
        "decks; first_card turns the first card and burns as many more as its face value "
        "(10, J, Q, K count 10)",
        cite="55/2004 art. 2 1), art. 19",
    )
    demo_coups: int = option(
        0,
        range=(0, 3),
        doc="Demonstration coups at the start of each shoe (no bets)",
        cite="55/2004 art. 2 2), art. 19",
    )
    last_coup: str = option(
        "cut_card_last",
        choices=("cut_card_last", "one_more"),
        doc="When the cut card comes out: cut_card_last, the coup under way is the last; "
        "one_more, one more coup is dealt",
        cite="55/2004 art. 3 1), art. 19",
    )
    burn_each_coup: bool = option(
        False,
        doc="The house burns one card at the start of each coup",
        cite="55/2004 art. 8",
    )
    tie_bets: str = option(
        "withdraw",
        choices=tuple(TIE_OPTIONS),
        doc="Player and banker bets on a tie: withdraw (returned), keep (stay for the next coup), "
        "change (stay; amount may change), switch (stay; may move to the other side)",
        cite="55/2004 art. 12, art. 19",
    )
    card_handling: bool = option(
        False,
        doc="Players may handle (squeeze) the cards: the highest seated bettor of each side",
        cite="55/2004 art. 16",
    )


def burn_count(rules: BaccaratRules, first_card: Card | None = None) -> int:
    """How many cards are burnt at the start of a shoe (art. 2 1), 3)).

    ``first_card`` is the card turned when ``burn = "first_card"``: it is burnt with
    as many more cards as its face value (10, J, Q, K count 10), so the count
    returned includes it. An automatic shuffler-dealer burns nothing (art. 2 3)).
    """
    if rules.dealing == "shuffler_dealer":
        return 0
    if rules.burn == "by_decks":
        return rules.decks
    if first_card is None:
        raise RoundStateError(
            "burn by the first card's value needs the first card (55/2004 art. 2 1))",
            code="BURN_NEEDS_FIRST_CARD",
        )
    return 1 + min(first_card.rank, 10)


def coups_after_cut_card(rules: BaccaratRules) -> int:
    """Art. 3 1): coups still dealt after the one in which the cut card appears."""
    return 1 if rules.last_coup == "one_more" else 0
