"""Stud poker's house edges for the theoretical win (issue 34).

**The ante** (with the raise the player adds, twice the ante, 61/2004 art. 5 3)): the
player plays the strategy of :data:`~.simulate.STRATEGY` (raise with a pair or better;
with ace-king by the three rules of thumb; else fold), M. Shackleford's "three rules of
thumb" for Caribbean Stud. Its exact expectation over every deal is published (the
combinations of the player's five cards, the croupier's five from the 47 left and which
of them is face up: 19,933,230,517,200; the player's total loss 1,041,417,758,724 units
of ante: 5.2245%) for the same deal and pay table as 61/2004 art. 9 5) with the royal
flush at 100 to 1, the croupier qualifying with ace-king or better (art. 9 2)). Two
things differ, and are stated rather than counted:

- 61/2004 breaks a tie of ranks by suits (art. 4 1), art. 8): the figure counts a tie of
  ranks as a push of ante and raise. Such ties are rare, and the suits give each side
  the higher hand about as often: the difference is of the order of 0.001% of the ante.
- ``max_payout`` (the house's maximum on four of a kind and better, art. 9 5) (7)-(9))
  depends on the stake, and is not counted (the figure pays the odds in full).

The royal flush's odds are a house option of 50 to 100 to 1 (art. 13): below 100 the
edge grows by exactly ``2 (100 - odds)`` units for each combination where the player
holds a royal flush and the croupier qualifies with a hand below it
(:func:`royal_wins`, counted here), over the same combinations.

**The raise** is the player's decision: its expectation is the ante's (None).

**The jackpot bet** (art. 10): exact, for the pool the round was played with: each
jackpot hand's probability from the 2,598,960 five-card hands and its prize at that
pool (:func:`~..jackpot.prize_for`).
"""

from __future__ import annotations

import math
from fractions import Fraction
from functools import lru_cache
from itertools import combinations

from ..cards import SUITS
from ..jackpot import JACKPOT_HANDS, JackpotParams, prize_for

#: M. Shackleford, "Caribbean Stud Poker", wizardofodds.com (Strategy Statistics in
#: Caribbean Stud Poker, "three rules of thumb"): the player's total loss in units of
#: ante over every combination, and the number of combinations.
PUBLISHED_TOTAL_LOSS = 1_041_417_758_724
PUBLISHED_COMBINATIONS = 19_933_230_517_200
PUBLISHED_SOURCE = (
    "M. Shackleford, Caribbean Stud Poker, wizardofodds.com: three rules of thumb, "
    "1,041,417,758,724 / 19,933,230,517,200 (royal flush 100 to 1, ties of ranks push)"
)
#: The royal flush's odds the published figure pays.
PUBLISHED_ROYAL_ODDS = 100


def ante_edge(royal_flush: int) -> Fraction:
    """The ante's house edge under the strategy, with the royal flush paying
    ``royal_flush`` to 1 (see the module docstring)."""
    loss = PUBLISHED_TOTAL_LOSS + 2 * (PUBLISHED_ROYAL_ODDS - royal_flush) * royal_wins()
    return Fraction(loss, PUBLISHED_COMBINATIONS)


@lru_cache(maxsize=1)
def royal_wins() -> int:
    """The combinations (as the published figure counts them: the player's hand, the
    croupier's, which of his cards is up) in which the player holds a royal flush and
    the croupier qualifies (ace-king or better, 61/2004 art. 9 2)) with a hand below it
    (another suit's royal flush ties it in ranks)."""
    qualifying = math.comb(47, 5) - _not_qualifying_after_royal()
    return 4 * (qualifying - 3) * 5


def _not_qualifying_after_royal() -> int:
    """Five-card hands from the 47 cards a royal flush leaves (its suit lacks the ten to
    the ace) that do not qualify: five different ranks, no straight, no flush, not both
    an ace and a king. Counted by rank sets, then suits."""
    high = {1, 13, 12, 11, 10}  # ace, king, queen, jack, ten
    straights = [set(range(lo, lo + 5)) for lo in range(1, 10)] + [{10, 11, 12, 13, 1}]
    out = 0
    for ranks in combinations(range(1, 14), 5):
        s = set(ranks)
        if s in straights or {1, 13} <= s:
            continue
        ways = 1
        for r in ranks:
            ways *= 3 if r in high else 4
        flushes = sum(1 for suit in SUITS if suit != SUITS[0] or not (s & high))
        out += ways - flushes
    return out


def jackpot_edge(params: JackpotParams, probabilities: dict[str, Fraction], pool: int) -> Fraction:
    """The jackpot bet's house edge with ``pool`` on the meter: 1 - E[prize] / stake."""
    expected = sum(
        (probabilities[h] * prize_for(params, h, pool) for h in JACKPOT_HANDS), Fraction(0)
    )
    return 1 - expected / params.stake
