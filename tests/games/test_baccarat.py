"""Baccarat, 55/2004: card values (art. 5), dealing (art. 7), drawing (art. 9),
misdeals (art. 10), winner and tie (art. 11, 12), bets and prizes (art. 13, 17, 18),
house options (art. 1, 2, 3, 8, 12, 19), and exact house edges."""

from __future__ import annotations

import time
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from firmware_host.config import ConfigInvalid, validate_document
from firmware_host.games.baccarat import GAME, BaccaratDeal, BaccaratRules
from firmware_host.games.baccarat.deal import card_value, deal_coup, replay, total
from firmware_host.games.baccarat.game import main_probabilities
from firmware_host.games.baccarat.rules import burn_count, coups_after_cut_card
from firmware_host.games.base import Bet
from firmware_host.games.cards import Card, Shoe, deck, parse_cards
from firmware_host.games.errors import Misdeal, OutcomeError, RoundStateError
from firmware_host.games.money import MoneyRules

RULES = BaccaratRules()
MONEY = MoneyRules()

# -- an independent, plain transcription of art. 9 ----------------------------------------
# Values as art. 9 writes them: a 10-value card (10, J, Q, K) is "10".


def art9_value(card: Card) -> int:
    return 10 if card.rank >= 10 else card.rank


def points(cards: list[Card]) -> int:
    return sum(0 if art9_value(c) == 10 else art9_value(c) for c in cards) % 10


def art9_player_draws(p: int, b: int) -> bool:
    # 1) draws when its cards are worth less than 6; 2) not when the banker has 8 or 9
    if b in (8, 9):
        return False
    return p < 6


def art9_banker_draws(b: int, p: int, third: int | None) -> bool:
    # 4) (6): never against a player natural; 4) (5): never on 7, 8, 9
    if p in (8, 9) or b in (7, 8, 9):
        return False
    if third is None:
        return b < 6  # 3) (6) draws on less than 6; 4) (4) stands on 6
    table = {
        0: {1, 2, 3, 4, 5, 6, 7, 8, 9, 10},  # 3) (1) "inferior a 3"
        1: {1, 2, 3, 4, 5, 6, 7, 8, 9, 10},
        2: {1, 2, 3, 4, 5, 6, 7, 8, 9, 10},
        3: {1, 2, 3, 4, 5, 6, 7, 9, 10},  # 3) (2); 4) (1) not on 8
        4: {2, 3, 4, 5, 6, 7},  # 3) (3); 4) (2) not on 1, 8, 9, 10
        5: {4, 5, 6, 7},  # 3) (4); 4) (3) not on 1, 2, 3, 8, 9, 10
        6: {6, 7},  # 3) (5); 4) (4) not on 1-5, 8, 9, 10
    }
    return third in table[b]


def transcribed_coup(cards: list[Card]) -> tuple[list[Card], list[Card]]:
    """Deal from ``cards`` by the plain transcription: P, B, P, B (art. 7 1)), then art. 9."""
    it = iter(cards)
    player = [next(it)]
    banker = [next(it)]
    player.append(next(it))
    banker.append(next(it))
    p, b = points(player), points(banker)
    third = None
    if art9_player_draws(p, b):
        player.append(next(it))
        third = art9_value(player[2])
    if art9_banker_draws(b, p, third):
        banker.append(next(it))
    return player, banker


def engine_coup(cards: list[Card]) -> tuple[list[Card], list[Card]]:
    deal = BaccaratDeal.start(RULES)
    it = iter(cards)
    dealt = 0
    while deal.expect().kind == "card":
        deal = deal.deal(next(it))
        dealt += 1
        assert dealt <= 6, "the engine asked for a seventh card (55/2004 art. 9)"
    return list(deal.player), list(deal.banker)


# one representative card per art. 9 value 1..10 (10 = a ten-value card)
VALUE_CARDS = [Card(v, "S") for v in range(1, 10)] + [Card(13, "D")]


