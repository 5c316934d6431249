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
    for v in (a.payout, a.commission, a.net):
        assert isinstance(v, int)
    assert a.net % unit == 0 and a.payout % unit == 0
    assert a.payout - a.commission == a.net
    assert a.net + a.breakage == exact_net  # nothing lost from the books
    assert a.commission >= 0
    if rounding is Rounding.FLOOR:
        assert 0 <= a.breakage < unit  # the house never overpays, by less than a unit
    else:
        assert abs(a.breakage) <= Fraction(unit, 2)


@given(stake=st.integers(1, 10**9), frac=st.fractions(0, 1, max_denominator=8))
def test_loss_never_exceeds_the_stake(stake: int, frac: Fraction) -> None:
    a = settle_amounts(stake, Verdict.lose(loss_fraction=frac), FLOOR)
    assert -stake <= a.net <= 0
    assert a.net + a.breakage == -stake * frac
