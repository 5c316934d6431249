"""Mah-jong's house options (:class:`MahjongRules`): the variant of 135/91/M (art. 1,
2), the amounts of each stake level (art. 6-8) and the liability reading of art. 10."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import ConfigError
from ..options import option
from .declared import VARIANTS
from .payments import check_amounts


@dataclass(frozen=True, slots=True)
class MahjongRules:
    variant: str = option(
        "conventional",
        choices=VARIANTS,
        doc="conventional: 136 tiles, four sets and a pair, up to double fan; simplified: 112 "
        "tiles, one set and a pair, up to one fan",
        cite="135/91/M art. 1, art. 2",
    )
    amounts: dict[str, tuple[int, ...]] = option(
        {},
        section="pay_table",
        kind="sectors",
        doc='single share per stake level, in minor units: "25/50" = [kai vu, one fan, double '
        "fan] (simplified: [kai vu, one fan]); a level not listed pays its two figures and, for "
        "double fan, twice the second (decision: the text gives no amounts)",
        cite="135/91/M art. 6, art. 7, art. 8",
    )
    concealed_kong_in_view: bool = option(
        False,
        doc="count the winner's concealed kongs among his sets «à vista sobre a mesa» for the "
        "liability of art. 10 (a) 1)-3) (default: only exposed sets)",
        cite="135/91/M art. 10 (a) 1)-3)",
    )

    def __post_init__(self) -> None:
        if self.variant in VARIANTS:
            problem = check_amounts(self.variant, self.amounts)
            if problem:
                raise ConfigError(f"{problem} (rules.mahjong.variant = {self.variant!r})")

    def __hash__(self) -> int:  # dict field: hash by content
        return hash(
            (self.variant, tuple(sorted(self.amounts.items())), self.concealed_kong_in_view)
        )