def test_card_values_art_5() -> None:
    # 55/2004 art. 5 1): figures and tens count zero; 2) others their face value, 9 highest
    assert [card_value(Card(r, "S")) for r in range(1, 14)] == [
        1,
        2,
        3,
        4,
        5,
        6,
        7,
        8,
        9,
        0,
        0,
        0,
        0,
    ]
    # art. 5 1): combinations totalling ten count zero
    assert total(parse_cards("5H 5D")) == 0
    assert total(parse_cards("9H 8D")) == 7
    assert total(parse_cards("KH QD JC")) == 0


def test_every_two_card_start_follows_art_9_table() -> None:
    """55/2004 art. 9: for every pair of two-card totals and every player third card,
    the engine deals exactly what the plain transcription deals."""
    for p1 in VALUE_CARDS:
        for b1 in VALUE_CARDS:
            for p2 in VALUE_CARDS:
                for b2 in VALUE_CARDS:
                    for third in VALUE_CARDS:
                        cards = [p1, b1, p2, b2, third, Card(6, "C")]
                        expected = transcribed_coup(cards)
                        assert engine_coup(cards) == expected, cards
                        if len(expected[0]) == 2:
                            break  # the player stood: the fifth card is the banker's or none


card_st = st.builds(Card, st.integers(1, 13), st.sampled_from("SHCD"))


@settings(max_examples=400, deadline=None)
@given(st.lists(card_st, min_size=6, max_size=6))
def test_engine_never_asks_for_a_seventh_card_and_agrees_with_art_9(cards: list[Card]) -> None:
    # 55/2004 art. 9: "Apenas uma carta pode ser adicionada às duas inicialmente distribuídas"
    player, banker = engine_coup(cards)
    assert 2 <= len(player) <= 3 and 2 <= len(banker) <= 3
    assert (player, banker) == transcribed_coup(cards)


def test_initial_cards_alternate_player_first_art_7_1() -> None:
    # 55/2004 art. 7 1): two cards each, one at a time, alternately, player first
    deal = BaccaratDeal.start(RULES)
    seen = []
    for card in parse_cards("2S 3S 4S 5S"):
        seen.append(deal.expect().to)
        deal = deal.deal(card)
    assert seen == ["player", "banker", "player", "banker"]


@pytest.mark.parametrize(
    ("player", "banker", "winner"),
    [
        ("9S KD", "5H 2C", "player"),  # art. 11: the higher total wins; natural 9
        ("7S KD", "8H TC", "banker"),  # banker natural 8 beats 7; nobody draws
        ("6S AD", "4H 3C", "tie"),  # 7 v 7 (banker 7 stands, art. 9 4) (5)): art. 12 tie
        ("AS 2D 5C", "3H 3C", "player"),  # player 3 draws a 5: 8; banker 6 draws only on 6, 7: 6
        ("AS 2D 7C", "3H 3C 2S", "banker"),  # player 3 draws a 7: 0; banker 6 draws on 7: 8
    ],
)
def test_winner_and_tie_art_11_12(player: str, banker: str, winner: str) -> None:
    outcome = GAME.parse_outcome(RULES, {"player": player.split(), "banker": banker.split()})
    assert outcome.winner == winner


def bet(bet_type: str, stake: int = 1000, bet_id: str = "x") -> Bet:
    return Bet(bet_id, 1, bet_type, None, stake)


def settle(outcome: dict, *bets: Bet, rules: BaccaratRules = RULES, money: MoneyRules = MONEY):
    return GAME.settle(rules, GAME.parse_outcome(rules, outcome), list(bets), money)


