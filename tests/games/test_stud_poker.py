"""Stud poker, 61/2004: card and hand order (art. 4, 8), betting (art. 6), dealing
(art. 7), croupier qualification and the pay table (art. 9), irregularities
(art. 11), the authorised royal flush odds (art. 13), and the simulated math."""

from __future__ import annotations

import itertools
from collections import Counter
from fractions import Fraction

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from firmware_host.config import ConfigInvalid, validate_document
from firmware_host.games.cards import Card, deck, parse_cards
from firmware_host.games.errors import BetError, Misdeal, OutcomeError, RoundStateError, RulesError
from firmware_host.games.money import MoneyRules
from firmware_host.games.stud_poker import GAME, StudDeal, StudPokerRules
from firmware_host.games.stud_poker.hands import (
    card_code,
    category,
    category_name,
    compare,
    hand_value,
    hand_value_codes,
    qualifies,
)
from firmware_host.games.stud_poker.simulate import raises

RULES = StudPokerRules()
MONEY = MoneyRules()
DECK = list(deck())

# -- an independent transcription of art. 4 and art. 8 (for hands of one deck) ------------

FACE = {1: 14, 13: 13, 12: 12, 11: 11}  # art. 4 2): A, K, Q, J, 10 .. 2
SUIT = {"S": 4, "H": 3, "C": 2, "D": 1}  # art. 4 1): spades, hearts, clubs, diamonds


def face(c: Card) -> int:
    return FACE.get(c.rank, c.rank)


def art8_key(hand: list[Card]) -> tuple:
    """(category, ranks that decide, suit that decides next), art. 8 1)-10)."""
    vals = sorted((face(c) for c in hand), reverse=True)
    counts = Counter(vals)
    flush = len({c.suit for c in hand}) == 1
    straight_high = None
    if len(counts) == 5 and vals[0] - vals[4] == 4:
        straight_high = vals[0]
    if vals == [14, 5, 4, 3, 2]:  # art. 4 3): the ace is lowest in 5-4-3-2-A
        straight_high = 5

    def top_suit(rank: int) -> int:
        return max(SUIT[c.suit] for c in hand if face(c) == rank)

    if flush and straight_high == 14:
        return (9, (), SUIT[hand[0].suit])  # 1) royal: the higher suit
    if flush and straight_high:
        return (8, (straight_high,), SUIT[hand[0].suit])  # 2) ranks, then suit
    by_count = sorted(counts.items(), key=lambda rc: (-rc[1], -rc[0]))
    shape = [n for _, n in by_count]
    ranks = [r for r, _ in by_count]
    if shape == [4, 1]:
        return (7, (ranks[0],), 0)  # 3) the odd card does not count
    if shape == [3, 2]:
        return (6, (ranks[0],), 0)  # 4) the three cards decide
    if flush:
        return (5, tuple(vals), SUIT[hand[0].suit])  # 5) card by card, then suit
    if straight_high:
        return (4, (straight_high,), top_suit(straight_high))  # 6) suit of the highest card
    if shape == [3, 1, 1]:
        return (3, (ranks[0],), 0)  # 7) the three cards decide
    if shape == [2, 2, 1]:
        return (2, tuple(ranks), top_suit(ranks[0]))  # 8) pairs, odd card, suit of the higher pair
    if shape == [2, 1, 1, 1]:
        return (1, tuple(ranks), top_suit(ranks[0]))  # 9) pair, odd cards, suit of the pair
    return (0, tuple(vals), top_suit(vals[0]))  # 10) card by card, suit of the highest


def art8_compare(a: list[Card], b: list[Card]) -> int:
    ka, kb = art8_key(a), art8_key(b)
    return (ka > kb) - (ka < kb)


def sign(a: list[Card], b: list[Card]) -> int:
    return compare(a, b)


hands_st = st.permutations(DECK).map(lambda p: (list(p[:5]), list(p[5:10])))


@settings(max_examples=700, deadline=None)
@given(hands_st)
def test_two_hands_of_one_deal_compare_as_art_8_says_and_never_tie(hands) -> None:
    # 61/2004 art. 8, with the art. 4 suit order: hands dealt together never tie
    a, b = hands
    expected = art8_compare(a, b)
    assert expected != 0
    assert sign(a, b) == expected


