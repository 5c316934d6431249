"""The declared win: what the floor records when a player opens his tiles.

This is mah-jong's outcome (``parse_outcome`` / ``outcome_json``); its JSON form is
documented in ``docs/rules/mahjong.md``. Parsing refuses what cannot be on a table
(a tile the set does not hold, a fifth copy, a wrong number of tiles, a chow in the
simplified game, a seat that is not playing) with an ``OutcomeError`` code. A hand
that is well formed but is not a win is *not* refused here: it is a false win
(«jogo nulo», art. 10 (a) 7)-8), (b) 3)), which the scorer settles.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import OutcomeError
from .tiles import (
    TILE_SETS,
    WIND_LETTERS,
    check_tiles,
    parse_tiles,
    tile_str,
    tiles_str,
    wind_index,
)

VARIANTS = ("conventional", "simplified")

#: How the winning tile came (art. 5 and 6).
WIN_SOURCES = (
    "self_drawn",
    "discard",
    "robbing_kong",
    "kong_replacement",
    "second_kong_replacement",
    "last_tile",
    "dealer_first_fourteen",
    "dealer_first_discard",
)
#: Sources where the winner drew the tile himself.
SELF_DRAWN = frozenset(
    {
        "self_drawn",
        "kong_replacement",
        "second_kong_replacement",
        "last_tile",
        "dealer_first_fourteen",
    }
)
#: Sources where another player discarded the winning tile (liability of art. 10 applies).
DISCARDS = frozenset({"discard", "dealer_first_discard"})

_KEYS = frozenset(
    {
        "variant", "stake", "seats", "banker", "winner", "round_wind", "seat_wind",
        "concealed", "melds", "win", "discarder", "wrong_meld", "withdrew_pung", "capital",
    }
)  # fmt: skip
_WIN_KEYS = frozenset({"tile", "by", "from", "tile_seen", "after_claim"})
_MELD_KEYS = frozenset({"tiles", "type", "concealed", "from"})
_CONDUCT_KEYS = ("withheld_last_honour", "broke_pung", "ready", "broke_ready_hand")


def _err(message: str, code: str = "MAHJONG_MALFORMED") -> OutcomeError:
    return OutcomeError(message, code=code)


@dataclass(frozen=True, slots=True)
class Meld:
    """A set laid on the table before the win (exposed, or a concealed kong).

    ``shape`` is what the tiles are (``chow``, ``pung``, ``kong``) or ``None`` when
    they form no set: an exposed set of the wrong tiles (art. 10 (a) 7)).
    """

    tiles: tuple[int, ...]
    shape: str | None
    concealed: bool = False
    source: int | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"tiles": tiles_str(self.tiles), "type": self.shape or "invalid"}
        if self.concealed:
            out["concealed"] = True
        if self.source is not None:
            out["from"] = self.source
        return out


@dataclass(frozen=True, slots=True)
class Conduct:
    """What the discarder did, as the inspector found it (art. 10 (a) 4)-6), (b) 1)-2))."""

    withheld_last_honour: bool = False
    broke_pung: bool = False
    ready: bool = False
    broke_ready_hand: bool = False

    def any(self) -> bool:
        return self.withheld_last_honour or self.broke_pung or self.ready or self.broke_ready_hand


@dataclass(frozen=True, slots=True)
class DeclaredWin:
    variant: str
    stake: tuple[int, int]
    seats: tuple[int, ...]
    banker: int
    winner: int
    round_wind: int
    concealed: tuple[int, ...]
    melds: tuple[Meld, ...]
    tile: int
    by: str
    source: int | None = None
    tile_seen: bool | None = None
    after_claim: bool = False
    conduct: Conduct = field(default_factory=Conduct)
    wrong_meld: bool = False
    withdrew_pung: bool = False
    capital: int | None = None

    @property
    def seat_wind(self) -> int:
        """The banker's place is always East, South on his right... (art. 3)."""
        return (self.winner - self.banker) % 4

    def wind_of(self, seat: int) -> int:
        return (seat - self.banker) % 4

    @property
    def stake_text(self) -> str:
        return f"{self.stake[0]}/{self.stake[1]}"

    def all_tiles(self) -> tuple[int, ...]:
        out = [*self.concealed, self.tile]
        for m in self.melds:
            out.extend(m.tiles)
        return tuple(out)

    def to_json(self) -> dict[str, Any]:
        win: dict[str, Any] = {"tile": tile_str(self.tile), "by": self.by}
        if self.source is not None:
            win["from"] = self.source
        if self.tile_seen is not None:
            win["tile_seen"] = self.tile_seen
        if self.after_claim:
            win["after_claim"] = True
        out: dict[str, Any] = {
            "variant": self.variant,
            "stake": self.stake_text,
            "seats": list(self.seats),
            "banker": self.banker,
            "winner": self.winner,
            "round_wind": WIND_LETTERS[self.round_wind],
            "seat_wind": WIND_LETTERS[self.seat_wind],
            "concealed": tiles_str(sorted(self.concealed)),
            "melds": [m.to_json() for m in self.melds],
            "win": win,
        }
        conduct = {k: True for k in _CONDUCT_KEYS if getattr(self.conduct, k)}
        if conduct:
            out["discarder"] = conduct
        if self.wrong_meld:
            out["wrong_meld"] = True
        if self.withdrew_pung:
            out["withdrew_pung"] = True
        if self.capital is not None:
            out["capital"] = self.capital
        return out