def test_prizes_art_17_and_commission_art_18() -> None:
    # player win: player 1:1 (art. 17 1)); banker and tie lose
    s = settle(
        {"player": ["9S", "KD"], "banker": ["5H", "2C"]}, bet("player"), bet("banker"), bet("tie")
    )
    assert [r.amounts.net for r in s.results] == [1000, -1000, -1000]
    # banker win: 1:1 less 5% of the win (art. 17 1), 18)
    s = settle({"player": ["7S", "KD"], "banker": ["8H", "TC"]}, bet("banker", 1000), bet("player"))
    assert (s.results[0].amounts.payout, s.results[0].amounts.commission) == (1000, 50)
    assert [r.amounts.net for r in s.results] == [950, -1000]
    # tie 8:1 (art. 17 2))
    s = settle({"player": ["6S", "AD"], "banker": ["4H", "3C"]}, bet("tie", 500))
    assert s.results[0].amounts.net == 4000


def test_banker_commission_rounds_for_the_house_art_18() -> None:
    # 5% of 1010 = 50.5: the player's net 959.5 is rounded down; the half is breakage
    s = settle({"player": ["7S", "KD"], "banker": ["8H", "TC"]}, bet("banker", 1010))
    a = s.results[0].amounts
    assert (a.net, a.breakage) == (959, Fraction(1, 2))


@pytest.mark.parametrize(
    ("player", "banker", "ppair", "bpair"),
    [
        ("JS JD 9C", "5H 2C", True, False),  # art. 13 4): two jacks are a pair
        ("JS QD 8C", "5H 5C 3S", False, True),  # J and Q are no pair, though both count 0
        ("TS KD 2C", "QH QC 4D", False, True),  # ten and king: no pair; two queens: pair
        ("2S 2D 2C", "TH 7C", True, False),  # only the first two cards count
        ("3S 2D 3C", "TH 7C", False, False),
    ],
)
def test_pairs_same_rank_first_two_cards_art_13_4(
    player: str, banker: str, ppair: bool, bpair: bool
) -> None:
    s = settle(
        {"player": player.split(), "banker": banker.split()},
        bet("player_pair", 100, "p"),
        bet("banker_pair", 100, "b"),
    )
    nets = {r.bet.bet_id: r.amounts.net for r in s.results}
    # art. 17 3): pairs pay 11 to 1
    assert nets == {"p": 1100 if ppair else -100, "b": 1100 if bpair else -100}


@pytest.mark.parametrize("option", ["withdraw", "keep", "change", "switch"])
def test_tie_player_and_banker_bets_follow_art_12_option(option: str) -> None:
    rules = BaccaratRules(tie_bets=option)
    s = settle(
        {"player": ["6S", "AD"], "banker": ["4H", "3C"]},
        bet("player", 100, "p"),
        bet("banker", 100, "b"),
        bet("tie", 100, "t"),
        rules=rules,
    )
    # art. 12: neither wins nor loses; the option says what becomes of them
    assert [r.amounts.result for r in s.results] == ["push", "push", "win"]
    assert s.extras["tie"]["rule"] == option
    staying = [] if option == "withdraw" else ["p", "b"]
    assert s.extras["tie"]["bets_staying"] == staying
    assert "art. 12" in s.results[0].reason


def test_no_tie_extras_when_a_side_wins() -> None:
    s = settle({"player": ["9S", "KD"], "banker": ["5H", "2C"]}, bet("player"))
    assert "tie" not in s.extras


# -- misdeals, art. 10 ---------------------------------------------------------------------


def test_extra_card_is_a_misdeal_corrected_by_setting_it_aside_art_10() -> None:
    deal = replay(parse_cards("9S KD"), parse_cards("5H 2C"))
    with pytest.raises(Misdeal) as exc:
        deal.deal(Card.parse("3D"))
    assert exc.value.code == "MISDEAL_EXTRA_CARD" and exc.value.correctable
    fixed = deal.set_aside_card(Card.parse("3D"))
    assert fixed.outcome() == deal.outcome()
    assert fixed.set_aside == (Card.parse("3D"),)