DERANGEMENTS = [
    p
    for p in itertools.permutations("SHCD")
    if all(x != y for x, y in zip(p, "SHCD", strict=False))
]


@settings(max_examples=700, deadline=None)
@given(st.permutations(DECK), st.sampled_from(DERANGEMENTS))
def test_same_ranks_different_suits_are_decided_by_suit_art_4_8(perm, sigma) -> None:
    # the hands art. 8's suit rules are for: same ranks, other suits, no common card
    a = list(perm[:5])
    swap = dict(zip("SHCD", sigma, strict=False))
    b = [Card(c.rank, swap[c.suit]) for c in a]
    assume(not set(a) & set(b))
    expected = art8_compare(a, b)
    assert expected != 0
    assert sign(a, b) == expected


@settings(max_examples=500, deadline=None)
@given(
    st.lists(st.sampled_from(DECK), min_size=5, max_size=5, unique=True),
    st.lists(st.sampled_from(DECK), min_size=5, max_size=5, unique=True),
    st.lists(st.sampled_from(DECK), min_size=5, max_size=5, unique=True),
)
def test_hands_form_a_strict_total_order(a, b, c) -> None:
    # strict: only the same five cards are equal; total and transitive (art. 8 + extension)
    va, vb, vc = hand_value(a), hand_value(b), hand_value(c)
    assert (va == vb) == (set(a) == set(b))
    # the low 52 bits are the hand itself, so the value is injective over all hands
    assert va & ((1 << 52) - 1) == sum(1 << card_code(x) for x in a)
    if va < vb and vb < vc:
        assert va < vc
    assert compare(a, b) == -compare(b, a)


def test_the_categories_count_right_art_8() -> None:
    # art. 8: the ten categories; counts out of C(52, 5) are the classical ones
    counts = Counter(
        hand_value_codes(*combo) >> 69 for combo in itertools.combinations(range(52), 5)
    )
    assert [counts[k] for k in range(10)] == [
        1_302_540,
        1_098_240,
        123_552,
        54_912,
        10_200,
        5_108,
        3_744,
        624,
        36,
        4,
    ]


def h(text: str) -> list[Card]:
    return list(parse_cards(text))


@pytest.mark.parametrize(
    ("better", "worse", "article"),
    [
        ("AS KS QS JS TS", "AH KH QH JH TH", "art. 8 1): royal flushes: the higher suit"),
        ("KD QD JD TD 9D", "5S 4S 3S 2S AS", "art. 8 2): K-Q-J-10-9 highest, 5-4-3-2-A lowest"),
        ("9H 8H 7H 6H 5H", "9C 8C 7C 6C 5C", "art. 8 2): same ranks, hearts beat clubs"),
        ("3S 3H 3C 3D 2S", "2H 2C 2D 2S AS", "art. 8 3): four of a kind by rank"),
        ("4S 4H 4C 2D 2S", "3H 3C 3D AS AH", "art. 8 4): full house by the three cards"),
        ("TS 9S 7S 5S 2S", "TH 9H 7H 5H 2H", "art. 8 5): equal flush ranks, spades win"),
        ("TD 9D 7D 5D 3D", "TC 9C 7C 5C 2C", "art. 8 5): second card ... fifth card"),
        ("TH 9H 8H 7H 6S", "TD 9C 8C 7C 6C", "art. 8 6): straights: suit of the 10"),
        ("6D 5D 4D 3D 2C", "5S 4S 3S 2S AH", "art. 8 6): 6-high beats 5-4-3-2-A"),
        ("KS KH KC 6D 5S", "QS QH QC AS KD", "art. 8 7): three of a kind by the three cards"),
        ("TS TH 6C 6D 5S", "TC TD 6S 6H 5H", "art. 8 8): equal two pairs: suit of the higher pair"),
        ("TS TH 6C 6D 5S", "TC TD 6S 6H 4H", "art. 8 8): the odd card before suits"),
        (
            "TS TH 9C 7D 6S",
            "TC TD 9S 7H 6H",
            "art. 8 9): equal pairs and odd cards: suit of the pair",
        ),
        ("TC TD 9S 7H 6H", "TS TH 9C 7D 5S", "art. 8 9): odd cards before suits"),
        ("AC KS 8D 5D 3S", "AD KC 8S 5H 3C", "art. 8 10): equal ranks: suit of the highest card"),
    ],
)
def test_regulation_examples_art_8(better: str, worse: str, article: str) -> None:
    assert sign(h(better), h(worse)) == 1, article
    assert art8_compare(h(better), h(worse)) == 1, article


