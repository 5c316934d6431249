"""P'ai Kao de 2 pedras (two-tile pai gow): Portaria 195/92/M.

A set of 32 Chinese dominoes (art. 1 (a)); after the shuffle the set is split in two
halves of 16 tiles, one half per game, so one set serves two consecutive games (art.
2 (a)). Eight places, the banker's included, always receive two tiles each whoever
plays (art. 2 (d), art. 3 (a)). The banker puts his capital on the table and shakes
four dice; counted counter-clockwise from him, the total picks the place served
first; the banker may *not* add or subtract points (art. 2 (b)-(c)). Each place is
compared with the banker's pair by the annex: the combinations first (Chi Chün,
the pairs, Tin/Tei Káu Vóng, Tin/Tei Kóng), then points, the sum of the pips modulo
10, the two Chi Chün tiles counting 3 or 6 each at the holder's choice (art. 6);
equal points go to the hand holding the higher single tile (art. 7); the banker wins
zero against zero and equal combinations (art. 8). Winners pay the house 5% (art. 9).
The table part (dice, service order, capital-bounded settlement, co-banking, banker
rotation) is :mod:`.banker`.

Tile notation (input and output, ``docs/rules/paikao.md``): the two halves' pips,
lower first, joined by a slash: ``"6/6"`` (Tin), ``"1/1"`` (Tei), ``"2/4"``,
``"1/2"``. On input the halves may come in either order (``"4/2"`` is ``"2/4"``).

Decisions where the text is silent (see ``docs/rules/paikao.md``):

- Equal points with single tiles of equal rank (art. 7 speaks of "a pedra de valor
  mais elevado", one tile): only the higher tile of each hand is compared; equal
  rank (the same tile, or the two tiles of one annex rank, e.g. 4/5 and 3/6) is an
  equal combination and the banker wins (art. 8).
- Zero against zero goes to the banker whatever the tiles (art. 8 says so before
  art. 7's high tile could apply).
- The holder's choice of 3 or 6 for a Chi Chün tile is always the one that scores
  more; since points come before the high tile, no other choice can ever help.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from ..banker import (
    COMMISSION_RATE,
    SETTLEMENT_ORDERS,
    BankerDeal,
    BankerGame,
    BankerHands,
    DiceReshake,
    PlaceVerdict,
    RoundSetup,
    one_place_lines,
    parse_hands_outcome,
)
from ..base import JSON, MathLine, MathReport
from ..errors import Misdeal, OutcomeError, RoundStateError, RulesError
from ..money import MoneyRules, fraction_str
from ..options import option

REGULATION = "195/92/M"
#: Places at every table, the banker's included (art. 3 (a)); all receive tiles (art. 2 (d)).
PLACES = 8
#: Tiles dealt in one game: 8 places x 2 (art. 2 (a), (d)).
TILES_PER_GAME = 16

__all__ = ["DiceReshake", "PaiKaoDeal", "PaiKaoOutcome", "PaiKaoRules", "Tile"]


@dataclass(frozen=True, slots=True, order=True)
class Tile:
    """A tile by its two halves' pips, ``low <= high``, each 1..6."""

    low: int
    high: int

    def __post_init__(self) -> None:
        if not (1 <= self.low <= self.high <= 6):
            raise OutcomeError(f"not a P'ai Kao tile: {self.low}/{self.high}", code="TILE_INVALID")

    @staticmethod
    def parse(text: object) -> Tile:
        if isinstance(text, Tile):
            return text
        if not isinstance(text, str):
            raise OutcomeError(
                f"a tile is a string such as '6/6' or '2/4', got {text!r}", code="TILE_INVALID"
            )
        parts = text.replace(" ", "").split("/")
        if len(parts) != 2 or not all(p.isdigit() and len(p) == 1 for p in parts):
            raise OutcomeError(
                f"not a tile: {text!r} (two halves 1..6 such as '6/6', '2/4')", code="TILE_INVALID"
            )
        a, b = sorted(int(p) for p in parts)
        if not 1 <= a <= b <= 6:
            raise OutcomeError(
                f"not a tile of the set: {text!r} (halves are 1..6 pips)", code="TILE_INVALID"
            )
        return Tile(a, b)

    @property
    def pips(self) -> int:
        return self.low + self.high

    def __str__(self) -> str:
        return f"{self.low}/{self.high}"

    def __repr__(self) -> str:
        return f"Tile({str(self)!r})"


