"""Mah-jong 135/91/M art. 4 and art. 6: what is a win, and the fan of every pattern.

Each pattern of art. 6 has a hand that earns it and a close hand that does not.
Seats: 0 is the banker (East), so seat 1 is South, seat 2 West, seat 3 North; the
round is East unless a test says otherwise. Expected fan is read from the article
(one fan per 1-fan pattern, two per double-fan pattern, two at most).
"""

from __future__ import annotations

from typing import Any

import pytest

from firmware_host.games.errors import OutcomeError
from firmware_host.games.mahjong import GAME as G
from firmware_host.games.mahjong import MahjongRules
from firmware_host.games.mahjong.patterns import Score, score_hand

CONV = MahjongRules()
SIMP = MahjongRules(variant="simplified")


def declare(
    concealed: str,
    tile: str,
    by: str = "discard",
    *,
    melds: list[dict[str, Any]] | None = None,
    winner: int = 1,
    banker: int = 0,
    round_wind: str = "E",
    frm: int | None = None,
    rules: MahjongRules = CONV,
    **extra: Any,
) -> dict[str, Any]:
    win: dict[str, Any] = {"tile": tile, "by": by}
    if by in ("discard", "robbing_kong"):
        win["from"] = frm if frm is not None else (winner + 2) % 4
    win.update(extra.pop("win", {}))
    raw = {
        "stake": "25/50" if rules.variant == "conventional" else "100/200",
        "banker": banker,
        "winner": winner,
        "round_wind": round_wind,
        "concealed": concealed,
        "melds": melds or [],
        "win": win,
    }
    raw.update(extra)
    return raw


def score(raw: dict[str, Any], rules: MahjongRules = CONV) -> Score:
    return score_hand(G.parse_outcome(rules, raw))


def keys(s: Score) -> list[str]:
    return [h.pattern.key for h in s.hits]


# A plain hand earning nothing: chows, a pung of a plain 2p, a pair, three suits.
PLAIN = "12m 456p 789s 222p 55m"  # + 3m


# -- art. 4: what is a win -----------------------------------------------------


def test_four_sets_and_a_pair_is_a_win_art_4_a() -> None:
    s = score(declare(PLAIN, "3m"))
    assert s.valid and len(s.sets) == 4 and s.reading is not None and s.reading.pair == 4  # 5m


def test_four_sets_without_a_pair_is_not_a_win_art_4_a() -> None:
    s = score(declare("12m 456p 789s 222p 56m", "3m"))
    assert not s.valid and "art. 4 (a)" in s.reason


def test_kai_vu_is_a_win_of_no_fan_art_6_a_1() -> None:
    s = score(declare(PLAIN, "3m"))
    assert s.valid and s.fan == 0 and s.kai_vu and keys(s) == []


def test_one_set_and_a_pair_is_a_simplified_win_art_4_b() -> None:
    s = score(declare("123s 5s", "5s", rules=SIMP), SIMP)
    assert s.valid and s.fan == 0


def test_not_a_set_is_not_a_simplified_win_art_4_b() -> None:
    s = score(declare("124s 5s", "5s", rules=SIMP), SIMP)
    assert not s.valid and "art. 4 (b)" in s.reason


def test_a_kong_counts_as_a_set_art_5_a_5() -> None:
    s = score(declare("12m 456p 789s 55m", "3m", melds=[{"tiles": "2p2p2p2p", "concealed": True}]))
    assert s.valid and any(g.kind == "kong" for g in s.sets)


# -- art. 6 (a) (2): one fan -----------------------------------------------------


def test_dragon_pung_one_fan_art_6_a_2() -> None:
    s = score(declare("123m 456m 789p RD RD RD 5s", "5s"))
    assert keys(s) == ["dragon_set"] and s.fan == 1


def test_dragon_pair_is_no_fan_art_6_a_2() -> None:
    s = score(declare("123m 456m 789p 123s RD", "RD"))
    assert keys(s) == [] and s.fan == 0


def test_each_dragon_pung_is_one_fan_art_6_a_2() -> None:
    s = score(declare("123m 456m RD RD RD GD GD GD 5s", "5s"))
    assert keys(s) == ["dragon_set", "dragon_set"] and s.fan == 2


