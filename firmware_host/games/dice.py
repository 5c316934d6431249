"""Three dice, shared by Cussec / sic bo (57/2004) and fish-prawn-crab (59/2004).

Both regulations: three balanced dice with faces 1 to 6 whose opposite faces sum to
seven (57/2004 art. 1 1), 59/2004 art. 1 2)), read after the dome is lifted; dice
stacked or tilted void the throw (art. 3 3)), which the round engine handles before
an outcome ever reaches the rules core.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

from .base import JSON
from .errors import OutcomeError


@dataclass(frozen=True, slots=True)
class ThreeDice:
    """Three dice in the order read (the order does not matter to any bet)."""

    dice: tuple[int, int, int]

    @property
    def total(self) -> int:
        return sum(self.dice)

    @property
    def is_triple(self) -> bool:
        return self.dice[0] == self.dice[1] == self.dice[2]

    def count(self, face: int) -> int:
        return self.dice.count(face)

    @property
    def counts(self) -> Counter[int]:
        return Counter(self.dice)


def parse_dice(raw: JSON, game: str, derived: frozenset[str] = frozenset()) -> ThreeDice:
    """Accept ``{"dice": [a, b, c]}`` or ``[a, b, c]`` with faces 1..6.

    ``derived`` names the keys the game's published outcome adds (checked by the game).
    """
    if isinstance(raw, dict):
        if "dice" not in raw or not set(raw) <= {"dice"} | derived:
            raise OutcomeError(
                f'{game} outcome must be {{"dice": [a, b, c]}}, got keys {sorted(raw)}'
            )
        raw = raw["dice"]
    if (
        not isinstance(raw, list)
        or len(raw) != 3
        or not all(isinstance(d, int) and not isinstance(d, bool) and 1 <= d <= 6 for d in raw)
    ):
        raise OutcomeError(f"{game} outcome must be three dice faces 1..6, got {raw!r}")
    return ThreeDice((raw[0], raw[1], raw[2]))


#: All 216 equally likely ordered throws.
ALL_THROWS: tuple[ThreeDice, ...] = tuple(
    ThreeDice((a, b, c)) for a, b, c in itertools.product(range(1, 7), repeat=3)
)


def throw_space() -> Sequence[tuple[ThreeDice, Fraction]]:
    p = Fraction(1, 216)
    return [(t, p) for t in ALL_THROWS]
