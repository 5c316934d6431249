"""Baccarat scoreboard roads of one shoe, as pure functions (display only).

The roads are what a baccarat table's scoreboard shows of the shoe so far; they
settle nothing (55/2004 has no word on them) and follow the conventions published
for casino scoreboards:

- **Bead plate**: every coup (ties included) in order, filling a column of six cells
  top to bottom, then the next column to the right.
- **Big road**: banker and player wins only. A win of the side of the current column
  goes one cell down; a win of the other side starts a new column at the top. A tie
  is marked on the last cell (its tie count; a tie before the shoe's first banker or
  player win is kept as ``leading_ties`` and drawn on the first cell). A column that
  reaches the bottom row, or finds the cell below it taken, turns right along its row
  (the *dragon tail*) and keeps going right.
- **Derived roads** (big eye boy, small road, cockroach pig) read the big road's
  columns, not its drawn cells: road ``k`` (1, 2, 3) compares each new big road mark
  at column ``c``, row ``r`` with column ``c - k``. A mark that starts a new column
  (``r == 0``) is red if columns ``c - 1`` and ``c - 1 - k`` have the same length,
  else blue. Any other mark is red if column ``c - k`` has a mark at row ``r``, blue
  if it has none there but one at row ``r - 1``, red if it has neither (the
  *straight drop*). Road ``k`` starts at the big road's mark in column ``k``, row 1,
  or, if that column has one mark only, at the first mark of column ``k + 1``. Red and
  blue marks are then drawn like the big road (same colour down, a change starts a
  new column, six rows, dragon tail).
- **Predictions**: the mark each derived road would get if the next coup were banker,
  or player (what scoreboards show beside the "banker ask" / "player ask" buttons).

The roads reset at a new shoe: give them the coups of the current shoe only.
Everything here is a pure function of the coups: no state is kept between calls.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from .base import JSON

#: Rows of every road (the scoreboards' six).
ROWS = 6

Winner = Literal["B", "P", "T"]
Colour = Literal["red", "blue"]

#: The derived roads by the column distance they compare (big eye boy 1, small road 2,
#: cockroach pig 3).
DERIVED: Mapping[str, int] = {"big_eye_boy": 1, "small_road": 2, "cockroach_pig": 3}

_WINNERS = {"banker": "B", "player": "P", "tie": "T"}


class RoadError(ValueError):
    """A coup the roads cannot take (unknown winner)."""

    code = "ROAD_ENTRY"


@dataclass(frozen=True, slots=True)
class Coup:
    """One coup of the shoe as the roads see it: ``B``, ``P`` or ``T`` and the pairs."""

    winner: Winner
    banker_pair: bool = False
    player_pair: bool = False
    natural: bool = False

    def __post_init__(self) -> None:
        if self.winner not in ("B", "P", "T"):
            raise RoadError(f"a coup's winner is B, P or T, got {self.winner!r}")

    @staticmethod
    def from_outcome(outcome: Mapping[str, JSON]) -> Coup:
        """The coup of a baccarat outcome as published (``winner`` banker/player/tie)."""
        winner = _WINNERS.get(str(outcome.get("winner")))
        if winner is None:
            raise RoadError(f"not a baccarat outcome: winner {outcome.get('winner')!r}")
        return Coup(
            winner,  # type: ignore[arg-type]
            bool(outcome.get("banker_pair")),
            bool(outcome.get("player_pair")),
            bool(outcome.get("natural")),
        )

    @staticmethod
    def parse(text: str) -> Coup:
        """``B``, ``P``, ``T``, then optional ``b`` (banker pair), ``p`` (player pair)."""
        if not text or text[0] not in "BPT" or set(text[1:]) - {"b", "p"}:
            raise RoadError(f"not a coup: {text!r} (B, P or T, then optional b and p)")
        return Coup(text[0], "b" in text[1:], "p" in text[1:])  # type: ignore[arg-type]

    def __str__(self) -> str:
        return self.winner + ("b" if self.banker_pair else "") + ("p" if self.player_pair else "")


@dataclass(frozen=True, slots=True)
class BeadCell:
    """A coup on the bead plate, drawn at column ``x``, row ``y``."""

    coup: Coup
    index: int
    x: int
    y: int

    def to_json(self) -> dict[str, JSON]:
        return {
            "winner": self.coup.winner,
            "banker_pair": self.coup.banker_pair,
            "player_pair": self.coup.player_pair,
            "natural": self.coup.natural,
            "x": self.x,
            "y": self.y,
        }


@dataclass(frozen=True, slots=True)
class BigRoadCell:
    """A banker or player win on the big road: its column and row in the road's logic
    (``col``, ``row``: a dragon tail's cells keep counting rows past the sixth) and
    where it is drawn (``x``, ``y``); ``ties``: ties marked on it."""

    winner: Winner
    col: int
    row: int
    x: int
    y: int
    ties: int = 0
    banker_pair: bool = False
    player_pair: bool = False

    def to_json(self) -> dict[str, JSON]:
        return {
            "winner": self.winner,
            "col": self.col,
            "row": self.row,
            "x": self.x,
            "y": self.y,
            "ties": self.ties,
            "banker_pair": self.banker_pair,
            "player_pair": self.player_pair,
        }


@dataclass(frozen=True, slots=True)
class Mark:
    """A mark of a derived road, drawn at ``x``, ``y``."""

    colour: Colour
    x: int
    y: int

    def to_json(self) -> dict[str, JSON]:
        return {"colour": self.colour, "x": self.x, "y": self.y}


@dataclass(frozen=True, slots=True)
class Roads:
    """Every road of the shoe so far."""

    coups: tuple[Coup, ...]
    bead_plate: tuple[BeadCell, ...]
    big_road: tuple[BigRoadCell, ...]
    leading_ties: int
    big_eye_boy: tuple[Mark, ...]
    small_road: tuple[Mark, ...]
    cockroach_pig: tuple[Mark, ...]
    #: ``{"B": {"big_eye_boy": "red" | "blue" | None, ...}, "P": {...}}``
    predictions: Mapping[str, Mapping[str, Colour | None]]

    def derived(self, name: str) -> tuple[Mark, ...]:
        road: tuple[Mark, ...] = getattr(self, name)
        return road

    def counts(self) -> dict[str, int]:
        """Coups of the shoe by winner, and the pairs."""
        return {
            "coups": len(self.coups),
            "banker": sum(c.winner == "B" for c in self.coups),
            "player": sum(c.winner == "P" for c in self.coups),
            "tie": sum(c.winner == "T" for c in self.coups),
            "banker_pair": sum(c.banker_pair for c in self.coups),
            "player_pair": sum(c.player_pair for c in self.coups),
        }

    def to_json(self) -> dict[str, JSON]:
        return {
            "rows": ROWS,
            "counts": dict(self.counts()),
            "bead_plate": [c.to_json() for c in self.bead_plate],
            "big_road": [c.to_json() for c in self.big_road],
            "leading_ties": self.leading_ties,
            **{name: [m.to_json() for m in self.derived(name)] for name in DERIVED},
            "predictions": {side: dict(p) for side, p in self.predictions.items()},
        }


# -- the pieces ------------------------------------------------------------------------
def bead_plate(coups: Sequence[Coup], rows: int = ROWS) -> tuple[BeadCell, ...]:
    """Every coup, six to a column, top to bottom then left to right."""
    return tuple(BeadCell(c, i, i // rows, i % rows) for i, c in enumerate(coups))


def columns(coups: Iterable[Coup]) -> tuple[list[list[Coup]], list[int], int]:
    """The big road's logical columns (banker and player wins), the ties marked on each
    of their cells (same shape), and the ties before the first win."""
    cols: list[list[Coup]] = []
    ties: list[list[int]] = []
    leading = 0
    for c in coups:
        if c.winner == "T":
            if cols:
                ties[-1][-1] += 1
            else:
                leading += 1
            continue
        if cols and cols[-1][0].winner == c.winner:
            cols[-1].append(c)
            ties[-1].append(0)
        else:
            cols.append([c])
            ties.append([0])
    return cols, [t for col in ties for t in col], leading


def place(lengths: Sequence[int], rows: int = ROWS) -> list[list[tuple[int, int]]]:
    """Where each cell of columns of ``lengths`` is drawn on a grid ``rows`` deep:
    ``[(x, y), ...]`` per column. A column starts at the top of the first column right
    of the previous one's start whose top is free; it goes down while the cell below is
    on the grid and free, then turns right for good (the dragon tail)."""
    taken: set[tuple[int, int]] = set()
    out: list[list[tuple[int, int]]] = []
    start = -1
    for n in lengths:
        x = start + 1
        while (x, 0) in taken:
            x += 1
        start = x
        y = 0
        cells = [(x, y)]
        taken.add((x, y))
        turned = False
        for _ in range(n - 1):
            if not turned and y + 1 < rows and (x, y + 1) not in taken:
                y += 1
            else:
                turned = True
                x += 1
            cells.append((x, y))
            taken.add((x, y))
        out.append(cells)
    return out


def big_road(coups: Sequence[Coup], rows: int = ROWS) -> tuple[tuple[BigRoadCell, ...], int]:
    """The big road's cells in order, and the ties before the first win."""
    cols, ties, leading = columns(coups)
    drawn = place([len(c) for c in cols], rows)
    cells: list[BigRoadCell] = []
    for ci, (col, where) in enumerate(zip(cols, drawn, strict=True)):
        for ri, (c, (x, y)) in enumerate(zip(col, where, strict=True)):
            cells.append(
                BigRoadCell(
                    c.winner,
                    ci,
                    ri,
                    x,
                    y,
                    ties[len(cells)],
                    c.banker_pair,
                    c.player_pair,
                )
            )
    return tuple(cells), leading


def derived_colours(lengths: Sequence[int], k: int) -> list[Colour]:
    """The red/blue marks of derived road ``k`` for big road columns of ``lengths``,
    one per big road mark from the road's starting mark on, in order."""
    out: list[Colour] = []
    for c, n in enumerate(lengths):
        for r in range(n):
            if r == 0:
                if c < k + 1:
                    continue
                out.append("red" if lengths[c - 1] == lengths[c - 1 - k] else "blue")
            else:
                if c < k:
                    continue
                other = lengths[c - k]
                out.append("blue" if other == r else "red")
    return out


def draw_marks(colours: Sequence[Colour], rows: int = ROWS) -> tuple[Mark, ...]:
    """Red and blue marks drawn like the big road: same colour down, a change of
    colour starts a new column."""
    runs: list[list[Colour]] = []
    for colour in colours:
        if runs and runs[-1][0] == colour:
            runs[-1].append(colour)
        else:
            runs.append([colour])
    drawn = place([len(r) for r in runs], rows)
    return tuple(
        Mark(colour, x, y)
        for run, where in zip(runs, drawn, strict=True)
        for colour, (x, y) in zip(run, where, strict=True)
    )


def _lengths(coups: Sequence[Coup]) -> list[int]:
    return [len(c) for c in columns(coups)[0]]


def predictions(coups: Sequence[Coup]) -> dict[str, dict[str, Colour | None]]:
    """The mark each derived road gets if the next coup is banker (``B``) or player
    (``P``); None where that road would get no mark yet."""
    out: dict[str, dict[str, Colour | None]] = {}
    for side in ("B", "P"):
        before = _lengths(coups)
        after = _lengths([*coups, Coup(side)])
        out[side] = {}
        for name, k in DERIVED.items():
            old, new = derived_colours(before, k), derived_colours(after, k)
            out[side][name] = new[-1] if len(new) > len(old) else None
    return out


def roads(coups: Iterable[Coup], rows: int = ROWS) -> Roads:
    """Every road of the shoe whose coups, oldest first, are ``coups``."""
    cs = tuple(coups)
    cells, leading = big_road(cs, rows)
    lengths = _lengths(cs)
    eye, small, roach = (draw_marks(derived_colours(lengths, k), rows) for k in DERIVED.values())
    return Roads(cs, bead_plate(cs, rows), cells, leading, eye, small, roach, predictions(cs))


def grid(cells: Iterable[tuple[int, int, str]], rows: int = ROWS) -> list[list[str | None]]:
    """A road as rows of a text grid: ``cells`` are ``(x, y, symbol)``; empty cells are
    None. ``grid([(c.x, c.y, c.winner) for c in road.big_road])``."""
    items = list(cells)
    width = max((x for x, _, _ in items), default=-1) + 1
    out: list[list[str | None]] = [[None] * width for _ in range(rows)]
    for x, y, symbol in items:
        out[y][x] = symbol
    return out