def test_card_on_the_wrong_side_is_a_misdeal_with_its_correction_art_10() -> None:
    deal = BaccaratDeal.start(RULES).deal(Card.parse("2S"))
    with pytest.raises(Misdeal) as exc:
        deal.deal(Card.parse("3S"), "player")
    assert exc.value.code == "MISDEAL_WRONG_HAND" and exc.value.due == "banker"
    # corrected: the card is the banker's in shoe order
    assert deal.deal(Card.parse("3S"), "banker").banker == (Card.parse("3S"),)


def test_banker_third_card_against_the_rules_is_a_misdeal_art_9_10() -> None:
    # player 6 stands, banker 6 stands (art. 9 4) (4)): a third card is an error
    deal = replay(parse_cards("6S KD"), parse_cards("4H 2C"))
    assert deal.expect().kind == "complete"
    with pytest.raises(Misdeal):
        deal.deal(Card.parse("5D"), "banker")


def test_uncorrectable_error_voids_the_coup_art_10() -> None:
    deal = BaccaratDeal.start(RULES).deal(Card.parse("2S")).void("cards dropped, order lost")
    assert deal.expect().kind == "void"
    with pytest.raises(RoundStateError) as exc:
        deal.outcome()
    assert exc.value.code == "ROUND_VOID"
    with pytest.raises(RoundStateError):
        deal.deal(Card.parse("3S"))


def test_outcome_against_the_drawing_rules_is_refused_art_9() -> None:
    with pytest.raises(OutcomeError) as exc:
        GAME.parse_outcome(RULES, {"player": ["9S", "KD"], "banker": ["5H", "2C", "TD"]})
    assert exc.value.code == "OUTCOME_DRAW_RULES"
    with pytest.raises(OutcomeError):  # player on 3 must draw
        GAME.parse_outcome(RULES, {"player": ["AS", "2D"], "banker": ["7H", "KC"]})


def test_incomplete_coup_has_no_outcome() -> None:
    with pytest.raises(RoundStateError) as exc:
        BaccaratDeal.start(RULES).deal(Card.parse("2S")).outcome()
    assert exc.value.code == "ROUND_NOT_COMPLETE"


def test_derived_fields_must_agree() -> None:
    with pytest.raises(OutcomeError):
        GAME.parse_outcome(
            RULES, {"player": ["9S", "KD"], "banker": ["5H", "2C"], "winner": "banker"}
        )


@settings(max_examples=150, deadline=None)
@given(st.lists(card_st, min_size=0, max_size=6), st.booleans())
def test_deal_state_round_trips_through_json(cards: list[Card], void: bool) -> None:
    deal = BaccaratDeal.start(RULES)
    for c in cards:
        if deal.expect().kind != "card":
            deal = deal.set_aside_card(c)
            continue
        deal = deal.deal(c)
    if void:
        deal = deal.void("test")
    again = BaccaratDeal.from_json(RULES, deal.to_json())
    assert again == deal
    assert again.expect() == deal.expect()


@settings(max_examples=5, deadline=None)
@given(st.permutations(list(deck()) * 6))
def test_a_shuffled_six_deck_shoe_drives_coups_to_the_cut_card(order: list[Card]) -> None:
    # 55/2004 art. 1 1), 2 1): six decks, burn by the number of decks, cut card ~12 from the end
    shoe = Shoe(
        6,
        tuple(order),
        burn=burn_count(BaccaratRules(decks=6)),
        cut_position=len(order) - 12,
    )
    cards, i, coups = shoe.order, shoe.burn, 0
    while i < shoe.cut_position:
        outcome, i = deal_coup(cards, i)
        assert (list(outcome.player), list(outcome.banker)) == transcribed_coup(
            list(cards[i - len(outcome.player) - len(outcome.banker) : i])
        )
        coups += 1
    assert coups > 40


# -- house options, art. 1, 2, 3, 8, 12, 19 --------------------------------------------------