def T(text: str) -> Tile:
    """Shorthand for :meth:`Tile.parse` in the tables below."""
    return Tile.parse(text)


#: Single tiles, highest first (annex, "Valor individual ... das pedras"):
#: (rank, name, tiles of that rank, copies of each tile in the set).
SINGLE_TILES: tuple[tuple[int, str, tuple[Tile, ...], int], ...] = (
    (1, "Tin", (T("6/6"),), 2),
    (2, "Tei", (T("1/1"),), 2),
    (3, "Ian", (T("4/4"),), 2),
    (4, "Ngó", (T("1/3"),), 2),
    (5, "Mui", (T("5/5"),), 2),
    (6, "Chéong-Sám", (T("3/3"),), 2),
    (7, "Pán Tang", (T("2/2"),), 2),
    (8, "Fu T'au", (T("5/6"),), 2),
    (9, "Hóng T'au", (T("4/6"),), 2),
    (10, "Kou-Keók Ch'at", (T("1/6"),), 2),
    (11, "Ling Lam Lók", (T("1/5"),), 2),
    (12, "Cháp Káu", (T("4/5"), T("3/6")), 1),
    (13, "Cháp Pát", (T("3/5"), T("2/6")), 1),
    (14, "Cháp Ch'at", (T("3/4"), T("2/5")), 1),
    (15, "Tai Káu Lók", (T("2/4"),), 1),
    (16, "Cháp Ng", (T("1/4"), T("2/3")), 1),
    (17, "Sai Káu", (T("1/2"),), 1),
)

TILE_RANK: dict[Tile, int] = {t: r for r, _, ts, _ in SINGLE_TILES for t in ts}
TILE_NAME: dict[Tile, str] = {t: n for _, n, ts, _ in SINGLE_TILES for t in ts}
#: The 32-tile set (art. 1 (a)): how many of each tile.
SET_COMPOSITION: Counter[Tile] = Counter({t: c for _, _, ts, c in SINGLE_TILES for t in ts})
#: The 32 tiles, copies repeated, in annex order.
FULL_SET: tuple[Tile, ...] = tuple(SET_COMPOSITION.elements())

#: The two Chi Chün tiles; each counts 3 or 6 at the holder's choice (art. 6 (c)).
CHI_CHUN = (T("2/4"), T("1/2"))

#: Combinations, highest first (annex, "Valor das combinações"): (rank, name, pairs).
COMBINATIONS: tuple[tuple[int, str, tuple[tuple[Tile, Tile], ...]], ...] = (
    (1, "Chi Chün", ((T("2/4"), T("1/2")),)),
    (2, "Seong Tin", ((T("6/6"), T("6/6")),)),
    (3, "Seong Tei", ((T("1/1"), T("1/1")),)),
    (4, "Seong Ian", ((T("4/4"), T("4/4")),)),
    (5, "Seong Ngó", ((T("1/3"), T("1/3")),)),
    (6, "Seong Mui", ((T("5/5"), T("5/5")),)),
    (7, "Seong Chéong-Sám", ((T("3/3"), T("3/3")),)),
    (8, "Seong Pán Tang", ((T("2/2"), T("2/2")),)),
    (9, "Seong Fu T'au", ((T("5/6"), T("5/6")),)),
    (10, "Seong Hóng T'au-Sap", ((T("4/6"), T("4/6")),)),
    (11, "Seong Kou-Keók Ch'at", ((T("1/6"), T("1/6")),)),
    (12, "Seong Ling Lam Lók", ((T("1/5"), T("1/5")),)),
    (13, "Seong Cháp Káu", ((T("4/5"), T("3/6")),)),
    (14, "Seong Cháp Pát", ((T("3/5"), T("2/6")),)),
    (15, "Seong Cháp Ch'at", ((T("3/4"), T("2/5")),)),
    (16, "Seong Cháp Ng", ((T("1/4"), T("2/3")),)),
    (17, "Tin Káu Vóng", ((T("6/6"), T("4/5")), (T("6/6"), T("3/6")))),
    (18, "Tei Káu Vóng", ((T("1/1"), T("4/5")), (T("1/1"), T("3/6")))),
    (19, "Tin Kóng", ((T("6/6"), T("3/5")), (T("6/6"), T("2/6")), (T("6/6"), T("4/4")))),
    (20, "Tei Kóng", ((T("1/1"), T("3/5")), (T("1/1"), T("2/6")), (T("1/1"), T("4/4")))),
)

