"""Mah-jong tiles and their notation: the two sets of 135/91/M art. 2."""

from __future__ import annotations

from collections import Counter

import pytest

from firmware_host.games.errors import OutcomeError
from firmware_host.games.mahjong import GAME as G
from firmware_host.games.mahjong import MahjongRules
from firmware_host.games.mahjong.tiles import (
    CONVENTIONAL,
    SIMPLIFIED,
    parse_tiles,
    tile_chinese,
    tile_str,
    tiles_str,
)


def test_conventional_set_136_tiles_art_2_a() -> None:
    tiles = CONVENTIONAL.tiles()
    assert len(tiles) == CONVENTIONAL.size == 136
    names = Counter(tiles_str(tiles))
    # 3 dragons, 4 winds, 3 suits of 1-9: 34 kinds, four of each (art. 2 2) (a) (1)-(5)).
    assert len(names) == 3 + 4 + 27 and set(names.values()) == {4}
    assert {"RD", "GD", "WD", "E", "S", "W", "N"} <= set(names)


def test_simplified_set_112_tiles_green_dragon_and_three_suits_art_2_b() -> None:
    tiles = SIMPLIFIED.tiles()
    names = Counter(tiles_str(tiles))
    assert len(tiles) == SIMPLIFIED.size == 112
    assert set(names) == {f"{r}{s}" for r in range(1, 10) for s in "mps"} | {"GD"}
    assert set(names.values()) == {4}


def test_notation_round_trip() -> None:
    for t in range(34):
        assert parse_tiles(tile_str(t)) == (t,)


def test_notation_forms() -> None:
    assert tiles_str(parse_tiles("123m 55p EEE")) == ["1m", "2m", "3m", "5p", "5p", "E", "E", "E"]
    assert tiles_str(parse_tiles(["rd", "Gd", "wD", "s", "5S"])) == ["RD", "GD", "WD", "S", "5s"]
    assert tiles_str(parse_tiles("五萬 5筒 九索 東 中 發 白")) == [
        "5m",
        "5p",
        "9s",
        "E",
        "RD",
        "GD",
        "WD",
    ]
    assert tiles_str(parse_tiles("1m,2m, 3m")) == ["1m", "2m", "3m"]
    assert tile_chinese(parse_tiles("5m")[0]) == "五萬"


@pytest.mark.parametrize("bad", ["0m", "10m", "5x", "R", "D", "東x", "1"])
def test_unknown_tiles_are_refused(bad: str) -> None:
    with pytest.raises(OutcomeError) as e:
        parse_tiles(bad)
    assert e.value.code in ("MAHJONG_TILE_UNKNOWN", "MAHJONG_MALFORMED")


def _hand(concealed: str, tile: str, **kw: object) -> dict[str, object]:
    raw: dict[str, object] = {
        "stake": "100/200",
        "banker": 0,
        "winner": 1,
        "round_wind": "E",
        "concealed": concealed,
        "win": {"tile": tile, "by": "self_drawn"},
    }
    raw.update(kw)
    return raw


@pytest.mark.parametrize("honour", ["E", "S", "W", "N", "RD", "WD"])
def test_simplified_set_holds_no_wind_nor_red_or_white_dragon_art_2_b(honour: str) -> None:
    with pytest.raises(OutcomeError) as e:
        G.parse_outcome(MahjongRules(variant="simplified"), _hand(f"{honour} {honour} 12m", "3m"))
    assert e.value.code == "MAHJONG_TILE_NOT_IN_SET"


def test_fifth_copy_is_refused_art_2() -> None:
    raw = _hand("5m 5m 5m 5m 123p 456p 789p 5m", "9s", stake="25/50")
    with pytest.raises(OutcomeError) as e:
        G.parse_outcome(MahjongRules(), raw)
    assert e.value.code == "MAHJONG_TILE_COUNT"


def test_fifth_copy_across_hand_and_melds_is_refused_art_2() -> None:
    raw = _hand("5m 5m 123p 456p 789p", "9s", stake="25/50", melds=[{"tiles": "5m5m5m", "from": 3}])
    with pytest.raises(OutcomeError) as e:
        G.parse_outcome(MahjongRules(), raw)
    assert e.value.code == "MAHJONG_TILE_COUNT"


def test_wrong_number_of_tiles_is_refused_art_4() -> None:
    with pytest.raises(OutcomeError) as e:
        G.parse_outcome(MahjongRules(), _hand("123p 456p 789p", "9s", stake="25/50"))
    assert e.value.code == "MAHJONG_HAND_SIZE"


def test_simplified_refuses_exposed_chow_or_pung_art_5_b_3() -> None:
    raw = _hand("5m", "5m", melds=[{"tiles": "123p", "from": 0}])
    with pytest.raises(OutcomeError) as e:
        G.parse_outcome(MahjongRules(variant="simplified"), raw)
    assert e.value.code == "MAHJONG_MELD_INVALID"


def test_simplified_allows_a_kong_art_5_b_4() -> None:
    raw = _hand("5m", "5m", melds=[{"tiles": "1p1p1p1p", "from": 0}])
    assert G.parse_outcome(MahjongRules(variant="simplified"), raw).melds[0].shape == "kong"


def test_chow_only_from_the_player_on_the_left_art_5_a_3() -> None:
    raw = _hand("456p 789p 11s 5m", "5m", stake="25/50", melds=[{"tiles": "123p", "from": 2}])
    with pytest.raises(OutcomeError) as e:
        G.parse_outcome(MahjongRules(), raw)
    assert e.value.code == "MAHJONG_SEAT_INVALID"


def test_conventional_needs_four_players_simplified_two_to_four_art_3() -> None:
    with pytest.raises(OutcomeError):
        G.parse_outcome(
            MahjongRules(), _hand("123p 456p 789p 111s 5m", "5m", stake="25/50", seats=[0, 1])
        )
    G.parse_outcome(MahjongRules(variant="simplified"), _hand("12m 5p5p", "3m", seats=[0, 1]))
    with pytest.raises(OutcomeError):
        G.parse_outcome(MahjongRules(variant="simplified"), _hand("12m 5p5p", "3m", seats=[1]))


def test_seat_wind_is_checked_against_the_banker_art_3() -> None:
    ok = _hand("123p 456p 789p 111s 5m", "5m", stake="25/50", seat_wind="S")
    assert G.parse_outcome(MahjongRules(), ok).seat_wind == 1
    with pytest.raises(OutcomeError):
        G.parse_outcome(MahjongRules(), {**ok, "seat_wind": "W"})


def test_variant_mismatch_is_refused() -> None:
    with pytest.raises(OutcomeError) as e:
        G.parse_outcome(MahjongRules(), _hand("12m 5p5p", "3m", variant="simplified"))
    assert e.value.code == "MAHJONG_VARIANT_MISMATCH"


def test_robbed_tile_cannot_be_held_by_the_winner() -> None:
    # The robbed player shows three 3m and adds the fourth: the winner cannot hold one.
    raw = _hand("12m 456p 789s 222p 3m 3m", "3m", stake="25/50")
    G.parse_outcome(MahjongRules(), raw)  # drawn: a win (123m, pair of 3m)
    raw["win"] = {"tile": "3m", "by": "robbing_kong"}
    with pytest.raises(OutcomeError) as e:
        G.parse_outcome(MahjongRules(), raw)
    assert e.value.code == "MAHJONG_WIN_SOURCE_INVALID"
