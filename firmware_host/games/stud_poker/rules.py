"""Stud poker's pay table (61/2004 art. 9 5)), the house options (royal flush odds
of art. 13, the house maximum, the progressive jackpot of art. 10, the dealing
procedure of art. 3 and 7: :class:`StudPokerRules`)."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from ..jackpot import RESET_RULES, JackpotParams
from ..options import option
from .hands import (
    FLUSH,
    FOUR_OF_A_KIND,
    FULL_HOUSE,
    HIGH_CARD,
    ONE_PAIR,
    ROYAL_FLUSH,
    STRAIGHT,
    STRAIGHT_FLUSH,
    THREE_OF_A_KIND,
    TWO_PAIRS,
)

# -- pay table and options (art. 9, 10, 13) --------------------------------------------

#: Art. 9 5): the raise pays, by the player's hand (royal flush: the rules option).
RAISE_ODDS = {
    HIGH_CARD: 1,
    ONE_PAIR: 1,
    TWO_PAIRS: 2,
    THREE_OF_A_KIND: 3,
    STRAIGHT: 4,
    FLUSH: 5,
    FULL_HOUSE: 7,
    FOUR_OF_A_KIND: 20,
    STRAIGHT_FLUSH: 50,
}
#: Art. 9 5) (7)-(9): prizes limited by the house's maximum per game.
CAPPED = frozenset({FOUR_OF_A_KIND, STRAIGHT_FLUSH, ROYAL_FLUSH})
SEATS = tuple(range(1, 8))


def _rate(v: Fraction) -> str | None:
    return None if 0 <= v <= 1 else f"the contribution rate must be between 0 and 1, got {v}"


@dataclass(frozen=True, slots=True)
class StudPokerRules:
    royal_flush: int = option(
        100,
        section="pay_table",
        range=(50, 100),
        doc="Raise odds for a royal flush (x to 1)",
        cite="61/2004 art. 9 5) (9), art. 13",
    )
    max_payout: int = option(
        0,
        section="pay_table",
        range=(0, 10**12),
        doc="House maximum paid on one hand's raise for four of a kind, straight flush and "
        "royal flush in a game, minor units; 0 = no maximum set",
        cite="61/2004 art. 9 5) (7)-(9)",
    )
    jackpot_offered: bool = option(
        True,
        section="pay_table",
        doc="The table runs the progressive jackpot",
        cite="61/2004 art. 1 4), art. 5 2)",
    )
    jackpot_stake: int = option(
        1000,
        section="pay_table",
        range=(1, 10**9),
        doc="The jackpot bet's stake, minor units (one amount per table)",
        cite="61/2004 art. 10 1)",
    )
    jackpot_contribution_rate: Fraction = option(
        Fraction(1, 2),
        section="pay_table",
        check=_rate,
        doc="Part of each jackpot stake credited to the pool (exact fraction)",
        cite="61/2004 art. 10",
    )
    jackpot_seed: int = option(
        10_000_000,
        section="pay_table",
        range=(0, 10**12),
        doc="Minimum the pool restarts from after it is paid out, minor units",
        cite="61/2004 art. 10 8)",
    )
    jackpot_royal_flush_fixed: int = option(
        10_000_000,
        section="pay_table",
        range=(1, 10**12),
        doc="Fixed sum for a royal flush (paid if larger than the pool)",
        cite="61/2004 art. 10 2) (1)",
    )
    jackpot_straight_flush_fixed: int = option(
        500_000,
        section="pay_table",
        range=(1, 10**12),
        doc="Fixed sum for a straight flush (paid if larger than 10% of the pool)",
        cite="61/2004 art. 10 2) (2)",
    )
    jackpot_four_of_a_kind_fixed: int = option(
        100_000,
        section="pay_table",
        range=(1, 10**12),
        doc="Fixed sum for four of a kind",
        cite="61/2004 art. 10 2) (3)",
    )
    jackpot_full_house_fixed: int = option(
        75_000,
        section="pay_table",
        range=(1, 10**12),
        doc="Fixed sum for a full house",
        cite="61/2004 art. 10 2) (4)",
    )
    jackpot_flush_fixed: int = option(
        50_000,
        section="pay_table",
        range=(1, 10**12),
        doc="Fixed sum for a flush",
        cite="61/2004 art. 10 2) (5)",
    )
    jackpot_reset: str = option(
        "exhausted",
        choices=RESET_RULES,
        doc="exhausted: the pool restarts at the seed when a payment empties it (the letter of "
        "art. 10 8)); below_seed: also topped up to the seed whenever a payment leaves less",
        cite="61/2004 art. 10 8)",
    )
    jackpot_on_fold: bool = option(
        False,
        doc="A folded hand still wins its jackpot prize (default: no, a folded hand is lost and "
        "its cards collected, art. 6 7))",
        cite="61/2004 art. 6 7), art. 10 2)",
    )
    dealing: str = option(
        "shoe",
        choices=("shoe", "shuffler"),
        doc="shoe: one card at a time to each place, croupier last, five rounds; shuffler: five "
        "cards at a time to each place, croupier last",
        cite="61/2004 art. 3, art. 7",
    )

    def __post_init__(self) -> None:
        self.jackpot_params()  # cross-field checks (fixed sums at least the stake...)

    def jackpot_params(self) -> JackpotParams:
        return JackpotParams(
            stake=self.jackpot_stake,
            contribution_rate=self.jackpot_contribution_rate,
            seed=self.jackpot_seed,
            royal_flush_fixed=self.jackpot_royal_flush_fixed,
            straight_flush_fixed=self.jackpot_straight_flush_fixed,
            four_of_a_kind_fixed=self.jackpot_four_of_a_kind_fixed,
            full_house_fixed=self.jackpot_full_house_fixed,
            flush_fixed=self.jackpot_flush_fixed,
            reset_rule=self.jackpot_reset,
        )

    def raise_odds(self, cat: int) -> int:
        return self.royal_flush if cat == ROYAL_FLUSH else RAISE_ODDS[cat]
