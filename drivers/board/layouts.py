"""A board's lamps: area names mapped to lamp numbers, lamp bitmaps, and the baccarat
road's entries (display only).

Which areas a layout has, in which default lamp order, and which a result lights is
the game's to say (``Game.display.board`` in the rules core: each area is a bet of the
regulation, lit when that bet wins); the table tells a board its areas
(``use_areas``). A board's lamp map (area name -> lamp number) is configuration;
areas a board has no lamp for are skipped.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from ..base import DriverError


class LayoutError(DriverError, ValueError):
    code = "BOARD_LAYOUT"


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
def lamp_map(areas: Sequence[str], overrides: Mapping[str, int] | None = None) -> dict[str, int]:
    """Area -> lamp number: the configured map, or else the areas in their order."""
    if overrides:
        unknown = set(overrides) - set(areas)
        if areas and unknown:
            raise LayoutError(f"unknown areas in the lamp map: {', '.join(sorted(unknown))}")
        return dict(overrides)
    return {a: i for i, a in enumerate(areas)}


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
