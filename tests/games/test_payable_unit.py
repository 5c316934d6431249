"""Issue 12 point 1: fixed prizes are never cut by the payable unit.

Every regulation fixes its prizes as multiples of the stake (60/2004 art. 7 "1賠35 ...
1賠1"; 57/2004 and 59/2004 art. 6 "uma vez a importância da aposta"; 55/2004 art. 17;
56/2004 art. 10, 12, 14, 15, 19; 61/2004 art. 9 5)). A table whose smallest payable
amount is ``payable_unit`` must therefore refuse, when the bet is placed, a stake that
is not a whole number of that unit (``BET_STAKE_PAYABLE_UNIT``), and pay every bet it
accepted exactly the regulation's multiple. Only genuinely fractional amounts (fantan's
1/2 and 1/3, the 5% commissions, blackjack's one and a half) are rounded, with the
remainder reported as breakage, never as commission (docs/rules/money.md).

The multiples below are copied from the texts, independently of the game modules;
the property test draws a game, a payable unit, a stake, a bet and an outcome.
"""

from __future__ import annotations

import random
from fractions import Fraction
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from firmware_host.config import ConfigInvalid, validate_document
from firmware_host.games import GAME_IDS, get_game
from firmware_host.games.baccarat.deal import deal_coup
from firmware_host.games.base import Bet, DiscreteGame, Limits
from firmware_host.games.blackjack import BlackjackDeal
from firmware_host.games.cards import deck
from firmware_host.games.errors import BetError, OutcomeError
from firmware_host.games.money import MoneyRules, Rounding
from firmware_host.games.stud_poker import SeatHand, StudOutcome

F = Fraction
FIVE_PCT = F(5, 100)

# fmt: off
#: Whole multiples of the stake each text pays, by game and bet type (no commission).
WHOLE: dict[str, dict[str, set[int]]] = {
    # 60/2004 art. 7 1)-8)
    "roulette": {
        "straight": {35}, "split": {17}, "street": {11}, "corner": {8}, "line": {5},
        "sector9": {3}, "sector12": {2}, "column": {2}, "dozen": {2}, "even": {1}, "odd": {1},
        "low": {1}, "high": {1}, "red": {1}, "black": {1},
    },
    # 57/2004 art. 6 1)-13) (totals 5/16 and 6/15 within the authorised 18-30 and 14-18)
    "sicbo": {
        "small": {1}, "big": {1}, "single": {1, 2, 3}, "specific_triple": {150},
        "any_triple": {24}, "total": {50, 12, 8, 6, *range(18, 31), *range(14, 19)},
        "even": {1}, "odd": {1}, "double_single": {50}, "three_specified": {30},
        "two_dice": {5}, "specific_double": {8}, "four_numbers": {7},
    },
    # 59/2004 art. 6 1)-10)
    "fish-prawn-crab": {
        "small": {1}, "big": {1}, "figure": {1, 2, 3}, "one_colour": {1}, "two_colour": {3},
        "three_colour": {20}, "any_three_colour": {7}, "specific_triple": {150},
        "any_triple": {24}, "total": {50, 18, 14, 12, 8, 6},
    },
    # 55/2004 art. 17 (the banker's 1:1 is less 5%, art. 18: below)
    "baccarat": {"player": {1}, "tie": {8}, "player_pair": {11}, "banker_pair": {11}},
    # 56/2004 art. 10 2)-4), 12 2), 14, 15, 19 (split and double parts as the main bet)
    "blackjack": {
        "main": {1, 3}, "split": {1, 3}, "double": {1}, "insurance": {2}, "pair": {11},
        "sevens": {50, 150, 500, 5000}, "over_under_13": {1},
    },
    # 61/2004 art. 9 2), 5) (the royal flush's 50 to 100, art. 9 5) (9), art. 13)
    "stud-poker": {"ante": {1}, "raise": {1, 2, 3, 4, 5, 7, 20, 50, *range(50, 101)}},
}
#: Genuinely fractional prizes, rounded to the payable unit (the rest is breakage).
FRACTIONAL: dict[str, dict[str, set[Fraction]]] = {
    # 56/2004 art. 10 2), 5): one and a half; art. 19 1): half the stake on five cards
    "blackjack": {"main": {F(3, 2), F(1, 2)}, "split": {F(1, 2)}},
}
#: Prizes less 5% of the prize: 58/2004 art. 7, 9; 55/2004 art. 17 1), 18; 261/96/M and
#: 195/92/M art. 7, 9 (a place's even money, capital allowing).
COMMISSIONED: dict[str, dict[str, set[Fraction]]] = {
    "fantan": {"fan": {F(3)}, "nim": {F(2)}, "nga": {F(1, 2)}, "sam_hong": {F(1, 3)},
               "kwok": {F(1)}},
    "baccarat": {"banker": {F(1)}},
    "super-pan-9": {"place": {F(1)}},
    "paikao": {"place": {F(1)}},
}
# fmt: on