def test_category_examples_art_8() -> None:
    # the examples the text gives for each category
    assert category_name(hand_value(h("TS 9S 7S 5S 2S"))) == "flush"  # 5)
    assert category_name(hand_value(h("6S 7H 8C 9D TS"))) == "straight"  # 6)
    assert category_name(hand_value(h("KS KH KC 6D 5S"))) == "three_of_a_kind"  # 7)
    assert category_name(hand_value(h("TS TH 6C 6D 5S"))) == "two_pairs"  # 8)
    assert category_name(hand_value(h("TS TH 9C 7D 6S"))) == "one_pair"  # 9)
    assert category_name(hand_value(h("AS KH QC JD 9S"))) == "high_card"  # 10)
    assert category_name(hand_value(h("5S 4H 3C 2D AS"))) == "straight"  # art. 4 3)


@pytest.mark.parametrize(
    ("cards", "opens"),
    [
        ("AS KH 4C 3D 2S", True),  # art. 9 1): at least an ace and a king
        ("AS KH QC JD 9S", True),
        ("AS QH JC 9D 8S", False),  # ace without a king
        ("KS QH JC 9D 8S", False),
        ("2S 2H 5C 7D 9S", True),  # any pair is better than ace-king
        ("5S 4H 3C 2D AS", True),  # a straight (ace low) too
    ],
)
def test_croupier_qualifies_with_ace_king_or_better_art_9_1(cards: str, opens: bool) -> None:
    assert qualifies(hand_value(h(cards))) is opens


# -- settlement, art. 6 and 9 -------------------------------------------------------------

DEALER_AK = "AS KD 7C 4S 2S"  # qualifies: ace-king high
DEALER_NO = "QS JD 7C 4S 2D"  # does not qualify


def outcome(dealer: str, **seats: tuple[str, str]) -> dict:
    return {
        "dealer": dealer.split(),
        "seats": {k.lstrip("s"): {"cards": c.split(), "action": a} for k, (c, a) in seats.items()},
    }


def bets_for(seat: int, ante: int, raised: bool, jackpot: bool = False) -> list[dict]:
    out = [{"seat": seat, "bet_type": "ante", "stake": ante, "bet_id": f"a{seat}"}]
    if raised:
        out.append({"seat": seat, "bet_type": "raise", "stake": 2 * ante, "bet_id": f"r{seat}"})
    if jackpot:
        out.append(
            {
                "seat": seat,
                "bet_type": "jackpot",
                "stake": RULES.jackpot_stake,
                "bet_id": f"j{seat}",
            }
        )
    return out


def settle(raw_outcome: dict, raw_bets: list[dict], rules: StudPokerRules = RULES):
    o = GAME.parse_outcome(rules, raw_outcome)
    return GAME.settle(rules, o, GAME.parse_bets(rules, raw_bets), MONEY)


def nets(s) -> dict[str, int]:
    return {r.bet.bet_id: r.amounts.net for r in s.results}


def test_fold_loses_the_ante_art_6_7() -> None:
    s = settle(outcome(DEALER_AK, s1=("TS TH 9C 7D 6S", "fold")), bets_for(1, 100, False))
    assert nets(s) == {"a1": -100}
    assert "art. 6 7)" in s.results[0].reason


def test_croupier_below_ace_king_pays_the_ante_and_returns_the_raise_art_9_2() -> None:
    s = settle(outcome(DEALER_NO, s1=("3S 3H 9C 8D 6S", "raise")), bets_for(1, 100, True))
    assert nets(s) == {"a1": 100, "r1": 0}
    assert s.results[1].amounts.result == "push"


