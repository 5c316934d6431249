"""Cussec / sic bo, 57/2004: the 13 bet types of art. 5, prizes of art. 6, art. 7."""

import itertools
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from firmware_host.config import ConfigInvalid, validate_document
from firmware_host.games import MoneyRules, get_game
from firmware_host.games.errors import InvalidSelection, OutcomeError
from firmware_host.games.sicbo import SicboRules

G = get_game("sicbo")
R = G.default_rules()
M = MoneyRules()
THROWS = list(itertools.product(range(1, 7), repeat=3))


def net(bet_type, selection, dice, rules=R, stake=100):
    bets = G.parse_bets(rules, [{"bet_type": bet_type, "selection": selection, "stake": stake}])
    return (
        G.settle(rules, G.parse_outcome(rules, {"dice": list(dice)}), bets, M)
        .results[0]
        .amounts.net
    )


# Each case: bet, selection, an independent predicate of art. 5, the art. 6 prize.
CASES = [
    ("small", None, lambda d: 4 <= sum(d) <= 10 and len(set(d)) > 1, 1, "art. 5 1), 6 1), 7"),
    ("big", None, lambda d: 11 <= sum(d) <= 17 and len(set(d)) > 1, 1, "art. 5 2), 6 2), 7"),
    ("specific_triple", 4, lambda d: d == (4, 4, 4), 150, "art. 5 4), 6 4)"),
    ("any_triple", None, lambda d: d[0] == d[1] == d[2], 24, "art. 5 5), 6 5)"),
    ("total", 4, lambda d: sum(d) == 4, 50, "art. 6 6) (1)"),
    ("total", 17, lambda d: sum(d) == 17, 50, "art. 6 6) (1)"),
    ("total", 5, lambda d: sum(d) == 5, 18, "art. 6 6) (2) default"),
    ("total", 15, lambda d: sum(d) == 15, 14, "art. 6 6) (3) default"),
    ("total", 7, lambda d: sum(d) == 7, 12, "art. 6 6) (4)"),
    ("total", 13, lambda d: sum(d) == 13, 8, "art. 6 6) (5)"),
    ("total", 10, lambda d: sum(d) == 10, 6, "art. 6 6) (6)"),
    ("even", None, lambda d: sum(d) % 2 == 0, 1, "art. 5 7), 6 7)"),
    ("odd", None, lambda d: sum(d) % 2 == 1, 1, "art. 5 8), 6 8)"),
    ("double_single", [2, 5], lambda d: sorted(d) == [2, 2, 5], 50, "art. 5 9), 6 9)"),
    ("three_specified", [1, 3, 6], lambda d: sorted(d) == [1, 3, 6], 30, "art. 5 10), 6 10)"),
    ("two_dice", [2, 6], lambda d: 2 in d and 6 in d, 5, "art. 5 11), 6 11)"),
    ("specific_double", 3, lambda d: d.count(3) >= 2, 8, "art. 5 12), 6 12)"),
    (
        "four_numbers",
        [1, 2, 3, 4],
        lambda d: len(set(d)) == 3 and set(d) <= {1, 2, 3, 4},
        7,
        "art. 5 13), 6 13)",
    ),
]


@pytest.mark.parametrize(("bet_type", "selection", "wins", "prize", "article"), CASES)
def test_bet_types_over_all_216_throws(bet_type, selection, wins, prize, article) -> None:
    """57/2004 art. 5 and art. 6: each bet wins its prize exactly on its combinations."""
    for d in THROWS:
        assert net(bet_type, selection, d) == (100 * prize if wins(d) else -100), (article, d)


def test_single_pays_by_dice_showing_the_face_art_6_3() -> None:
    # 57/2004 art. 6 3): once, twice, three times the stake.
    assert net("single", 5, (5, 1, 2)) == 100
    assert net("single", 5, (5, 5, 2)) == 200
    assert net("single", 5, (5, 5, 5)) == 300
    assert net("single", 5, (1, 2, 3)) == -100


def test_small_big_lose_on_any_triple_art_7() -> None:
    for f in range(1, 7):
        assert net("small", None, (f, f, f)) == -100
        assert net("big", None, (f, f, f)) == -100


def test_even_odd_follow_the_total_on_triples_decision() -> None:
    # Art. 7 names only small and big; even/odd are decided by the total (docs/rules/sicbo.md).
    assert net("even", None, (2, 2, 2)) == 100
    assert net("odd", None, (3, 3, 3)) == 100