UNITS = (1, 2, 5, 10, 20, 25, 50, 100, 500, 1000)


def _bets_and_outcome(game_id: str, rules: Any, pick: random.Random) -> tuple[list[dict], Any]:
    """Some bet requests (without stakes) of ``game_id`` and one outcome to settle them on."""
    game = get_game(game_id)
    if isinstance(game, DiscreteGame):
        catalogue = list(game.math_bets(rules))
        bet_type, selection = pick.choice(catalogue)
        space = [o for o, _ in game.outcome_space(rules)]
        return [{"bet_type": bet_type, "selection": selection}], pick.choice(space)
    if game_id == "baccarat":
        cards = list(deck())
        pick.shuffle(cards)
        outcome, _ = deal_coup(cards, 0)
        bt = pick.choice(["player", "banker", "tie", "player_pair", "banker_pair"])
        return [{"bet_type": bt}], outcome
    if game_id == "blackjack":
        cards = list(deck()) * 2
        pick.shuffle(cards)
        d = BlackjackDeal.start(rules, [1], burn=0)
        while not d.complete:
            e = d.expect()
            if e.kind == "card":
                d = d.deal(cards.pop())
            else:  # hit to 17, like the dealer; split a pair of eights, double on 11
                h = d.place(1).hands[e.hand]
                total = sum(min(c.rank, 10) for c in h.cards)
                want = "split" if total == 16 and len(h.cards) == 2 else "hit"
                want = "double" if total == 11 else want
                for action in (want, "hit" if total < 17 else "stand", "stand"):
                    if action in e.allowed:
                        d = d.decide(1, action)
                        break
        side = pick.choice([("pair", None), ("sevens", None), ("over_under_13", "over"),
                            ("over_under_13", "under")])  # fmt: skip
        return [{"bet_type": "main"}, {"bet_type": side[0], "selection": side[1]}], d
    if game_id == "stud-poker":
        cards = list(deck())
        pick.shuffle(cards)
        action = pick.choice(["raise", "raise", "fold"])
        outcome = StudOutcome(tuple(cards[:5]), (SeatHand(1, tuple(cards[5:10]), action),))
        bets = [{"bet_type": "ante"}] + ([{"bet_type": "raise", "double": True}]
                                         if action == "raise" else [])  # fmt: skip
        return bets, outcome
    if game_id in ("super-pan-9", "paikao"):
        outcome = pick.choice(game.sample_outcomes(rules))
        banker = outcome.setup.banker
        place = pick.choice([p for p in range(1, game.places(rules) + 1) if p != banker])
        return [{"bet_type": "place", "selection": place}], outcome
    raise AssertionError(game_id)


def _check_paid_exactly(game_id: str, bet: Bet, a: Any, reason: str, money: MoneyRules) -> None:
    """The regulation's multiple, paid exactly (or, for a fractional or commissioned
    prize, the exact net less a breakage smaller than the payable unit)."""
    unit = money.payable_unit
    exact_net = a.net + a.breakage  # what the text gives, before the payable unit
    commissioned = COMMISSIONED.get(game_id, {}).get(bet.bet_type)
    if commissioned is None:
        m = exact_net / bet.stake
        if m in WHOLE.get(game_id, {}).get(bet.bet_type, ()):
            # a whole multiple: paid exactly, whatever the unit; nothing rounded
            assert (a.payout, a.commission, a.net, a.breakage) == (bet.stake * m, 0, a.payout, 0)
            return
        assert m in FRACTIONAL[game_id][bet.bet_type], (bet, a, m)
    else:
        prize = exact_net / (1 - FIVE_PCT)
        m = prize / bet.stake
        capital_reached = "capital is reached" in reason  # 261/96/M, 195/92/M art. 5 3)
        assert m in commissioned or (capital_reached and m < 1), (bet, a, m)
        # the commission is the regulation's 5%, to the minor unit, for the house
        c = prize * FIVE_PCT
        assert 0 <= a.commission - c < 1, (bet, a)
    # a fractional or commissioned prize: rounded down to the unit, the rest breakage
    assert a.net % unit == 0 and 0 <= a.breakage < unit, (bet, a)