def test_higher_croupier_takes_ante_and_raise_art_9_4() -> None:
    s = settle(outcome(DEALER_AK, s1=("AH QH 9C 8D 6S", "raise")), bets_for(1, 100, True))
    assert nets(s) == {"a1": -100, "r1": -200}


PAY_TABLE = [
    ("AH KC 9C 8D 6H", 1),  # (1) ace-king high beats A-K-7: "par ou inferior" 1:1
    ("3C 3H 9C 8D 6H", 1),  # (1) pair 1:1
    ("3C 3H 9C 9D 6H", 2),  # (2) two pairs 2:1
    ("3C 3H 3D 9D 6H", 3),  # (3) three of a kind 3:1
    ("TC 9H 8D 7D 6H", 4),  # (4) straight 4:1
    ("TH 9H 7H 5H 3H", 5),  # (5) flush 5:1
    ("3C 3H 3D 9D 9H", 7),  # (6) full house 7:1
    ("3C 3H 3D 3S 9H", 20),  # (7) four of a kind 20:1
    ("9H 8H 7H 6H 5H", 50),  # (8) straight flush 50:1
    ("AH KH QH JH TH", 100),  # (9) royal flush 50 to 100:1 (default 100)
]


@pytest.mark.parametrize(("cards", "odds"), PAY_TABLE)
def test_raise_pay_table_art_9_5(cards: str, odds: int) -> None:
    s = settle(outcome(DEALER_AK, s1=(cards, "raise")), bets_for(1, 100, True))
    # art. 9 5): the ante 1:1, the raise by the table
    assert nets(s) == {"a1": 100, "r1": 200 * odds}


@pytest.mark.parametrize("royal", [50, 75, 100])
def test_royal_flush_odds_are_the_authorised_option_art_9_5_9_and_13(royal: int) -> None:
    rules = StudPokerRules(royal_flush=royal)
    s = settle(outcome(DEALER_AK, s1=("AH KH QH JH TH", "raise")), bets_for(1, 100, True), rules)
    assert nets(s)["r1"] == 200 * royal


@pytest.mark.parametrize("royal", [49, 101])
def test_royal_flush_odds_outside_50_to_100_are_refused_art_13(royal: int) -> None:
    with pytest.raises(ConfigInvalid) as exc:
        validate_document(
            {
                "version": 1,
                "table": {"id": "s", "game": "stud-poker"},
                "pay_table": {"stud-poker": {"royal_flush": royal}},
            }
        )
    assert "pay_table.stud-poker.royal_flush" in str(exc.value) and "50..100" in str(exc.value)


@pytest.mark.parametrize(
    ("cards", "capped"),
    [
        ("3C 3H 3D 3S 9H", True),
        ("9H 8H 7H 6H 5H", True),
        ("AH KH QH JH TH", True),
        ("3C 3H 3D 9D 9H", False),
    ],
)
def test_house_maximum_limits_the_top_prizes_art_9_5_7_to_9(cards: str, capped: bool) -> None:
    rules = StudPokerRules(max_payout=3000)
    s = settle(outcome(DEALER_AK, s1=(cards, "raise")), bets_for(1, 100, True), rules)
    r = s.results[1]
    full = 200 * rules.raise_odds(category(hand_value(h(cards))))
    assert r.amounts.net == (min(full, 3000) if capped else full)


def test_raise_must_be_exactly_twice_the_ante_art_6_6() -> None:
    raw = [*bets_for(1, 100, False), {"seat": 1, "bet_type": "raise", "stake": 150}]
    with pytest.raises(BetError) as exc:
        settle(outcome(DEALER_AK, s1=("AH KC 9C 8D 6H", "raise")), raw)
    assert exc.value.code == "RAISE_NOT_TWICE_ANTE"


def test_raise_and_fold_must_agree_with_the_bets_art_6_5_7() -> None:
    with pytest.raises(BetError) as exc:
        settle(outcome(DEALER_AK, s1=("AH KC 9C 8D 6H", "raise")), bets_for(1, 100, False))
    assert exc.value.code == "RAISE_MISSING"
    with pytest.raises(BetError) as exc:
        settle(outcome(DEALER_AK, s1=("AH KC 9C 8D 6H", "fold")), bets_for(1, 100, True))
    assert exc.value.code == "RAISE_AFTER_FOLD"


