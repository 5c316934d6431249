"""Mah-jong 135/91/M art. 7-10: who pays whom, the commission, the capital cap, the
discarder who pays for the other two, and the false win.

Amounts are derived by hand from the articles and the pay table: at the "25/50"
level the default single share is MOP 25 (kai vu), 50 (one fan), 100 (double fan),
i.e. 2500, 5000, 10000 avos; the commission of art. 8 (a) is MOP 10 (1000 avos).
Seat 0 is the banker unless a test says otherwise.
"""

from __future__ import annotations

from typing import Any

import pytest

from firmware_host.games import MoneyRules
from firmware_host.games.errors import OutcomeError
from firmware_host.games.mahjong import GAME as G
from firmware_host.games.mahjong import MahjongRules
from firmware_host.games.mahjong.payments import PaymentPlan

CONV = MahjongRules()
SIMP = MahjongRules(variant="simplified")
M = MoneyRules()
KAI, ONE, DOUBLE = 2500, 5000, 10000
PLAIN = "12m 456p 789s 222p 55m"  # + 3m: no fan


def declare(
    concealed: str,
    tile: str,
    by: str = "discard",
    *,
    melds: list[dict[str, Any]] | None = None,
    winner: int = 1,
    banker: int = 0,
    frm: int | None = 3,
    stake: str = "25/50",
    **extra: Any,
) -> dict[str, Any]:
    win: dict[str, Any] = {"tile": tile, "by": by}
    if by == "discard":
        win["from"] = frm
    win.update(extra.pop("win", {}))
    raw = {
        "stake": stake,
        "banker": banker,
        "winner": winner,
        "round_wind": "E",
        "concealed": concealed,
        "melds": melds or [],
        "win": win,
    }
    raw.update(extra)
    return raw


def plan(raw: dict[str, Any], rules: MahjongRules = CONV, money: MoneyRules = M) -> PaymentPlan:
    return G.evaluate(rules, G.parse_outcome(rules, raw), money).plan


def amounts(p: PaymentPlan) -> dict[int, int]:
    return {x.seat: x.amount for x in p.payments}


# -- art. 7: the banker pays and receives double --------------------------------


def test_non_banker_wins_banker_pays_double_art_7() -> None:
    p = plan(declare(PLAIN, "3m"))
    assert amounts(p) == {0: -2 * KAI, 1: 4 * KAI, 2: -KAI, 3: -KAI}
    assert p.grade == "kai vu"


def test_banker_wins_everyone_pays_double_art_7() -> None:
    p = plan(declare(PLAIN, "3m", winner=0, frm=2))
    assert amounts(p) == {0: 6 * KAI, 1: -2 * KAI, 2: -2 * KAI, 3: -2 * KAI}


def test_every_player_pays_on_a_discard_win_art_7() -> None:
    # Art. 7 makes all three pay whoever discarded; liability (art. 10) is the exception.
    p = plan(declare(PLAIN, "3m", frm=2))
    assert amounts(p) == {0: -2 * KAI, 1: 4 * KAI, 2: -KAI, 3: -KAI}


def test_one_fan_and_double_fan_shares_pay_table() -> None:
    one = plan(declare("123m 456m 789p RD RD RD 5s", "5s"))
    assert one.grade == "one fan" and amounts(one)[1] == 4 * ONE
    double = plan(declare("111m 234m 567m 789m 9m", "9m"))
    assert double.grade == "double fan" and amounts(double)[1] == 4 * DOUBLE


def test_configured_pay_table_is_used() -> None:
    rules = MahjongRules(amounts={"25/50": (1000, 3000, 9000)})
    assert amounts(plan(declare(PLAIN, "3m"), rules))[1] == 4 * 1000
    # A level the table does not list keeps its default.
    assert amounts(plan(declare(PLAIN, "3m", stake="100/200"), rules))[1] == 4 * 10000


# -- art. 8: the commission ---------------------------------------------------------

