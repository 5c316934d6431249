"""Which areas of a table layout to light for a result (display only).

Settlement is the rules core's job; this module only names the areas a lit board
shows as winning, from the bet lists of the regulations. A board's lamp map (area
name -> lamp number) is configuration; areas a layout does not have are skipped.
The default lamp maps number the areas in the order listed here.

Decisions where the text is silent are documented in ``docs/protocols/board.md``:
odd/even are lit on a triple (57/2004 art. 7 names only small and big).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations

from ..base import DriverError


class LayoutError(DriverError, ValueError):
    code = "BOARD_LAYOUT"


def _check_dice(dice: Sequence[int], n: int = 3) -> tuple[int, ...]:
    d = tuple(dice)
    if len(d) != n or any(
        isinstance(x, bool) or not isinstance(x, int) or not 1 <= x <= 6 for x in d
    ):
        raise LayoutError(f"expected {n} dice with faces 1..6, got {dice!r}")
    return d


# -- sic bo (57/2004) ----------------------------------------------------------------------
def sicbo_areas_all() -> tuple[str, ...]:
    """Every sic bo area, in the default lamp order (57/2004 art. 5)."""
    out = ["small", "big", "odd", "even"]
    out += [f"single-{i}" for i in range(1, 7)]
    out += [f"double-{i}" for i in range(1, 7)]
    out += [f"triple-{i}" for i in range(1, 7)] + ["any-triple"]
    out += [f"total-{t}" for t in range(4, 18)]
    out += [f"combo-{a}-{b}" for a, b in combinations(range(1, 7), 2)]
    out += [f"pair-single-{a}-{b}" for a in range(1, 7) for b in range(1, 7) if a != b]
    out += ["three-{}-{}-{}".format(*c) for c in combinations(range(1, 7), 3)]
    out += ["four-{}-{}-{}-{}".format(*c) for c in combinations(range(1, 7), 4)]
    return tuple(out)


def sicbo_areas(dice: Sequence[int]) -> tuple[str, ...]:
    """The sic bo areas that win with ``dice`` (57/2004 art. 5, 7)."""
    d = _check_dice(dice)
    total = sum(d)
    counts = Counter(d)
    triple = len(counts) == 1
    out: list[str] = []
    if not triple:  # art. 7: a triple takes small and big
        out.append("small" if total <= 10 else "big")
    out.append("odd" if total % 2 else "even")
    out += [f"single-{i}" for i in sorted(counts)]  # art. 5 3)
    out += [f"double-{i}" for i in sorted(counts) if counts[i] >= 2]  # art. 5 12)
    if triple:
        out += [f"triple-{d[0]}", "any-triple"]  # art. 5 4), 5)
    if 4 <= total <= 17:
        out.append(f"total-{total}")  # art. 5 6)
    faces = sorted(counts)
    out += [f"combo-{a}-{b}" for a, b in combinations(faces, 2)]  # art. 5 11)
    if len(counts) == 2:  # art. 5 9): a pair and a different single
        pair = next(i for i, c in counts.items() if c == 2)
        single = next(i for i, c in counts.items() if c == 1)
        out.append(f"pair-single-{pair}-{single}")
    if len(counts) == 3:
        out.append("three-{}-{}-{}".format(*faces))  # art. 5 10)
        out += [
            "four-{}-{}-{}-{}".format(*sorted((*faces, x))) for x in range(1, 7) if x not in counts
        ]  # 13)
    return tuple(out)


# -- fish-prawn-crab (59/2004) -----------------------------------------------------------------
#: 59/2004 art. 1 1): figure and colour of each face number.
FPC_FIGURES = {1: "fish", 2: "prawn", 3: "gourd", 4: "coin", 5: "crab", 6: "rooster"}
FPC_COLOURS = {1: "red", 2: "green", 3: "blue", 4: "blue", 5: "green", 6: "red"}
_COLOURS = ("red", "green", "blue")
_COUNT_WORDS = {1: "one", 2: "two", 3: "three"}


def fpc_areas_all() -> tuple[str, ...]:
    out = ["small", "big"]
    out += list(FPC_FIGURES.values())
    out += [f"{w}-{c}" for c in _COLOURS for w in ("one", "two", "three")]
    out += ["any-three-colour"]
    out += [f"triple-{fig}" for fig in FPC_FIGURES.values()] + ["any-triple"]
    out += [f"total-{t}" for t in range(4, 18)]
    return tuple(out)


def fpc_areas(dice: Sequence[int]) -> tuple[str, ...]:
    """The fish-prawn-crab areas that win with ``dice`` (59/2004 art. 5, 7)."""
    d = _check_dice(dice)
    total = sum(d)
    counts = Counter(d)
    triple = len(counts) == 1
    out: list[str] = []
    if not triple:  # art. 7
        out.append("small" if total <= 10 else "big")
    out += [FPC_FIGURES[i] for i in sorted(counts)]  # art. 5 3)
    colours = Counter(FPC_COLOURS[x] for x in d)
    out += [f"{_COUNT_WORDS[colours[c]]}-{c}" for c in _COLOURS if colours[c]]  # art. 5 4)-6)
    if len(colours) == 1:
        out.append("any-three-colour")  # art. 5 7)
    if triple:
        out += [f"triple-{FPC_FIGURES[d[0]]}", "any-triple"]  # art. 5 8), 9)
    if 4 <= total <= 17:
        out.append(f"total-{total}")  # art. 5 10)
    return tuple(out)


# -- numbers ---------------------------------------------------------------------------------
def roulette_areas_all() -> tuple[str, ...]:
    return tuple(str(n) for n in range(37))


def fantan_areas_all() -> tuple[str, ...]:
    return ("1", "2", "3", "4")


# -- baccarat road -------------------------------------------------------------------------------
WINNERS = {"B": 1, "P": 2, "T": 3}


@dataclass(frozen=True, slots=True)
class RoadEntry:
    """One baccarat coup on the road: winner ``B``/``P``/``T`` and the pair side bets' flags."""

    winner: str
    banker_pair: bool = False
    player_pair: bool = False

    def __post_init__(self) -> None:
        if self.winner not in WINNERS:
            raise LayoutError(f"road winner must be B, P or T, got {self.winner!r}")

    @staticmethod
    def parse(text: str) -> RoadEntry:
        """``B``, ``P``, ``T``, optionally followed by ``b`` (banker pair) and/or ``p`` (player pair)."""
        if not text or text[0] not in WINNERS or set(text[1:]) - {"b", "p"}:
            raise LayoutError(
                f"not a road entry: {text!r} (B, P or T, then optional b and p for pairs)"
            )
        return RoadEntry(text[0], "b" in text[1:], "p" in text[1:])

    def to_byte(self) -> int:
        return (
            WINNERS[self.winner]
            | (0x10 if self.banker_pair else 0)
            | (0x20 if self.player_pair else 0)
        )

    @staticmethod
    def from_byte(b: int) -> RoadEntry:
        w = b & 0x0F
        if b & 0xCC or w not in (1, 2, 3):
            raise LayoutError(f"0x{b:02X} is not a road entry byte")
        return RoadEntry("?BPT"[w], bool(b & 0x10), bool(b & 0x20))

    def __str__(self) -> str:
        return self.winner + ("b" if self.banker_pair else "") + ("p" if self.player_pair else "")


