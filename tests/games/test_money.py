"""Money and the rounding rule (docs/rules/money.md): integers in minor units, exact
fractions for odds, the house never overpays, the remainder is reported."""

from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from firmware_host.games.errors import InvalidStake
from firmware_host.games.money import MoneyRules, Rounding, Verdict, check_stake, settle_amounts

FLOOR = MoneyRules(payable_unit=1)


def test_whole_prize_is_paid_exactly() -> None:
    a = settle_amounts(100, Verdict.win(35), FLOOR)
    assert (a.result, a.payout, a.commission, a.net, a.breakage) == ("win", 3500, 0, 3500, 0)


def test_fantan_nga_half_prize_less_five_percent_rounds_down() -> None:
    # 58/2004 art. 7 1) (3) and art. 9: Nga pays half the stake, 5% of that prize to the bank.
    # Stake 10: prize 5, commission 1/4, exact net 19/4 -> paid 4, remainder 3/4 reported.
    a = settle_amounts(10, Verdict.win(Fraction(1, 2), Fraction(5, 100)), FLOOR)
    assert a.net == 4
    assert a.payout == 5
    assert a.commission == 1
    assert a.breakage == Fraction(3, 4)


def test_payable_unit_rounds_to_chips() -> None:
    # A MOP 1 chip (100 avos) is the smallest payable amount.
    money = MoneyRules(payable_unit=100)
    a = settle_amounts(1050, Verdict.win(Fraction(3, 2)), money)  # 15.75 -> 15
    assert a.net == 1500 and a.breakage == Fraction(75)


@pytest.mark.parametrize(("stake", "odds"), [(2550, 35), (2050, 1), (50, 1), (150, 2)])
def test_a_whole_multiple_prize_is_never_rounded_60_2004_art_7(stake: int, odds: int) -> None:
    # 60/2004 art. 7 "1賠35 ... 1賠1", 57/2004 and 59/2004 art. 6 "uma vez a importância da
    # aposta": the prize is the stake times the figure, whatever the payable unit (such a
    # stake is refused at placement; one that got past is still paid the regulation's prize).
    for rounding in Rounding:
        a = settle_amounts(
            stake, Verdict.win(odds), MoneyRules(payable_unit=100, rounding=rounding)
        )
        assert (a.payout, a.commission, a.net, a.breakage) == (stake * odds, 0, stake * odds, 0)