def test_round_wind_pung_one_fan_art_6_a_2() -> None:
    # East round, the winner sits South: a pung of East is the round's wind.
    s = score(declare("123m 456m 789p EEE 5s", "5s"))
    assert keys(s) == ["round_wind_set"] and s.fan == 1


def test_other_wind_pung_no_fan_art_6_a_2() -> None:
    s = score(declare("123m 456m 789p WWW 5s", "5s"))
    assert keys(s) == [] and s.fan == 0


def test_round_wind_kong_one_fan_art_6_a_2() -> None:
    s = score(declare("123m 456m 789p 5s", "5s", melds=[{"tiles": "EEEE", "from": 3}]))
    assert keys(s) == ["round_wind_set"]


def test_seat_wind_pung_one_fan_art_6_a_2() -> None:
    s = score(declare("123m 456m 789p SSS 5s", "5s", winner=1))
    assert keys(s) == ["seat_wind_set"] and s.fan == 1


def test_someone_elses_seat_wind_no_fan_art_6_a_2() -> None:
    s = score(declare("123m 456m 789p SSS 5s", "5s", winner=2, frm=0))  # West holds South
    assert keys(s) == [] and s.fan == 0


def test_seat_wind_follows_the_banker_art_3() -> None:
    # Banker seat 2: seat 3 is South (on the banker's right).
    s = score(declare("123m 456m 789p SSS 5s", "5s", winner=3, banker=2, frm=1))
    assert keys(s) == ["seat_wind_set"]


def test_robbing_a_kong_one_fan_art_6_a_2() -> None:
    s = score(declare(PLAIN, "3m", "robbing_kong"))
    assert keys(s) == ["robbing_kong"] and s.fan == 1


def test_same_tile_by_discard_is_not_robbing_art_6_a_2() -> None:
    assert keys(score(declare(PLAIN, "3m", "discard"))) == []


def test_kong_replacement_one_fan_art_6_a_2() -> None:
    melds = [{"tiles": "2p2p2p2p", "concealed": True}]
    s = score(declare("12m 456p 789s 55m", "3m", "kong_replacement", melds=melds))
    assert keys(s) == ["kong_replacement"] and s.fan == 1


def test_kong_then_ordinary_draw_no_fan_art_6_a_2() -> None:
    melds = [{"tiles": "2p2p2p2p", "concealed": True}]
    assert keys(score(declare("12m 456p 789s 55m", "3m", "self_drawn", melds=melds))) == []


def test_all_pungs_one_fan_art_6_a_2() -> None:
    s = score(declare("111m 222p 333s 777m 5p", "5p"))
    assert keys(s) == ["all_pungs"] and s.fan == 1


def test_three_pungs_and_a_chow_not_all_pungs_art_6_a_2() -> None:
    assert keys(score(declare("111m 222p 333s 789m 5p", "5p"))) == []


def test_all_chows_one_fan_art_6_a_2() -> None:
    s = score(declare("123m 456p 789s 234s 5m", "5m"))
    assert keys(s) == ["all_chows"] and s.fan == 1


def test_all_chows_with_a_plain_wind_pair_one_fan_art_6_a_2() -> None:
    # North is neither the East round's wind nor South's seat wind.
    assert keys(score(declare("123m 456p 789s 234s N", "N"))) == ["all_chows"]


@pytest.mark.parametrize("pair", ["RD", "E", "S"])
def test_all_chows_with_a_valued_pair_no_fan_art_6_a_2(pair: str) -> None:
    # A dragon pair, the round's wind (E), the seat's wind (S for seat 1).
    assert keys(score(declare(f"123m 456p 789s 234s {pair}", pair))) == []


def test_half_flush_one_fan_art_6_a_2() -> None:
    s = score(declare("123m 456m 789m NNN 5m", "5m"))
    assert keys(s) == ["half_flush"] and s.fan == 1


def test_half_flush_needs_one_suit_art_6_a_2() -> None:
    assert keys(score(declare("123m 456m 789p NNN 5m", "5m"))) == []


def test_half_flush_honours_worth_fan_do_not_count_art_6_a_2() -> None:
    # Decision: «sem valerem fán» is a condition; a dragon pung scores its own fan only.
    s = score(declare("123m 456m 789m RD RD RD 5m", "5m"))
    assert keys(s) == ["dragon_set"] and s.fan == 1


