"""The player-banked table shared by Super Pan 9 (261/96/M) and P'ai Kao (195/92/M):
dice and the place served first (art. 2), capital-bounded settlement in order and
co-banking (art. 5 3), 5)), 5% commission (art. 9), banker rotation (art. 5 1), 2), 4)).
"""

from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from firmware_host.games.banker import (
    MAX_BANK_GAMES,
    BankRotationError,
    BankTurn,
    DiceReshake,
    Layer,
    RoundSetup,
    Wager,
    first_place,
    order_wagers,
    parse_dice,
    service_order,
    settle_bank,
)
from firmware_host.games.errors import OutcomeError
from firmware_host.games.money import MoneyRules, Rounding

FIVE_PCT = Fraction(5, 100)


# -- dice, art. 2 ------------------------------------------------------------------------


def count_by_hand(banker: int, count: int, places: int) -> int:
    """Count places one by one counter-clockwise (increasing number), the banker saying 1."""
    seat = banker
    for _ in range(count - 1):
        seat = seat + 1 if seat < places else 1
    return seat


@pytest.mark.parametrize("places", [2, 8, 9])
@pytest.mark.parametrize("banker", [1, 2, 5])
def test_first_place_counted_from_the_banker_art_2_2(places: int, banker: int) -> None:
    # 261/96/M art. 2 2), 195/92/M art. 2 (b): "A contar do banqueiro, no sentido oposto
    # ao dos ponteiros do relógio, a soma dos pontos dos dados determina o lugar".
    if banker > places:
        return
    for total in range(4, 25):  # four dice: 4..24
        assert first_place(banker, total, places) == count_by_hand(banker, total, places)


def test_known_counts_art_2_2() -> None:
    # eight places, banker on 1: a total of 9 comes back to the banker; 10 serves place 2
    assert first_place(1, 9, 8) == 1
    assert first_place(1, 10, 8) == 2
    assert first_place(6, 4, 8) == 1  # 6, 7, 8, 1
    assert service_order(7, 8) == (7, 8, 1, 2, 3, 4, 5, 6)


def test_declared_subtraction_keeps_counting_modulo_the_places_art_2_3() -> None:
    # 261/96/M art. 2 3): any number of points may be added or subtracted (decision:
    # counting continues modulo the number of places, also at zero or below).
    s = RoundSetup(8, 3, 1000, 0, (1, 1, 1, 1), declared=-4)  # count 0
    assert s.count == 0
    assert s.first_place == 2  # one step clockwise of the banker, like a count of 8
    assert RoundSetup(8, 3, 1000, 0, (1, 1, 1, 1), declared=4).first_place == count_by_hand(3, 8, 8)


@pytest.mark.parametrize("bad", [None, "stacked", "tilted", "out", "OUT"])
def test_stacked_or_fallen_die_means_reshake_art_2_4(bad: object) -> None:
    # 261/96/M art. 2 4), 195/92/M art. 2 (e): "Se um ou mais dados aparecerem mal
    # assentes ou saírem do recipiente, o banqueiro terá de os agitar novamente."
    with pytest.raises(DiceReshake) as exc:
        parse_dice([3, bad, 4, 5])
    assert exc.value.code == "DICE_RESHAKE"


@pytest.mark.parametrize("raw", [[1, 2, 3], [1, 2, 3, 7], [0, 1, 1, 1], [1, 2, 3, True], "1234"])
def test_four_dice_faces_one_to_six_art_1(raw: object) -> None:
    # 261/96/M art. 1 2), 195/92/M art. 1 (b): four dice.
    with pytest.raises(OutcomeError) as exc:
        parse_dice(raw)
    assert exc.value.code == "DICE_INVALID"


def test_banker_capital_must_be_on_the_table_art_5_3() -> None:
    # 261/96/M art. 5 3): the banker puts his capital on the table before shaking.
    with pytest.raises(OutcomeError) as exc:
        RoundSetup(8, 1, 0, 0, (1, 2, 3, 4))
    assert exc.value.code == "BANKER_CAPITAL_INVALID"


# -- capital-bounded settlement, art. 5 3) and 5); commission, art. 9 ---------------------


def W(i: int, stake: int, wins: bool, place: int = 2) -> Wager:
    return Wager(f"w{i}", i, place, stake, wins)


def test_banker_pays_until_his_capital_then_stops_art_5_3() -> None:
    # 261/96/M art. 5 3): "Em caso algum poderá o ganho ou perda do banqueiro exceder o
    # montante do seu capital em cada jogada." Capital 1000; three winners of 600 each.
    m = MoneyRules()
    r = settle_bank([Layer("banker", 1000)], [W(1, 600, True), W(2, 600, True), W(3, 600, True)], m)
    assert [s.transfer for s in r.steps] == [600, 400, 0]
    assert r.layers[0].gross == -1000


