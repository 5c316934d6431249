"""Mah-jong properties (135/91/M art. 2, 4, 7): generated hands against the checker,
an independent reference for art. 4, zero-sum payments, refused impossible hands."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from functools import cache
from typing import Any

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from firmware_host.games import MoneyRules
from firmware_host.games.errors import OutcomeError
from firmware_host.games.mahjong import GAME as G
from firmware_host.games.mahjong import MahjongRules
from firmware_host.games.mahjong.decompose import counts_of, is_complete
from firmware_host.games.mahjong.tiles import tile_str

CONV = MahjongRules()
SIMP = MahjongRules(variant="simplified")
FAST = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# A set: a pung of any of the 34 kinds, or a chow (suit, lowest rank 1..7).
pung = st.integers(0, 33).map(lambda t: (t, t, t))
chow = st.tuples(st.integers(0, 2), st.integers(0, 6)).map(
    lambda sr: tuple(9 * sr[0] + sr[1] + i for i in range(3))
)
a_set = st.one_of(pung, chow)


@st.composite
def valid_hand(
    draw: Any, n_sets: int = 4, kinds: Sequence[int] = range(34)
) -> tuple[list[tuple[int, ...]], int]:
    sets = [draw(a_set.filter(lambda s: all(t in kinds for t in s))) for _ in range(n_sets)]
    pair = draw(st.sampled_from(list(kinds)))
    counts = Counter(t for s in sets for t in s) + Counter({pair: 2})
    assume(max(counts.values()) <= 4)
    return sets, pair


def names(tiles: list[int]) -> str:
    return " ".join(tile_str(t) for t in tiles)


@st.composite
def declared(draw: Any, rules: MahjongRules = CONV) -> dict[str, Any]:
    """A declared win built from a valid hand: some sets exposed, the winning tile drawn
    from what is left, a random banker, winner and way of winning."""
    conventional = rules.variant == "conventional"
    kinds = range(34) if conventional else [*range(27), 32]
    sets, pair = draw(valid_hand(4 if conventional else 1, kinds))
    seats = (
        [0, 1, 2, 3]
        if conventional
        else sorted(draw(st.sets(st.integers(0, 3), min_size=2, max_size=4)))
    )
    winner = draw(st.sampled_from(seats))
    banker = draw(st.sampled_from(seats))
    others = [s for s in seats if s != winner]
    left = seats[seats.index(winner) - 1]
    melds, hidden = [], []
    for s in sets:
        expose = conventional and draw(st.booleans())
        if expose:
            src = left if s[0] != s[1] else draw(st.sampled_from(others))
            melds.append({"tiles": names(list(s)), "from": src})
        else:
            hidden.extend(s)
    hidden += [pair, pair]
    i = draw(st.integers(0, len(hidden) - 1))
    tile = hidden.pop(i)
    by = draw(st.sampled_from(["self_drawn", "discard", "last_tile"]))
    win: dict[str, Any] = {"tile": tile_str(tile), "by": by}
    raw: dict[str, Any] = {
        "stake": draw(
            st.sampled_from(["25/50", "1000/2000"] if conventional else ["100/200", "30000/60000"])
        ),
        "seats": seats,
        "banker": banker,
        "winner": winner,
        "round_wind": draw(st.sampled_from("ESWN")),
        "concealed": names(hidden),
        "melds": melds,
        "win": win,
    }
    if by == "discard":
        win["from"] = draw(st.sampled_from(others))
        win["tile_seen"] = draw(st.booleans())
        raw["discarder"] = draw(
            st.fixed_dictionaries(
                {},
                optional={
                    "withheld_last_honour": st.booleans(),
                    "broke_pung": st.booleans(),
                    "ready": st.booleans(),
                },
            )
        )
    if draw(st.booleans()):
        raw["capital"] = draw(st.integers(1, 10**7))
    return raw


# -- art. 4: the checker ---------------------------------------------------------


@FAST
@given(valid_hand())
def test_generated_valid_hand_is_complete_art_4_a(hand: tuple[list[tuple[int, ...]], int]) -> None:
    sets, pair = hand
    tiles = [t for s in sets for t in s] + [pair, pair]
    assert is_complete(counts_of(tiles), 4)


@FAST
@given(valid_hand(), st.data())
def test_removing_any_tile_never_completes_art_4_a(
    hand: tuple[list[tuple[int, ...]], int], data: Any
) -> None:
    sets, pair = hand
    tiles = [t for s in sets for t in s] + [pair, pair]
    for i in range(len(tiles)):
        rest = tiles[:i] + tiles[i + 1 :]
        assert not is_complete(counts_of(rest), 4)
        assert not any(is_complete(counts_of(rest), n) for n in range(5))


@FAST
@given(declared())
def test_generated_declared_win_validates_art_4_a(raw: dict[str, Any]) -> None:
    assert G.evaluate(CONV, G.parse_outcome(CONV, raw), MoneyRules()).score.valid


@FAST
@given(declared(SIMP))
def test_generated_simplified_win_validates_art_4_b(raw: dict[str, Any]) -> None:
    assert G.evaluate(SIMP, G.parse_outcome(SIMP, raw), MoneyRules()).score.valid


@FAST
@given(declared(), st.data())
def test_declared_win_missing_a_tile_is_refused(raw: dict[str, Any], data: Any) -> None:
    tiles = raw["concealed"].split()
    assume(tiles)
    i = data.draw(st.integers(0, len(tiles) - 1))
    raw = {**raw, "concealed": " ".join(tiles[:i] + tiles[i + 1 :])}
    try:
        G.parse_outcome(CONV, raw)
    except OutcomeError as e:
        assert e.code == "MAHJONG_HAND_SIZE"
    else:
        raise AssertionError("a hand missing a tile was accepted")


@cache
def _reference(counts: tuple[int, ...], sets_left: int, pair_left: bool) -> bool:
    """Art. 4 by brute force: try every set and pair on the lowest tile present."""
    i = next((t for t, c in enumerate(counts) if c), None)
    if i is None:
        return sets_left == 0 and not pair_left
    c = list(counts)
    if pair_left and c[i] >= 2:
        c[i] -= 2
        if _reference(tuple(c), sets_left, False):
            return True
        c[i] += 2
    if sets_left and c[i] >= 3:
        c[i] -= 3
        if _reference(tuple(c), sets_left - 1, pair_left):
            return True
        c[i] += 3
    if sets_left and i < 27 and i % 9 <= 6 and c[i + 1] and c[i + 2]:
        c[i] -= 1
        c[i + 1] -= 1
        c[i + 2] -= 1
        if _reference(tuple(c), sets_left - 1, pair_left):
            return True
    return False


# Fourteen tiles of one suit and two honours: random ones (rarely complete) and complete
# ones with one tile swapped for another (complete or not, often by one tile).
FEW = [*range(9), 27, 31]


@st.composite
def near_complete(draw: Any) -> list[int]:
    sets, pair = draw(valid_hand(4, FEW))
    tiles = [t for s in sets for t in s] + [pair, pair]
    if draw(st.booleans()):
        tiles[draw(st.integers(0, 13))] = draw(st.sampled_from(FEW))
    return tiles


fourteen = st.one_of(
    st.lists(st.sampled_from(FEW), min_size=14, max_size=14), near_complete()
).filter(lambda ts: max(Counter(ts).values()) <= 4)


@settings(max_examples=400, deadline=None)
@given(fourteen)
def test_checker_agrees_with_a_brute_force_reference_art_4_a(tiles: list[int]) -> None:
    counts = counts_of(tiles)
    assert is_complete(counts, 4) == _reference(tuple(counts), 4, True)


# -- art. 7: the players' payments sum to zero --------------------------------------


@FAST
@given(
    st.one_of(declared().map(lambda r: (CONV, r)), declared(SIMP).map(lambda r: (SIMP, r))),
    st.booleans(),
)
def test_payments_sum_to_zero_before_commission_art_7(
    case: tuple[MahjongRules, dict[str, Any]], broken: bool
) -> None:
    rules, raw = case
    if broken:  # a false win: swap the winning tile for another suit tile
        raw = {**raw, "win": {**raw["win"], "tile": "9s" if raw["win"]["tile"] != "9s" else "1s"}}
    try:
        win = G.parse_outcome(rules, raw)
    except OutcomeError as e:
        assert e.code in ("MAHJONG_TILE_COUNT", "MAHJONG_WIN_SOURCE_INVALID")
        return
    settlement = G.settle(rules, win, [], MoneyRules(payable_unit=100))
    plan = settlement.extras["mahjong"]
    assert sum(p["amount"] for p in plan["payments"]) == 0
    t = settlement.totals
    assert t.net + t.commission == 0
    assert t.commission == plan["commission"]["taken"] >= 0
    if raw.get("capital") is not None and plan["valid"]:
        assert sum(p["amount"] for p in plan["payments"] if p["amount"] > 0) <= raw["capital"]


# -- art. 2: impossible hands are refused with an error code ---------------------------


@FAST
@given(declared(), st.data())
def test_a_fifth_copy_is_refused_art_2(raw: dict[str, Any], data: Any) -> None:
    tiles = raw["concealed"].split()
    assume(len(tiles) >= 5)
    t = data.draw(st.sampled_from(tiles))
    raw = {**raw, "concealed": " ".join([t] * 5 + tiles[5:])}
    try:
        G.parse_outcome(CONV, raw)
    except OutcomeError as e:
        assert e.code == "MAHJONG_TILE_COUNT"
    else:
        raise AssertionError("five copies of a tile were accepted")


@FAST
@given(declared(SIMP), st.sampled_from(["E", "S", "W", "N", "RD", "WD"]), st.data())
def test_a_tile_the_simplified_set_does_not_hold_is_refused_art_2_b(
    raw: dict[str, Any], honour: str, data: Any
) -> None:
    tiles = raw["concealed"].split()
    i = data.draw(st.integers(0, len(tiles) - 1))
    tiles[i] = honour
    with_honour = {**raw, "concealed": " ".join(tiles)}
    try:
        G.parse_outcome(SIMP, with_honour)
    except OutcomeError as e:
        assert e.code == "MAHJONG_TILE_NOT_IN_SET"
    else:
        raise AssertionError(f"{honour} was accepted in the simplified game")


@FAST
@given(declared())
def test_outcome_json_parses_back_to_itself(raw: dict[str, Any]) -> None:
    published = G.outcome_json(G.parse_outcome(CONV, raw))
    assert G.outcome_json(G.parse_outcome(CONV, published)) == published