def test_last_tile_one_fan_art_6_a_2() -> None:
    s = score(declare(PLAIN, "3m", "last_tile"))
    assert keys(s) == ["last_tile"] and s.fan == 1


def test_ordinary_self_draw_no_fan_art_6_a_2() -> None:
    assert keys(score(declare(PLAIN, "3m", "self_drawn"))) == []


def test_small_dragons_art_6_a_2() -> None:
    s = score(declare("123m 456m RD RD RD GD GD GD WD", "WD"))
    assert "small_dragons" in keys(s) and s.raw_fan == 3 and s.fan == 2


def test_two_dragon_pungs_and_a_plain_pair_not_small_dragons_art_6_a_2() -> None:
    s = score(declare("123m 456m RD RD RD GD GD GD 5p", "5p"))
    assert "small_dragons" not in keys(s)


def test_small_winds_art_6_a_2() -> None:
    s = score(declare("123m WWW NNN SSS E", "E"))
    assert "small_winds" in keys(s)


def test_three_wind_pungs_and_a_plain_pair_not_small_winds_art_6_a_2() -> None:
    s = score(declare("123m WWW NNN SSS 5p", "5p"))
    assert "small_winds" not in keys(s)


def test_mixed_terminals_art_6_a_2() -> None:
    s = score(declare("111m 999p 111s NNN 9m", "9m"))
    assert set(keys(s)) == {"mixed_terminals", "all_pungs"} and s.fan == 2


def test_a_chow_breaks_mixed_terminals_art_6_a_2() -> None:
    assert "mixed_terminals" not in keys(score(declare("111m 999p 123s NNN 9m", "9m")))


# -- art. 6 (a) (3): double fan --------------------------------------------------


def test_heavenly_double_fan_art_6_a_3() -> None:
    s = score(declare(PLAIN, "3m", "dealer_first_fourteen", winner=0))
    assert keys(s) == ["heavenly"] and s.fan == 2


def test_banker_ordinary_self_draw_not_heavenly_art_6_a_3() -> None:
    assert keys(score(declare(PLAIN, "3m", "self_drawn", winner=0))) == []


def test_earthly_double_fan_art_6_a_3() -> None:
    s = score(declare(PLAIN, "3m", "dealer_first_discard"))
    assert keys(s) == ["earthly"] and s.fan == 2


def test_a_later_discard_of_the_banker_is_not_earthly_art_6_a_3() -> None:
    assert keys(score(declare(PLAIN, "3m", "discard", frm=0))) == []


def test_heavenly_is_the_bankers_only_art_5_a_1() -> None:
    with pytest.raises(OutcomeError) as e:
        G.parse_outcome(CONV, declare(PLAIN, "3m", "dealer_first_fourteen", winner=1))
    assert e.value.code == "MAHJONG_WIN_SOURCE_INVALID"


def test_double_wind_art_6_a_3() -> None:
    # The banker (East) in the East round; South in the South round.
    s = score(declare("123m 456m 789p EEE 5s", "5s", winner=0, frm=2))
    assert keys(s) == ["double_wind"] and s.fan == 2
    s = score(declare("123m 456m 789p SSS 5s", "5s", winner=1, round_wind="S"))
    assert keys(s) == ["double_wind"]


def test_seat_wind_in_another_round_is_one_fan_art_6_a_3() -> None:
    s = score(declare("123m 456m 789p SSS 5s", "5s", winner=1, round_wind="E"))
    assert keys(s) == ["seat_wind_set"] and s.fan == 1


def test_kong_on_kong_art_6_a_3() -> None:
    melds = [{"tiles": "2p2p2p2p", "concealed": True}, {"tiles": "7s7s7s7s", "concealed": True}]
    s = score(declare("12m 456p 55m", "3m", "second_kong_replacement", melds=melds))
    assert keys(s) == ["kong_on_kong"] and s.fan == 2


def test_one_kong_replacement_is_one_fan_art_6_a_3() -> None:
    melds = [{"tiles": "2p2p2p2p", "concealed": True}, {"tiles": "7s7s7s7s", "concealed": True}]
    s = score(declare("12m 456p 55m", "3m", "kong_replacement", melds=melds))
    assert keys(s) == ["kong_replacement"] and s.fan == 1