# Independent transcription of art. 8 (a) and (b), in patacas.
ART8A = [
    ("25/50", 10),
    ("50/100", 20),
    ("100/200", 40),
    ("200/400", 80),
    ("300/600", 120),
    ("500/1000", 200),
    ("1000/2000", 400),
    ("2000/4000", 800),
    ("3000/6000", 1200),
    ("5000/10000", 2000),
    ("10000/20000", 4000),
]
ART8B = [
    ("100/200", 20),
    ("200/400", 40),
    ("300/600", 60),
    ("500/1000", 100),
    ("1000/2000", 200),
    ("2000/4000", 400),
    ("3000/6000", 600),
    ("5000/10000", 1000),
    ("10000/20000", 2000),
    ("20000/40000", 4000),
    ("30000/60000", 6000),
]


@pytest.mark.parametrize(("stake", "commission"), ART8A)
def test_commission_by_stake_level_conventional_art_8_a(stake: str, commission: int) -> None:
    p = plan(declare(PLAIN, "3m", stake=stake))
    assert p.commission == p.commission_table == commission * 100


@pytest.mark.parametrize(("stake", "commission"), ART8B)
def test_commission_by_stake_level_simplified_art_8_b(stake: str, commission: int) -> None:
    p = plan(declare("12s 5s5s", "3s", stake=stake), SIMP)
    assert p.commission == commission * 100


def test_a_level_not_in_the_table_is_refused_art_8() -> None:
    with pytest.raises(OutcomeError) as e:
        G.parse_outcome(CONV, declare(PLAIN, "3m", stake="40/80"))
    assert e.value.code == "MAHJONG_STAKE_LEVEL"
    with pytest.raises(OutcomeError):  # 25/50 is a level of (a) only
        G.parse_outcome(SIMP, declare("12s 5s5s", "3s", stake="25/50"))


def test_stake_level_spellings_art_8() -> None:
    for text in ("1000/2000", "$1000/$2000", "$ 1 000 / $ 2 000", "$ 1 000,00/ $ 2 000,00"):
        assert G.parse_outcome(CONV, declare(PLAIN, "3m", stake=text)).stake == (1000, 2000)


# Art. 8 (a) and (b) exactly as the Portuguese text prints the levels: decimal comma,
# a space between thousands ("$ 1 000,00/ $ 2 000,00").
PRINTED_A = [
    "$ 25,00/ $ 50,00",
    "$ 50,00/ $ 100,00",
    "$ 100,00/ $ 200,00",
    "$ 200,00/ $ 400,00",
    "$ 300,00/ $ 600,00",
    "$ 500,00/ $ 1 000,00",
    "$ 1 000,00/ $ 2 000,00",
    "$ 2 000,00/ $ 4 000,00",
    "$ 3 000,00/ $ 6 000,00",
    "$ 5 000,00/ $ 10 000,00",
    "$ 10 000,00/ $ 20 000,00",
]


@pytest.mark.parametrize(
    ("printed", "plain"), list(zip(PRINTED_A, [s for s, _ in ART8A], strict=True))
)
def test_levels_as_the_regulation_prints_them_art_8_a(printed: str, plain: str) -> None:
    # issue 12 point 6: "$ 100,00/ $ 200,00" was read as 10,000/20,000 (the winner got
    # MOP 40,000 instead of 400). The commission is the level's, in patacas, x 100 avos.
    p = plan(declare(PLAIN, "3m", stake=printed))
    q = plan(declare(PLAIN, "3m", stake=plain))
    assert amounts(p) == amounts(q) and p.commission == q.commission
    assert p.commission == dict(ART8A)[plain] * 100