def test_collections_first_then_payments_art_5_3() -> None:
    # A loser collected first lets the banker pay more: capital 1000 + 500 collected.
    m = MoneyRules()
    ws = [W(1, 500, False), W(2, 1200, True), W(3, 600, True)]
    r = settle_bank([Layer("banker", 1000)], ws, m)
    assert [s.transfer for s in r.steps] == [-500, 1200, 300]
    assert r.layers[0].gross == -1000


def test_banker_wins_at_most_his_capital_art_5_3() -> None:
    m = MoneyRules()
    r = settle_bank([Layer("banker", 1000)], [W(1, 700, False), W(2, 700, False)], m)
    assert [s.transfer for s in r.steps] == [-700, -300]  # 400 of the second stake handed back
    assert r.layers[0].gross == 1000
    assert r.wagers[1][1].net == -300


def test_co_bankers_after_the_banker_in_order_casino_last_art_5_5() -> None:
    # 261/96/M art. 5 5) (Chinese): 正庄先行，幫庄注碼按次序放在正庄後面，場方幫庄排至最尾，
    # 輸贏均按次序進行殺賠 — banker first, co-bankers in order behind him, the casino last.
    m = MoneyRules()
    layers = [
        Layer("banker", 100),
        Layer("co_bank", 50, "c1", 4),
        Layer("co_bank", 50, "c2", 5),
        Layer("casino", 1000),
    ]
    r = settle_bank(layers, [W(1, 180, True), W(2, 100, True)], m)
    assert r.steps[0].shares == (100, 50, 30, 0)
    assert r.steps[1].shares == (0, 0, 20, 80)
    # losses are taken the same way: banker first up to his capital, then the others
    r = settle_bank(layers, [W(1, 180, False)], m)
    assert r.steps[0].shares == (-100, -50, -30, 0)


def test_commission_on_each_winner_art_9() -> None:
    # 261/96/M art. 9, 195/92/M art. 9: 5% of every win. Player wins 1000 -> pays 50;
    # the banker wins 2000 net over the game -> pays 100; the casino pays itself nothing.
    m = MoneyRules()
    layers = [Layer("banker", 2000), Layer("casino", 5000)]
    r = settle_bank(layers, [W(1, 1000, True), W(2, 3000, False), W(3, 1000, False)], m)
    assert r.wagers[0][1].commission == 50 and r.wagers[0][1].net == 950
    assert r.layers[0].gross == 2000 and r.layers[0].amounts.commission == 100
    assert r.layers[1].gross == 1000 and r.layers[1].amounts.commission == 0
    assert r.commission == 150