def test_burn_count_art_2() -> None:
    # art. 2 1): as many cards as decks, or as the first card's face value says
    assert burn_count(BaccaratRules(decks=8)) == 8
    first = BaccaratRules(burn="first_card")
    assert burn_count(first, Card.parse("7D")) == 8  # the seven and seven more
    assert burn_count(first, Card.parse("KD")) == 11
    with pytest.raises(RoundStateError):
        burn_count(first)
    # art. 2 3): an automatic shuffler-dealer burns nothing
    assert burn_count(BaccaratRules(dealing="shuffler_dealer")) == 0


def test_last_coup_option_art_3_1() -> None:
    assert coups_after_cut_card(BaccaratRules()) == 0
    assert coups_after_cut_card(BaccaratRules(last_coup="one_more")) == 1


def doc(**rules: object) -> dict:
    return {"version": 1, "table": {"id": "b1", "game": "baccarat"}, "rules": {"baccarat": rules}}


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("decks", 5),  # art. 1 1): six to twelve decks
        ("decks", 13),
        ("demo_coups", 4),  # art. 2 2): at most three demonstration coups
        ("tie_bets", "half"),  # art. 12: only the listed alternatives
        ("burn", "none"),  # art. 2 1)
        ("last_coup", "two_more"),  # art. 3 1)
        ("dealing", "hand"),  # art. 7
    ],
)
def test_options_outside_the_authorised_alternatives_are_refused_art_19(
    key: str, value: object
) -> None:
    with pytest.raises(ConfigInvalid) as exc:
        validate_document(doc(**{key: value}))
    assert f"rules.baccarat.{key}" in str(exc.value)


def test_authorised_options_are_accepted_art_19() -> None:
    cfg = validate_document(
        doc(
            decks=6,
            demo_coups=3,
            tie_bets="switch",
            burn="first_card",
            last_coup="one_more",
            dealing="shuffler_dealer",
            burn_each_coup=True,
        )
    )
    assert cfg.rules.decks == 6 and cfg.rules.tie_bets == "switch"


def test_pairs_not_offered_removes_the_pair_bets_art_13_4() -> None:
    rules = BaccaratRules(pairs_offered=False)
    assert [b.name for b in GAME.bet_types(rules)] == ["player", "banker", "tie"]


# -- exact house edges --------------------------------------------------------------------


def brute_force(decks: int) -> tuple[Fraction, Fraction, Fraction]:
    """Independent enumeration: every ordered sequence of card values, each side dealt
    by the plain art. 9 transcription, weights by removal without replacement."""
    counts = {v: 4 * decks for v in range(1, 10)}
    counts[10] = 16 * decks
    n = 52 * decks
    win = {"player": Fraction(0), "banker": Fraction(0), "tie": Fraction(0)}

    def draw(prob: Fraction, left: dict[int, int], remaining: int):
        for v, k in left.items():
            if k:
                nxt = dict(left)
                nxt[v] -= 1
                yield v, prob * Fraction(k, remaining), nxt, remaining - 1

    def pts(vals: list[int]) -> int:
        return sum(0 if v == 10 else v for v in vals) % 10

    for p1, w1, c1, r1 in draw(Fraction(1), counts, n):
        for b1, w2, c2, r2 in draw(w1, c1, r1):
            for p2, w3, c3, r3 in draw(w2, c2, r2):
                for b2, w4, c4, r4 in draw(w3, c3, r3):
                    p, b = pts([p1, p2]), pts([b1, b2])
                    finals: list[tuple[int, int, Fraction]] = []
                    if art9_player_draws(p, b):
                        for x, w5, c5, r5 in draw(w4, c4, r4):
                            pf = pts([p1, p2, x])
                            if art9_banker_draws(b, p, x):
                                finals += [
                                    (pf, pts([b1, b2, z]), w6) for z, w6, _, _ in draw(w5, c5, r5)
                                ]
                            else:
                                finals.append((pf, b, w5))
                    elif art9_banker_draws(b, p, None):
                        finals += [(p, pts([b1, b2, z]), w5) for z, w5, _, _ in draw(w4, c4, r4)]
                    else:
                        finals.append((p, b, w4))
                    for pf, bf, w in finals:
                        win["player" if pf > bf else "banker" if bf > pf else "tie"] += w
    return win["player"], win["banker"], win["tie"]