def test_the_audit_case_100_200_pays_the_winner_mop_400_art_7_8() -> None:
    # A kai vu at 100/200 (default share MOP 100), winner not the banker: the banker pays
    # double, so the winner receives 4 x MOP 100 = MOP 400; commission MOP 40 (art. 8 (a)).
    p = plan(declare(PLAIN, "3m", stake="$ 100,00/ $ 200,00"))
    assert amounts(p)[1] == 4 * 100 * 100 and p.commission == 40 * 100
    p = plan(declare("12s 5s5s", "3s", stake="$ 300,00/ $ 600,00"), SIMP)  # art. 8 (b)
    assert p.commission == 60 * 100


@pytest.mark.parametrize(
    "text", ["1,0000/2,0000", "$1,000/$2,000", "1.000/2.000", "100,50/200", "100/200/400", "cem"]
)
def test_ambiguous_or_malformed_levels_are_refused_with_the_accepted_forms_art_8(
    text: str,
) -> None:
    # "1,0000/2,0000" was read as 10,000/20,000; a comma before three digits is a thousands
    # separator in one notation and a decimal one in the other: refused, never guessed.
    with pytest.raises(OutcomeError) as e:
        G.parse_outcome(CONV, declare(PLAIN, "3m", stake=text))
    assert e.value.code == "MAHJONG_STAKE_LEVEL"
    assert '"$ 1 000,00/ $ 2 000,00"' in e.value.message and '"25/50"' in e.value.message


# -- art. 9 (a) 4), (b) 3): no more than the winner's capital ---------------------------


def test_winner_receives_no_more_than_his_capital_art_9_a_4() -> None:
    p = plan(declare(PLAIN, "3m", capital=6000))
    # 10000 owed, capped at 6000, in proportion 2:1:1.
    assert amounts(p) == {0: -3000, 1: 6000, 2: -1500, 3: -1500}
    assert p.capped


def test_capital_above_the_win_changes_nothing_art_9_a_4() -> None:
    p = plan(declare(PLAIN, "3m", capital=10000))
    assert amounts(p)[1] == 10000 and not p.capped


def test_cap_in_payable_units_remainder_to_the_first_payer_art_9_a_4() -> None:
    money = MoneyRules(payable_unit=100)
    p = plan(declare(PLAIN, "3m", capital=6150), money=money)
    # 61 units of 100 split 2:1:1 -> 30.5, 15.25, 15.25: 30, 15, 15 and one left over,
    # to the largest remainder (the banker's 0.5).
    assert amounts(p) == {0: -3100, 1: 6100, 2: -1500, 3: -1500}


def test_commission_never_above_what_the_winner_receives() -> None:
    p = plan(declare(PLAIN, "3m", capital=700))
    assert p.winner_received() == 700 and p.commission == 700


def test_simplified_cap_art_9_b_3() -> None:
    p = plan(declare("12s 5s5s", "3s", stake="100/200", capital=20000), SIMP)
    assert amounts(p)[1] == 20000 and sum(amounts(p).values()) == 0


# -- art. 10 (a): the discarder who pays for the other two ---------------------------

FULL_FLUSH_3_EXPOSED = [
    {"tiles": "111m", "from": 2},
    {"tiles": "555m", "from": 3},
    {"tiles": "789m", "from": 0},
]


def test_full_flush_three_sets_in_view_discarder_pays_all_art_10_a_1() -> None:
    p = plan(declare("23m 99m", "4m", melds=FULL_FLUSH_3_EXPOSED, frm=3))
    assert amounts(p) == {0: 0, 1: 4 * DOUBLE, 2: 0, 3: -4 * DOUBLE}
    assert p.liability.seat == 3 and "10 (a) 1)" in p.liability.cases[0]


def test_full_flush_two_sets_in_view_everyone_pays_art_10_a_1() -> None:
    p = plan(declare("789m 23m 99m", "4m", melds=FULL_FLUSH_3_EXPOSED[:2], frm=3))
    assert amounts(p) == {0: -2 * DOUBLE, 1: 4 * DOUBLE, 2: -DOUBLE, 3: -DOUBLE}
    assert not p.liability.applies