def test_commission_is_five_percent_and_the_unit_rounding_is_breakage_art_9() -> None:
    # 261/96/M art. 9, 195/92/M art. 9: the house takes 5% of the win. A place wins 2500
    # at a table paying MOP 1 (100 avos): 5% is 125; the exact net 2375 is paid as 2300
    # and the 75 the table cannot pay is breakage, not commission.
    r = settle_bank([Layer("banker", 10000)], [W(1, 2500, True)], MoneyRules(payable_unit=100))
    a = r.wagers[0][1]
    assert (a.commission, a.net, a.breakage) == (2500 * 5 // 100, 2300, 75)
    assert a.payout == 2425 and r.commission_exact == 125


money_rules = st.builds(
    MoneyRules,
    payable_unit=st.sampled_from([1, 5, 100]),
    rounding=st.sampled_from([Rounding.FLOOR, Rounding.NEAREST]),
)
wagers_st = st.lists(
    st.tuples(st.integers(1, 3000), st.booleans(), st.integers(2, 9)), min_size=0, max_size=12
).map(lambda xs: [Wager(f"w{i}", i, p, s, b) for i, (s, b, p) in enumerate(xs)])
layers_st = st.tuples(
    st.integers(1, 5000),
    st.lists(st.integers(1, 3000), max_size=3),
    st.integers(0, 4000),
).map(
    lambda t: (
        [Layer("banker", t[0])]
        + [Layer("co_bank", c, f"c{i}", 20 + i) for i, c in enumerate(t[1])]
        + ([Layer("casino", t[2])] if t[2] else [])
    )
)


@settings(max_examples=300, deadline=None)
@given(layers=layers_st, wagers=wagers_st, money=money_rules)
def test_settlement_properties_art_5_and_9(
    layers: list[Layer], wagers: list[Wager], money: MoneyRules
) -> None:
    r = settle_bank(layers, wagers, money)
    caps = [ly.capital for ly in layers]
    running = [0] * len(layers)
    paid = [0] * len(layers)
    collected = [0] * len(layers)
    for step, w in zip(r.steps, wagers, strict=True):
        # each bet is even money, paid or collected at most in full (art. 7)
        assert 0 <= step.transfer <= w.stake if w.place_wins else -w.stake <= step.transfer <= 0
        assert sum(step.shares) == step.transfer
        for i, share in enumerate(step.shares):
            # a later layer moves only once every earlier layer can move no more (art. 5 5))
            if share > 0:
                paid[i] += share
                assert all(running[j] == -caps[j] for j in range(i))  # j < i already moved
            elif share < 0:
                collected[i] -= share
                assert all(running[j] == caps[j] for j in range(i))
            running[i] -= share
            # never pays more than the capital plus what it has collected so far, and never
            # wins more than its capital (art. 5 3))
            assert paid[i] <= caps[i] + collected[i]
            assert -caps[i] <= running[i] <= caps[i]
        # a bet short-paid means the whole bank is empty; short-collected, the whole bank full
        if w.place_wins and step.transfer < w.stake:
            assert all(running[j] == -caps[j] for j in range(len(caps)))
        if not w.place_wins and -step.transfer < w.stake:
            assert all(running[j] == caps[j] for j in range(len(caps)))
    assert [lr.gross for lr in r.layers] == running

    # in the order placed: what a bet gets never depends on the bets settled after it
    for k in range(len(wagers)):
        assert settle_bank(layers, wagers[:k], money).steps == r.steps[:k]

    # the commission is the regulation's 5% of each win, to the minor unit (art. 9); what
    # the payable unit does not let the table pay is breakage, never commission
    exact_total = Fraction(0)
    winners = [(s.transfer, a) for s, (_, a) in zip(r.steps, r.wagers, strict=True)]
    winners += [(lr.gross, lr.amounts) for lr in r.layers if lr.layer.who != "casino"]
    for gross, a in winners:
        if gross <= 0:
            assert a.commission == 0 and a.net == gross
            continue
        exact = gross * FIVE_PCT
        exact_total += exact
        assert a.payout - a.commission == a.net
        assert a.net + a.breakage == gross - exact  # the exact net, nothing lost
        assert a.net <= gross
        if money.rounding is Rounding.FLOOR:
            assert 0 <= a.commission - exact < 1
            assert 0 <= a.breakage < money.payable_unit  # never overpaid
            assert a.net % money.payable_unit == 0 or a.net == gross
        else:
            assert abs(a.commission - exact) <= Fraction(1, 2)
            assert abs(a.breakage) <= Fraction(money.payable_unit, 2)
    for lr in r.layers:
        if lr.layer.who == "casino":
            assert lr.amounts.commission == 0 and lr.amounts.net == lr.gross
    assert r.commission_exact == exact_total

    # money is conserved: every net, plus the exact commission and the breakage the
    # house keeps, sums to zero
    nets = sum(a.net for _, a in r.wagers) + sum(lr.amounts.net for lr in r.layers)
    assert nets + r.commission_exact + r.breakage == 0


def test_settlement_order_right_to_left_then_order_placed_art_2_3() -> None:
    # 261/96/M art. 2 3): "a sequência das apostas processam-se da direita para a
    # esquerda"; within a place the bets keep the order they were placed.
    ws = [
        W(0, 10, True, place=2),
        W(1, 10, True, place=7),
        W(2, 10, True, place=2),
        W(3, 10, True, place=5),
    ]
    served = service_order(5, 8)  # 5, 6, 7, 8, 1, 2, 3, 4
    assert [w.bet_id for w in order_wagers(ws, served, "served")] == ["w3", "w1", "w0", "w2"]
    assert [w.bet_id for w in order_wagers(ws, served, "placed")] == ["w0", "w1", "w2", "w3"]


# -- banker rotation, art. 5 1), 2), 4) ------------------------------------------------------


def test_bank_held_at_most_two_games_art_5_1() -> None:
    # 261/96/M art. 5 1): "cada lugar só pode ficar com a banca num máximo de duas
    # jogadas de cada vez", unless every other place agrees.
    assert MAX_BANK_GAMES == 2
    t = BankTurn(8, 3).played(1000, -200)
    assert t.may_keep()
    t = t.keep(800).played(800, 100)
    assert not t.may_keep()
    with pytest.raises(BankRotationError) as exc:
        t.keep(2000)
    assert exc.value.code == "BANK_TURN_OVER"
    assert t.keep(2000, all_agree=True) == t


def test_winning_banker_keeps_all_winnings_as_capital_art_5_4() -> None:
    # 261/96/M art. 5 4): won 600 on 1000 -> the second game's capital is at least 1600.
    t = BankTurn(8, 3).played(1000, 600)
    assert t.minimum_capital() == 1600
    with pytest.raises(BankRotationError) as exc:
        t.keep(1500)
    assert exc.value.code == "BANK_CAPITAL_REDUCED"
    t.keep(1600)
    t.keep(5000)  # he may add to it


def test_bank_passes_counter_clockwise_art_5_2() -> None:
    # 261/96/M art. 5 2): a place may refuse; the bank passes counter-clockwise to a
    # place that bet in the previous game.
    t = BankTurn(8, 7)
    assert t.pass_on().banker == 8
    assert t.pass_on(declines={8}).banker == 1
    assert t.pass_on(declines={8}, bet_previous={2, 3}).banker == 2
    with pytest.raises(BankRotationError) as exc:
        t.pass_on(declines={8}, bet_previous=set())
    assert exc.value.code == "NO_BANKER"