def test_configured_totals_pay_configured_prize() -> None:
    rules = SicboRules(total_5=30, total_6=17)
    assert net("total", 16, (6, 6, 4), rules) == 3000
    assert net("total", 6, (1, 2, 3), rules) == 1700


def prob(pred) -> Fraction:
    return Fraction(sum(1 for d in THROWS if pred(d)), 216)


@pytest.mark.parametrize(
    ("bet_type", "selection", "wins", "prize", "article"), [c for c in CASES if c[0] != "single"]
)
def test_math_edges_follow_from_the_pay_table(bet_type, selection, wins, prize, article) -> None:
    p = prob(wins)
    expected = 1 - (prize + 1) * p
    lines = [
        ln
        for ln in G.math(R).lines
        if ln.bet == bet_type and ln.selection == G.canonical_selection(R, bet_type, selection)
    ]
    if lines:
        assert lines[0].house_edge == expected, article


def test_math_single_edge_is_17_in_216() -> None:
    # Art. 6 3): 75 throws show the face once, 15 twice, 1 three times.
    line = next(ln for ln in G.math(R).lines if ln.bet == "single")
    assert line.house_edge == 1 - Fraction(75 * 2 + 15 * 3 + 1 * 4, 216)


@settings(max_examples=15)
@given(t5=st.integers(18, 30), t6=st.integers(14, 18))
def test_math_follows_configured_totals(t5: int, t6: int) -> None:
    rules = SicboRules(total_5=t5, total_6=t6)
    lines = {
        (ln.bet, ln.selection): ln.house_edge for ln in G.math(rules).lines if ln.bet == "total"
    }
    assert lines[("total", 5)] == 1 - (t5 + 1) * prob(lambda d: sum(d) == 5)
    assert lines[("total", 15)] == 1 - (t6 + 1) * prob(lambda d: sum(d) == 15)


def test_config_refuses_totals_outside_authorised_range() -> None:
    doc = {
        "table": {"id": "t", "game": "sicbo"},
        "pay_table": {"sicbo": {"total_5": 31, "total_6": 13}},
    }
    with pytest.raises(ConfigInvalid) as exc:
        validate_document(doc)
    assert (
        "pay_table.sicbo.total_5: 31 is outside the authorised range 18..30 (57/2004 art. 6 6) (2))"
        in exc.value.errors
    )
    assert (
        "pay_table.sicbo.total_6: 13 is outside the authorised range 14..18 (57/2004 art. 6 6) (3))"
        in exc.value.errors
    )


@pytest.mark.parametrize(
    ("bet_type", "selection"),
    [
        ("single", 7),
        ("single", 0),
        ("specific_triple", [1]),
        ("total", 3),
        ("total", 18),
        ("double_single", [2, 2]),
        ("three_specified", [1, 1, 2]),
        ("two_dice", [3]),
        ("four_numbers", [1, 2, 3]),
        ("four_numbers", [1, 2, 3, 3]),
        ("small", 1),
    ],
)
def test_impossible_selections_refused(bet_type, selection) -> None:
    with pytest.raises(InvalidSelection):
        G.parse_bet(R, {"bet_type": bet_type, "selection": selection, "stake": 1})


@pytest.mark.parametrize(
    "bad",
    [
        [1, 2],
        [1, 2, 7],
        [0, 1, 2],
        {"dice": [1, 2, "3"]},
        {"dice": [1, 2, 3], "x": 1},
        [True, 1, 2],
    ],
)
def test_impossible_outcomes_refused(bad) -> None:
    with pytest.raises(OutcomeError):
        G.parse_outcome(R, bad)


@given(st.tuples(st.integers(1, 6), st.integers(1, 6), st.integers(1, 6)), st.integers(1, 10**6))
def test_settlement_never_pays_fractions(dice, stake) -> None:
    raws = [{"bet_type": t, "selection": s, "stake": stake} for t, s, *_ in CASES]
    s = G.settle(R, G.parse_outcome(R, list(dice)), G.parse_bets(R, raws), M)
    for r in s.results:
        assert isinstance(r.amounts.net, int) and r.amounts.breakage == 0
    assert s.totals.net == sum(r.amounts.net for r in s.results)
