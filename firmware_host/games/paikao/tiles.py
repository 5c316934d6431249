"""The 32 tiles of P'ai Kao (195/92/M art. 1 (a) and the annex): the tile notation,
the single tiles' order, the combinations, a hand's points (art. 6) and the order of
hands (art. 6-8).

Tile notation (input and output, ``docs/rules/paikao.md``): the two halves' pips,
lower first, joined by a slash: ``"6/6"`` (Tin), ``"1/1"`` (Tei), ``"2/4"``,
``"1/2"``. On input the halves may come in either order (``"4/2"`` is ``"2/4"``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ..base import JSON
from ..errors import OutcomeError


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
