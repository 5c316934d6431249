"""Super Pan 9, Portaria 261/96/M: card values (art. 6), winning (art. 7), the banker's
advantage (art. 8), the commission (art. 9), dice and dealing (art. 2), the banker's
capital and co-banking (art. 5), through the Game interface and ``tablectl``.
"""

import json
from fractions import Fraction
from itertools import product
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from firmware_host.cli import main
from firmware_host.config import ConfigInvalid, validate_document
from firmware_host.games import MoneyRules, get_game
from firmware_host.games.banker import DiceReshake
from firmware_host.games.cards import Card, deck, parse_cards
from firmware_host.games.errors import BetError, Misdeal, OutcomeError, RoundStateError, RulesError
from firmware_host.games.super_pan_9 import SuperPan9Deal, SuperPan9Rules
from firmware_host.games.super_pan_9.rules import hand_points, place_beats_banker

ROOT = Path(__file__).resolve().parents[2]
G = get_game("super-pan-9")
R = SuperPan9Rules()
RB = SuperPan9Rules(equal_high_card="banker")
M = MoneyRules()

# art. 6 1), transcribed: "Rei, Dama, Valete, Dez, Nove ... Dois e Ás", highest first;
# pictures and tens are worth zero, the ace one.
ORDER = "KQJT98765432A"
VALUE = {
    "K": 0,
    "Q": 0,
    "J": 0,
    "T": 0,
    "9": 9,
    "8": 8,
    "7": 7,
    "6": 6,
    "5": 5,
    "4": 4,
    "3": 3,
    "2": 2,
    "A": 1,
}


def plain_points(hand: str) -> int:
    return sum(VALUE[c[0]] for c in hand.split()) % 10


def plain_place_wins(place: str, banker: str, rule: str = "next-card") -> bool:
    """Art. 7-8 written out: points, then the larger card, then (our decision) the other."""
    pp, bp = plain_points(place), plain_points(banker)
    if pp != bp:
        return pp > bp
    ps = sorted(ORDER.index(c[0]) for c in place.split())  # 0 is the king
    bs = sorted(ORDER.index(c[0]) for c in banker.split())
    if ps[0] != bs[0]:
        return ps[0] < bs[0]
    if rule == "next-card" and ps[1] != bs[1]:
        return ps[1] < bs[1]
    return False  # art. 8: equal points and cards, the banker wins


def wins(place: str, banker: str, rule: str = "next-card") -> bool:
    return place_beats_banker(parse_cards(place), parse_cards(banker), rule)


# -- art. 6 ---------------------------------------------------------------------------------


def test_card_values_art_6_1() -> None:
    for r, v in VALUE.items():
        assert hand_points(parse_cards(f"{r}S KH")) == v


@pytest.mark.parametrize(("hand", "points"), [
    ("9S KD", 9), ("7S 8D", 5), ("5S 5D", 0), ("TS JD", 0), ("AS AD", 2), ("9S 9D", 8),
    ("4S 6H", 0), ("AS 8C", 9),
])  # fmt: skip
def test_two_card_points_last_digit_art_6_2(hand: str, points: int) -> None:
    # 261/96/M art. 6 2): "nove (9) a pontuação mais elevada"; over ten, subtract ten.
    assert hand_points(parse_cards(hand)) == points


# -- art. 7 and 8 -----------------------------------------------------------------------------


def test_higher_points_win_art_7_1() -> None:
    assert wins("8S KD", "7S KH")
    assert not wins("7S KH", "8S KD")


def test_equal_points_higher_card_wins_art_7_2() -> None:
    # 9 + K (9 points) against 4 + 5 (9 points): the king is the higher card.
    assert wins("9S KD", "4S 5D")
    assert not wins("4S 5D", "9S KD")
    # 2 + 7 against A + 8: the eight is the higher card
    assert not wins("2S 7D", "AS 8D")
    assert wins("AS 8D", "2S 7D")


def test_equal_points_and_cards_banker_wins_art_8() -> None:
    # "Ganha o banqueiro quando a sua pontuação e valor individual das cartas forem iguais"
    assert not wins("9S KD", "9H KC")
    assert not wins("9H KC", "9S KD")
    assert not wins("QS QD", "QH QC", "banker")