def test_half_flush_all_chows_art_6_a_3() -> None:
    s = score(declare("123m 456m 789m 234m N", "N"))
    assert keys(s) == ["half_flush_chows"] and s.fan == 2


def test_half_flush_chows_with_round_wind_pair_is_only_half_flush_art_6_a_3() -> None:
    s = score(declare("123m 456m 789m 234m E", "E"))
    assert keys(s) == ["half_flush"] and s.fan == 1


def test_full_flush_art_6_a_3() -> None:
    s = score(declare("111m 234m 567m 789m 9m", "9m"))
    assert "full_flush" in keys(s) and s.fan == 2


def test_one_tile_of_another_suit_is_not_full_flush_art_6_a_3() -> None:
    assert "full_flush" not in keys(score(declare("111m 234m 567m 789m 9p", "9p")))


def test_thirteen_orphans_art_6_a_3() -> None:
    s = score(declare("1m 9m 1p 9p 1s 9s E S W N RD GD WD", "1m", "self_drawn"))
    assert s.valid and keys(s) == ["thirteen_orphans"] and s.fan == 2


def test_thirteen_orphans_waiting_on_the_pair_art_6_a_3() -> None:
    s = score(declare("1m 1m 9m 1p 9p 1s 9s E S W N RD GD", "WD", "discard"))
    assert keys(s) == ["thirteen_orphans"]


def test_twelve_orphans_and_an_eight_is_not_a_win_art_6_a_3() -> None:
    s = score(declare("1m 9m 1p 9p 1s 8s E S W N RD GD WD", "1m", "self_drawn"))
    assert not s.valid


def test_thirteen_orphans_cannot_have_a_set_on_the_table_art_6_a_3() -> None:
    # Ten concealed orphans, a red dragon and an exposed pung of white: no thirteen.
    s = score(declare("1m 9m 1p 9p 1s 9s E S W N", "RD", melds=[{"tiles": "WD WD WD", "from": 3}]))
    assert not s.valid


def test_kan_kan_vu_art_6_a_3() -> None:
    s = score(declare("111m 222p 333s 777m 5p", "5p", "self_drawn"))
    assert keys(s) == ["concealed_pungs"] and s.fan == 2


def test_kan_kan_vu_not_on_a_discard_art_6_a_3() -> None:
    # «sem ter aproveitado pedra descartada»: winning on a discard uses a discarded tile.
    s = score(declare("111m 222p 333s 777m 5p", "5p", "discard"))
    assert keys(s) == ["all_pungs"] and s.fan == 1


def test_kan_kan_vu_not_with_a_kong_art_6_a_3() -> None:
    # «sem ter feito qualquer kóng», even a concealed one.
    melds = [{"tiles": "7m7m7m7m", "concealed": True}]
    s = score(declare("111m 222p 333s 5p", "5p", "kong_replacement", melds=melds))
    assert "concealed_pungs" not in keys(s) and "all_pungs" in keys(s)


def test_kan_kan_vu_not_with_an_exposed_pung_art_6_a_3() -> None:
    s = score(
        declare("111m 222p 333s 5p", "5p", "self_drawn", melds=[{"tiles": "777m", "from": 3}])
    )
    assert keys(s) == ["all_pungs"]


def test_big_dragons_art_6_a_3() -> None:
    s = score(declare("123m RD RD RD GD GD GD WD WD WD 5p", "5p"))
    assert keys(s) == ["big_dragons"] and s.fan == 2


def test_small_dragons_is_not_big_dragons_art_6_a_3() -> None:
    assert "big_dragons" not in keys(score(declare("123m 456m RD RD RD GD GD GD WD", "WD")))


def test_big_winds_art_6_a_3() -> None:
    s = score(declare("EEE SSS WWW NNN 5m", "5m"))
    assert "big_winds" in keys(s) and s.fan == 2
    assert "round_wind_set" not in keys(s) and "seat_wind_set" not in keys(s)


def test_small_winds_is_not_big_winds_art_6_a_3() -> None:
    assert "big_winds" not in keys(score(declare("123m WWW NNN SSS E", "E")))