@settings(max_examples=400, deadline=None)
@given(
    game_id=st.sampled_from(GAME_IDS),
    unit=st.sampled_from(UNITS),
    units=st.integers(1, 400),
    offset=st.one_of(st.just(0), st.integers(1, 999)),
    seed=st.integers(0, 2**32),
)
def test_a_bet_is_refused_at_placement_or_paid_exactly_the_multiple(
    game_id: str, unit: int, units: int, offset: int, seed: int
) -> None:
    game = get_game(game_id)
    rules = game.default_rules()
    money = MoneyRules(payable_unit=unit, rounding=Rounding.FLOOR)
    limits = Limits(payable_unit=unit)
    stake = units * unit + offset % unit
    pick = random.Random(seed)
    if game_id == "mahjong":  # the players play each other: nothing is staked
        with pytest.raises(BetError):
            game.parse_bet(rules, {"bet_type": "win", "stake": stake}, limits)
        return
    raws, outcome = _bets_and_outcome(game_id, rules, pick)
    bets = []
    for i, raw in enumerate(raws):
        s = 2 * stake if raw.pop("double", False) else stake  # a raise is twice the ante
        raw.update(bet_id=f"b{i}", seat=1, stake=s)
        if s % unit:
            with pytest.raises(BetError) as exc:
                game.parse_bet(rules, raw, limits)
            assert exc.value.code == "BET_STAKE_PAYABLE_UNIT", exc.value
            assert str(unit) in exc.value.message
            return
        bets.append(game.parse_bet(rules, raw, limits))
    for r in game.settle(rules, outcome, bets, money).results:
        if r.amounts.result == "win":
            _check_paid_exactly(game_id, r.bet, r.amounts, r.reason, money)


# -- the cases of the audit ------------------------------------------------------------


def _settle(game_id: str, cfg_limits: dict, unit: int, bet: dict, outcome: Any) -> Any:
    cfg = validate_document(
        {"table": {"id": "t", "game": game_id, "payable_unit": unit}, "limits": cfg_limits}
    )
    game = cfg.game
    bets = game.parse_bets(cfg.rules, [bet], cfg.limits)
    return game.settle(cfg.rules, game.parse_outcome(cfg.rules, outcome), bets, cfg.money)


def test_straight_of_2550_is_refused_at_a_mop_1_table_60_2004_art_7() -> None:
    # config/roulette.toml: payable unit 100, minimum 2500. 35 x 2550 = 89250 cannot be
    # paid in whole patacas; the bet is refused, naming the unit. 2600 pays 35 x 2600.
    with pytest.raises(BetError) as exc:
        _settle(
            "roulette",
            {"min_stake": 2500},
            100,
            {"bet_type": "straight", "selection": [17], "stake": 2550},
            {"number": 17},
        )
    assert exc.value.code == "BET_STAKE_PAYABLE_UNIT" and "100" in exc.value.message
    s = _settle(
        "roulette",
        {"min_stake": 2500},
        100,
        {"bet_type": "straight", "selection": [17], "stake": 2600},
        {"number": 17},
    )
    assert s.results[0].amounts.payout == 35 * 2600 and s.results[0].amounts.breakage == 0


def test_figure_bet_of_2050_is_refused_59_2004_art_6_3() -> None:
    # config/fish-prawn-crab.toml: a figure bet of 2050 once "won 2000"; art. 6 3) pays once
    # the stake per die showing the figure.
    with pytest.raises(BetError) as exc:
        _settle(
            "fish-prawn-crab",
            {"min_stake": 2000},
            100,
            {"bet_type": "figure", "selection": "fish", "stake": 2050},
            {"dice": [1, 2, 3]},
        )
    assert exc.value.code == "BET_STAKE_PAYABLE_UNIT"
    s = _settle(
        "fish-prawn-crab",
        {"min_stake": 2000},
        100,
        {"bet_type": "figure", "selection": "fish", "stake": 2100},
        {"dice": [1, 1, 3]},
    )
    assert s.results[0].amounts.net == 2 * 2100


