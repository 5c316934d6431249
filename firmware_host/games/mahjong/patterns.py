"""The fan of a winning hand: every pattern of 135/91/M art. 6, one small test each.

Counting (art. 6 (a)): each pattern earned adds its fan; a «fán dobrado» pattern is
worth two, and two fan is the maximum a hand is worth («graduação máxima», Chinese
「糊出之最高番數」), so the hand's fan is ``min(2, sum)``. A hand that earns nothing
is a «kai vu» (0 fan). In the simplified game (art. 6 (b)) there are only kai vu and
one fan. Decisions where the text is silent are listed in ``docs/rules/mahjong.md``.

A pattern that the text defines as the combination of others (seong fán is the
round wind and the seat wind at once, kan-kan vu a concealed tò-i-tò-i vu...) lists
them in ``replaces``: the named combination is shown instead of its parts.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import cast

from .declared import DISCARDS, DeclaredWin
from .decompose import Group, Kind, Reading, counts_of, decompositions, is_thirteen_orphans
from .tiles import (
    GREEN,
    WINDS,
    is_dragon,
    is_honour,
    is_terminal,
    is_wind,
    suit_of,
    tile_str,
)

A6A1 = "135/91/M art. 6 (a) (1)"
A6A2 = "135/91/M art. 6 (a) (2)"
A6A3 = "135/91/M art. 6 (a) (3)"
A6B1 = "135/91/M art. 6 (b) (1)"
A6B2 = "135/91/M art. 6 (b) (2)"

#: The most a conventional hand is worth (art. 6 (a) (3)) and a simplified one (art. 6 (b)).
MAX_FAN = {"conventional": 2, "simplified": 1}


@dataclass(frozen=True, slots=True)
class Context:
    """One reading of a declared win, as the pattern tests see it."""

    win: DeclaredWin
    reading: Reading
    #: Every set: the melds on the table then the sets read from the concealed tiles.
    sets: tuple[Group, ...]
    #: Every tile shown (a kong's four), winning tile included.
    tiles: tuple[int, ...]

    @property
    def pair(self) -> int | None:
        return self.reading.pair

    @property
    def seat_wind(self) -> int:
        return WINDS[self.win.seat_wind]

    @property
    def round_wind(self) -> int:
        return WINDS[self.win.round_wind]

    def triplets(self) -> list[Group]:
        return [g for g in self.sets if g.is_triplet]

    def suits(self) -> set[int]:
        return {suit_of(t) for t in self.tiles if t < 27}


@dataclass(frozen=True, slots=True)
class Pattern:
    key: str
    #: The name the Portuguese text gives it, its romanisation and the Chinese text's name.
    name: str
    romanised: str
    chinese: str
    fan: int
    article: str
    #: Returns one detail per time the hand earns it (a dragon pung each), none if not.
    test: Callable[[Context], list[str]]
    replaces: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Hit:
    pattern: Pattern
    detail: str

    def to_json(self) -> dict[str, object]:
        p = self.pattern
        return {
            "key": p.key,
            "name": p.name,
            "romanised": p.romanised,
            "chinese": p.chinese,
            "fan": p.fan,
            "article": p.article,
            "detail": self.detail,
        }


def _yes(cond: bool, detail: str) -> list[str]:
    return [detail] if cond else []


# -- art. 6 (a) (2): one fan -------------------------------------------------


def dragon_set(c: Context) -> list[str]:
    """Any pung (or kong) of dragons, each one (art. 6 (a) (2) «conjunto de trunfo»)."""
    return [f"{g.kind} of {tile_str(g.tile)}" for g in c.triplets() if is_dragon(g.tile)]


def round_wind_set(c: Context) -> list[str]:
    """Pung or kong of the round's wind; when it is also the seat's wind it is seong fán."""
    if c.round_wind == c.seat_wind:
        return []
    return [
        f"{g.kind} of {tile_str(g.tile)} in the {tile_str(c.round_wind)} round"
        for g in c.triplets()
        if g.tile == c.round_wind
    ]


def seat_wind_set(c: Context) -> list[str]:
    """Pung or kong of the winner's seat wind (not also the round's: that is seong fán)."""
    if c.round_wind == c.seat_wind:
        return []
    return [
        f"{g.kind} of {tile_str(g.tile)} by the {tile_str(c.seat_wind)} player"
        for g in c.triplets()
        if g.tile == c.seat_wind
    ]


def robbing_kong(c: Context) -> list[str]:
    """Won with the tile another player was adding to his pung to make an open kong."""
    return _yes(c.win.by == "robbing_kong", f"{tile_str(c.win.tile)} robbed from a kong")


def kong_replacement(c: Context) -> list[str]:
    """Won with the tile drawn from the end of the wall after making a kong."""
    return _yes(c.win.by == "kong_replacement", "won on the replacement tile of a kong")


def all_pungs(c: Context) -> list[str]:
    """Only pungs or kongs and a pair, no chow («tò-i-tò-i vu»)."""
    return _yes(
        bool(c.sets) and all(g.is_triplet for g in c.sets), "four pungs or kongs and a pair"
    )


def all_chows(c: Context) -> list[str]:
    """Only chows and a pair, the pair neither dragons nor the round or seat wind («p'èng vu»)."""
    p = c.pair
    if p is None or not c.sets or not all(g.kind == "chow" for g in c.sets):
        return []
    if is_dragon(p) or p in (c.round_wind, c.seat_wind):
        return []
    return [f"four chows and a pair of {tile_str(p)}"]


def _honour_sets_scoring(c: Context) -> bool:
    """An honour set that earns fan by itself (dragon, round or seat wind)."""
    return any(
        g.is_triplet and (is_dragon(g.tile) or g.tile in (c.round_wind, c.seat_wind))
        for g in c.sets
    )


def half_flush(c: Context) -> list[str]:
    """One suit plus dragons or winds that are worth no fan («wân iat sêk»).

    Decision: the text's «sem valerem fán ou fán dobrado» (Chinese 無番之) is read as a
    condition: no honour set of the hand earns fan by itself.
    """
    suits = c.suits()
    if len(suits) != 1 or not any(is_honour(t) for t in c.tiles) or _honour_sets_scoring(c):
        return []
    return [f"one suit ({_suit_name(next(iter(suits)))}) with honours worth no fan"]


def last_tile(c: Context) -> list[str]:
    """Won on the last tile of the wall («hoi tai lau yuet», Chinese 摸全局最後一隻牌)."""
    return _yes(c.win.by == "last_tile", "won on the last tile of the wall")


def small_dragons(c: Context) -> list[str]:
    """Two pungs of dragons and a pair of the third («siu sam un»)."""
    n = sum(1 for g in c.triplets() if is_dragon(g.tile))
    return _yes(
        n == 2 and c.pair is not None and is_dragon(c.pair),
        f"two dragon sets and a pair of {tile_str(c.pair or 0)}",
    )


def small_winds(c: Context) -> list[str]:
    """Three pungs of winds and a pair of the fourth («siu sei hei»)."""
    n = sum(1 for g in c.triplets() if is_wind(g.tile))
    return _yes(
        n == 3 and c.pair is not None and is_wind(c.pair),
        f"three wind sets and a pair of {tile_str(c.pair or 0)}",
    )


def mixed_terminals(c: Context) -> list[str]:
    """Sets of 1s and 9s with dragons or winds («fá iu-kau»).

    Decision: every tile is a 1, a 9 or an honour, with at least one of each kind
    (all terminals is cheng iu, all honours chun chu, both double fan).
    """
    if c.reading.thirteen_orphans:
        return []
    ok = all(is_terminal(t) or is_honour(t) for t in c.tiles)
    return _yes(
        ok and any(is_terminal(t) for t in c.tiles) and any(is_honour(t) for t in c.tiles),
        "only 1s, 9s and honours",
    )


# -- art. 6 (a) (3): double fan ----------------------------------------------


def heavenly(c: Context) -> list[str]:
    """The banker's first fourteen tiles are a win («t'in vu», art. 5 (a) (1))."""
    return _yes(c.win.by == "dealer_first_fourteen", "the banker's first fourteen tiles")


def earthly(c: Context) -> list[str]:
    """Won on the banker's first discard («tei vu», art. 5 (a) (2))."""
    return _yes(c.win.by == "dealer_first_discard", "won on the banker's first discard")


def double_wind(c: Context) -> list[str]:
    """Pung or kong of the wind that is both the seat's and the round's («seong fán»)."""
    if c.round_wind != c.seat_wind:
        return []
    return [
        f"{g.kind} of {tile_str(g.tile)}: seat and round wind"
        for g in c.triplets()
        if g.tile == c.seat_wind
    ]


def kong_on_kong(c: Context) -> list[str]:
    """Won on the replacement tile of a second kong in a row («kóng seong kóng»)."""
    return _yes(
        c.win.by == "second_kong_replacement", "won on the replacement tile of a second kong"
    )


def half_flush_chows(c: Context) -> list[str]:
    """Only chows of one suit and a pair of a wind that is neither the round's nor the seat's
    («wân iat sêk p'èng vu»)."""
    p = c.pair
    if p is None or not is_wind(p) or p in (c.round_wind, c.seat_wind):
        return []
    if not c.sets or not all(g.kind == "chow" for g in c.sets) or len(c.suits()) != 1:
        return []
    return [f"four chows of one suit and a pair of {tile_str(p)}"]


def full_flush(c: Context) -> list[str]:
    """Every set and the pair of one suit («ch'èng iat sêk»)."""
    suits = c.suits()
    return _yes(
        len(suits) == 1 and all(t < 27 for t in c.tiles),
        f"all {_suit_name(next(iter(suits)))}" if suits else "",
    )


def thirteen_orphans(c: Context) -> list[str]:
    """One of each 1 and 9 and of each honour, plus a second of any («sap-sám iu»)."""
    return _yes(c.reading.thirteen_orphans, f"the thirteen, paired with {tile_str(c.pair or 0)}")


def concealed_pungs(c: Context) -> list[str]:
    """Only concealed pungs and a pair, no discard used and no kong made («kan-kan vu»).

    The winning tile must be drawn (winning on a discard uses a discarded tile).
    """
    if c.win.melds or c.win.by in DISCARDS or c.win.by == "robbing_kong":
        return []
    return _yes(
        all(g.kind == "pung" for g in c.sets) and bool(c.sets), "four concealed pungs, tile drawn"
    )


def big_dragons(c: Context) -> list[str]:
    """Three sets of dragons («tai sam un»)."""
    return _yes(
        sum(1 for g in c.triplets() if is_dragon(g.tile)) == 3, "pungs of all three dragons"
    )


def big_winds(c: Context) -> list[str]:
    """Four sets of winds and any pair («tai sei hei»)."""
    return _yes(sum(1 for g in c.triplets() if is_wind(g.tile)) == 4, "pungs of all four winds")


def all_terminals(c: Context) -> list[str]:
    """Only sets and a pair of 1s and 9s («cheng iu»)."""
    return _yes(
        not c.reading.thirteen_orphans and all(is_terminal(t) for t in c.tiles), "only 1s and 9s"
    )


def all_honours(c: Context) -> list[str]:
    """Only sets of dragons and winds («chun chu»)."""
    return _yes(
        not c.reading.thirteen_orphans and all(is_honour(t) for t in c.tiles),
        "only dragons and winds",
    )


# -- art. 6 (b): the simplified game -------------------------------------------


def green_dragon_win(c: Context) -> list[str]:
    """Won with the green dragon «fát chói» (art. 6 (b) (2))."""
    return _yes(c.win.tile == GREEN, "won with the green dragon")


def _suit_name(s: int) -> str:
    return ("characters", "circles", "bamboos")[s]


def _p(
    key: str,
    name: str,
    rom: str,
    zh: str,
    fan: int,
    art: str,
    test: Callable[[Context], list[str]],
    replaces: tuple[str, ...] = (),
) -> Pattern:
    return Pattern(key, name, rom, zh, fan, art, test, replaces)


KAI_VU = _p("kai_vu", "Jogo mínimo", "kai vu", "雞糊", 0, A6A1, lambda c: [])
KAI_VU_SIMPLIFIED = _p("kai_vu", "Jogo mínimo", "kai vu", "雞糊", 0, A6B1, lambda c: [])

#: Every pattern of art. 6 (a), in the order of the text.
CONVENTIONAL_PATTERNS: tuple[Pattern, ...] = (
    _p("dragon_set", "Conjunto de trunfo", "", "碰出或槓中、發、白", 1, A6A2, dragon_set),
    _p("round_wind_set", "Conjunto de vento da roda", "", "圈風", 1, A6A2, round_wind_set),
    _p("seat_wind_set", "Conjunto de vento do lugar", "", "門風", 1, A6A2, seat_wind_set),
    _p(
        "robbing_kong",
        "Aproveitamento da pedra dum kóng",
        "ch'éong kóng",
        "搶槓",
        1,
        A6A2,
        robbing_kong,
    ),
    _p(
        "kong_replacement",
        "Ganho derivado dum kóng",
        "kóng seong fá",
        "槓上花",
        1,
        A6A2,
        kong_replacement,
    ),
    _p("all_pungs", "Trios", "tò-i-tò-i vu", "對對糊", 1, A6A2, all_pungs),
    _p("all_chows", "Sequências e par", "p'èng vu", "平糊", 1, A6A2, all_chows),
    _p("half_flush", "Wân iat sêk", "wân iat sêk", "混一色", 1, A6A2, half_flush),
    _p("last_tile", "Última pedra", "hoi tai lau yuet", "海底撈月", 1, A6A2, last_tile),
    _p("small_dragons", "Pedras trunfos", "siu sam un", "小三元", 1, A6A2, small_dragons),
    _p("small_winds", "Pedras ventos", "siu sei hei", "小四喜", 1, A6A2, small_winds),
    _p(
        "mixed_terminals",
        "Conjunto de 1, 9, trunfos ou ventos",
        "fá iu-kau",
        "混么",
        1,
        A6A2,
        mixed_terminals,
    ),
    _p("heavenly", "Ganho natural", "t'in vu", "天糊", 2, A6A3, heavenly),
    _p("earthly", "Ganho não natural", "tei vu", "地糊", 2, A6A3, earthly),
    _p("double_wind", "Duplo fán", "seong fán", "雙番門風", 2, A6A3, double_wind),
    _p(
        "kong_on_kong",
        "Kóng sucessivos",
        "kóng seong kóng",
        "槓上槓",
        2,
        A6A3,
        kong_on_kong,
        ("kong_replacement",),
    ),
    _p(
        "half_flush_chows",
        "P'èng vu dum mesmo grupo",
        "wân iat sêk p'èng vu",
        "混一色平糊",
        2,
        A6A3,
        half_flush_chows,
        ("all_chows", "half_flush"),
    ),
    _p("full_flush", "Pedras dum mesmo grupo", "ch'èng iat sêk", "清一色", 2, A6A3, full_flush),
    _p("thirteen_orphans", "Treze chamadas", "sap-sám iu", "十三么", 2, A6A3, thirteen_orphans),
    _p(
        "concealed_pungs",
        "Conjunto de trios fechados",
        "kan-kan vu",
        "擱擱糊",
        2,
        A6A3,
        concealed_pungs,
        ("all_pungs",),
    ),
    _p(
        "big_dragons",
        "Conjuntos de trunfos",
        "tai sam un",
        "大三元",
        2,
        A6A3,
        big_dragons,
        ("dragon_set",),
    ),
    _p(
        "big_winds",
        "Conjuntos de ventos",
        "tai sei hei",
        "大四喜",
        2,
        A6A3,
        big_winds,
        ("round_wind_set", "seat_wind_set"),
    ),
    _p("all_terminals", "Conjunto de 1 e 9", "cheng iu", "清么", 2, A6A3, all_terminals),
    _p("all_honours", "Conjuntos de trunfos e ventos", "chun chu", "全字", 2, A6A3, all_honours),
)

#: The one-fan conditions of art. 6 (b) (2).
SIMPLIFIED_PATTERNS: tuple[Pattern, ...] = (
    _p(
        "robbing_kong",
        "Aproveitamento da pedra dum kóng",
        "ch'éong kóng",
        "搶槓",
        1,
        A6B2,
        robbing_kong,
    ),
    _p("last_tile", "Última pedra", "hoi tai lau yuet", "海底撈月", 1, A6B2, last_tile),
    _p(
        "green_dragon",
        "Ganho com a pedra «fát chói»",
        "fát chói",
        "食糊牌為番子（發財）",
        1,
        A6B2,
        green_dragon_win,
    ),
)

PATTERNS = {"conventional": CONVENTIONAL_PATTERNS, "simplified": SIMPLIFIED_PATTERNS}


def hits(ctx: Context) -> list[Hit]:
    """Every pattern the reading earns, combinations shown instead of their parts."""
    found = [Hit(p, d) for p in PATTERNS[ctx.win.variant] for d in p.test(ctx)]
    replaced = {k for h in found for k in h.pattern.replaces}
    return [h for h in found if h.pattern.key not in replaced]


def fan_of(found: list[Hit], variant: str) -> tuple[int, int]:
    """(raw sum of the fan earned, the hand's fan capped at the maximum)."""
    raw = sum(h.pattern.fan for h in found)
    return raw, min(raw, MAX_FAN[variant])


@dataclass(frozen=True, slots=True)
class Score:
    """The verdict on a declared win: valid or not, its best reading and its fan."""

    valid: bool
    #: Why the win is not valid (a false win), with its article; empty when valid.
    reason: str
    reading: Reading | None = None
    #: Every set of the best reading: the melds on the table, then the concealed sets.
    sets: tuple[Group, ...] = ()
    hits: tuple[Hit, ...] = ()
    raw_fan: int = 0
    fan: int = 0
    #: How many readings of the concealed tiles were scored (the best one is kept).
    readings: int = 0

    @property
    def kai_vu(self) -> bool:
        return self.valid and self.fan == 0


def _meld_groups(win: DeclaredWin) -> tuple[Group, ...]:
    return tuple(
        Group(
            cast(Kind, m.shape),
            min(m.tiles),
            exposed=not m.concealed,
            declared=True,
            source=m.source,
        )
        for m in win.melds
    )


def score_hand(win: DeclaredWin) -> Score:
    """Is the declared win a win (art. 4), and the best fan any reading of it earns (art. 6).

    Several readings of the same tiles (1-1-1 2-2-2 3-3-3 as pungs or as chows) can
    earn different fan; the hand is worth its best reading ("the best decomposition").
    Ties keep the reading with the most fan before the cap, then the first in order.
    """
    conventional = win.variant == "conventional"
    art4 = (
        "135/91/M art. 4 (a): four sets and a pair"
        if conventional
        else "135/91/M art. 4 (b): one set and a pair"
    )
    if win.wrong_meld:
        return Score(
            False,
            "a set was exposed with the wrong tiles and not corrected before "
            "declaring the win (135/91/M art. 10 (a) 7))",
        )
    for m in win.melds:
        if m.shape is None:
            return Score(
                False,
                f"the exposed tiles {' '.join(tile_str(t) for t in m.tiles)} are not a "
                "set: a wrong set exposed and not corrected (135/91/M art. 10 (a) 7))",
            )
    if win.withdrew_pung:
        return Score(
            False,
            "the player announced a pung and gave it up, losing the right to win "
            "this game (135/91/M art. 9 (a) 2))",
        )
    counts = counts_of([*win.concealed, win.tile])
    melds = _meld_groups(win)
    readings = [
        r for r in decompositions(counts) if len(r.sets) + len(melds) == (4 if conventional else 1)
    ]
    if conventional and not melds and is_thirteen_orphans(counts):
        pair = next(t for t in range(len(counts)) if counts[t] == 2)
        readings.append(Reading(pair, (), thirteen_orphans=True))
    if not readings:
        return Score(
            False,
            f"the tiles are not a win: {art4}, or the thirteen orphans (art. 6 (a) (3))"
            if conventional
            else f"the tiles are not a win: {art4}",
        )
    tiles = win.all_tiles()
    best: tuple[tuple[int, int, int], Score] | None = None
    for i, r in enumerate(readings):
        ctx = Context(win, r, melds + r.sets, tiles)
        found = hits(ctx)
        raw, fan = fan_of(found, win.variant)
        sc = Score(True, "", r, ctx.sets, tuple(found), raw, fan, len(readings))
        key = (fan, raw, -i)
        if best is None or key > best[0]:
            best = (key, sc)
    assert best is not None
    return best[1]