def test_largest_cards_tie_gap_art_7_2_and_8() -> None:
    # Gap: K-Q against K-J, both zero with a king. Decision (default "next-card"): the
    # queen beats the jack; with "banker" the banker wins as soon as the kings tie.
    assert wins("KS QD", "KH JC")
    assert not wins("KH JC", "KS QD")
    assert not wins("KS QD", "KH JC", "banker")
    assert not wins("KH JC", "KS QD", "banker")
    # the two readings differ only when both cards of both hands are worth zero
    ranks = "A23456789TJQK"
    for a, b, c, d in product(ranks, repeat=4):
        p, bk = f"{a}S {b}H", f"{c}C {d}D"
        if plain_place_wins(p, bk) != plain_place_wins(p, bk, "banker"):
            assert all(VALUE[x] == 0 for x in (a, b, c, d))


@settings(max_examples=400, deadline=None)
@given(st.permutations(list(deck())))
def test_comparison_agrees_with_a_plain_transcription_art_7_8(cards: list[Card]) -> None:
    place, banker = f"{cards[0]} {cards[1]}", f"{cards[2]} {cards[3]}"
    for rule in ("next-card", "banker"):
        assert wins(place, banker, rule) == plain_place_wins(place, banker, rule)
        # never both: a tie always goes to the banker (art. 8)
        assert not (wins(place, banker, rule) and wins(banker, place, rule))


# -- outcome, dice and deal (art. 2) ----------------------------------------------------------


def outcome(
    banker: int = 1, dice: list[int] | None = None, declared: int = 0, **kw: object
) -> dict:
    hands = {
        "1": ["5S", "4H"],
        "2": ["9S", "KD"],
        "3": ["2S", "3D"],
        "4": ["KS", "QD"],
        "5": ["AS", "AD"],
        "6": ["7S", "2D"],
        "7": ["6S", "3C"],
        "8": ["8S", "AH"],
        "9": ["9H", "JC"],
    }
    out = {
        "banker": banker,
        "banker_capital": 100000,
        "dice": dice or [1, 2, 3, 4],
        "declared": declared,
        "hands": hands,
    }
    out.update(kw)
    return out


def test_dice_and_declaration_pick_the_first_place_art_2_2_3() -> None:
    # nine places, banker on 4, dice 6+6+5+1 = 18, declared +2: count 20 from the banker
    # (4 is 1, 5 is 2, ..., counter-clockwise): 20 - 1 = 19 steps = 2 rounds + 1 -> place 5.
    o = G.parse_outcome(R, outcome(banker=4, dice=[6, 6, 5, 1], declared=2))
    assert o.setup.first_place == 5
    assert o.setup.service_order[:3] == (5, 6, 7)
    o = G.parse_outcome(R, outcome(banker=4, dice=[6, 6, 5, 1], declared=-2))  # count 16
    assert o.setup.first_place == 1  # 15 steps from 4 round nine places: 5..9, 1..9, 1


def test_cards_in_dealing_order_go_two_by_two_from_the_first_place_art_2_3() -> None:
    # "recebendo cada lugar duas cartas seguidas", right to left from the first place.
    cards = [str(c) for c in deck()[:18]]
    o = G.parse_outcome(
        R, {"banker": 9, "banker_capital": 500, "dice": [1, 1, 1, 1], "cards": cards}
    )
    # count 4 from place 9: 9, 1, 2, 3 -> place 3 first
    assert o.setup.first_place == 3
    assert [str(c) for c in o.hand(3)] == cards[0:2]
    assert [str(c) for c in o.hand(4)] == cards[2:4]
    assert [str(c) for c in o.hand(2)] == cards[16:18]
    again = G.parse_outcome(R, G.outcome_json(o))
    assert again == o


def test_one_deck_no_card_twice_art_1_1() -> None:
    raw = outcome()
    raw["hands"]["9"] = ["5S", "JC"]  # 5S is the banker's
    with pytest.raises(OutcomeError) as exc:
        G.parse_outcome(R, raw)
    assert exc.value.code == "CARD_DUPLICATE"


def test_outcome_reshake_and_inconsistencies_art_2_4() -> None:
    with pytest.raises(DiceReshake):
        G.parse_outcome(R, outcome(dice=[1, "stacked", 3, 4]))
    with pytest.raises(OutcomeError) as exc:
        G.parse_outcome(R, outcome(first_place=3))  # 1+2+3+4 = 10 from place 1 is place 1
    assert exc.value.code == "OUTCOME_INCONSISTENT"
    raw = outcome()
    del raw["hands"]["7"]
    with pytest.raises(OutcomeError) as exc:
        G.parse_outcome(R, raw)
    assert exc.value.code == "HAND_MISSING"


