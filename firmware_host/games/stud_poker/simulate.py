"""The simulation behind stud poker's house edge (an exact evaluation of the raise
decision against every croupier hand is ~10^15 comparisons): a seeded SplitMix64
generator written here as pure code (seed in, numbers out: the rules core holds no
random number generator), a near-optimal published strategy, and a 95% confidence
interval."""

from __future__ import annotations

import math as _math
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction

from .hands import _CAT_SHIFT, _M52, ONE_PAIR, QUALIFY, hand_value_codes
from .rules import StudPokerRules

# -- strategy and simulation (used by math) ---------------------------------------------

STRATEGY = (
    "raise with a pair or better; fold below ace-king; with ace-king raise if (a) the "
    "croupier's card is 2 to Q and matches one of the player's cards, or (b) it is an A or K "
    "and the player holds a Q or J, or (c) it is lower than the player's fourth-highest card "
    "and the player holds a Q; else fold (after M. Shackleford's Caribbean Stud strategy)"
)
_PAIR_BASE = ONE_PAIR << _CAT_SHIFT


def raises(value: int, up_code: int) -> bool:
    """The simulation's decision for a hand of value ``value`` against the
    croupier's exposed card: see :data:`STRATEGY`."""
    if value >= _PAIR_BASE:
        return True
    mask = value & _M52
    if not (mask >> 48) or not (mask >> 44) & 15:  # no ace, or no king
        return False
    ranks = [r for r in range(12, -1, -1) if (mask >> (4 * r)) & 15]
    up = up_code >> 2
    if up <= 10 and up in ranks:
        return True
    if up >= 11 and (10 in ranks or 9 in ranks):
        return True
    return up < ranks[3] and ranks[2] == 10


_M64 = (1 << 64) - 1


def splitmix64(state: int) -> tuple[int, int]:
    """One step of SplitMix64 (Steele, Lea, Flood 2014): (next state, 64-bit output).
    Pure: the caller threads the state; the seed is the first state."""
    state = (state + 0x9E3779B97F4A7C15) & _M64
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _M64
    return state, z ^ (z >> 31)


@dataclass(frozen=True, slots=True)
class SimulationResult:
    rounds: int
    seed: int
    #: Sum of the player's net per unit of ante, and of its square.
    total: int
    total_sq: int
    raises: int
    #: net per unit of ante -> count
    counts: Mapping[int, int]

    @property
    def mean(self) -> Fraction:
        return Fraction(self.total, self.rounds)

    def ci95(self) -> tuple[float, float]:
        """95% interval of the mean net per ante (normal approximation; display only)."""
        n = self.rounds
        mean = self.total / n
        var = (self.total_sq - self.total * self.total / n) / (n - 1)
        half = 1.959964 * _math.sqrt(var / n)
        return mean - half, mean + half


def simulate(rules: StudPokerRules, rounds: int, seed: int) -> SimulationResult:
    """Play ``rounds`` one-place games: five cards to the place, five to the croupier
    (the last one exposed) from a deck shuffled by SplitMix64 from ``seed``; the
    place follows :data:`STRATEGY`. Returns the player's results per unit of ante
    (the house maximum ``max_payout`` depends on the stake and is not applied)."""
    deck = list(range(52))
    state = seed & _M64
    total = total_sq = n_raise = 0
    counts: dict[int, int] = {}
    raise_net = {cat: 1 + 2 * rules.raise_odds(cat) for cat in range(10)}
    hv = hand_value_codes
    for _ in range(rounds):
        # Partial Fisher-Yates for ten cards; each SplitMix64 output gives five
        # draws by mixed-radix digits (bias < 52*51*50*49*48 / 2**64 < 2e-11).
        for start in (0, 5):
            state, x = splitmix64(state)
            for i in range(start, start + 5):
                x, r = divmod(x, 52 - i)
                j = i + r
                deck[i], deck[j] = deck[j], deck[i]
        a, b, c, d, e, f, g, h, k, up = deck[:10]
        pv = hv(a, b, c, d, e)
        if not raises(pv, up):
            net = -1
        else:
            n_raise += 1
            dv = hv(f, g, h, k, up)
            if dv < QUALIFY:
                net = 1
            elif dv > pv:
                net = -3
            else:
                net = raise_net[pv >> _CAT_SHIFT]
        total += net
        total_sq += net * net
        counts[net] = counts.get(net, 0) + 1
    return SimulationResult(rounds, seed, total, total_sq, n_raise, counts)


DEFAULT_ROUNDS = 300_000
DEFAULT_SEED = 612004