def test_all_terminals_art_6_a_3() -> None:
    s = score(declare("111m 999m 111p 999s 1s", "1s"))
    assert "all_terminals" in keys(s) and "mixed_terminals" not in keys(s) and s.fan == 2


def test_an_honour_pung_makes_it_mixed_terminals_not_all_terminals_art_6_a_3() -> None:
    s = score(declare("111m 999m 111p NNN 1s", "1s"))
    assert "all_terminals" not in keys(s) and "mixed_terminals" in keys(s)


def test_all_honours_art_6_a_3() -> None:
    s = score(declare("EEE WWW RD RD RD GD GD GD WD", "WD"))
    assert "all_honours" in keys(s) and s.fan == 2


def test_a_terminal_pung_makes_it_not_all_honours_art_6_a_3() -> None:
    s = score(declare("EEE WWW RD RD RD 111m WD", "WD"))
    assert "all_honours" not in keys(s) and "mixed_terminals" in keys(s)


def test_double_fan_is_the_maximum_art_6_a_3() -> None:
    # Full flush (2) + all pungs (1): still two fan.
    s = score(declare("111m 333m 555m 777m 9m", "9m"))
    assert s.raw_fan == 3 and s.fan == 2


# -- ambiguous hands score their best reading ------------------------------------


def test_three_identical_chows_read_as_chows_when_better_art_6() -> None:
    # 111 222 333m is three pungs or three chows 123m: the chows make p'èng vu (1 fan).
    s = score(declare("111222333m 789p 5s", "5s"))
    assert s.readings == 2 and s.fan == 1 and keys(s) == ["all_chows"]
    assert all(g.kind == "chow" for g in s.sets)


def test_three_identical_chows_read_as_pungs_when_better_art_6() -> None:
    # With a round-wind pung the pungs reading is tò-i-tò-i (1) + round wind (1).
    s = score(declare("111222333m EEE 5p", "5p"))
    assert s.readings == 2 and s.fan == 2 and set(keys(s)) == {"all_pungs", "round_wind_set"}


# -- art. 6 (b): the simplified game ---------------------------------------------


def test_simplified_robbing_kong_one_fan_art_6_b_2() -> None:
    s = score(declare("12s 5s5s", "3s", "robbing_kong", rules=SIMP), SIMP)
    assert keys(s) == ["robbing_kong"] and s.fan == 1


def test_simplified_same_tile_by_discard_is_kai_vu_art_6_b_2() -> None:
    s = score(declare("12s 5s5s", "3s", "discard", rules=SIMP), SIMP)
    assert keys(s) == [] and s.kai_vu


def test_simplified_ordinary_self_draw_is_kai_vu_art_6_b_2() -> None:
    s = score(declare("12s 5s5s", "3s", "self_drawn", rules=SIMP), SIMP)
    assert keys(s) == [] and s.kai_vu


def test_simplified_last_tile_one_fan_art_6_b_2() -> None:
    s = score(declare("12s 5s5s", "3s", "last_tile", rules=SIMP), SIMP)
    assert keys(s) == ["last_tile"] and s.fan == 1


def test_simplified_green_dragon_win_one_fan_art_6_b_2() -> None:
    s = score(declare("123m GD", "GD", rules=SIMP), SIMP)
    assert keys(s) == ["green_dragon"] and s.fan == 1


def test_simplified_green_dragon_in_hand_but_not_the_winning_tile_art_6_b_2() -> None:
    s = score(declare("12m GD GD", "3m", rules=SIMP), SIMP)
    assert keys(s) == [] and s.kai_vu


def test_simplified_one_fan_is_the_maximum_art_6_b() -> None:
    s = score(declare("123m GD", "GD", "last_tile", rules=SIMP), SIMP)
    assert s.raw_fan == 2 and s.fan == 1


def test_simplified_tin_vu_earns_no_fan_art_6_b() -> None:
    # Art. 5 (b) (1) makes it a win; art. 6 (b) gives it no fan.
    s = score(declare("12m 5p5p", "3m", "dealer_first_fourteen", winner=0, rules=SIMP), SIMP)
    assert s.valid and s.fan == 0


def test_simplified_plain_wins_are_kai_vu_art_6_b_1() -> None:
    s = score(declare("111s 5s", "5s", rules=SIMP), SIMP)
    assert s.kai_vu
