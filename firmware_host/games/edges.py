"""The exact house edge of one bet as the table settles it, and its theoretical win
(issue 34): pure, exact fractions, no float.

A bet's **house edge** is the house's expected result on it, as a fraction of its stake:
``-E[net] / stake``, where ``net`` is what :func:`~.money.settle_amounts` pays on it for
each outcome, weighted by the outcome's exact probability. So the edge is the one of
this bet type and selection under the table's pay table and commission, *and* of the
table's money rules: a prize the payable unit does not let the table pay in full (the
breakage) and a commission rounded to the minor unit are the house's, and counted. With
no rounding at stake (a payable unit of 1, a whole-multiple prize) it is the
regulation's edge of ``tablectl math``.

Its **theoretical win** is ``stake * edge`` exactly (a fraction of the minor unit: the
house's expected result on the bet); rounded to the minor unit by :func:`theo_minor`:
**to the nearest minor unit, an exact half to the even one** (Python's ``round`` of a
``Fraction``). Sums (a round's, a shift's, a player's session) add the exact fractions
and round once, so that they never drift from the sum of what they add.

A game says how its edges are obtained (:attr:`~.base.Game.edge_basis`):

- ``exact``: an enumeration of the regulation's outcomes with their exact probabilities
  (the dice and wheel games, fantan, baccarat from the full shoe);
- ``strategy``: the game's expectation under a stated strategy of its players
  (blackjack, stud poker: ``docs/rules/<game>.md`` states it);
- ``none``: the house is not a party to the bets (the player-banked Super Pan 9 and
  P'ai Kao, mah-jong): no edge, no theoretical win (its income is its commission, in
  the round's ``house_net``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from fractions import Fraction
from typing import Literal

from .money import MoneyRules, Verdict, settle_amounts

#: How a game's edges are obtained (see the module docstring).
EdgeBasis = Literal["exact", "strategy", "none"]
EDGE_BASES: tuple[EdgeBasis, ...] = ("exact", "strategy", "none")

#: One verdict with its exact probability.
Weighted = tuple[Verdict, Fraction]


def verdict_key(v: Verdict) -> tuple[str, Fraction, Fraction, Fraction]:
    """What of a verdict moves money (its reason text does not)."""
    return (v.result, v.odds, v.commission_rate, v.loss_fraction)


@dataclass(frozen=True, slots=True)
class Verdicts:
    """Every verdict a bet can get with its exact probability (merged when they pay
    the same), the probabilities kept as integers over one denominator so that an
    edge costs one ``Fraction`` (the hot path of a settled round's payload)."""

    weighted: tuple[Weighted, ...]
    denominator: int
    numerators: tuple[int, ...]

    def edge(self, stake: int, money: MoneyRules) -> Fraction:
        """The house edge of a bet of ``stake`` settled by ``money``: ``-E[net]/stake``."""
        total = 0
        for (v, _p), n in zip(self.weighted, self.numerators, strict=True):
            total += n * settle_amounts(stake, v, money).net
        return Fraction(-total, self.denominator * stake)


def merge_verdicts(weighted: Iterable[Weighted]) -> Verdicts:
    """``weighted`` with the verdicts that pay the same merged (their probabilities
    added), in a stable order; the probabilities must sum to 1."""
    out: dict[tuple[str, Fraction, Fraction, Fraction], Weighted] = {}
    for v, p in weighted:
        if not p:
            continue
        k = verdict_key(v)
        have = out.get(k)
        out[k] = (v, p) if have is None else (have[0], have[1] + p)
    merged = tuple(sorted(out.values(), key=lambda vp: verdict_key(vp[0])))
    total = sum((p for _, p in merged), Fraction(0))
    if total != 1:
        raise ValueError(f"the verdicts' probabilities sum to {total}, not 1")
    den = math.lcm(*(p.denominator for _, p in merged))
    return Verdicts(merged, den, tuple(p.numerator * (den // p.denominator) for _, p in merged))


def theo_minor(exact: Fraction) -> int:
    """A theoretical win rounded to the minor unit: the nearest, an exact half to the
    even one (``round`` of a ``Fraction``)."""
    return round(exact)