# -- lamp maps -------------------------------------------------------------------------------------
LAYOUTS: dict[str, tuple[str, ...]] = {
    "sicbo": sicbo_areas_all(),
    "fish-prawn-crab": fpc_areas_all(),
    "roulette": roulette_areas_all(),
    "fantan": fantan_areas_all(),
    "baccarat": ("banker", "player", "tie", "banker-pair", "player-pair"),
}


def lamp_map(layout: str, overrides: Mapping[str, int] | None = None) -> dict[str, int]:
    """Area -> lamp number: the layout's default order, or the configured map."""
    if layout not in LAYOUTS:
        raise LayoutError(f"unknown layout {layout!r}; known: {', '.join(LAYOUTS)}")
    if overrides:
        unknown = set(overrides) - set(LAYOUTS[layout])
        if unknown:
            raise LayoutError(
                f"{layout}: unknown areas in the lamp map: {', '.join(sorted(unknown))}"
            )
        return dict(overrides)
    return {a: i for i, a in enumerate(LAYOUTS[layout])}


def lamps_for(areas: Iterable[str], lamps: Mapping[str, int]) -> list[int]:
    return sorted({lamps[a] for a in areas if a in lamps})


def bitmap(lamps: Iterable[int]) -> bytes:
    ls = list(lamps)
    if not ls:
        return b""
    out = bytearray((max(ls) // 8) + 1)
    for i in ls:
        if not 0 <= i < 2040:
            raise LayoutError(f"lamp {i} outside 0..2039")
        out[i // 8] |= 1 << (i % 8)
    return bytes(out)


def from_bitmap(bm: bytes) -> list[int]:
    return [i * 8 + b for i, byte in enumerate(bm) for b in range(8) if byte >> b & 1]