def test_concealed_kong_counts_in_view_only_if_configured_art_10_a_1() -> None:
    melds = [*FULL_FLUSH_3_EXPOSED[:2], {"tiles": "8m8m8m8m", "concealed": True}]
    raw = declare("23m 99m", "4m", melds=melds, frm=3)
    assert not plan(raw).liability.applies
    assert plan(raw, MahjongRules(concealed_kong_in_view=True)).liability.seat == 3


FOURTH_SET = [
    {"tiles": "111m", "from": 2},
    {"tiles": "555m", "from": 3},
    {"tiles": "789m", "from": 0},
    {"tiles": "234m", "from": 0},
]


def test_feeding_the_fourth_set_of_a_full_flush_art_10_a_2() -> None:
    p = plan(declare("9m", "9m", "self_drawn", melds=FOURTH_SET, win={"after_claim": True}))
    assert p.liability.seat == 0 and "10 (a) 2)" in p.liability.cases[0]
    assert amounts(p) == {0: -4 * DOUBLE, 1: 4 * DOUBLE, 2: 0, 3: 0}


def test_fourth_set_fed_but_win_not_on_the_next_draw_art_10_a_2() -> None:
    p = plan(declare("9m", "9m", "self_drawn", melds=FOURTH_SET))
    assert not p.liability.applies and amounts(p)[0] == -2 * DOUBLE


def test_fourth_set_fed_with_only_two_earlier_sets_in_view_art_10_a_2() -> None:
    melds = [
        {"tiles": "111m", "from": 2},
        {"tiles": "5m5m5m5m", "concealed": True},
        {"tiles": "789m", "from": 0},
        {"tiles": "234m", "from": 0},
    ]
    p = plan(declare("9m", "9m", "self_drawn", melds=melds, win={"after_claim": True}))
    assert not p.liability.applies


BIG_DRAGONS_2_EXPOSED = [{"tiles": "RD RD RD", "from": 2}, {"tiles": "GD GD GD", "from": 3}]


def test_big_dragons_two_dragon_sets_in_view_art_10_a_3() -> None:
    raw = declare(
        "WD WD 123m 55p", "WD", melds=BIG_DRAGONS_2_EXPOSED, frm=3, win={"tile_seen": True}
    )
    p = plan(raw)
    assert p.liability.seat == 3 and "10 (a) 3)" in p.liability.cases[0]
    assert amounts(p)[3] == -4 * DOUBLE


def test_big_dragons_one_dragon_set_in_view_art_10_a_3() -> None:
    raw = declare(
        "GD GD GD WD WD 123m 55p",
        "WD",
        melds=BIG_DRAGONS_2_EXPOSED[:1],
        frm=3,
        win={"tile_seen": True},
    )
    assert not plan(raw).liability.applies


def test_big_dragons_completed_by_a_suit_tile_art_10_a_3() -> None:
    # The Portuguese text: liability when the *dragon or wind* discarded completes the hand.
    raw = declare("WD WD WD 12m 55p", "3m", melds=BIG_DRAGONS_2_EXPOSED, frm=3)
    assert not plan(raw).liability.applies


def test_big_winds_three_wind_sets_in_view_art_10_a_3() -> None:
    melds = [{"tiles": "EEE", "from": 2}, {"tiles": "SSS", "from": 3}, {"tiles": "WWW", "from": 0}]
    p = plan(declare("NN 55m", "N", melds=melds, frm=3, win={"tile_seen": True}))
    assert p.liability.seat == 3


def test_live_dragon_discard_is_exempt_art_10_a_10() -> None:
    raw = declare(
        "WD WD 123m 55p", "WD", melds=BIG_DRAGONS_2_EXPOSED, frm=3, win={"tile_seen": False}
    )
    p = plan(raw)
    assert p.liability.cases and p.liability.exemptions and not p.liability.applies
    assert "10 (a) 10)" in p.liability.exemptions[0]
    assert amounts(p) == {0: -2 * DOUBLE, 1: 4 * DOUBLE, 2: -DOUBLE, 3: -DOUBLE}