def test_one_hand_per_player_and_an_ante_for_every_hand_art_6_1_2() -> None:
    o = outcome(DEALER_AK, s1=("AH KC 9C 8D 6H", "fold"), s2=("3C 3H 9D 8H 6D", "fold"))
    with pytest.raises(BetError) as exc:
        settle(o, bets_for(1, 100, False))
    assert exc.value.code == "ANTE_REQUIRED"
    with pytest.raises(BetError) as exc:
        settle(o, bets_for(1, 100, False) + bets_for(1, 100, False) + bets_for(2, 100, False))
    assert exc.value.code == "BET_DUPLICATE"


def test_outcome_cards_come_from_one_deck_art_1() -> None:
    with pytest.raises(OutcomeError) as exc:
        GAME.parse_outcome(RULES, outcome(DEALER_AK, s1=("AS KC 9C 8D 6H", "raise")))
    assert exc.value.code == "OUTCOME_DUPLICATE_CARD"


def test_jackpot_results_go_into_the_settlement_extras_art_10() -> None:
    o = outcome(DEALER_AK, s1=("9H 8H 7H 6H 5H", "raise"), s3=("TC TD 9S 7D 3D", "raise"))
    raw = bets_for(1, 100, True, jackpot=True) + bets_for(3, 100, True, jackpot=True)
    s = settle({**o, "jackpot": {"pool": 20_000_000}}, raw)
    jp = s.extras["jackpot"]
    # contributions: two stakes at the configured rate, whole units credited
    assert jp["credited"] == 2 * RULES.jackpot_stake * RULES.jackpot_contribution_rate
    # straight flush: 10% of the pool (after contributions) or the fixed sum, whichever is larger
    pay = jp["payments"][0]
    assert pay["hand"] == "straight_flush"
    assert pay["prize"] == max(
        (20_000_000 + jp["credited"]) // 10, RULES.jackpot_straight_flush_fixed
    )
    assert nets(s)["j1"] == pay["prize"] - RULES.jackpot_stake
    assert nets(s)["j3"] == -RULES.jackpot_stake  # a pair is no jackpot hand
    assert jp["pool_after"] == 20_000_000 + jp["credited"] - pay["prize"]


def test_jackpot_bet_needs_the_table_stake_and_an_ante_art_10_1() -> None:
    o = outcome(DEALER_AK, s1=("9H 8H 7H 6H 5H", "raise"))
    raw = [*bets_for(1, 100, True), {"seat": 1, "bet_type": "jackpot", "stake": 7}]
    with pytest.raises(RulesError) as exc:
        settle(o, raw)
    assert exc.value.code == "JACKPOT_STAKE"
    with pytest.raises(BetError):  # a jackpot bet at a place without a hand
        settle(o, [*bets_for(1, 100, True), {"seat": 2, "bet_type": "jackpot", "stake": 1000}])


def test_folded_hand_wins_no_jackpot_unless_the_house_option_says_so() -> None:
    o = outcome(DEALER_AK, s1=("9H 8H 7H 6H 5H", "fold"))
    s = settle(o, bets_for(1, 100, False, jackpot=True))
    assert s.extras["jackpot"]["payments"] == []
    s = settle(o, bets_for(1, 100, False, jackpot=True), StudPokerRules(jackpot_on_fold=True))
    assert [p["hand"] for p in s.extras["jackpot"]["payments"]] == ["straight_flush"]


# -- the deal engine, art. 7 and 11 ---------------------------------------------------------


def targets(deal: StudDeal, cards: list[Card]) -> tuple[StudDeal, list]:
    seen = []
    for c in cards:
        e = deal.expect()
        seen.append("D" if e.to == "dealer" else e.seat)
        deal = deal.deal(c)
    return deal, seen


