"""A P'ai Kao game dealt tile by tile (:class:`PaiKaoDeal`, the banker games'
:class:`~firmware_host.games.banker.BankerDeal`), the second game of a set (art. 2
(a)), and the dealt game it settles (:class:`PaiKaoOutcome`)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..banker import BankerDeal, BankerHands, RoundSetup
from ..base import JSON
from ..errors import Misdeal, RoundStateError
from .rules import PLACES, TILES_PER_GAME, PaiKaoRules
from .tiles import SET_COMPOSITION, Tile, check_set


@dataclass(frozen=True, slots=True)
class PaiKaoOutcome(BankerHands[Tile]):
    """A dealt game: the setup, each place's two tiles, and which game of the set it is."""

    #: 1 or 2: a set serves two consecutive games (art. 2 (a)).
    set_game: int = 1
    #: For the second game, the 16 tiles of the first (checked against the set), if known.
    first_game_tiles: tuple[Tile, ...] = ()


@dataclass(frozen=True, slots=True)
class PaiKaoDeal(BankerDeal[Tile, PaiKaoOutcome]):
    """A game being dealt, tile by tile (:class:`~..banker.BankerDeal`): the banker's
    place and capital fixed, the dice shaken (no declaration, art. 2 (c)), two tiles a
    place in the service order (art. 2 (b)-(d)); then :meth:`second_game` starts the
    second game of the same set with the 16 tiles left (art. 2 (a))."""

    set_game: int = 1
    first_game_tiles: tuple[Tile, ...] = ()

    noun = "tile"
    game_id = "paikao"
    before_dice = "art. 2 (b)"
    all_dealt = "the eight places have their two tiles (art. 2 (d))"

    @staticmethod
    def start(
        rules: PaiKaoRules,
        *,
        banker: int,
        banker_capital: int,
        casino_capital: int | None = None,
        set_game: int = 1,
        first_game_tiles: Sequence[Tile | str] = (),
    ) -> PaiKaoDeal:
        cc = rules.casino_co_bank if casino_capital is None else casino_capital
        RoundSetup(PLACES, banker, banker_capital, cc, (1, 1, 1, 1))
        first = tuple(Tile.parse(t) for t in first_game_tiles)
        if set_game not in (1, 2):
            raise RoundStateError(f"set_game is 1 or 2, got {set_game!r}", code="SET_GAME_INVALID")
        if (set_game == 2) != (len(first) == TILES_PER_GAME) or (set_game == 1 and first):
            raise RoundStateError(
                f"the second game of a set needs the {TILES_PER_GAME} tiles of the first "
                "(art. 2 (a))",
                code="SET_GAME_INVALID",
            )
        check_set(first, "first game")
        return PaiKaoDeal(
            PLACES, banker, banker_capital, cc, set_game=set_game, first_game_tiles=first
        )

    @property
    def tiles(self) -> tuple[Tile, ...]:
        return self.dealt

    def parse_item(self, raw: object) -> Tile:
        return Tile.parse(raw)

    def remaining(self) -> Counter[Tile]:
        """Tiles of the set not yet seen in this set's games."""
        return SET_COMPOSITION - Counter(self.first_game_tiles) - Counter(self.tiles)

    def refusal(self, item: Tile) -> Misdeal | None:
        if self.remaining()[item] <= 0:
            return Misdeal(
                f"tile {item}: the set holds no more of it in this "
                f"{'second' if self.set_game == 2 else 'first'} game (art. 1 (a), "
                "art. 2 (a))",
                code="MISDEAL_TILE_EXCESS",
            )
        return None

    def make_outcome(
        self, setup: RoundSetup, hands: tuple[tuple[Tile, Tile], ...]
    ) -> PaiKaoOutcome:
        return PaiKaoOutcome(setup, hands, self.set_game, self.first_game_tiles)

    def second_game(
        self,
        rules: PaiKaoRules,
        *,
        banker: int,
        banker_capital: int,
        casino_capital: int | None = None,
    ) -> PaiKaoDeal:
        """The next game, dealt from the 16 tiles this (first) game left (art. 2 (a))."""
        if self.set_game != 1 or self.expect().kind != "complete":
            raise RoundStateError(
                "only a complete first game of a set has a second game", code="SET_GAME_INVALID"
            )
        return PaiKaoDeal.start(
            rules,
            banker=banker,
            banker_capital=banker_capital,
            casino_capital=casino_capital,
            set_game=2,
            first_game_tiles=self.tiles,
        )

    def to_json(self) -> dict[str, JSON]:
        return {
            **BankerDeal.to_json(self),
            "set_game": self.set_game,
            "first_game_tiles": [str(t) for t in self.first_game_tiles],
        }

    @staticmethod
    def from_json(rules: PaiKaoRules, data: Mapping[str, Any]) -> PaiKaoDeal:
        return PaiKaoDeal.start(
            rules,
            banker=data["banker"],
            banker_capital=data["banker_capital"],
            casino_capital=data.get("casino_capital"),
            set_game=data.get("set_game", 1),
            first_game_tiles=data.get("first_game_tiles", ()),
        ).replayed(data)
