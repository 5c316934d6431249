"""Three dice, shared by Cussec / sic bo (57/2004) and fish-prawn-crab (59/2004).

Both regulations: three balanced dice with faces 1 to 6 whose opposite faces sum to
seven (57/2004 art. 1 1), 59/2004 art. 1 2)), read after the dome is lifted; dice
stacked or tilted void the throw (art. 3 3)), which the round engine handles before
an outcome ever reaches the rules core.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

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


def dice_statistics(
    outcomes: Sequence[Mapping[str, Any]], *, last: int = 20, hot_cold: int = 5
) -> dict[str, JSON]:
    """The statistics of a three-dice table (sic bo, fish-prawn-crab) over ``outcomes``
    newest first (``{"dice": [a, b, c]}``): totals, triples, doubles, faces and the
    chances: small is a total of 4 to 10 and big 11 to 17, a triple neither (57/2004 and
    59/2004 art. 7); odd/even by the total."""
    throws = [[int(d) for d in o["dice"]] for o in outcomes]
    totals = Counter(sum(t) for t in throws)
    triples = [t[0] for t in throws if len(set(t)) == 1]
    faces = Counter(f for t in throws for f in set(t))  # throws showing each face
    plain = [sum(t) for t in throws if len(set(t)) > 1]
    return {
        "last": [list(t) for t in throws[:last]],
        "totals": {str(k): totals[k] for k in range(3, 19)},
        "triples": {"any": len(triples), **{str(k): triples.count(k) for k in range(1, 7)}},
        "doubles": sum(len(set(t)) == 2 for t in throws),
        "faces": {str(k): faces[k] for k in range(1, 7)},
        "chances": {
            "small": sum(4 <= s <= 10 for s in plain),
            "big": sum(11 <= s <= 17 for s in plain),
            "odd": sum(sum(t) % 2 for t in throws),
            "even": sum(1 - sum(t) % 2 for t in throws),
        },
    }