def test_shoe_deals_one_card_at_a_time_left_to_right_croupier_last_art_7_1() -> None:
    deal, seen = targets(StudDeal.start(RULES, [5, 1, 3]), DECK[:20])
    assert seen == [1, 3, 5, "D"] * 5
    assert deal.up_card == DECK[19]  # the croupier's last card is face up
    assert deal.expect().kind == "decision"


def test_shuffler_deals_five_at_a_time_croupier_last_art_7_2() -> None:
    rules = StudPokerRules(dealing="shuffler")
    _, seen = targets(StudDeal.start(rules, [2, 6]), DECK[:15])
    assert seen == [2] * 5 + [6] * 5 + ["D"] * 5


def test_decisions_follow_the_cards_and_complete_the_game_art_6_5() -> None:
    deal = StudDeal.start(RULES, [1, 3])
    with pytest.raises(RoundStateError) as exc:
        deal.decide(1, "raise")
    assert exc.value.code == "DECISION_TOO_EARLY"
    deal, _ = targets(deal, DECK[:15])
    assert deal.expect().allowed == ("raise", "fold")
    deal = deal.decide(3, "fold")
    with pytest.raises(RoundStateError) as exc:
        deal.decide(3, "raise")
    assert exc.value.code == "ALREADY_DECIDED"
    with pytest.raises(RoundStateError) as exc:
        deal.decide(1, "check")
    assert exc.value.code == "ACTION_INVALID"
    deal = deal.decide(1, "raise")
    assert deal.expect().kind == "complete"
    o = deal.outcome()
    assert [(x.seat, x.action) for x in o.hands] == [(1, "raise"), (3, "fold")]
    assert GAME.parse_outcome(RULES, GAME.outcome_json(o)).hands == o.hands


@pytest.mark.parametrize(
    "code", ["MISDEAL_WRONG_HAND", "MISDEAL_EXTRA_CARD", "MISDEAL_DUPLICATE_CARD"]
)
def test_incorrect_dealing_voids_the_game_art_11_1(code: str) -> None:
    deal = StudDeal.start(RULES, [1])
    with pytest.raises(Misdeal) as exc:
        if code == "MISDEAL_WRONG_HAND":
            deal.deal(DECK[0], "dealer")
        elif code == "MISDEAL_EXTRA_CARD":
            targets(deal, DECK[:11])
        else:
            deal.deal(DECK[0]).deal(DECK[0])
    assert exc.value.code == code
    assert "art. 11 1)" in exc.value.message
    assert deal.void(exc.value.message).expect().kind == "void"


def test_one_exposed_card_goes_on_two_void_the_game_art_11_1_2() -> None:
    deal = StudDeal.start(RULES, [1]).deal(DECK[0]).deal(DECK[1])
    once = deal.expose(DECK[1])
    assert once.expect().kind == "card"
    twice = once.expose(DECK[0])
    assert twice.expect().kind == "void"


def test_cards_to_a_place_without_bets_void_only_that_hand_art_11_3() -> None:
    deal = StudDeal.start(RULES, [1]).deal(DECK[0])
    deal = deal.deal(DECK[1], 4)  # place 4 has no bet
    assert deal.dead == ((4, DECK[1]),)
    assert deal.expect().to == "dealer"  # the game goes on


@settings(max_examples=100, deadline=None)
@given(
    st.permutations(DECK),
    st.sets(st.integers(1, 7), min_size=1, max_size=7),
    st.integers(0, 60),
    st.sampled_from(["shoe", "shuffler"]),
)
def test_deal_state_round_trips_through_json(perm, seats, steps, procedure) -> None:
    rules = StudPokerRules(dealing=procedure)
    deal = StudDeal.start(rules, sorted(seats))
    it = iter(perm)
    for i in range(steps):
        e = deal.expect()
        if e.kind == "card":
            deal = deal.deal(next(it))
        elif e.kind == "decision":
            deal = deal.decide(e.seat, "raise" if i % 2 else "fold")
    again = StudDeal.from_json(rules, deal.to_json())
    assert again == deal


# -- math -----------------------------------------------------------------------------------


