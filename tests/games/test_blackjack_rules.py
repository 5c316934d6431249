"""Blackjack, 56/2004: one test (at least) per article the rules core applies.

Cards are fed in shoe order; expected money is worked out by hand from the
article's numbers (stake x odds), never read back from the code under test.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from fractions import Fraction
from typing import Any

import pytest

from firmware_host.config import ConfigInvalid, validate_document
from firmware_host.games import MoneyRules, get_game
from firmware_host.games.blackjack import BlackjackDeal, BlackjackRules
from firmware_host.games.blackjack.deal import Hand, refusal
from firmware_host.games.blackjack.rules import hand_total
from firmware_host.games.blackjack.verdicts import deciders
from firmware_host.games.cards import Card, parse_cards
from firmware_host.games.errors import BetError, ConfigError, Misdeal, OutcomeError, RoundStateError

G = get_game("blackjack")
R = BlackjackRules()
M = MoneyRules()
Step = str | tuple[Any, ...]


def play(script: Iterable[Step], seats: Sequence[int] = (1,), rules: BlackjackRules = R,
         burn: int | None = None) -> BlackjackDeal:  # fmt: skip
    """Feed cards (strings) and decisions ((seat, action[, amount[, bet_id]]))."""
    d = BlackjackDeal.start(rules, seats, burn)
    for step in script:
        if isinstance(step, str):
            d = d.deal(step)
        else:
            seat, action, *rest = step
            amount = rest[0] if rest else None
            bet_id = rest[1] if len(rest) > 1 else None
            d = d.decide(seat, action, amount=amount, bet_id=bet_id)
    return d


def nets(d: BlackjackDeal, bets: list[dict[str, Any]], rules: BlackjackRules = R,
         money: MoneyRules = M) -> dict[str, int]:  # fmt: skip
    st = G.settle(rules, d, G.parse_bets(rules, bets), money)
    return {r.bet.bet_id: r.amounts.net for r in st.results}


def main(stake: int = 100, seat: int = 1, bet_id: str = "m") -> dict[str, Any]:
    return {"bet_id": bet_id, "seat": seat, "bet_type": "main", "stake": stake}


def side(bet_type: str, stake: int = 100, seat: int = 1, selection: Any = None,
         bet_id: str = "s") -> dict[str, Any]:  # fmt: skip
    return {
        "bet_id": bet_id,
        "seat": seat,
        "bet_type": bet_type,
        "selection": selection,
        "stake": stake,
    }


def code_of(exc: pytest.ExceptionInfo[Any]) -> str:
    return str(exc.value.code)


# -- art. 1, 2, 4, 5: material and dealing ------------------------------------------------


def test_art_5_shoe_deals_one_card_at_a_time_from_the_left_dealer_one_card() -> None:
    # 56/2004 art. 5 1) and 2) 1) (1): two cards to each place, one to the dealer;
    # the dealer's second card only after the players have decided.
    d = BlackjackDeal.start(R, [5, 2])
    seen = []
    for c in ["9S", "9H", "6D", "8S", "7C"]:
        e = d.expect()
        seen.append((e.to, e.seat))
        d = d.deal(c)
    assert seen == [("player", 2), ("player", 5), ("dealer", None), ("player", 2), ("player", 5)]
    e = d.expect()
    assert (e.kind, e.seat) == ("decision", 2)
    assert len(d.dealer) == 1
    d = d.decide(2, "stand").decide(5, "stand")
    assert d.expect().to == "dealer"


def test_art_5_2_2_second_procedure_face_up_deals_in_the_same_order() -> None:
    # 56/2004 art. 5 2) 2): cards face up; the dealer's second card after the players.
    fu = BlackjackRules(procedure="face_up")
    d = play(["9S", "6D", "8S"], rules=fu)
    assert d.expect().kind == "decision" and len(d.dealer) == 1


def test_art_5_2_1_2_metal_box_dealer_hole_card_before_the_players() -> None:
    # 56/2004 art. 5 2) 1) (2): the dealer receives two cards before the players play.
    mb = BlackjackRules(procedure="metal_box", decks=1)
    d = BlackjackDeal.start(mb, [1, 2])
    targets = []
    for c in ["9S", "9H", "6D", "8S", "7C", "TD"]:
        targets.append(d.expect().to)
        d = d.deal(c)
    assert targets == ["player", "player", "dealer", "player", "player", "dealer"]
    assert d.expect().kind == "decision"
    d = d.decide(1, "stand").decide(2, "stand")
    assert d.expect().to == "dealer" and len(d.dealer) == 2  # 16: draws a third card


def test_art_5_metal_box_dealer_draws_after_the_players() -> None:
    # 56/2004 art. 5 2) 1) (2), art. 6 1): hole card already out, the dealer draws on 16.
    mb = BlackjackRules(procedure="metal_box", decks=1)
    d = play(["9S", "6D", "8S", "TD", (1, "stand")], rules=mb)
    assert d.expect().to == "dealer"
    d = d.deal("5C")
    assert d.complete and [str(c) for c in d.dealer] == ["6D", "TD", "5C"]


def test_art_1_3_metal_box_holds_one_deck() -> None:
    # 56/2004 art. 1 3), art. 2 2) 3): the metal box is used with one deck.
    with pytest.raises(ConfigError):
        BlackjackRules(procedure="metal_box", decks=6)
    with pytest.raises(ConfigInvalid) as exc:
        validate_document({"table": {"id": "bj", "game": "blackjack"},
                           "rules": {"blackjack": {"procedure": "metal_box"}}})  # fmt: skip
    assert any("one deck" in e for e in exc.value.errors)


def test_art_4_2_burn_cards_at_the_start_and_before_the_dealers_second_card() -> None:
    # 56/2004 art. 4 2): one card burnt at the start of each round, and one before the
    # dealer's second face-up card.
    br = BlackjackRules(burn="round_and_dealer")
    d = BlackjackDeal.start(br, [1])
    targets = []
    for c in ["2C", "9S", "6D", "8S"]:
        targets.append(d.expect().to)
        d = d.deal(c)
    assert targets == ["burn", "player", "dealer", "player"]
    d = d.decide(1, "stand")
    assert d.expect().to == "burn"
    d = d.deal("3C").deal("TD")
    assert [str(c) for c in d.dealer] == ["6D", "TD"]


def test_art_4_1_first_round_of_a_shoe_burns_as_many_cards_as_decks() -> None:
    # 56/2004 art. 4 1) 1): as many burn cards as decks; the engine passes the count.
    d = BlackjackDeal.start(R, [1], burn=6)
    for c in ["2C", "3C", "4C", "5C", "6C", "7C"]:
        assert d.expect().to == "burn"
        d = d.deal(c)
    assert d.expect().to == "player"
    with pytest.raises(RoundStateError) as exc:
        BlackjackDeal.start(BlackjackRules(procedure="metal_box", decks=1), [1], burn=1)
    assert code_of(exc) == "BURN_INVALID"


def test_art_5_1_2_a_card_dealt_while_a_decision_is_due_is_a_misdeal() -> None:
    # 56/2004 art. 5 1) 2), art. 6 3): the player decides before the next card.
    d = play(["9S", "6D", "5S"])
    with pytest.raises(Misdeal) as exc:
        d.deal("KC")
    assert code_of(exc) == "MISDEAL_DECISION_DUE"


def test_a_card_seen_more_often_than_the_decks_allow_is_a_misdeal() -> None:
    # 56/2004 art. 1 2): decks of 52 cards; two ace of spades out of one deck is a misread.
    mb = BlackjackRules(procedure="metal_box", decks=1)
    d = play(["AS", "6D"], rules=mb)
    with pytest.raises(Misdeal) as exc:
        d.deal("AS")
    assert code_of(exc) == "MISDEAL_CARD_COUNT"


# -- art. 6: additional cards ------------------------------------------------------------


def test_art_6_1_dealer_draws_on_16_and_stands_on_17_including_soft_17() -> None:
    # 56/2004 art. 6 1): the dealer must draw on 16 or less and may not draw on 17 or more.
    d = play(["TS", "6H", "8D", (1, "stand"), "TC"])
    assert d.expect().to == "dealer"  # 16
    d = d.deal("5D")
    assert d.complete and hand_total(d.dealer) == (21, False)
    soft = play(["TS", "6H", "9D", (1, "stand"), "AC"])  # A+6: soft 17
    assert soft.complete
    with pytest.raises(Misdeal) as exc:
        soft.deal("2C")
    assert code_of(exc) == "MISDEAL_DEALER_STANDS"


def test_art_6_2_and_7_2_a_busted_player_loses_even_if_the_dealer_busts() -> None:
    # 56/2004 art. 6 2), art. 7 2).
    d = play(["TS", "9H", "6H", "6D", "8C", (1, "hit"), "KC", (2, "stand"), "TC", "8D"],
             seats=(1, 2))  # fmt: skip
    assert d.place(1).hands[0].status == "bust"
    assert hand_total(d.dealer)[0] == 24
    assert nets(d, [main(100, 1, "a"), main(100, 2, "b")]) == {"a": -100, "b": 100}


def test_art_6_3_decisions_are_taken_in_turn_from_the_left() -> None:
    # 56/2004 art. 6 3): the first place decides before the second.
    d = play(["TS", "9H", "6H", "6D", "8C"], seats=(1, 2))
    with pytest.raises(RoundStateError) as exc:
        d.decide(2, "stand")
    assert code_of(exc) == "NOT_YOUR_TURN"
    with pytest.raises(RoundStateError) as exc:
        d.decide(1, "stand", hand=1)
    assert code_of(exc) == "NOT_YOUR_TURN"


def test_art_6_4_1_no_card_on_21() -> None:
    # 56/2004 art. 6 4) (1): a 21 stands without a decision.
    d = play(["5S", "9H", "6D", (1, "hit"), "TC"])
    assert d.place(1).hands[0].status == "stood"
    assert d.expect().to == "dealer"
    five = play(["2S", "9H", "3D", (1, "hit"), "2C", (1, "hit"), "4C", (1, "hit"), "TD"])
    assert five.expect().allowed == ("stand", "five_card")  # 21 with five cards, art. 19
    with pytest.raises(RoundStateError) as exc:
        five.decide(1, "hit")
    assert code_of(exc) == "HIT_ON_21"


def test_art_6_4_2_and_17_1_a_double_takes_one_card_only() -> None:
    # 56/2004 art. 6 4) (2), art. 17 1).
    d = play(["5S", "9H", "4D", (1, "double"), "2C"])  # 11 after the double
    h = d.place(1).hands[0]
    assert h.doubled and h.status == "stood" and len(h.cards) == 3
    assert d.expect().to == "dealer"


def test_art_6_4_3_and_16_3_split_aces_take_one_card_each() -> None:
    # 56/2004 art. 6 4) (3), art. 16 3).
    d = play(["AS", "9H", "AD", (1, "split"), "5C", "7D"])
    assert [h.total for h in d.place(1).hands] == [16, 18]
    assert all(h.status == "stood" for h in d.place(1).hands)
    assert d.expect().to == "dealer"


# -- art. 8, 9: values and the comparison ---------------------------------------------


@pytest.mark.parametrize(
    ("cards", "total"),
    [
        ("AS KD", 21),
        ("AS AD", 12),
        ("AS AD 9C", 21),
        ("AS 5D 9C", 15),
        ("KS QD", 20),
        ("AS 6D", 17),
    ],
)
def test_art_8_card_values_ace_one_or_eleven_faces_ten(cards: str, total: int) -> None:
    # 56/2004 art. 8.
    assert hand_total(parse_cards(cards))[0] == total


def test_art_9_more_points_than_the_dealer_wins_fewer_loses() -> None:
    # 56/2004 art. 9.
    d = play(["TS", "9H", "TH", "KD", "6C", (1, "stand"), (2, "stand"), "8C"], seats=(1, 2))
    # seat 1: 20, seat 2: 15 against the dealer's 18
    assert nets(d, [main(100, 1, "a"), main(100, 2, "b")]) == {"a": 100, "b": -100}


# -- art. 10, 11: blackjack, ties --------------------------------------------------------


def test_art_10_2_blackjack_pays_three_to_two() -> None:
    # 56/2004 art. 10 1), 2): 100 x 3/2 = 150.
    d = play(["AS", "9H", "KD", "7C"])
    # every bet is decided; the dealer, on 16, still owes his draw (art. 6 1))
    assert d.decided and d.expect().to == "dealer"
    assert nets(d, [main(100)]) == {"m": 150}
    assert nets(d.deal("5C"), [main(100)]) == {"m": 150}  # art. 10 5): even against 21


def test_art_10_2_odd_stake_three_to_two_goes_through_the_rounding_rule() -> None:
    # 56/2004 art. 10 2): 25 x 3/2 = 37.5; the house never overpays: 37, breakage 1/2.
    d = play(["AS", "9H", "KD", "7C"])
    st = G.settle(R, d, G.parse_bets(R, [main(25)]), M)
    (r,) = st.results
    assert (r.amounts.net, r.amounts.breakage) == (37, Fraction(1, 2))
    st = G.settle(R, d, G.parse_bets(R, [main(2500)]), MoneyRules(payable_unit=100))
    assert st.results[0].amounts.net == 3700  # 3750 rounded down to the MOP 1 chip


@pytest.mark.parametrize("up", ["AH", "KH", "TH"])
def test_art_10_3_even_money_against_ace_ten_or_face_paid_even_if_dealer_has_blackjack(
    up: str,
) -> None:
    # 56/2004 art. 10 3): the player with a blackjack may ask for a prize equal to his bet.
    d = play(["AS", up, "QD"])
    assert "even_money" in d.expect().allowed
    second = "KC" if up == "AH" else "AC"
    d = d.decide(1, "even_money").deal(second)
    assert d.dealer_blackjack
    assert nets(d, [main(100)]) == {"m": 100}


def test_art_10_3_no_even_money_against_other_cards() -> None:
    # 56/2004 art. 10 3): only against an ace, a ten or a face.
    d = play(["AS", "9H", "QD"])
    assert d.place(1).hands[0].status == "stood"  # no decision to take
    bj = Hand(parse_cards("AS QD"))
    why = refusal(R, Card.parse("9H"), bj, 1, False, False, "even_money")
    assert why is not None and why[0] == "EVEN_MONEY_DEALER_CARD"


def test_art_10_4_21_with_more_cards_pays_even_and_ties_a_dealers_21() -> None:
    # 56/2004 art. 10 4), art. 11 2).
    win = play(["5S", "TH", "6D", (1, "hit"), "4C", (1, "hit"), "6H", "9C"])
    assert nets(win, [main(100)]) == {"m": 100}
    tie = play(["5S", "TH", "6D", (1, "hit"), "4C", (1, "hit"), "6H", "5C", "6C"])
    assert hand_total(tie.dealer)[0] == 21
    assert nets(tie, [main(100)]) == {"m": 0}


def test_art_10_5_blackjack_beats_a_dealers_21_of_three_cards() -> None:
    # 56/2004 art. 10 5): 3:2 against the dealer's 21 with more than two cards.
    d = play(["AS", "9H", "6H", "KD", "9D", (2, "stand"), "5C", "TC"], seats=(1, 2))
    assert hand_total(d.dealer)[0] == 21 and not d.dealer_blackjack
    assert nets(d, [main(100, 1, "a"), main(100, 2, "b")]) == {"a": 150, "b": -100}


def test_art_10_6_dealer_blackjack_beats_21_and_a_split_21_is_not_blackjack() -> None:
    # 56/2004 art. 10 6).
    d = play(["5S", "AH", "6D", (1, "hit"), "KC", "KH"])
    assert d.dealer_blackjack
    assert nets(d, [main(100)]) == {"m": -100}
    split = play(["AS", "9H", "AD", (1, "split"), "KC", "5C", "TC"])
    h0, h1 = split.place(1).hands
    assert h0.total == 21 and not h0.blackjack
    assert nets(split, [main(100)]) == {"m": 100, "m.h1": -100}  # 1:1, not 3:2


def test_art_10_7_doubled_loss_limited_to_the_original_stake_option() -> None:
    # 56/2004 art. 10 7) (an option of art. 21).
    script = ["6S", "TH", "5D", (1, "double"), "9C", "AC"]
    d = play(script)
    assert d.dealer_blackjack
    assert nets(d, [main(100)]) == {"m": -100, "m.h0.double": -100}
    lim = BlackjackRules(double_loss_limited=True)
    d = play(script, rules=lim)
    assert nets(d, [main(100)], rules=lim) == {"m": -100, "m.h0.double": 0}


def test_art_11_1_blackjack_against_blackjack_is_a_tie() -> None:
    # 56/2004 art. 11 1).
    d = play(["AS", "AH", "KD", (1, "stand"), "TC"])
    assert nets(d, [main(100)]) == {"m": 0}


def test_art_11_2_equal_points_tie() -> None:
    # 56/2004 art. 11 2).
    d = play(["TS", "9H", "9D", (1, "stand"), "TC"])
    assert nets(d, [main(100)]) == {"m": 0}


# -- art. 12: insurance -----------------------------------------------------------------


def test_art_12_1_and_2_insurance_against_an_ace_pays_two_to_one() -> None:
    # 56/2004 art. 12 1), 2): insurance of 50 on 100 pays 100; the main bet is lost.
    d = play(["9S", "AH", "9D", (1, "insurance", 50)])
    assert "insurance" not in d.expect().allowed  # taken once
    d = d.decide(1, "stand").deal("KC")
    assert nets(d, [main(100)]) == {"m": -100, "m.insurance": 100}


def test_art_12_3_insurance_is_lost_without_dealer_blackjack() -> None:
    # 56/2004 art. 12 3).
    d = play(["9S", "AH", "TD", (1, "insurance", 100), (1, "stand"), "7C"])
    assert nets(d, [main(100)]) == {"m": 100, "m.insurance": -100}


@pytest.mark.parametrize(("amount", "ok"), [(49, False), (50, True), (100, True), (101, False)])
def test_art_12_1_insurance_from_half_to_the_whole_stake(amount: int, ok: bool) -> None:
    # 56/2004 art. 12 1): from half to the whole original stake.
    d = play(["9S", "AH", "TD", (1, "insurance", amount), (1, "stand"), "7C"])
    if ok:
        assert nets(d, [main(100)])["m.insurance"] == -amount
    else:
        with pytest.raises(BetError) as exc:
            nets(d, [main(100)])
        assert code_of(exc) == "INSURANCE_AMOUNT"


def test_insurance_is_a_whole_number_of_the_payable_unit_at_every_door(tmp_path: Any) -> None:
    """docs/rules/money.md: a stake that is not a whole number of the table's payable unit
    is refused at every door; insurance is staked by a decision, so its amount too. With
    payable_unit 100 (MOP 1.00), insurance of 1001 on a main bet of 2000 (within half to
    the whole stake, 56/2004 art. 12 1)) would pay 2002 (twice its value, art. 12 2)):
    refused; 1000 pays 2000 (an independent count: 1000 x 2)."""
    unit = MoneyRules(payable_unit=100)
    bets = [main(2000)]
    # tablectl settle's door: the rules core's settlement with the table's money rules.
    d = play(["9S", "AH", "TD", (1, "insurance", 1001), (1, "stand"), "TC"])
    with pytest.raises(BetError) as exc:
        nets(d, bets, money=unit)
    assert code_of(exc) == "BET_STAKE_PAYABLE_UNIT"
    d = play(["9S", "AH", "TD", (1, "insurance", 1000), (1, "stand"), "TC"])
    assert nets(d, bets, money=unit)["m.insurance"] == 1000 * 2
    # The live door: the decision over the shoe procedure (MQTT or console).
    from firmware_host.games.base import Limits

    limits = Limits(min_stake=100, payable_unit=100)
    with pytest.raises(BetError) as exc:
        limits.check_payable("insurance", 1001)
    assert code_of(exc) == "BET_STAKE_PAYABLE_UNIT"
    limits.check_payable("insurance", 1000)


def test_art_12_1_house_range_of_insurance_is_configured() -> None:
    # 56/2004 art. 12 1) with art. 21: the house may accept, e.g., only the half.
    half = BlackjackRules(insurance_max=Fraction(1, 2))
    d = play(["9S", "AH", "TD", (1, "insurance", 60), (1, "stand"), "7C"], rules=half)
    with pytest.raises(BetError):
        nets(d, [main(100)], rules=half)
    with pytest.raises(ConfigInvalid) as exc:
        validate_document({"table": {"id": "bj", "game": "blackjack"},
                           "rules": {"blackjack": {"insurance_min": "1/3"}}})  # fmt: skip
    assert any("56/2004 art. 12 1)" in e for e in exc.value.errors)


def test_art_12_1_insurance_only_against_an_ace_and_before_deciding() -> None:
    # 56/2004 art. 12 1).
    d = play(["9S", "TH", "5D"])
    with pytest.raises(RoundStateError) as exc:
        d.decide(1, "insurance", amount=50)
    assert code_of(exc) == "INSURANCE_NOT_ACE"
    d = play(["2S", "AH", "3D", (1, "hit"), "2C"])
    with pytest.raises(RoundStateError) as exc:
        d.decide(1, "insurance", amount=50)
    assert code_of(exc) == "INSURANCE_TOO_LATE"


def test_art_12_2_dealer_blackjack_collects_splits_and_doubles() -> None:
    # 56/2004 art. 12 2): the dealer collects every bet without a blackjack.
    d = play(["8S", "TH", "8D", (1, "split"), "3C", (1, "double"), "5D", "KC", (1, "stand"), "AC"])
    assert d.dealer_blackjack
    assert nets(d, [main(100)]) == {"m": -100, "m.h0.double": -100, "m.h1": -100}


# -- art. 13, 14: side bets ----------------------------------------------------------------


def test_art_13_1_any_pair_pays_eleven_to_one_same_rank_only() -> None:
    # 56/2004 art. 13 1) (1), art. 14 1): J and J are a pair, J and Q are not.
    jj = play(["JS", "5H", "JD", (1, "stand"), "TC", "2C"])
    assert nets(jj, [main(), side("pair", 100)])["s"] == 1100
    jq = play(["JS", "5H", "QD", (1, "stand"), "TC", "2C"])
    assert nets(jq, [main(), side("pair", 100)])["s"] == -100


def test_art_13_1_2_later_pairs_after_a_split_are_pairs_too() -> None:
    # 56/2004 art. 13 1) (2): the second and third pairs after splits pay again.
    d = play(["8S", "5H", "8D", (1, "split"), "8C", (1, "stand"), "8H", (1, "stand"), "TC", "TD"])
    assert d.place(1).pairs == 3
    assert nets(d, [main(), side("pair", 100)])["s"] == 3 * 1100


@pytest.mark.parametrize(
    ("script", "odds"),
    [
        (["7S", "5H", "7H", (1, "stand"), "TC", "2C"], 50),  # two 7s, different suits
        (["7S", "5H", "7S", (1, "stand"), "TC", "2C"], 150),  # two 7s of one suit
        (["7S", "5H", "7D", (1, "split"), "7C", (1, "stand"), "2D", (1, "stand"), "TC", "2C"], 500),
        (
            ["7S", "5H", "7S", (1, "split"), "7S", (1, "stand"), "2D", (1, "stand"), "TC", "2C"],
            5000,
        ),
        (["7S", "5H", "8S", (1, "stand"), "TC", "2C"], -1),
    ],
)
def test_art_13_2_and_14_2_sevens_only_the_highest_combination(
    script: list[Step], odds: int
) -> None:
    # 56/2004 art. 13 2), art. 14 2): 50 / 150 / 500 / 5000, only the highest pays.
    d = play(script)
    assert nets(d, [main(), side("sevens", 10)])["s"] == 10 * odds


def test_art_13_2_2_three_sevens_need_the_split() -> None:
    # 56/2004 art. 13 2) (2): three 7s are "two 7s ... then split" and a third 7.
    # Without the split a third 7 gives the special prize on the hand (art. 15), but
    # the sevens bet pays the two-7s combination only.
    d = play(["7S", "5H", "7D", (1, "hit"), "7C", "TC"])
    assert nets(d, [main(), side("sevens", 10)]) == {"m": 300, "s": 500}


@pytest.mark.parametrize(
    ("first_two", "over", "under"),
    [("TS 4D", 100, -100), ("TS 3D", -100, -100), ("TS 2D", -100, 100), ("AS KD", -100, 100)],
)
def test_art_13_3_and_14_3_over_under_13_even_money(first_two: str, over: int, under: int) -> None:
    # 56/2004 art. 13 3), art. 14 3): 13 itself loses both ways; an ace counts one.
    a, b = first_two.split()
    d = BlackjackDeal.start(R, [1]).deal(a).deal("5H").deal(b)
    while not d.complete:
        e = d.expect()
        d = d.deal("TC") if e.kind == "card" else d.decide(1, "stand")
    got = nets(d, [main(), side("over_under_13", 100, selection="over", bet_id="o"),
                   side("over_under_13", 100, selection="under", bet_id="u")])  # fmt: skip
    assert (got["o"], got["u"]) == (over, under)


def test_side_bets_not_offered_are_refused() -> None:
    # 56/2004 art. 21: the side bets of art. 13 are house options.
    no = BlackjackRules(any_pair=False, sevens=False, over_under_13=False)
    assert {bt.name for bt in G.bet_types(no)} == {"main", "split", "double", "insurance"}
    with pytest.raises(BetError):
        G.parse_bets(no, [side("pair")])


# -- art. 15: special prize -------------------------------------------------------------


def test_art_15_suited_678_paid_three_times_at_once_even_against_an_ace() -> None:
    # 56/2004 art. 15: three times the stake, at once, even if the dealer shows an ace.
    d = play(["6S", "AH", "7S", (1, "hit"), "8S"])
    assert d.place(1).hands[0].status == "special"
    d = d.deal("KC")
    assert d.dealer_blackjack
    assert nets(d, [main(100)]) == {"m": 300}


def test_art_15_three_sevens_of_any_suits_and_unsuited_678_is_plain_21() -> None:
    # 56/2004 art. 15.
    d = play(["7S", "9H", "7D", (1, "hit"), "7C", "TC"])
    assert nets(d, [main(100)]) == {"m": 300}
    d = play(["6S", "9H", "7S", (1, "hit"), "8D", "TC"])
    assert nets(d, [main(100)]) == {"m": 100}  # 21 against 19
    off = BlackjackRules(special_prize=False)
    d = play(["7S", "9H", "7D", (1, "hit"), "7C", "TC"], rules=off)
    assert nets(d, [main(100)], rules=off) == {"m": 100}


# -- art. 16: splitting ------------------------------------------------------------------


def test_art_16_1_split_up_to_four_hands() -> None:
    # 56/2004 art. 16 1): up to four hands (the house may allow more).
    d = play(["8S", "5H", "8D", (1, "split"), "8C", (1, "split"), "8H", (1, "split"), "8S"])
    assert len(d.place(1).hands) == 4
    with pytest.raises(RoundStateError) as exc:
        d.decide(1, "split")
    assert code_of(exc) == "SPLIT_MAX_HANDS"
    five = BlackjackRules(max_split_hands=5)
    d = play(["8S", "5H", "8D", (1, "split"), "8C", (1, "split"), "8H", (1, "split"), "8S",
              (1, "split")], rules=five)  # fmt: skip
    assert len(d.place(1).hands) == 5


def test_art_16_1_only_a_pair_of_the_same_rank_splits() -> None:
    # 56/2004 art. 16 1) with the pair of art. 13 1) (1): K and Q are not a pair.
    d = play(["KS", "5H", "QD"])
    assert "split" not in d.expect().allowed
    with pytest.raises(RoundStateError) as exc:
        d.decide(1, "split")
    assert code_of(exc) == "SPLIT_NOT_PAIR"


def test_art_16_2_each_split_hand_stakes_the_original_bet() -> None:
    # 56/2004 art. 16 2).
    d = play(["9S", "5H", "9D", (1, "split"), "TC", (1, "stand"), "9H", (1, "stand"), "TD", "TH"])
    st = G.settle(R, d, G.parse_bets(R, [main(300)]), M)
    assert [(r.bet.bet_type, r.bet.stake, r.amounts.net) for r in st.results] == [
        ("main", 300, 300),
        ("split", 300, 300),
    ]


def test_art_16_3_aces_may_be_resplit_and_take_no_other_card() -> None:
    # 56/2004 art. 16 3): aces split once or more; one card for each ace.
    d = play(["AS", "5H", "AD", (1, "split"), "AC"])
    assert d.expect().allowed == ("stand", "split")
    with pytest.raises(RoundStateError) as exc:
        d.decide(1, "hit")
    assert code_of(exc) == "HIT_SPLIT_ACES"
    once = BlackjackRules(resplit_aces=False)
    d = play(["AS", "5H", "AD", (1, "split"), "AC"], rules=once)
    assert (d.expect().to, d.expect().hand) == ("player", 1)  # hand 0 stood on A-A
    assert d.place(1).hands[0].status == "stood"


def test_art_16_4_other_split_pairs_draw_freely() -> None:
    # 56/2004 art. 16 4).
    d = play(["4S", "5H", "4D", (1, "split"), "2C", (1, "hit"), "3C", (1, "hit"), "2D"])
    assert d.expect().kind == "decision" and len(d.place(1).hands[0].cards) == 4


def test_art_16_5_resplit_unless_a_split_was_declined() -> None:
    # 56/2004 art. 16 5): a further split, "unless he already decided not to split".
    d = play(["8S", "5H", "8D", (1, "split"), "8C", (1, "stand"), "8H"])
    with pytest.raises(RoundStateError) as exc:
        d.decide(1, "split")
    assert code_of(exc) == "SPLIT_DECLINED_EARLIER"
    no = BlackjackRules(resplit=False)
    d = play(["8S", "5H", "8D", (1, "split"), "8C"], rules=no)
    with pytest.raises(RoundStateError) as exc:
        d.decide(1, "split")
    assert code_of(exc) == "RESPLIT_NOT_ALLOWED"


# -- art. 17: doubling --------------------------------------------------------------------


def test_art_17_1_double_on_any_two_cards_and_after_a_split() -> None:
    # 56/2004 art. 17 1).
    assert "double" in play(["TS", "5H", "6D"]).expect().allowed  # 16
    d = play(["9S", "5H", "9D", (1, "split"), "2C"])
    assert "double" in d.expect().allowed
    d = play(["5S", "5H", "4D", (1, "hit"), "2C"])
    with pytest.raises(RoundStateError) as exc:
        d.decide(1, "double")
    assert code_of(exc) == "DOUBLE_NOT_TWO_CARDS"


def test_art_17_2_double_only_on_eleven() -> None:
    # 56/2004 art. 17 2).
    el = BlackjackRules(double="eleven")
    d = play(["5S", "6H", "5D"], rules=el)  # 10
    with pytest.raises(RoundStateError) as exc:
        d.decide(1, "double")
    assert code_of(exc) == "DOUBLE_ELEVEN_ONLY"
    d = play(["5S", "6H", "6D", (1, "double"), "TC"], rules=el)
    assert d.place(1).hands[0].doubled


# -- art. 18: surrender ---------------------------------------------------------------------


def test_art_18_1_surrender_loses_half() -> None:
    # 56/2004 art. 18 1): 100 -> loses 50; 25 -> 12.5, rounded against the player: 13.
    d = play(["TS", "TH", "6D", (1, "surrender"), "AC"])
    assert d.dealer_blackjack  # decided before: the half is all that is lost
    assert nets(d, [main(100)]) == {"m": -50}
    assert nets(d, [main(25)]) == {"m": -13}


def test_art_18_1_no_surrender_against_an_ace() -> None:
    # 56/2004 art. 18 1).
    d = play(["TS", "AH", "6D"])
    with pytest.raises(RoundStateError) as exc:
        d.decide(1, "surrender")
    assert code_of(exc) == "SURRENDER_AGAINST_ACE"


def test_art_18_2_surrender_before_any_additional_card() -> None:
    # 56/2004 art. 18 2).
    d = play(["5S", "TH", "4D", (1, "hit"), "3C"])
    with pytest.raises(RoundStateError) as exc:
        d.decide(1, "surrender")
    assert code_of(exc) == "SURRENDER_TOO_LATE"
    d = play(["8S", "TH", "8D", (1, "split"), "5C"])
    with pytest.raises(RoundStateError) as exc:
        d.decide(1, "surrender")
    assert code_of(exc) == "SURRENDER_TOO_LATE"


# -- art. 19: five cards ---------------------------------------------------------------------

FIVE = ["2S", "TH", "3D", (1, "hit"), "2C", (1, "hit"), "3C", (1, "hit"), "2D"]  # 12 in 5 cards


def test_art_19_1_five_cards_take_half_the_stake() -> None:
    # 56/2004 art. 19 1): a prize equal to half the stake, even if the dealer then
    # has blackjack.
    d = play(FIVE)
    assert "five_card" in d.expect().allowed
    d = d.decide(1, "five_card").deal("AC")
    assert d.dealer_blackjack
    assert nets(d, [main(100)]) == {"m": 50}
    assert nets(d, [main(25)]) == {"m": 12}  # 12.5 rounded down


def test_art_19_2_no_five_cards_against_an_ace_or_when_not_offered() -> None:
    # 56/2004 art. 19 2), art. 21.
    d = play(["2S", "AH", "3D", (1, "hit"), "2C", (1, "hit"), "3C", (1, "hit"), "2D"])
    with pytest.raises(RoundStateError) as exc:
        d.decide(1, "five_card")
    assert code_of(exc) == "FIVE_CARD_AGAINST_ACE"
    off = BlackjackRules(five_card=False)
    d = play(FIVE, rules=off)
    with pytest.raises(RoundStateError) as exc:
        d.decide(1, "five_card")
    assert code_of(exc) == "FIVE_CARD_NOT_OFFERED"
    d = play(FIVE[:-2])  # four cards
    with pytest.raises(RoundStateError) as exc:
        d.decide(1, "five_card")
    assert code_of(exc) == "FIVE_CARD_NOT_FIVE"


# -- art. 20: several bettors on one place -----------------------------------------------


def _bets(*specs: tuple[str, int, Any]) -> list[Any]:
    return G.parse_bets(R, [{"bet_id": b, "seat": 1, "bet_type": "main", "stake": s, "selection": sel}
                            for b, s, sel in specs])  # fmt: skip


@pytest.mark.parametrize(("option", "expected"), [(1, "seated"), (2, "seated"), (3, "big")])
def test_art_20_1_who_decides_for_a_shared_place(option: int, expected: str) -> None:
    # 56/2004 art. 20 1) (1)-(3): the seated player, or the largest stake.
    bets = _bets(("seated", 100, None), ("big", 500, "standing"), ("small", 50, "standing"))
    assert deciders(BlackjackRules(shared_place=option), bets) == {1: expected}


def test_art_20_1_3_equal_stakes_the_seated_player_decides() -> None:
    # 56/2004 art. 20 1) (3).
    bets = _bets(("back", 500, "standing"), ("seated", 500, None))
    assert deciders(BlackjackRules(shared_place=3), bets) == {1: "seated"}


def test_art_20_1_2_at_most_three_bettors_or_fewer() -> None:
    # 56/2004 art. 20 1) (2).
    bets = _bets(("a", 100, None), ("b", 100, "standing"), ("c", 100, "standing"))
    with pytest.raises(BetError) as exc:
        deciders(BlackjackRules(shared_place=2, place_limit=2), bets)
    assert code_of(exc) == "PLACE_FULL"


def test_art_20_every_bettor_on_a_place_follows_its_decisions() -> None:
    # 56/2004 art. 20 1): the decider's double doubles every bet on the place; each
    # bettor insures his own bet.
    d = play(["6S", "AH", "5D", (1, "insurance", 50, "a"), (1, "insurance", 20, "b"),
              (1, "double"), "9C", "7C"])  # fmt: skip
    bets = [main(100, 1, "a"), {**main(40, 1, "b"), "selection": "standing"}]
    got = nets(d, bets)
    assert got == {"a": 100, "a.h0.double": 100, "a.insurance": -50,
                   "b": 40, "b.h0.double": 40, "b.insurance": -20}  # fmt: skip
    st = G.settle(R, d, G.parse_bets(R, bets), M)
    assert st.extras["deciders"] == {"1": "a"}


def test_art_20_insurance_on_a_shared_place_must_name_its_bet() -> None:
    d = play(["6S", "AH", "5D", (1, "insurance", 50), (1, "stand"), "7C"])
    with pytest.raises(BetError) as exc:
        nets(d, [main(100, 1, "a"), {**main(40, 1, "b"), "selection": "standing"}])
    assert code_of(exc) == "INSURANCE_BET_AMBIGUOUS"


# -- art. 21: the options and their authorised ranges -----------------------------------


@pytest.mark.parametrize(
    ("section", "key", "value", "cite"),
    [
        ("rules", "max_split_hands", 3, "56/2004 art. 16 1)"),
        ("rules", "double", "nine_ten_eleven", "56/2004 art. 17"),
        ("rules", "insurance_max", "3/2", "56/2004 art. 12 1)"),
        ("rules", "procedure", "pitch", "56/2004 art. 5 2)"),
        ("rules", "shared_place", 4, "56/2004 art. 20 1)"),
        ("rules", "burn", "two", "56/2004 art. 4 2)"),
        ("pay_table", "special_prize", "yes", ""),
    ],
)
def test_art_21_options_outside_the_text_are_refused_with_their_article(
    section: str, key: str, value: Any, cite: str
) -> None:
    doc = {"table": {"id": "bj", "game": "blackjack"}, section: {"blackjack": {key: value}}}
    with pytest.raises(ConfigInvalid) as exc:
        validate_document(doc)
    (err,) = exc.value.errors
    assert f"{section}.blackjack.{key}" in err and cite in err


# -- outcomes and settlement errors ---------------------------------------------------------


def test_outcome_replay_refuses_incomplete_and_extra_input() -> None:
    base = {
        "seats": [1],
        "cards": ["9S", "6H", "KD", "TC", "5C"],
        "decisions": [{"seat": 1, "action": "stand"}],
    }
    assert G.parse_outcome(R, base).complete
    with pytest.raises(OutcomeError) as exc:
        G.parse_outcome(R, {**base, "cards": base["cards"][:-1]})
    assert code_of(exc) == "ROUND_INCOMPLETE"
    with pytest.raises(OutcomeError) as exc:
        G.parse_outcome(R, {**base, "cards": [*base["cards"], "2C"]})
    assert code_of(exc) == "MISDEAL_DEALER_STANDS"
    with pytest.raises(OutcomeError) as exc:
        G.parse_outcome(
            R, {**base, "decisions": [*base["decisions"], {"seat": 1, "action": "hit"}]}
        )
    assert code_of(exc) == "OUTCOME_EXTRA_DECISIONS"
    with pytest.raises(OutcomeError) as exc:
        G.parse_outcome(R, {**base, "decisions": [{"seat": 1, "action": "split"}]})
    assert code_of(exc) == "SPLIT_NOT_PAIR"
    published = G.outcome_json(G.parse_outcome(R, base))
    published["dealer"] = {**published["dealer"], "total": 20}
    with pytest.raises(OutcomeError) as exc:
        G.parse_outcome(R, published)
    assert code_of(exc) == "OUTCOME_MISMATCH"


def test_settlement_refuses_bets_that_do_not_match_the_round() -> None:
    d = play(["9S", "6H", "KD", (1, "stand"), "TC", "5C"])
    with pytest.raises(BetError) as exc:
        nets(d, [main(100), main(100, 2, "x")])
    assert code_of(exc) == "BET_SEAT_NOT_DEALT"
    with pytest.raises(BetError) as exc:
        nets(d, [side("pair")])
    assert code_of(exc) == "SEAT_WITHOUT_MAIN_BET"
    with pytest.raises(BetError) as exc:
        G.parse_bets(R, [{"seat": 1, "bet_type": "double", "stake": 100}])
    assert code_of(exc) == "BET_FROM_DECISION"


def test_decisions_after_completion_and_unknown_actions_are_refused() -> None:
    d = play(["9S", "6H", "KD", (1, "stand"), "TC", "5C"])
    with pytest.raises(RoundStateError) as exc:
        d.decide(1, "hit")
    assert code_of(exc) == "DECISION_NOT_DUE"
    d = play(["9S", "6H", "5D"])
    with pytest.raises(RoundStateError) as exc:
        d.decide(1, "fold")
    assert code_of(exc) == "ACTION_UNKNOWN"
    with pytest.raises(RoundStateError) as exc:
        d.outcome()
    assert code_of(exc) == "ROUND_INCOMPLETE"


def test_art_15_special_prize_on_a_doubled_hand_pays_on_the_whole_stake() -> None:
    # 56/2004 art. 15 ("three times his bet"): a double (art. 17 1)) on 6-7 that
    # draws the suited 8 is paid 3:1 on both stakes.
    d = play(["6S", "9H", "7S", (1, "double"), "8S", "TC"])
    assert d.place(1).hands[0].status == "special"
    assert nets(d, [main(100)]) == {"m": 300, "m.h0.double": 300}


def test_art_4_1_the_first_burn_count_is_recorded_and_replayed() -> None:
    # 56/2004 art. 4 1) 2): one burn card before the first round of the shoe.
    d = play(["2C", "9S", "6H", "KD", (1, "stand"), "TC", "5C"], burn=1)
    data = d.to_json()
    assert data["burn"] == 1 and data["cards"][0] == "2C"
    assert BlackjackDeal.from_json(R, data) == d
    assert nets(G.parse_outcome(R, data), [main(100)]) == {"m": -100}  # 19 against 21


def test_insurance_decisions_must_match_the_bets_of_the_place() -> None:
    # 56/2004 art. 12 1): one insurance per original bet, on a bet of that place.
    d = play(["9S", "AH", "TD", (1, "insurance", 50, "zz"), (1, "stand"), "7C"])
    with pytest.raises(BetError) as exc:
        nets(d, [main(100)])
    assert code_of(exc) == "INSURANCE_BET_UNKNOWN"
    d = play(
        ["9S", "AH", "TD", (1, "insurance", 50), (1, "insurance", 50, "m"), (1, "stand"), "7C"]
    )
    with pytest.raises(BetError) as exc:
        nets(d, [main(100)])
    assert code_of(exc) == "INSURANCE_ALREADY"


def test_art_20_one_seated_player_per_place() -> None:
    # 56/2004 art. 20 1): one player sits at a place; the others stand.
    d = play(["9S", "6H", "KD", (1, "stand"), "TC", "5C"])
    with pytest.raises(BetError) as exc:
        nets(d, [main(100, 1, "a"), main(100, 1, "b")])
    assert code_of(exc) == "PLACE_TWO_SEATED"


def test_art_6_1_the_dealer_draws_on_16_even_with_every_hand_busted() -> None:
    # 56/2004 art. 6 1): "A banca é obrigada a tomar cartas quando o total dos seus pontos
    # for 16 ou inferior" -- no exception. The audit's round: seat TS 5S hits TC and busts;
    # the dealer has 6H TD = 16; the card 2C he is obliged to draw was refused as
    # MISDEAL_ROUND_COMPLETE. It is accepted; a card after he must stand is refused.
    d = play(["TS", "6H", "5S", (1, "hit"), "TC", "TD"])
    assert hand_total(d.dealer)[0] == 16 and not d.complete
    assert d.expect().to == "dealer" and d.decided  # no bet depends on the draw
    before = nets(d, [main(100)])
    d = d.deal("2C")
    assert d.complete and hand_total(d.dealer)[0] == 18
    assert nets(d, [main(100)]) == before == {"m": -100}  # art. 7 2): the bust loses
    with pytest.raises(Misdeal) as exc:
        d.deal("5C")
    assert code_of(exc) == "MISDEAL_DEALER_STANDS"


def test_art_6_1_a_round_recorded_without_the_draws_no_hand_awaits_still_settles() -> None:
    # Rounds journaled before this rule stop at the dealer's second card when every hand
    # has busted; replayed, they settle exactly as the full round does.
    short = {"seats": [1], "cards": ["TS", "6H", "5S", "TC", "TD"],
             "decisions": [{"seat": 1, "action": "hit"}]}  # fmt: skip
    full = {**short, "cards": [*short["cards"], "2C"]}
    bets = G.parse_bets(R, [main(100)])
    a = G.settle(R, G.parse_outcome(R, short), bets, M)
    b = G.settle(R, G.parse_outcome(R, full), bets, M)
    assert [r.amounts for r in a.results] == [r.amounts for r in b.results]
    # but a round that stops while a hand still waits for the dealer's total is refused
    with pytest.raises(OutcomeError) as exc:
        G.parse_outcome(R, {"seats": [1], "cards": ["TS", "6H", "7S", "TD"],
                            "decisions": [{"seat": 1, "action": "stand"}]})  # fmt: skip
    assert code_of(exc) == "ROUND_INCOMPLETE"