@pytest.mark.slow
def test_exact_probabilities_match_an_independent_enumeration_8_decks() -> None:
    assert main_probabilities(8) == brute_force(8)


def edges(report) -> dict[str, Fraction]:
    return {ln.bet: ln.house_edge for ln in report.lines}


def test_published_house_edges_8_decks() -> None:
    # cross-check against the widely published 8-deck figures (ties push)
    e = edges(GAME.math(RULES, decks=8))
    assert abs(float(e["banker"]) - 0.010579) < 5e-7
    assert abs(float(e["player"]) - 0.012351) < 5e-7
    assert abs(float(e["tie"]) - 0.143596) < 5e-7
    # pairs: P(pair) = 13 * 32 * 31 / (416 * 415) = 31/415, paying 11:1 -> 1 - 12 * 31/415
    assert e["player_pair"] == e["banker_pair"] == 1 - 12 * Fraction(31, 415)


def test_published_house_edges_6_decks() -> None:
    e = edges(GAME.math(RULES, decks=6))
    assert abs(float(e["banker"]) - 0.010558) < 5e-7
    assert abs(float(e["player"]) - 0.012374) < 5e-7
    assert abs(float(e["tie"]) - 0.144382) < 5e-7
    assert e["player_pair"] == 1 - 12 * Fraction(23, 311)  # 24*23 / (312*311) * 13


def test_probabilities_sum_to_one_for_every_deck_count() -> None:
    for d in range(6, 13):
        assert sum(main_probabilities(d)) == 1


def test_math_is_fast_8_decks() -> None:
    main_probabilities.cache_clear()
    t = time.perf_counter()
    GAME.math(RULES, decks=8)
    assert time.perf_counter() - t < 1.0


def test_math_rejects_options_it_does_not_take() -> None:
    from firmware_host.games.errors import RulesError

    with pytest.raises(RulesError):
        GAME.math(RULES, rounds=1000)
    with pytest.raises(RulesError):
        GAME.math(RULES, decks=4)  # art. 1 1): six to twelve decks


# -- tablectl ------------------------------------------------------------------------------

ROOT = __import__("pathlib").Path(__file__).resolve().parents[2]


def run(capsys, *args: str) -> tuple[int, str]:
    from firmware_host.cli import main

    rc = main(list(args))
    return rc, capsys.readouterr().out


@pytest.mark.parametrize("decks", [6, 8])
def test_tablectl_math_prints_exact_edges(capsys, decks: int) -> None:
    import json

    rc, out = run(capsys, "math", "baccarat", "--decks", str(decks), "--json")
    assert rc == 0
    data = json.loads(out)
    assert data["method"] == "exact" and data["decks"] == decks
    p, b, t = main_probabilities(decks)
    got = {x["bet"]: Fraction(x["house_edge_exact"]) for x in data["bets"]}
    assert got["banker"] == p - Fraction(19, 20) * b
    assert got["player"] == b - p
    assert got["tie"] == 1 - 9 * t
    assert set(got) == {"banker", "player", "tie", "player_pair", "banker_pair"}


def test_tablectl_settle_and_example_config(capsys) -> None:
    import json

    cfg = str(ROOT / "config" / "baccarat.toml")
    rc, out = run(capsys, "check-config", cfg)
    assert rc == 0, out
    rc, out = run(
        capsys,
        "settle",
        "baccarat",
        "--config",
        cfg,
        "--outcome",
        '{"player": ["9S", "KD"], "banker": ["5H", "2C"]}',
        "--bets",
        '[{"bet_type": "player", "stake": 30000}, {"bet_type": "banker", "stake": 30000}]',
    )
    assert rc == 0
    assert [b["net"] for b in json.loads(out)["bets"]] == [30000, -30000]