def test_fantan_nga_commission_is_five_percent_and_rounding_is_breakage_art_9() -> None:
    # 58/2004 art. 7 1) (3): Nga pays half the stake; art. 9: 5% of the prize to the bank.
    # Stake MOP 100 at a MOP 1 payable unit: prize 5000, commission 250, exact net 4750;
    # the table pays 4700 and the 50 it cannot pay is breakage, not commission.
    a = settle_amounts(
        10000, Verdict.win(Fraction(1, 2), Fraction(5, 100)), MoneyRules(payable_unit=100)
    )
    assert (a.commission, a.net, a.breakage) == (10000 // 2 * 5 // 100, 4700, 50)
    assert a.payout == a.net + a.commission == 4950


def test_partial_loss_rounds_against_the_player() -> None:
    # Surrender of half an odd stake: the player never gets back more than half.
    a = settle_amounts(101, Verdict.lose(loss_fraction=Fraction(1, 2)), FLOOR)
    assert a.net == -51 and a.breakage == Fraction(1, 2)  # exact net -50.5 minus paid -51


def test_nearest_gives_exact_halves_to_the_house() -> None:
    money = MoneyRules(rounding=Rounding.NEAREST)
    assert settle_amounts(1, Verdict.win(Fraction(1, 2)), money).net == 0
    assert settle_amounts(3, Verdict.win(Fraction(1, 2)), money).net == 1  # 1.5 -> 1
    assert settle_amounts(5, Verdict.win(Fraction(1, 3)), money).net == 2  # 1.67 -> 2


@pytest.mark.parametrize("bad", [0, -5, 1.5, 2.0, "10", None, True])
def test_stake_must_be_positive_integer(bad: object) -> None:
    with pytest.raises(InvalidStake):
        check_stake(bad)


odds = st.fractions(min_value=0, max_value=200, max_denominator=12)
rates = st.sampled_from([Fraction(0), Fraction(5, 100), Fraction(1, 20), Fraction(1, 3)])


@given(
    stake=st.integers(1, 10**9),
    o=odds,
    rate=rates,
    unit=st.sampled_from([1, 5, 100, 1000]),
    rounding=st.sampled_from(list(Rounding)),
)
def test_win_never_pays_a_fraction_and_accounts_for_every_unit(
    stake: int, o: Fraction, rate: Fraction, unit: int, rounding: Rounding
) -> None:
    money = MoneyRules(payable_unit=unit, rounding=rounding)
    a = settle_amounts(stake, Verdict.win(o, rate), money)
    exact_net = stake * o * (1 - rate)
    exact_commission = stake * o * rate
    for v in (a.payout, a.commission, a.net):
        assert isinstance(v, int)
    if rate == 0 and o.denominator == 1:
        assert a.net == stake * o and a.breakage == 0  # a whole multiple is never rounded
    else:
        assert a.net % unit == 0
    assert a.payout - a.commission == a.net
    assert a.net + a.breakage == exact_net  # nothing lost from the books
    # the commission is the regulation's, to the minor unit; rounding is breakage
    if rounding is Rounding.FLOOR:
        assert 0 <= a.commission - exact_commission < 1
        assert 0 <= a.breakage < unit  # the house never overpays, by less than a unit
    else:
        assert abs(a.commission - exact_commission) <= Fraction(1, 2)
        assert abs(a.breakage) <= Fraction(unit, 2)


@given(stake=st.integers(1, 10**9), frac=st.fractions(0, 1, max_denominator=8))
def test_loss_never_exceeds_the_stake(stake: int, frac: Fraction) -> None:
    a = settle_amounts(stake, Verdict.lose(loss_fraction=frac), FLOOR)
    assert -stake <= a.net <= 0
    assert a.net + a.breakage == -stake * frac


def test_nearest_partial_loss_gives_the_exact_half_to_the_house() -> None:
    # docs/rules/money.md: under NEAREST an exact half goes to the house, on a loss too.
    # Surrender (blackjack art. 16) of half a stake of 300 at a payable unit of 100: the
    # exact loss is 150, 1.5 units; the house takes 200. (This once rounded to 100.)
    money = MoneyRules(payable_unit=100, rounding=Rounding.NEAREST)
    a = settle_amounts(300, Verdict.lose(loss_fraction=Fraction(1, 2)), money)
    assert a.net == -200 and a.breakage == Fraction(50)


@pytest.mark.parametrize("rounding", list(Rounding))
def test_a_whole_loss_is_the_whole_stake_whatever_the_unit(rounding: Rounding) -> None:
    # A losing bet's chips are on the layout: all of them are taken, nothing is rounded,
    # even for a stake that is not a multiple of the payable unit.
    money = MoneyRules(payable_unit=100, rounding=rounding)
    a = settle_amounts(150, Verdict.lose(), money)
    assert (a.net, a.breakage) == (-150, 0)


def _reference(stake: int, v: Verdict, money: MoneyRules) -> tuple[int, int, int, Fraction]:
    """settle_amounts written plainly with Fractions, as the docstrings define it."""
    unit = money.payable_unit

    def house_round(x: Fraction) -> int:  # x / unit rounded so that "down" favours the house
        q = x / unit
        fl = q.numerator // q.denominator
        if money.rounding is Rounding.NEAREST and q - fl > Fraction(1, 2):
            fl += 1
        return fl * unit

    if v.result == "push":
        return 0, 0, 0, Fraction(0)
    if v.result == "lose":
        exact = stake * v.loss_fraction
        lost = stake if v.loss_fraction == 1 else min(-house_round(-exact), stake)
        return 0, 0, -lost, lost - exact
    prize = stake * v.odds
    if v.commission_rate == 0 and v.odds.denominator == 1:
        return int(prize), 0, int(prize), Fraction(0)  # a whole multiple is never rounded
    exact_net = prize * (1 - v.commission_rate)
    net = house_round(exact_net)
    exact_commission = prize * v.commission_rate  # owed by the player: rounded for the house
    c = exact_commission.numerator // exact_commission.denominator
    if c < exact_commission and (
        money.rounding is Rounding.FLOOR or exact_commission - c >= Fraction(1, 2)
    ):
        c += 1
    return net + c, c, net, exact_net - net


@given(
    stake=st.integers(1, 10**12),
    verdict=st.one_of(
        st.builds(Verdict.win, odds, rates),
        st.builds(lambda f: Verdict.lose(loss_fraction=f), st.fractions(0, 1, max_denominator=8)),
        st.just(Verdict.push()),
    ),
    unit=st.sampled_from([1, 5, 100, 1000]),
    rounding=st.sampled_from(list(Rounding)),
)
def test_integer_settlement_equals_the_fraction_definition(
    stake: int, verdict: Verdict, unit: int, rounding: Rounding
) -> None:
    money = MoneyRules(payable_unit=unit, rounding=rounding)
    a = settle_amounts(stake, verdict, money)
    assert (a.payout, a.commission, a.net, a.breakage) == _reference(stake, verdict, money)
    assert type(a.breakage) is Fraction


@given(stake=st.integers(1, 10**9), frac=st.fractions(0, 1, max_denominator=8))
def test_nearest_loss_is_within_half_a_unit_and_halves_go_to_the_house(
    stake: int, frac: Fraction
) -> None:
    money = MoneyRules(payable_unit=100, rounding=Rounding.NEAREST)
    a = settle_amounts(stake, Verdict.lose(loss_fraction=frac), money)
    exact_net = -stake * frac
    assert a.net + a.breakage == exact_net
    if a.net != -stake:  # not capped at the stake
        assert abs(a.breakage) <= 50
        if abs(a.breakage) == 50:
            assert a.net < exact_net  # the half went to the house