def test_deal_engine_card_by_card_art_2() -> None:
    d = SuperPan9Deal.start(R, banker=2, banker_capital=1000, declared=1)
    assert d.expect().kind == "dice"
    with pytest.raises(Misdeal) as exc:
        d.deal("AS")
    assert exc.value.code == "MISDEAL_BEFORE_DICE"
    with pytest.raises(DiceReshake):
        d.shake([1, 2, None, 4])
    d = d.shake([1, 2, 3, 4])  # 10 + 1 = 11 from place 2: 2 + 10 -> place 3
    assert d.expect().to_json() == {"kind": "card", "to": 3}
    with pytest.raises(RoundStateError):
        d.shake([1, 1, 1, 1])
    cards = list(deck())
    for i, c in enumerate(cards[:18]):
        if i == 5:
            with pytest.raises(Misdeal) as exc:
                d.deal(cards[0])
            assert exc.value.code == "MISDEAL_DUPLICATE_CARD"
        assert d.expect().to == d._setup().service_order[i // 2]
        d = d.deal(c)
    assert d.expect().kind == "complete"
    with pytest.raises(Misdeal) as exc:
        d.deal(cards[20])
    assert exc.value.code == "MISDEAL_EXTRA_CARD"
    o = d.outcome()
    assert o.hand(3) == (cards[0], cards[1])
    assert o == G.parse_outcome(
        R,
        {
            "banker": 2,
            "banker_capital": 1000,
            "declared": 1,
            "dice": [1, 2, 3, 4],
            "cards": [str(c) for c in cards[:18]],
        },
    )


@settings(max_examples=60, deadline=None)
@given(st.permutations(list(deck())), st.integers(0, 18), st.integers(1, 9), st.integers(-30, 30))
def test_deal_state_json_round_trip(cards: list[Card], n: int, banker: int, declared: int) -> None:
    d = SuperPan9Deal.start(R, banker=banker, banker_capital=777, declared=declared).shake(
        [3, 4, 5, 6]
    )
    for c in cards[:n]:
        d = d.deal(c)
    data = json.loads(json.dumps(d.to_json()))
    assert SuperPan9Deal.from_json(R, data) == d


# -- settlement (art. 5, 7, 9) ---------------------------------------------------------------


def settle(
    raw_outcome: dict, bets: list[dict], rules: SuperPan9Rules = R, money: MoneyRules = M
) -> dict:
    o = G.parse_outcome(rules, raw_outcome)
    return G.settle(rules, o, G.parse_bets(rules, bets), money).to_json()


def test_settlement_within_the_banker_capital_art_5_3_and_9() -> None:
    # Banker on 1 holds 5-4 (9 points, high card 5). Place 2 (9-K) and place 9 (9-J) beat
    # him (art. 7 2)); place 3 (2-3) loses. Capital 1000, dice 10 -> place 1 first, so
    # the order is 2, 3, ..., 9.
    raw = outcome(banker_capital=1000)
    bets = [
        {"bet_id": "a", "seat": 11, "bet_type": "place", "selection": 9, "stake": 600},
        {"bet_id": "b", "seat": 12, "bet_type": "place", "selection": 2, "stake": 800},
        {"bet_id": "c", "seat": 13, "bet_type": "place", "selection": 3, "stake": 500},
    ]
    s = settle(raw, bets)
    by = {b["bet_id"]: b for b in s["bets"]}
    assert s["settlement_order"] == ["b", "c", "a"]
    # b is paid 800 less 5% (40); c's 500 is collected; a is paid its 600 in full (the
    # banker has 1000 - 800 + 500 = 700 left)
    assert (by["b"]["payout"], by["b"]["commission"], by["b"]["net"]) == (800, 40, 760)
    assert by["c"]["net"] == -500
    assert (by["a"]["payout"], by["a"]["net"]) == (600, 570)
    assert s["banker"]["gross"] == -900 and s["banker"]["net"] == -900
    # now the banker only has 1000 and the losers come last: a and b exhaust him
    s = settle(
        raw,
        [bets[0], bets[1], {**bets[2], "selection": 4}],
        SuperPan9Rules(settlement_order="placed"),
    )
    by = {b["bet_id"]: b for b in s["bets"]}
    assert by["a"]["payout"] == 600 and by["b"]["payout"] == 400 and by["b"]["net"] == 380
    assert "capital is reached" in by["b"]["reason"]
    assert s["banker"]["gross"] == -500  # paid 1000, then collected place 4's 500


def test_co_banking_after_the_banker_and_casino_art_5_5() -> None:
    raw = outcome(banker_capital=1000, casino_capital=5000)
    bets = [
        {"bet_id": "x", "seat": 20, "bet_type": "co_bank", "stake": 300},
        {"bet_id": "a", "seat": 11, "bet_type": "place", "selection": 2, "stake": 2000},
    ]
    s = settle(raw, bets)
    layers = s["bank"]["layers"]
    assert [ly["who"] for ly in layers] == ["banker", "co_bank", "casino"]
    assert [ly["gross"] for ly in layers] == [-1000, -300, -700]
    assert s["bets"][1]["payout"] == 2000 and s["bets"][1]["commission"] == 100
    assert s["bets"][0]["net"] == -300
    # the house's result is its commission plus its own co-banking result
    assert s["totals"]["house_net"] == 100 - 700
    assert s["totals"]["house_net"] == s["totals"]["commission"] + s["bank"]["casino_net"]


def test_co_banker_may_not_bet_on_places_art_5_5() -> None:
    bets = [
        {"seat": 20, "bet_type": "co_bank", "stake": 300},
        {"seat": 20, "bet_type": "place", "selection": 2, "stake": 100},
    ]
    with pytest.raises(BetError) as exc:
        settle(outcome(), bets)
    assert exc.value.code == "CO_BANKER_ALSO_BETS"


def test_bet_on_the_banker_place_is_refused_art_5_5() -> None:
    with pytest.raises(BetError) as exc:
        settle(outcome(banker=3), [{"seat": 20, "bet_type": "place", "selection": 3, "stake": 1}])
    assert exc.value.code == "BET_ON_BANKER_PLACE"


def test_bet_order_in_the_outcome_art_5_3() -> None:
    # the order the bets were placed, when the bet list is not in that order
    bets = [
        {"bet_id": "a", "seat": 11, "bet_type": "place", "selection": 2, "stake": 800},
        {"bet_id": "b", "seat": 12, "bet_type": "place", "selection": 2, "stake": 800},
    ]
    s = settle(outcome(banker_capital=1000, bet_order=["b", "a"]), bets)
    assert [b["payout"] for b in s["bets"]] == [200, 800]
    with pytest.raises(OutcomeError) as exc:
        settle(outcome(bet_order=["b"]), bets)
    assert exc.value.code == "BET_ORDER_MISMATCH"


bets_st = st.lists(
    st.tuples(
        st.sampled_from(["place", "place", "place", "co_bank"]),
        st.integers(1, 9),
        st.integers(1, 40).map(lambda x: 100 * x),
        st.integers(0, 5),
    ),
    max_size=12,
)


@settings(max_examples=120, deadline=None)
@given(
    st.permutations(list(deck())),
    st.integers(1, 9),
    st.integers(1, 60),
    st.integers(0, 1),
    bets_st,
    st.sampled_from([1, 100]),
)
def test_settlement_conserves_money_art_5_9(
    cards: list[Card], banker: int, capital: int, casino: int, raw_bets: list, unit: int
) -> None:
    raw = {
        "banker": banker,
        "banker_capital": capital * 100,
        "casino_capital": casino * 2000,
        "dice": [2, 3, 4, 5],
        "cards": [str(c) for c in cards[:18]],
    }
    bets = []
    for i, (bt, place, stake, seat) in enumerate(raw_bets):
        if bt == "place" and place == banker:
            continue
        seat = 50 + i if bt == "co_bank" else seat  # co-bankers bet on nothing else
        bets.append(
            {
                "bet_id": f"b{i}",
                "seat": seat,
                "bet_type": bt,
                "stake": stake,
                **({"selection": place} if bt == "place" else {}),
            }
        )
    s = settle(raw, bets, money=MoneyRules(payable_unit=unit))
    nets = sum(b["net"] for b in s["bets"]) + s["banker"]["net"] + s["bank"]["casino_net"]
    exact, breakage = Fraction(s["commission_exact"]), Fraction(s["totals"]["breakage"])
    # art. 9: the commission is 5% of each win; the payable unit's rounding is breakage,
    # kept by the house besides the commission; nothing is lost
    assert nets + exact + breakage == 0
    assert abs(s["totals"]["commission"] - exact) < len(s["bets"]) + 1
    assert s["totals"]["house_net"] == exact + breakage + s["bank"]["casino_net"]
    assert abs(s["banker"]["gross"]) <= capital * 100
    for b in s["bets"]:
        if b["bet_type"] == "place":
            assert -b["stake"] <= b["net"] <= b["stake"]


# -- math (exact) -------------------------------------------------------------------------


def test_math_is_exact_and_matches_a_hand_count_art_7_8_9() -> None:
    # Independent count for the default rule: equal hands (banker wins, art. 8) are the
    # deals where place and banker hold the same two ranks. Unordered deals: a pair of one
    # rank (6 ways) then the other two of that rank (1 way), or two ranks (16 ways) then
    # (3 x 3) ways; over C(52,2) x C(50,2) deals.
    equal = 13 * 6 * 1 + 78 * 16 * 9
    p_equal = Fraction(equal, 1326 * 1225)
    p_place = (1 - p_equal) / 2  # otherwise the deal is symmetric between the two hands
    rep = G.math(R)
    assert rep.method == "exact"
    lines = {ln.bet: ln for ln in rep.lines}
    assert lines["place"].house_edge == -(p_place * Fraction(19, 20) - (1 - p_place))
    assert lines["banker"].house_edge == -((1 - p_place) * Fraction(19, 20) - p_place)
    assert rep.details["p_equal_hands_banker_wins"] == f"{p_equal.numerator}/{p_equal.denominator}"


def test_math_banker_rule_raises_the_place_edge() -> None:
    # more ties go to the banker under the "banker" reading of the gap
    assert G.math(RB).lines[0].house_edge > G.math(R).lines[0].house_edge


def test_math_options() -> None:
    two = G.math(R, decks=2)
    assert two.details["decks"] == 2
    with pytest.raises(RulesError):
        G.math(R, rounds=1000)


# -- configuration and tablectl --------------------------------------------------------------


def test_config_refuses_what_the_text_does_not_allow() -> None:
    doc = {
        "table": {"id": "t", "game": "super-pan-9"},
        "rules": {"super-pan-9": {"places": 1, "equal_high_card": "split"}},
    }
    with pytest.raises(ConfigInvalid) as exc:
        validate_document(doc)
    text = "\n".join(exc.value.errors)
    assert "places" in text and "art. 3 1)" in text
    assert "equal_high_card" in text


def test_tablectl_settle_and_math(capsys: pytest.CaptureFixture[str]) -> None:
    cfg = str(ROOT / "config" / "super-pan-9.toml")
    assert main(["check-config", cfg]) == 0
    capsys.readouterr()
    bets = [{"seat": 3, "bet_type": "place", "selection": 2, "stake": 10000}]
    rc = main(
        [
            "settle",
            "super-pan-9",
            "--outcome",
            json.dumps(outcome()),
            "--bets",
            json.dumps(bets),
            "--config",
            cfg,
        ]
    )
    out = json.loads(capsys.readouterr().out)
    assert rc == 0
    assert out["bets"][0]["net"] == 9500 and out["banker"]["net"] == -10000
    assert out["rules"]["regulation"] == "261/96/M"
    rc = main(["math", "super-pan-9", "--config", cfg, "--json"])
    data = json.loads(capsys.readouterr().out)
    assert rc == 0 and data["method"] == "exact"
    assert {b["bet"] for b in data["bets"]} == {"place", "banker"}


def test_bet_selections_art_3_and_5_5() -> None:
    # a place of the table (art. 3 1)); co-banking takes no place (art. 5 5))
    assert G.parse_bet(R, {"bet_type": "place", "selection": [9], "stake": 1}).selection == 9
    for bad in [0, 10, "2", True, None]:
        with pytest.raises(BetError) as exc:
            G.parse_bet(R, {"bet_type": "place", "selection": bad, "stake": 1})
        assert exc.value.code == "BET_INVALID_SELECTION"
    with pytest.raises(BetError):
        G.parse_bet(R, {"bet_type": "co_bank", "selection": 1, "stake": 1})
    assert {bt.name for bt in G.bet_types(R)} == {"place", "co_bank"}