def test_whether_the_honour_was_seen_must_be_said_art_10_a_10() -> None:
    raw = declare("WD WD 123m 55p", "WD", melds=BIG_DRAGONS_2_EXPOSED, frm=3)
    with pytest.raises(OutcomeError) as e:
        plan(raw)
    assert e.value.code == "MAHJONG_MISSING_FACT"


def test_all_honours_is_exempt_art_10_a_9() -> None:
    # Big winds with a dragon pair is chun chu: no liability even with three wind sets in view.
    melds = [{"tiles": "EEE", "from": 2}, {"tiles": "SSS", "from": 3}, {"tiles": "WWW", "from": 0}]
    p = plan(declare("NN RD RD", "N", melds=melds, frm=3, win={"tile_seen": True}))
    assert (
        p.liability.cases and "10 (a) 9)" in p.liability.exemptions[0] and not p.liability.applies
    )


def test_all_terminals_is_exempt_art_10_a_9() -> None:
    p = plan(
        declare("111m 999m 111p 999s 1s", "1s", frm=3, discarder={"withheld_last_honour": True})
    )
    assert not p.liability.applies and "10 (a) 9)" in p.liability.exemptions[0]


@pytest.mark.parametrize(
    ("conduct", "case"),
    [
        ({"withheld_last_honour": True}, "10 (a) 4)"),
        ({"broke_pung": True}, "10 (a) 5)"),
        ({"ready": True, "broke_ready_hand": True}, "10 (a) 6)"),
    ],
)
def test_discarder_conduct_makes_him_pay_all_art_10_a_4_to_6(
    conduct: dict[str, bool], case: str
) -> None:
    p = plan(declare(PLAIN, "3m", frm=2, discarder=conduct))
    assert p.liability.seat == 2 and case in p.liability.cases[0]
    assert amounts(p) == {0: 0, 1: 4 * KAI, 2: -4 * KAI, 3: 0}


@pytest.mark.parametrize(
    "conduct",
    [
        {"broke_pung": True, "ready": True},  # 5) is for a player not ready
        {"broke_ready_hand": True},  # 6) is for a player who was ready
        {"ready": True},
    ],
)
def test_conduct_outside_the_cases_is_no_liability_art_10_a_5_6(conduct: dict[str, bool]) -> None:
    assert not plan(declare(PLAIN, "3m", frm=2, discarder=conduct)).liability.applies


def test_banker_liable_pays_his_double_and_the_others_art_10_a() -> None:
    p = plan(declare(PLAIN, "3m", frm=0, discarder={"withheld_last_honour": True}))
    assert amounts(p) == {0: -4 * KAI, 1: 4 * KAI, 2: 0, 3: 0}


def test_conduct_without_a_discard_is_refused_art_10() -> None:
    with pytest.raises(OutcomeError):
        G.parse_outcome(CONV, declare(PLAIN, "3m", "self_drawn", discarder={"broke_pung": True}))


# -- art. 10 (a) 7)-8), art. 9 (a) 2): the false win ------------------------------------


def test_false_win_by_a_non_banker_art_10_a_8() -> None:
    p = plan(declare("12m 456p 789s 222p 56m", "3m"))
    assert p.grade == "false win" and p.commission == 0
    assert amounts(p) == {0: DOUBLE, 1: -(DOUBLE + 2 * ONE), 2: ONE, 3: ONE}


def test_false_win_by_the_banker_art_10_a_8() -> None:
    p = plan(declare("12m 456p 789s 222p 56m", "3m", winner=0, frm=2))
    assert amounts(p) == {0: -3 * DOUBLE, 1: DOUBLE, 2: DOUBLE, 3: DOUBLE}