_COMBO: dict[tuple[Tile, Tile], tuple[int, str]] = {}
for _rank, _name, _pairs in COMBINATIONS:
    for _a, _b in _pairs:
        _COMBO[_a, _b] = _COMBO[_b, _a] = (_rank, _name)


def combination(a: Tile, b: Tile) -> tuple[int, str] | None:
    """The annex combination two tiles form, as (rank, name), or None (art. 6 (b))."""
    return _COMBO.get((a, b))


def tile_points(t: Tile) -> tuple[int, ...]:
    """The point values a tile may take: its pips, or 3 or 6 for a Chi Chün tile."""
    return (3, 6) if t in CHI_CHUN else (t.pips,)


def hand_points(a: Tile, b: Tile) -> int:
    """Pips modulo 10, the holder choosing 3 or 6 for each Chi Chün tile (art. 6 (b)-(c))."""
    return max((x + y) % 10 for x in tile_points(a) for y in tile_points(b))


@dataclass(frozen=True, slots=True)
class HandValue:
    """What a two-tile hand is worth, with the key that orders hands.

    A higher ``key`` beats a lower one; equal keys are the ties of art. 8 that the
    banker wins.
    """

    tiles: tuple[Tile, Tile]
    combination: tuple[int, str] | None
    points: int
    high_tile: Tile

    @property
    def key(self) -> tuple[int, int, int]:
        if self.combination is not None:
            return (1, -self.combination[0], 0)
        if self.points == 0:
            return (0, 0, 0)  # zero against zero: the banker (art. 8)
        return (0, self.points, -TILE_RANK[self.high_tile])

    def describe(self) -> str:
        if self.combination is not None:
            return self.combination[1]
        return f"{self.points} points, high tile {self.high_tile} ({TILE_NAME[self.high_tile]})"

    def to_json(self) -> dict[str, JSON]:
        return {
            "tiles": [str(t) for t in self.tiles],
            "combination": self.combination[1] if self.combination else None,
            "combination_rank": self.combination[0] if self.combination else None,
            "points": None if self.combination else self.points,
            "high_tile": str(self.high_tile),
        }


def evaluate(a: Tile, b: Tile) -> HandValue:
    high = a if TILE_RANK[a] <= TILE_RANK[b] else b
    return HandValue((a, b), combination(a, b), hand_points(a, b), high)


def hand_key(a: Tile, b: Tile) -> tuple[int, int, int]:
    return evaluate(a, b).key


def place_beats_banker(place: Sequence[Tile], banker: Sequence[Tile]) -> bool:
    return hand_key(*place) > hand_key(*banker)


def _why(place: HandValue, banker: HandValue) -> tuple[bool, str]:
    kp, kb = place.key, banker.key
    wins = kp > kb
    who = "place" if wins else "banker"
    vs = f"{place.describe()} against the banker's {banker.describe()}"
    if kp == kb:
        if place.combination is not None:
            return False, f"{vs}: equal combinations, the banker wins (195/92/M art. 8)"
        if place.points == 0:
            return False, f"{vs}: zero against zero, the banker wins (195/92/M art. 8)"
        return False, f"{vs}: equal points and equal high tiles, the banker wins (195/92/M art. 8)"
    if place.combination is not None or banker.combination is not None:
        return wins, f"{vs}: {who} wins (195/92/M art. 6 (a), annex)"
    if kp[1] != kb[1]:
        return wins, f"{vs}: {who} wins (195/92/M art. 6 (b), art. 7)"
    return wins, f"{vs}: equal points, the higher tile wins: {who} (195/92/M art. 7)"


# -- rules ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PaiKaoRules:
    settlement_order: str = option(
        "served",
        choices=SETTLEMENT_ORDERS,
        doc="Order bets are paid or collected within the banker's capital: 'served' place by "
        "place from the first place served, right to left, each place's bets in the order "
        "placed; 'placed' strictly in the order placed",
        cite="195/92/M art. 2 (c), art. 5 (c) and (e)",
    )
    casino_co_bank: int = option(
        0,
        range=(0, 10**12),
        doc="Capital (minor units) the casino co-banks after the banker and the co-banking "
        "players in each game when the outcome does not say; 0: none",
        cite="195/92/M art. 5 (e)",
    )


