"""Fish-prawn-crab, 59/2004: faces and colours of art. 1, bets of art. 5, prizes of art. 6, art. 7."""

import itertools
from fractions import Fraction

import pytest

from firmware_host.games import MoneyRules, get_game
from firmware_host.games.errors import InvalidSelection, OutcomeError

G = get_game("fish-prawn-crab")
R = G.default_rules()
M = MoneyRules()
THROWS = list(itertools.product(range(1, 7), repeat=3))
# Art. 1 1), transcribed: number -> colour.
COLOUR = {1: "red", 2: "green", 3: "blue", 4: "blue", 5: "green", 6: "red"}


def net(bet_type, selection, dice, stake=100):
    bets = G.parse_bets(R, [{"bet_type": bet_type, "selection": selection, "stake": stake}])
    return G.settle(R, G.parse_outcome(R, {"dice": list(dice)}), bets, M).results[0].amounts.net


CASES = [
    ("small", None, lambda d: 4 <= sum(d) <= 10 and len(set(d)) > 1, 1, "art. 5 1), 6 1), 7"),
    ("big", None, lambda d: 11 <= sum(d) <= 17 and len(set(d)) > 1, 1, "art. 5 2), 6 2), 7"),
    (
        "one_colour",
        "green",
        lambda d: [COLOUR[x] for x in d].count("green") == 1,
        1,
        "art. 5 4), 6 4)",
    ),
    (
        "two_colour",
        "blue",
        lambda d: [COLOUR[x] for x in d].count("blue") == 2,
        3,
        "art. 5 5), 6 5)",
    ),
    ("three_colour", "red", lambda d: all(COLOUR[x] == "red" for x in d), 20, "art. 5 6), 6 6)"),
    ("any_three_colour", None, lambda d: len({COLOUR[x] for x in d}) == 1, 7, "art. 5 7), 6 7)"),
    ("specific_triple", "prawn", lambda d: d == (2, 2, 2), 150, "art. 5 8), 6 8)"),
    ("any_triple", None, lambda d: len(set(d)) == 1, 24, "art. 5 9), 6 9)"),
    ("total", 4, lambda d: sum(d) == 4, 50, "art. 6 10)"),
    ("total", 16, lambda d: sum(d) == 16, 18, "art. 6 10)"),
    ("total", 6, lambda d: sum(d) == 6, 14, "art. 6 10)"),
    ("total", 14, lambda d: sum(d) == 14, 12, "art. 6 10)"),
    ("total", 8, lambda d: sum(d) == 8, 8, "art. 6 10)"),
    ("total", 11, lambda d: sum(d) == 11, 6, "art. 6 10)"),
]


@pytest.mark.parametrize(("bet_type", "selection", "wins", "prize", "article"), CASES)
def test_bet_types_over_all_216_throws(bet_type, selection, wins, prize, article) -> None:
    for d in THROWS:
        assert net(bet_type, selection, d) == (100 * prize if wins(d) else -100), (article, d)


def test_figure_pays_by_dice_showing_it_art_6_3() -> None:
    # 59/2004 art. 6 3): one, two, three dice with the chosen figure.
    assert net("figure", "crab", (5, 1, 2)) == 100
    assert net("figure", "crab", (5, 5, 2)) == 200
    assert net("figure", "crab", (5, 5, 5)) == 300
    assert net("figure", "crab", (1, 2, 3)) == -100


def test_one_colour_is_exactly_one_art_5_4() -> None:
    # The Chinese note to art. 5 4): one die wins; three, or none, lose.
    assert net("one_colour", "red", (1, 2, 3)) == 100
    assert net("one_colour", "red", (1, 6, 1)) == -100
    assert net("one_colour", "red", (2, 3, 4)) == -100


def test_outcome_accepts_figure_names() -> None:
    o = G.parse_outcome(R, ["fish", "crab", "rooster"])
    assert G.outcome_json(o)["dice"] == [1, 5, 6]
    with pytest.raises(OutcomeError, match="unknown figure"):
        G.parse_outcome(R, ["fish", "dragon", "crab"])


@pytest.mark.parametrize(
    "raw",
    [
        {"dice": ["fish", "crab", "rooster"]},  # the audit's case: once OUTCOME_INVALID
        {"dice": ["fish", 5, "rooster"]},
        {"dice": ["Peixe", "caranguejo", "GALO"]},  # the Portuguese of art. 1 1)
        {"dice": ["魚", "蟹", "雞"]},  # the Chinese of art. 1 (一)
        {"dice": [1, 5, 6], "figures": ["fish", "crab", "rooster"]},  # the published form
        {"dice": ["fish", "crab", "rooster"], "figures": ["fish", "crab", "rooster"], "total": 12},
    ],
)
def test_figure_names_and_numbers_are_the_same_throw_art_1_1(raw) -> None:
    # 59/2004 art. 1 1): Peixe (fish) one, Caranguejo (crab) five, Galo (rooster) six.
    assert G.parse_outcome(R, raw).dice == (1, 5, 6)


def test_figure_names_must_agree_with_the_published_fields_art_1_1() -> None:
    with pytest.raises(OutcomeError, match="disagrees"):
        G.parse_outcome(R, {"dice": ["fish", "crab", "rooster"], "total": 11})


@pytest.mark.parametrize(("bet_type", "selection", "wins", "prize", "article"), CASES)
def test_math_edges_follow_from_the_pay_table(bet_type, selection, wins, prize, article) -> None:
    p = Fraction(sum(1 for d in THROWS if wins(d)), 216)
    canon = G.canonical_selection(R, bet_type, selection)
    edges = {(ln.bet, str(ln.selection)): ln.house_edge for ln in G.math(R).lines}
    key = (bet_type, str(canon))
    if key in edges:
        assert edges[key] == 1 - (prize + 1) * p, article


@pytest.mark.parametrize(
    ("bet_type", "selection"),
    [
        ("figure", "dragon"),
        ("figure", 1),
        ("one_colour", "yellow"),
        ("total", 3),
        ("any_triple", "fish"),
    ],
)
def test_impossible_selections_refused(bet_type, selection) -> None:
    with pytest.raises(InvalidSelection):
        G.parse_bet(R, {"bet_type": bet_type, "selection": selection, "stake": 1})