def test_without_a_minimum_the_minimum_is_the_payable_unit_60_2004_art_7() -> None:
    # payable_unit = 100 and no [limits]: red at 50 once "won" 0. The default minimum is
    # now the unit itself, and 50 is refused.
    cfg = validate_document({"table": {"id": "t", "game": "roulette", "payable_unit": 100}})
    assert cfg.limits.min_stake == 100 and cfg.limits.payable_unit == 100
    with pytest.raises(BetError) as exc:
        cfg.game.parse_bet(cfg.rules, {"bet_type": "red", "stake": 50}, cfg.limits)
    assert exc.value.code == "BET_STAKE_OUT_OF_LIMITS"
    with pytest.raises(BetError) as exc:
        cfg.game.parse_bet(cfg.rules, {"bet_type": "red", "stake": 150}, cfg.limits)
    assert exc.value.code == "BET_STAKE_PAYABLE_UNIT"


@pytest.mark.parametrize(
    "limits",
    [
        {"min_stake": 2550},
        {"min_stake": 2500, "max_stake": 5000050},
        {"bet_types": {"straight": {"max": 200050}}},
        {"bet_types": {"red": {"min": 150}}},
    ],
)
def test_check_config_refuses_limits_that_are_not_whole_units_60_2004_art_7(
    limits: dict,
) -> None:
    with pytest.raises(ConfigInvalid) as exc:
        validate_document(
            {"table": {"id": "t", "game": "roulette", "payable_unit": 100}, "limits": limits}
        )
    assert any("payable unit" in e and "100" in e for e in exc.value.errors), exc.value.errors


@pytest.mark.parametrize(
    ("game_id", "section", "key", "value"),
    [
        ("stud-poker", "pay_table", "jackpot_stake", 2050),  # 61/2004 art. 10 1)
        ("stud-poker", "pay_table", "jackpot_flush_fixed", 100050),  # art. 10 2) (5), 3)
        ("stud-poker", "pay_table", "max_payout", 100000050),  # art. 9 5) (7)-(9)
        ("super-pan-9", "rules", "casino_co_bank", 100050),  # 261/96/M art. 5 5)
        ("paikao", "rules", "casino_co_bank", 100050),  # 195/92/M art. 5 (e)
    ],
)
def test_check_config_refuses_fixed_amounts_that_are_not_whole_units(
    game_id: str, section: str, key: str, value: int
) -> None:
    with pytest.raises(ConfigInvalid) as exc:
        validate_document(
            {
                "table": {"id": "t", "game": game_id, "payable_unit": 100},
                section: {game_id: {key: value}},
            }
        )
    assert any(key in e and "payable unit" in e for e in exc.value.errors), exc.value.errors


def test_check_config_refuses_mahjong_shares_the_unit_cannot_pay_135_91_m_art_7() -> None:
    # A MOP 10 payable unit: the default share of level 25/50 (MOP 25) cannot be handed over.
    with pytest.raises(ConfigInvalid) as exc:
        validate_document({"table": {"id": "t", "game": "mahjong", "payable_unit": 1000}})
    assert any("'25/50'" in e and "payable unit" in e for e in exc.value.errors)


@pytest.mark.parametrize("game_id", ["super-pan-9", "paikao"])
def test_a_bank_capital_the_table_cannot_pay_out_is_refused(game_id: str) -> None:
    # 261/96/M art. 5 3), 195/92/M art. 5 (c): the bank pays and collects up to its
    # capital, bet by bet; at a MOP 1 table a capital of 1050 would leave a payment of
    # 50 avos. The result is refused (the dealer corrects it); a whole capital settles.
    game = get_game(game_id)
    rules = game.default_rules()
    outcome = game.sample_outcomes(rules)[0]
    raw = game.outcome_json(outcome)
    money = MoneyRules(payable_unit=100)
    for key in ("dice_total", "first_place", "service_order"):
        raw.pop(key, None)
    odd = game.parse_outcome(rules, {**raw, "banker_capital": 1050})
    with pytest.raises(OutcomeError) as exc:
        game.settle(rules, odd, [], money)
    assert exc.value.code == "CAPITAL_PAYABLE_UNIT"
    game.settle(rules, game.parse_outcome(rules, {**raw, "banker_capital": 1100}), [], money)
    with pytest.raises(OutcomeError) as exc:  # a capital is staked like a bet: same ceiling
        game.parse_outcome(rules, {**raw, "banker_capital": 10**13})
    assert exc.value.code == "BANKER_CAPITAL_INVALID"