def test_wrong_set_exposed_is_a_false_win_art_10_a_7() -> None:
    p = plan(declare(PLAIN, "3m", wrong_meld=True))
    assert p.grade == "false win" and amounts(p)[1] == -(DOUBLE + 2 * ONE)
    p = plan(declare("456p 789s 222p 5m", "5m", melds=[{"tiles": "1m 2m 4m", "from": 0}]))
    assert p.grade == "false win"


def test_the_right_set_exposed_is_no_false_win_art_10_a_7() -> None:
    assert (
        plan(declare("456p 789s 222p 5m", "5m", melds=[{"tiles": "1m 2m 3m", "from": 0}])).grade
        == "kai vu"
    )


def test_pung_announced_and_withdrawn_voids_the_win_art_9_a_2() -> None:
    p = plan(declare(PLAIN, "3m", withdrew_pung=True))
    assert p.grade == "false win"


# -- art. 10 (b): the simplified game -----------------------------------------------------

S_KAI, S_ONE = 10000, 20000


def sdeclare(concealed: str, tile: str, **kw: Any) -> dict[str, Any]:
    return declare(concealed, tile, stake="100/200", **kw)


def test_simplified_payments_art_7() -> None:
    p = plan(sdeclare("12s 5s5s", "3s"), SIMP)
    assert amounts(p) == {0: -2 * S_KAI, 1: 4 * S_KAI, 2: -S_KAI, 3: -S_KAI}
    p = plan(sdeclare("123m GD", "GD", frm=2, win={"tile_seen": True}), SIMP)
    assert p.grade == "one fan" and amounts(p)[1] == 4 * S_ONE


def test_simplified_two_players_art_3_b() -> None:
    p = plan(sdeclare("12s 5s5s", "3s", seats=[0, 2], winner=2, frm=0), SIMP)
    assert amounts(p) == {0: -2 * S_KAI, 2: 2 * S_KAI}


def test_simplified_withheld_fourth_green_art_10_b_1() -> None:
    p = plan(sdeclare("12s 5s5s", "3s", frm=2, discarder={"withheld_last_honour": True}), SIMP)
    assert p.liability.seat == 2 and amounts(p) == {0: 0, 1: 4 * S_KAI, 2: -4 * S_KAI, 3: 0}


def test_simplified_ready_and_broke_a_pung_art_10_b_2() -> None:
    p = plan(sdeclare("12s 5s5s", "3s", frm=2, discarder={"ready": True, "broke_pung": True}), SIMP)
    assert p.liability.seat == 2 and "10 (b) 2)" in p.liability.cases[0]


def test_simplified_broke_a_pung_not_ready_no_liability_art_10_b_2() -> None:
    assert not plan(
        sdeclare("12s 5s5s", "3s", frm=2, discarder={"broke_pung": True}), SIMP
    ).liability.applies


def test_simplified_live_green_dragon_exempt_art_10_b_4() -> None:
    raw = sdeclare(
        "123m GD", "GD", frm=2, win={"tile_seen": False}, discarder={"withheld_last_honour": True}
    )
    p = plan(raw, SIMP)
    assert not p.liability.applies and "10 (b) 4)" in p.liability.exemptions[0]
    raw["win"]["tile_seen"] = True
    assert plan(raw, SIMP).liability.applies


def test_simplified_false_win_one_fan_each_art_10_b_3() -> None:
    p = plan(sdeclare("12s 5s6s", "4s"), SIMP)
    assert amounts(p) == {0: S_ONE, 1: -3 * S_ONE, 2: S_ONE, 3: S_ONE}
    p = plan(sdeclare("12s 5s6s", "4s", winner=0, frm=2), SIMP)
    assert amounts(p) == {0: -3 * S_ONE, 1: S_ONE, 2: S_ONE, 3: S_ONE}


def test_simplified_has_no_case_6_art_10_b() -> None:
    with pytest.raises(OutcomeError):
        G.parse_outcome(
            SIMP, sdeclare("12s 5s5s", "3s", frm=2, discarder={"broke_ready_hand": True})
        )