#: One figure of a stake level, in whole patacas: plain digits, or digits in groups of
#: three separated by spaces as the regulation prints them ("1 000"), optionally with a
#: dollar sign before and two decimal digits after a comma (135/91/M art. 8 prints
#: "$ 100,00") or a point.
_FIGURE = re.compile(r"^\$?\s*([0-9]{1,3}(?:\s[0-9]{3})+|[0-9]+)(?:[,.]([0-9]{2}))?$")

LEVEL_FORMS = (
    '"25/50", "$25/$50", "1000/2000", or as 135/91/M art. 8 prints them, with a decimal '
    'comma and spaces between thousands: "$ 25,00/ $ 50,00", "$ 1 000,00/ $ 2 000,00"'
)


def parse_level(text: str) -> tuple[int, int]:
    """A stake level of art. 8 as its two figures in whole patacas: ``"25/50"``,
    ``"$25/$50"``, or as the regulation prints it, ``"$ 100,00/ $ 200,00"`` or
    ``"$ 1 000,00/ $ 2 000,00"`` (decimal comma, spaces between thousands) -> (100, 200).

    Anything else is refused (code ``MAHJONG_STAKE_LEVEL``, the message shows the
    accepted forms): a comma or point before three digits ("1,000", "1.000") is a
    thousands separator in one notation and a decimal one in the other, so it is
    ambiguous; cents are never part of a level.
    """
    parts = text.split("/")
    figures = []
    for part in parts if len(parts) == 2 else ():
        m = _FIGURE.match(part.strip())
        if m is None:
            break
        if m.group(2) not in (None, "00"):
            raise _err(
                f"stake level {text!r}: the levels of 135/91/M art. 8 are whole patacas "
                f"({part.strip()!r} has cents); write it {LEVEL_FORMS}",
                "MAHJONG_STAKE_LEVEL",
            )
        figures.append(int(re.sub(r"\s", "", m.group(1))))
    if len(figures) != 2:
        raise _err(
            f"stake level {text!r} is not written in an accepted form: {LEVEL_FORMS} (a "
            'comma or point before three digits, as in "1,000", is refused: thousands or '
            "decimals?)",
            "MAHJONG_STAKE_LEVEL",
        )
    return figures[0], figures[1]


def parse_stake(
    value: object, levels: Mapping[tuple[int, int], Any], variant: str
) -> tuple[int, int]:
    """The declared stake level, one of ``levels`` (art. 8)."""
    known = ", ".join(f"{a}/{b}" for a, b in levels)
    if not isinstance(value, str):
        raise _err(
            f"stake must be a stake level of 135/91/M art. 8 ({variant}) written as a string, "
            f"one of {known}; got {value!r}",
            "MAHJONG_STAKE_LEVEL",
        )
    level = parse_level(value)
    if level in levels:
        return level
    raise _err(
        f"stake must be a stake level of 135/91/M art. 8 ({variant}): one of {known}; got "
        f"{value!r} (read as {level[0]}/{level[1]})",
        "MAHJONG_STAKE_LEVEL",
    )


