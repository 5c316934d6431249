"""Mah-jong tiles, the two sets of Portaria 135/91/M art. 2, and the tile notation.

A tile is an ``int`` 0..33 (fast to count and index); its text is the notation
documented in ``docs/rules/mahjong.md``:

==========  ================================  =========================  ===========
tiles       regulation (art. 2 2))            notation (output)          also read
==========  ================================  =========================  ===========
0..8        «mán chi» (números, 萬)           ``1m`` .. ``9m``            ``1萬`` ``一万``
9..17       «t'ông chi» (círculos, 筒)        ``1p`` .. ``9p``            ``1筒``
18..26      «sók chi» (bambus, 索)            ``1s`` .. ``9s``            ``1索``
27..30      ventos Este, Sul, Oeste, Norte    ``E`` ``S`` ``W`` ``N``     ``東南西北``
31..33      trunfos encarnada, verde, branca  ``RD`` ``GD`` ``WD``        ``中 發 白``
==========  ================================  =========================  ===========

On input the letters may be lower case and suited tiles of one suit may be run
together (``"123m 55p EEE"``); output is always one canonical token per tile.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from ..errors import OutcomeError

N_KINDS = 34
COPIES = 4

SUIT_LETTERS = "mps"

EAST, SOUTH, WEST, NORTH = 27, 28, 29, 30
RED, GREEN, WHITE = 31, 32, 33
WINDS = (EAST, SOUTH, WEST, NORTH)
DRAGONS = (RED, GREEN, WHITE)
HONOURS = WINDS + DRAGONS
TERMINALS = (0, 8, 9, 17, 18, 26)
ORPHANS = TERMINALS + HONOURS

#: Wind letters in the order of play (art. 3: East is the banker, South on his right...).
WIND_LETTERS = ("E", "S", "W", "N")
HONOUR_CODES = ("E", "S", "W", "N", "RD", "GD", "WD")
_CHINESE_HONOURS = "東南西北中發白"
_CHINESE_NUMERALS = "一二三四五六七八九"
_CHINESE_SUITS = "萬筒索"


def is_honour(t: int) -> bool:
    return t >= 27


def is_wind(t: int) -> bool:
    return 27 <= t <= 30


def is_dragon(t: int) -> bool:
    return t >= 31


def is_terminal(t: int) -> bool:
    return t < 27 and t % 9 in (0, 8)


def suit_of(t: int) -> int:
    """0, 1, 2 for the three suits; 3 for honours."""
    return t // 9 if t < 27 else 3


def tile_str(t: int) -> str:
    if t < 27:
        return f"{t % 9 + 1}{SUIT_LETTERS[t // 9]}"
    return HONOUR_CODES[t - 27]


def tile_chinese(t: int) -> str:
    """The tile's Chinese name, for the inspector's report (五萬, 東, 紅中...)."""
    if t < 27:
        return _CHINESE_NUMERALS[t % 9] + _CHINESE_SUITS[t // 9]
    return ("東", "南", "西", "北", "紅中", "發財", "白板")[t - 27]


def tiles_str(tiles: Iterable[int]) -> list[str]:
    return [tile_str(t) for t in tiles]


def wind_index(letter: object, what: str) -> int:
    """0..3 for ``"E" "S" "W" "N"`` (also 東南西北)."""
    if isinstance(letter, str):
        s = letter.strip().upper()
        if s in WIND_LETTERS:
            return WIND_LETTERS.index(s)
        if len(s) == 1 and s in _CHINESE_HONOURS[:4]:
            return _CHINESE_HONOURS.index(s)
    raise OutcomeError(
        f"{what} must be one of E, S, W, N, got {letter!r}", code="MAHJONG_MALFORMED"
    )


_TOKEN = re.compile(
    r"\s*(?:"
    r"(?P<run>[1-9]+)(?P<suit>[mps])"
    r"|(?P<honour>RD|GD|WD|E|S|W|N)"
    r"|(?P<cnum>[1-9一二三四五六七八九])(?P<csuit>[萬万筒索])"
    r"|(?P<chonour>[東南西北中發発白])"
    r")\s*,?",
    re.IGNORECASE,
)


def parse_tiles(value: object, what: str = "tiles") -> tuple[int, ...]:
    """Parse a list of tile tokens or one string of them; raise ``MAHJONG_TILE_UNKNOWN``."""
    if isinstance(value, list | tuple):
        if not all(isinstance(v, str) for v in value):
            raise OutcomeError(
                f"{what}: tiles must be strings such as '5m', 'E', 'RD'; got {value!r}",
                code="MAHJONG_MALFORMED",
            )
        text = " ".join(value)
    elif isinstance(value, str):
        text = value
    else:
        raise OutcomeError(
            f"{what}: expected a list of tiles or a string of them, got {value!r}",
            code="MAHJONG_MALFORMED",
        )
    out: list[int] = []
    pos = 0
    text = text.strip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            bad = text[pos:].split()[0] if text[pos:].split() else text[pos:]
            raise OutcomeError(
                f"{what}: {bad!r} is not a tile (1m-9m, 1p-9p, 1s-9s, E S W N, RD GD WD)",
                code="MAHJONG_TILE_UNKNOWN",
            )
        pos = m.end()
        if m["run"]:
            base = 9 * SUIT_LETTERS.index(m["suit"].lower())
            out.extend(base + int(d) - 1 for d in m["run"])
        elif m["honour"]:
            out.append(27 + HONOUR_CODES.index(m["honour"].upper()))
        elif m["cnum"]:
            n = m["cnum"]
            rank = int(n) if n.isdigit() else _CHINESE_NUMERALS.index(n) + 1
            suit = "萬筒索".index(m["csuit"].replace("万", "萬"))
            out.append(9 * suit + rank - 1)
        else:
            out.append(27 + _CHINESE_HONOURS.index(m["chonour"].replace("発", "發")))
    return tuple(out)


@dataclass(frozen=True, slots=True)
class TileSet:
    """The tiles one form of the game is played with (art. 2)."""

    name: str
    kinds: frozenset[int]
    article: str

    @property
    def size(self) -> int:
        return COPIES * len(self.kinds)

    def holds(self, t: int) -> bool:
        return t in self.kinds

    def tiles(self) -> tuple[int, ...]:
        """Every tile of the set, each kind four times, in tile order."""
        return tuple(t for t in sorted(self.kinds) for _ in range(COPIES))


#: 136 tiles: 3 dragons, 4 winds and three suits of 1-9, four of each (art. 2 2) (a)).
CONVENTIONAL = TileSet("conventional", frozenset(range(N_KINDS)), "135/91/M art. 2 1) (a), 2) (a)")
#: 112 tiles: the green dragon «fát chói» and three suits of 1-9, four of each (art. 2 2) (b)).
SIMPLIFIED = TileSet("simplified", frozenset(range(27)) | {GREEN}, "135/91/M art. 2 1) (b), 2) (b)")
TILE_SETS = {"conventional": CONVENTIONAL, "simplified": SIMPLIFIED}


def check_tiles(tiles: Iterable[int], tile_set: TileSet) -> list[int]:
    """Counts of the tiles of one hand; refuse a tile the set does not hold or a fifth copy."""
    counts = [0] * N_KINDS
    for t in tiles:
        if not tile_set.holds(t):
            raise OutcomeError(
                f"{tile_str(t)} is not a tile of the {tile_set.name} set ({tile_set.article})",
                code="MAHJONG_TILE_NOT_IN_SET",
            )
        counts[t] += 1
        if counts[t] > COPIES:
            raise OutcomeError(
                f"{tile_str(t)} appears {counts[t]} times; the set has {COPIES} of each "
                f"({tile_set.article})",
                code="MAHJONG_TILE_COUNT",
            )
    return counts