# -- outcome -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PaiKaoOutcome(BankerHands[Tile]):
    """A dealt game: the setup, each place's two tiles, and which game of the set it is."""

    #: 1 or 2: a set serves two consecutive games (art. 2 (a)).
    set_game: int = 1
    #: For the second game, the 16 tiles of the first (checked against the set), if known.
    first_game_tiles: tuple[Tile, ...] = ()


def parse_tiles(raw: JSON, what: str) -> list[Tile]:
    if not isinstance(raw, list):
        raise OutcomeError(f"{what}: expected a list of tiles such as ['6/6', '2/4'], got {raw!r}")
    try:
        return [Tile.parse(t) for t in raw]
    except OutcomeError as exc:
        raise OutcomeError(f"{what}: {exc.message}", code=exc.code) from exc


def check_set(tiles: Iterable[Tile], what: str) -> None:
    """More copies of a tile than the 32-tile set holds is refused (art. 1 (a))."""
    have = Counter(tiles)
    extra = sorted(f"{t} x{n}" for t, n in have.items() if n > SET_COMPOSITION[t])
    if extra:
        raise OutcomeError(
            f"{what}: more copies than the 32-tile set holds: {extra} (195/92/M art. 1 (a), annex)",
            code="TILE_EXCESS",
        )


def parse_outcome_json(rules: PaiKaoRules, raw: JSON) -> PaiKaoOutcome:
    what = "paikao outcome"
    data, setup, hands = parse_hands_outcome(
        raw,
        what=what,
        places=PLACES,
        default_casino_capital=rules.casino_co_bank,
        declaration_allowed=False,
        key="tiles",
        noun="tile",
        parse_items=parse_tiles,
        article="195/92/M art. 2 (d)",
        extra_keys=frozenset({"set_game", "first_game_tiles"}),
    )
    set_game = data.get("set_game", 1)
    if set_game not in (1, 2) or isinstance(set_game, bool):
        raise OutcomeError(
            f"{what}: set_game is 1 or 2 (a set serves two games, art. 2 (a)), got {set_game!r}",
            code="SET_GAME_INVALID",
        )
    first: tuple[Tile, ...] = ()
    if "first_game_tiles" in data:
        if set_game != 2:
            raise OutcomeError(
                f"{what}: first_game_tiles only belong to the second game of a set",
                code="SET_GAME_INVALID",
            )
        first = tuple(parse_tiles(data["first_game_tiles"], f"{what}: first_game_tiles"))
        if len(first) != TILES_PER_GAME:
            raise OutcomeError(
                f"{what}: the first game of a set used {TILES_PER_GAME} tiles, got {len(first)}",
                code="SET_GAME_INVALID",
            )
    check_set([*first, *(t for ts in hands for t in ts)], what)
    return PaiKaoOutcome(setup, hands, set_game, first)


# -- the deal, tile by tile ----------------------------------------------------------------


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


# -- the game ------------------------------------------------------------------------------