def _bool(raw: Mapping[str, Any], key: str, where: str) -> bool:
    v = raw.get(key, False)
    if not isinstance(v, bool):
        raise _err(f"{where}{key} must be true or false, got {v!r}")
    return v


def _seat(value: object, what: str, seats: tuple[int, ...]) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value not in seats:
        raise _err(
            f"{what} must be one of the seats playing {list(seats)}, got {value!r}",
            "MAHJONG_SEAT_INVALID",
        )
    return value


def _shape(tiles: tuple[int, ...]) -> str | None:
    s = sorted(tiles)
    if len(s) == 4 and s[0] == s[3]:
        return "kong"
    if len(s) == 3 and s[0] == s[2]:
        return "pung"
    if (
        len(s) == 3
        and s[0] < 27
        and s[2] // 9 == s[0] // 9
        and s[1] == s[0] + 1
        and s[2] == s[0] + 2
    ):
        return "chow"
    return None


def _previous(seat: int, seats: tuple[int, ...]) -> int:
    """The player whose discard ``seat`` may chow: the one on his left (art. 5 (a) (3))."""
    order = sorted(seats)
    return order[order.index(seat) - 1]


def parse_declared_win(
    raw: object, variant: str, levels: Mapping[tuple[int, int], Any]
) -> DeclaredWin:
    """Validate a declared win's JSON (see ``docs/rules/mahjong.md``)."""
    if not isinstance(raw, Mapping):
        raise _err(f"a declared win is a JSON object, got {type(raw).__name__}")
    unknown = set(raw) - _KEYS
    if unknown:
        raise _err(f"unknown field(s) in the declared win: {', '.join(sorted(map(str, unknown)))}")
    declared_variant = raw.get("variant", variant)
    if declared_variant != variant:
        raise _err(
            f"the hand is declared {declared_variant!r} but this table plays {variant!r} "
            "(rules.mahjong.variant)",
            "MAHJONG_VARIANT_MISMATCH",
        )
    tile_set = TILE_SETS[variant]
    conventional = variant == "conventional"
    for key in ("stake", "banker", "winner", "round_wind", "concealed", "win"):
        if key not in raw:
            raise _err(f"the declared win is missing {key!r}")
    stake = parse_stake(raw["stake"], levels, variant)

    seats_raw = raw.get("seats", [0, 1, 2, 3])
    if (
        not isinstance(seats_raw, list)
        or not all(
            isinstance(s, int) and not isinstance(s, bool) and 0 <= s <= 3 for s in seats_raw
        )
        or len(set(seats_raw)) != len(seats_raw)
    ):
        raise _err(
            f"seats must be a list of different seats 0..3, got {seats_raw!r}",
            "MAHJONG_SEAT_INVALID",
        )
    seats = tuple(sorted(seats_raw))
    if conventional and len(seats) != 4:
        raise _err(
            "the conventional game is played by four players (135/91/M art. 3 (a))",
            "MAHJONG_SEAT_INVALID",
        )
    if not 2 <= len(seats) <= 4:
        raise _err(
            "the simplified game is played by 2 to 4 players (135/91/M art. 3 (b))",
            "MAHJONG_SEAT_INVALID",
        )
    banker = _seat(raw["banker"], "banker", seats)
    winner = _seat(raw["winner"], "winner", seats)
    round_wind = wind_index(raw["round_wind"], "round_wind")
    if "seat_wind" in raw:
        sw = wind_index(raw["seat_wind"], "seat_wind")
        if sw != (winner - banker) % 4:
            raise _err(
                f"seat_wind {raw['seat_wind']!r} does not match: seat {winner} is "
                f"{WIND_LETTERS[(winner - banker) % 4]} when seat {banker} is the banker "
                "(East is always the banker's place, South on his right; art. 3)",
                "MAHJONG_SEAT_INVALID",
            )

    concealed = parse_tiles(raw["concealed"], "concealed")

    melds_raw = raw.get("melds", [])
    if not isinstance(melds_raw, list):
        raise _err(f"melds must be a list, got {melds_raw!r}")
    melds = []
    for i, m in enumerate(melds_raw):
        where = f"melds[{i}]."
        if not isinstance(m, Mapping) or "tiles" not in m:
            raise _err(f"melds[{i}] must be an object with 'tiles', got {m!r}")
        bad = set(m) - _MELD_KEYS
        if bad:
            raise _err(f"unknown field(s) in melds[{i}]: {', '.join(sorted(map(str, bad)))}")
        tiles = parse_tiles(m["tiles"], f"melds[{i}]")
        shape = _shape(tiles)
        hidden = _bool(m, "concealed", where)
        declared_type = m.get("type")
        if declared_type is not None:
            if declared_type not in ("chow", "pung", "kong"):
                raise _err(
                    f"{where}type must be chow, pung or kong, got {declared_type!r}",
                    "MAHJONG_MELD_INVALID",
                )
            if shape is not None and declared_type != shape:
                raise _err(
                    f"{where}type says {declared_type} but the tiles "
                    f"{' '.join(tiles_str(tiles))} are a {shape}",
                    "MAHJONG_MELD_INVALID",
                )
        if len(tiles) not in (3, 4):
            raise _err(
                f"melds[{i}] must hold 3 tiles (chow, pung) or 4 (kong), got {len(tiles)}",
                "MAHJONG_MELD_INVALID",
            )
        kind = shape or declared_type or ("kong" if len(tiles) == 4 else None)
        if hidden and kind != "kong":
            raise _err(
                f"melds[{i}]: only a kong can be concealed (art. 5 (a) (5))", "MAHJONG_MELD_INVALID"
            )
        if not conventional and kind != "kong":
            raise _err(
                f"melds[{i}]: the simplified game has no exposed chow or pung, only kongs "
                "(135/91/M art. 5 (b) (3)-(4))",
                "MAHJONG_MELD_INVALID",
            )
        source = None
        if "from" in m:
            if hidden:
                raise _err(
                    f"melds[{i}]: a concealed kong takes no discard ('from')",
                    "MAHJONG_MELD_INVALID",
                )
            source = _seat(m["from"], f"{where}from", seats)
            if source == winner:
                raise _err(
                    f"{where}from: a player does not claim his own discard", "MAHJONG_SEAT_INVALID"
                )
            if kind == "chow" and source != _previous(winner, seats):
                raise _err(
                    f"{where}from: only the player on the discarder's right may chow his discard "
                    f"(art. 5 (a) (3)); seat {winner} chows seat {_previous(winner, seats)}",
                    "MAHJONG_SEAT_INVALID",
                )
        melds.append(Meld(tiles, shape, hidden, source))

    win = raw["win"]
    if not isinstance(win, Mapping):
        raise _err(f"win must be an object with tile and by, got {win!r}")
    bad = set(win) - _WIN_KEYS
    if bad:
        raise _err(f"unknown field(s) in win: {', '.join(sorted(map(str, bad)))}")
    win_tiles = parse_tiles(win.get("tile", ""), "win.tile")
    if len(win_tiles) != 1:
        raise _err(f"win.tile must be one tile, got {win.get('tile')!r}")
    tile = win_tiles[0]
    by = win.get("by")
    if by not in WIN_SOURCES:
        raise _err(
            f"win.by must be one of {', '.join(WIN_SOURCES)}; got {by!r}",
            "MAHJONG_WIN_SOURCE_INVALID",
        )

    check_tiles([*concealed, tile, *(t for m in melds for t in m.tiles)], tile_set)
    size = 14 if conventional else 5
    held = len(concealed) + 1 + 3 * len(melds)
    if held != size:
        raise _err(
            f"a {variant} win shows {size} tiles, a kong counting as three (art. 4 ({'a' if conventional else 'b'})); "
            f"this hand shows {held}: {len(concealed)} concealed, the winning tile and {len(melds)} set(s)",
            "MAHJONG_HAND_SIZE",
        )

    source = None
    if "from" in win:
        source = _seat(win["from"], "win.from", seats)
        if source == winner:
            raise _err(
                "win.from: the winner does not win on his own discard", "MAHJONG_WIN_SOURCE_INVALID"
            )
    kongs = sum(1 for m in melds if len(m.tiles) == 4)

    def need(cond: bool, message: str) -> None:
        if not cond:
            raise _err(f"win.by {by}: {message}", "MAHJONG_WIN_SOURCE_INVALID")

    if by == "discard":
        need(source is not None, "say who discarded the tile in win.from")
    elif by == "dealer_first_discard":
        need(winner != banker, "tei vu is won by a player other than the banker (art. 5 (a) (2))")
        need(source in (None, banker), "the dealer's first discard comes from the banker")
        need(not melds, "nobody has a set on the table at the dealer's first discard")
        source = banker
    elif by == "dealer_first_fourteen":
        need(winner == banker, "t'in vu is the banker's (art. 5 (a) (1))")
        need(not melds, "the dealer's first tiles have no set on the table")
    elif by == "robbing_kong":
        others = sum(1 for t in (*concealed, *(t for m in melds for t in m.tiles)) if t == tile)
        need(
            others == 0,
            f"the robbed player shows a pung of {tile_str(tile)} and adds the fourth, "
            "so the winner can hold no other copy of it",
        )
    elif by == "kong_replacement":
        need(kongs >= 1, "the winner must have made a kong (art. 6 (a) (2) kóng seong fá)")
    elif by == "second_kong_replacement":
        need(
            kongs >= 2,
            "the winner must have made two kongs in a row (art. 6 (a) (3) kóng seong kóng)",
        )
    if by not in ("discard", "dealer_first_discard", "robbing_kong"):
        need(source is None, "win.from is only for a discard or a robbed kong")

    tile_seen = win.get("tile_seen")
    if tile_seen is not None and not isinstance(tile_seen, bool):
        raise _err(f"win.tile_seen must be true or false, got {tile_seen!r}")
    if tile_seen is not None and by not in DISCARDS:
        raise _err("win.tile_seen is only for a win on a discard (art. 10 (a) 10), (b) 4))")
    after_claim = _bool(win, "after_claim", "win.")
    if after_claim:
        need(
            by in SELF_DRAWN and by != "dealer_first_fourteen",
            "after_claim is for a tile drawn by the winner (art. 10 (a) 2))",
        )
        need(
            any(m.source is not None for m in melds),
            "after_claim needs the exposed set claimed last, with its 'from'",
        )

    conduct_raw = raw.get("discarder", {})
    if not isinstance(conduct_raw, Mapping):
        raise _err(f"discarder must be an object, got {conduct_raw!r}")
    bad = set(conduct_raw) - set(_CONDUCT_KEYS)
    if bad:
        raise _err(
            f"unknown field(s) in discarder: {', '.join(sorted(map(str, bad)))}; "
            f"known: {', '.join(_CONDUCT_KEYS)}"
        )
    conduct = Conduct(**{k: _bool(conduct_raw, k, "discarder.") for k in _CONDUCT_KEYS})
    if conduct.any() and by not in DISCARDS:
        raise _err(
            "discarder: the discarder's conduct only matters for a win on a discard (art. 10)",
            "MAHJONG_WIN_SOURCE_INVALID",
        )
    if not conventional and conduct.broke_ready_hand:
        raise _err(
            "discarder.broke_ready_hand is a case of art. 10 (a) 6) only; the simplified game "
            "has art. 10 (b) 1)-2)",
            "MAHJONG_MALFORMED",
        )

    wrong_meld = _bool(raw, "wrong_meld", "")
    withdrew_pung = _bool(raw, "withdrew_pung", "")
    if not conventional and (wrong_meld or withdrew_pung):
        raise _err(
            "wrong_meld and withdrew_pung are cases of art. 10 (a) 7) and art. 9 (a) 2); the "
            "simplified game exposes no chow or pung (art. 5 (b) (3))",
            "MAHJONG_MALFORMED",
        )

    capital = raw.get("capital")
    if capital is not None and (
        isinstance(capital, bool) or not isinstance(capital, int) or capital <= 0
    ):
        raise _err(f"capital must be a positive integer of minor units, got {capital!r}")

    return DeclaredWin(
        variant=variant,
        stake=stake,
        seats=seats,
        banker=banker,
        winner=winner,
        round_wind=round_wind,
        concealed=tuple(sorted(concealed)),
        melds=tuple(melds),
        tile=tile,
        by=by,
        source=source,
        tile_seen=tile_seen,
        after_claim=after_claim,
        conduct=conduct,
        wrong_meld=wrong_meld,
        withdrew_pung=withdrew_pung,
        capital=capital,
    )
