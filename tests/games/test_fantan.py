"""Fantan, 58/2004: result 1..4 (0 counts as 4, art. 3 2)), chances of art. 6, prizes of
art. 7, pushes of art. 8, 5% of the prizes to the bank (art. 9)."""

from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from firmware_host.games import MoneyRules, get_game
from firmware_host.games.errors import InvalidSelection, OutcomeError

G = get_game("fantan")
R = G.default_rules()
UNIT = MoneyRules()
FIVE = Fraction(5, 100)


def settle(bet_type, selection, number, stake=1000, money=UNIT):
    bets = G.parse_bets(R, [{"bet_type": bet_type, "selection": selection, "stake": stake}])
    return G.settle(R, G.parse_outcome(R, {"number": number}), bets, money).results[0].amounts


# (bet, selection, winning numbers, pushing numbers, art. 7 prize)
CASES = [
    ("fan", 2, {2}, set(), Fraction(3), "art. 6 2) (1), art. 7 1) (1)"),
    ("nim", {"win": 1, "push": 3}, {1}, {3}, Fraction(2), "art. 6 2) (2), art. 7 1) (2)"),
    (
        "nga",
        {"win": [2, 3], "push": 4},
        {2, 3},
        {4},
        Fraction(1, 2),
        "art. 6 2) (3), art. 7 1) (3)",
    ),
    ("sam_hong", [1, 2, 4], {1, 2, 4}, set(), Fraction(1, 3), "art. 6 2) (4), art. 7 1) (4)"),
    ("kwok", [3, 4], {3, 4}, set(), Fraction(1), "art. 6 1), art. 7 2)"),
]


@pytest.mark.parametrize(("bet_type", "selection", "win", "push", "prize", "article"), CASES)
def test_each_chance_wins_pushes_loses(bet_type, selection, win, push, prize, article) -> None:
    stake = 1200  # divisible by 3 and 20: every prize and commission is whole
    for n in (1, 2, 3, 4):
        a = settle(bet_type, selection, n, stake)
        if n in win:
            gross = stake * prize
            assert (a.result, a.payout, a.commission, a.net) == (
                "win",
                gross,
                gross * FIVE,
                gross * (1 - FIVE),
            ), article
        elif n in push:
            assert (a.result, a.net) == ("push", 0), "58/2004 art. 8"
        else:
            assert (a.result, a.net) == ("lose", -stake), article


def test_commission_is_taken_from_the_prize_not_the_stake_art_9() -> None:
    a = settle("kwok", [1, 2], 1, stake=10000)
    assert a.commission == 500 and a.net == 9500


def test_zero_counts_as_four_art_3_2() -> None:
    assert G.outcome_json(G.parse_outcome(R, {"number": 0})) == {"number": 4}
    assert G.parse_outcome(R, {"buttons": 48}).number == 4
    assert G.parse_outcome(R, {"buttons": 49}).number == 1


def test_zero_with_a_button_count_counts_as_four_art_3_2() -> None:
    # 58/2004 art. 3 2): "Quando o resultado final da operação for 0 (zero) entende-se que
    # este resultado corresponde a quatro". 8 buttons counted off four by four leave 0.
    o = G.parse_outcome(R, {"number": 0, "buttons": 8})
    assert (o.number, o.buttons) == (4, 8)
    assert G.parse_outcome(R, {"number": 4, "buttons": 8}) == o
    with pytest.raises(OutcomeError, match="disagrees"):
        G.parse_outcome(R, {"number": 0, "buttons": 9})  # 9 leaves 1, not 0


def test_button_count_is_bounded_art_2() -> None:
    assert G.parse_outcome(R, {"buttons": 10_000}).number == 4
    for bad in (10_001, 10**40):
        with pytest.raises(OutcomeError, match=r"1\.\.10000"):
            G.parse_outcome(R, {"buttons": bad})


@pytest.mark.parametrize(
    "bad",
    [5, -1, {"number": 1.0}, {"buttons": 0}, {"buttons": -3}, "3", None,
     {"number": False, "buttons": 8}],
)  # fmt: skip
def test_bad_outcomes_refused(bad) -> None:
    with pytest.raises(OutcomeError):
        G.parse_outcome(R, bad)


@pytest.mark.parametrize(
    ("bet_type", "selection"),
    [
        ("fan", 5),
        ("fan", 0),
        ("nim", {"win": 1, "push": 1}),
        ("nim", {"win": 1}),
        ("nga", {"win": [1, 1], "push": 2}),
        ("nga", {"win": [1, 2], "push": 2}),
        ("sam_hong", [1, 2]),
        ("kwok", [1, 1]),
        ("kwok", [1, 5]),
    ],
)
def test_impossible_selections_refused(bet_type, selection) -> None:
    with pytest.raises(InvalidSelection):
        G.parse_bet(R, {"bet_type": bet_type, "selection": selection, "stake": 1})


def test_math_includes_the_commission() -> None:
    # Independent: expected net per unit with four equally likely results.
    expected = {}
    for bet_type, _sel, win, push, prize, _art in CASES:
        ev = Fraction(len(win), 4) * prize * (1 - FIVE) - Fraction(4 - len(win) - len(push), 4)
        expected[bet_type] = -ev
    got = {ln.bet: ln.house_edge for ln in G.math(R).lines}
    assert got == expected
    assert got["fan"] == Fraction(3, 80)  # 3.75%
    assert got["nga"] == Fraction(1, 80)


@given(
    case=st.sampled_from(CASES),
    number=st.integers(1, 4),
    stake=st.integers(1, 10**7),
    unit=st.sampled_from([1, 10, 100]),
)
def test_pushes_return_exactly_the_stake_and_nothing_is_paid_in_fractions(
    case, number, stake, unit
) -> None:
    bet_type, selection, win, push, prize, _ = case
    stake = stake * unit
    a = settle(bet_type, selection, number, stake, MoneyRules(payable_unit=unit))
    if number in push:
        assert a.net == 0 and a.payout == 0 and a.commission == 0
    assert a.net % unit == 0
    if a.result == "win":
        exact = stake * prize * (1 - FIVE)
        assert a.net <= exact < a.net + unit  # house never overpays, nothing lost
        assert a.net + a.breakage == exact