def test_math_is_a_seeded_simulation_with_an_interval() -> None:
    a = GAME.math(RULES, rounds=20_000, seed=7)
    b = GAME.math(RULES, rounds=20_000, seed=7)
    assert a.method == "simulation"
    assert a.to_json() == b.to_json()  # reproducible: the seed is an input
    c = GAME.math(RULES, rounds=20_000, seed=8)
    assert c.lines[0].house_edge != a.lines[0].house_edge
    lo, hi = a.details["ci95_house_edge_per_ante"]
    assert lo < float(a.lines[0].house_edge) < hi


@pytest.mark.slow
def test_simulated_edge_is_near_the_published_figure() -> None:
    # the published edge of this game with this strategy is about 5.2% of the ante
    # (ties push there; here suits decide, which moves it very little)
    r = GAME.math(RULES, rounds=200_000, seed=2004)
    lo, hi = r.details["ci95_house_edge_per_ante"]
    assert lo < 0.0523 < hi
    assert 0.50 < r.details["raise_rate"] < 0.55


def test_jackpot_line_is_exact_from_hand_counts() -> None:
    line = next(ln for ln in GAME.math(RULES, rounds=100).lines if ln.bet == "jackpot")
    params = RULES.jackpot_params()
    total = 2_598_960
    expected_return = (
        Fraction(4, total) * max(params.seed, params.royal_flush_fixed)
        + Fraction(36, total) * max(params.seed // 10, params.straight_flush_fixed)
        + Fraction(624, total) * params.four_of_a_kind_fixed
        + Fraction(3744, total) * params.full_house_fixed
        + Fraction(5108, total) * params.flush_fixed
    )
    assert line.house_edge == 1 - expected_return / params.stake


def test_math_refuses_decks() -> None:
    with pytest.raises(RulesError):
        GAME.math(RULES, decks=8)


def test_strategy_examples() -> None:
    v = hand_value
    up = card_code
    assert raises(v(h("2C 2D 5H 7S 9C")), up(Card.parse("AS")))  # any pair
    assert not raises(v(h("AC QD 5H 7S 9C")), up(Card.parse("2S")))  # below ace-king
    assert raises(v(h("AC KD 5H 7S 9C")), up(Card.parse("7D")))  # matches the 7
    assert not raises(v(h("AC KD 5H 7S 9C")), up(Card.parse("8D")))
    assert raises(v(h("AC KD JH 7S 3C")), up(Card.parse("AD")))  # A up, holding a J
    assert raises(v(h("AC KD QH 7S 3C")), up(Card.parse("5D")))  # up below the 7, holding a Q


# -- tablectl ------------------------------------------------------------------------------

ROOT = __import__("pathlib").Path(__file__).resolve().parents[2]


def run(capsys, *args: str) -> tuple[int, str]:
    from firmware_host.cli import main

    rc = main(list(args))
    return rc, capsys.readouterr().out


def test_tablectl_math_says_simulation_and_settle_reports_the_jackpot(capsys) -> None:
    import json

    cfg = str(ROOT / "config" / "stud-poker.toml")
    rc, out = run(capsys, "check-config", cfg)
    assert rc == 0, out
    rc, out = run(
        capsys, "math", "stud-poker", "--config", cfg, "--rounds", "5000", "--seed", "3", "--json"
    )
    data = json.loads(out)
    assert rc == 0 and data["method"] == "simulation" and data["seed"] == 3
    assert len(data["ci95_house_edge_per_ante"]) == 2
    o = outcome(DEALER_AK, s1=("3C 3H 3D 3S 9H", "raise"))
    o["jackpot"] = {"pool": 30_000_000}
    bets = [*bets_for(1, 10000, True), {"seat": 1, "bet_type": "jackpot", "stake": 2000}]
    rc, out = run(
        capsys,
        "settle",
        "stud-poker",
        "--config",
        cfg,
        "--outcome",
        json.dumps(o),
        "--bets",
        json.dumps(bets),
    )
    data = json.loads(out)
    assert rc == 0
    assert [b["net"] for b in data["bets"]] == [10000, 20000 * 20, 200000 - 2000]
    assert data["jackpot"]["payments"][0]["hand"] == "four_of_a_kind"
    assert data["jackpot"]["state"]["pool"] == data["jackpot"]["pool_after"]