class PaiKao(BankerGame[PaiKaoRules, PaiKaoOutcome]):
    game_id = "paikao"
    title = "P'ai Kao de 2 pedras"
    regulation = REGULATION
    rules_type = PaiKaoRules
    place_article = "195/92/M art. 5 (c), art. 6-8, art. 9"
    co_bank_article = "195/92/M art. 5 (e), art. 9"

    def places(self, rules: PaiKaoRules) -> int:
        return PLACES

    def parse_outcome(self, rules: PaiKaoRules, raw: JSON) -> PaiKaoOutcome:
        return parse_outcome_json(rules, raw)

    def sample_outcomes(self, rules: Any) -> list[PaiKaoOutcome]:
        """The documented example (docs/rules), for the contract tests."""
        example = {
            "banker": 1,
            "banker_capital": 100000,
            "casino_capital": 0,
            "dice": [1, 2, 3, 3],
            "set_game": 1,
            "hands": {
                "1": ["6/6", "1/6"],
                "2": ["2/4", "1/2"],
                "3": ["3/3", "1/3"],
                "4": ["5/5", "4/6"],
                "5": ["1/1", "3/5"],
                "6": ["4/5", "2/3"],
                "7": ["2/2", "5/6"],
                "8": ["1/5", "3/4"],
            },
        }
        return [self.parse_outcome(rules, example)]

    def outcome_json(self, outcome: PaiKaoOutcome) -> JSON:
        out = outcome.setup.to_json()
        del out["declared"]  # never allowed (art. 2 (c))
        out["set_game"] = outcome.set_game
        if outcome.first_game_tiles:
            out["first_game_tiles"] = [str(t) for t in outcome.first_game_tiles]
        out["hands"] = {str(p): [str(t) for t in h] for p, h in enumerate(outcome.hands, 1)}
        return out

    def place_verdicts(self, rules: PaiKaoRules, outcome: PaiKaoOutcome) -> Sequence[PlaceVerdict]:
        b = evaluate(*outcome.hand(outcome.setup.banker))
        out = []
        for p in range(1, PLACES + 1):
            if p == outcome.setup.banker:
                continue
            v = evaluate(*outcome.hand(p))
            wins, why = _why(v, b)
            out.append(PlaceVerdict(p, wins, why, v.to_json()))
        return out

    def banker_detail(self, rules: PaiKaoRules, outcome: PaiKaoOutcome) -> Mapping[str, JSON]:
        return evaluate(*outcome.hand(outcome.setup.banker)).to_json()

    def score_report(
        self, rules: PaiKaoRules, raw: JSON, money: MoneyRules | None = None
    ) -> tuple[dict[str, JSON], str]:
        """``tablectl score paikao --hand '["2/4", "5/6"]'``: what two tiles are worth."""
        tiles = parse_tiles(raw, "hand")
        if len(tiles) != 2:
            raise OutcomeError(f"a hand is two tiles, got {len(tiles)}", code="HAND_SIZE")
        check_set(tiles, "hand")
        v = evaluate(tiles[0], tiles[1])
        return v.to_json(), f"{tiles[0]} + {tiles[1]}: {v.describe()}"

    def math(self, rules: PaiKaoRules, **options: Any) -> MathReport:
        if options:
            raise RulesError(
                f"paikao math is an exact enumeration of the 32-tile set; it takes no options "
                f"({sorted(options)})",
                code="MATH_OPTION_UNSUPPORTED",
            )
        e = enumerate_one_place()
        (pe, pd), (be, bd) = one_place_lines(e["place"])
        lines = (
            MathLine("place", None, pe, pd,
                     note="a unit on one place against the banker, capital not reached"),
            MathLine("banker", None, be, bd, note="the banker against a unit on one place"),
        )  # fmt: skip
        details: dict[str, JSON] = {
            "enumeration": (
                "every deal of 2 tiles to the banker and 2 to one place from the 32-tile set "
                f"({e['deals']} deals, each equally likely)"
            ),
            "p_place_wins": fraction_str(e["place"]),
            "p_banker_wins": fraction_str(1 - e["place"]),
            "p_banker_wins_equal": fraction_str(e["equal"]),
            "p_banker_wins_zero_zero": fraction_str(e["zero_zero"]),
            "commission_rate": fraction_str(COMMISSION_RATE),
            "note": "the same for the second game of a set: unconditionally its 16 tiles are "
            "16 tiles drawn at random from the set (art. 2 (a))",
        }
        return MathReport(self.game_id, self.rules_json(rules), "exact", lines, details)


def enumerate_one_place() -> dict[str, Any]:
    """Count every deal of two tiles to the banker and two to one place (32-tile set)."""
    idx_pairs = list(itertools.combinations(range(len(FULL_SET)), 2))
    keys = {(i, j): hand_key(FULL_SET[i], FULL_SET[j]) for i, j in idx_pairs}
    win = eq = zz = deals = 0
    for pi, pj in idx_pairs:
        kp = keys[pi, pj]
        for bi, bj in idx_pairs:
            if bi in (pi, pj) or bj in (pi, pj):
                continue
            deals += 1
            kb = keys[bi, bj]
            if kp > kb:
                win += 1
            elif kp == kb:
                eq += 1
                if kp == (0, 0, 0):
                    zz += 1
    return {
        "deals": deals,
        "place": Fraction(win, deals),
        "equal": Fraction(eq, deals),
        "zero_zero": Fraction(zz, deals),
    }


GAME = PaiKao()
