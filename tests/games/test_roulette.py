"""Roulette, 60/2004: bet types of art. 6, pay table of art. 7, zero of art. 8."""

import itertools
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from firmware_host.games import MoneyRules, get_game
from firmware_host.games.errors import InvalidSelection, OutcomeError, UnknownBetType
from firmware_host.games.roulette import RouletteRules

G = get_game("roulette")
R = G.default_rules()
ZR = RouletteRules(zero_combinations=True)
M = MoneyRules()

# An independent transcription of the layout: twelve rows of three (art. 6).
ROWS = [[3 * r + 1, 3 * r + 2, 3 * r + 3] for r in range(12)]
# Red numbers as printed on every single-zero layout (art. 1 4)).
RED = {1, 3, 5, 7, 9, 12, 14, 16, 18, 19, 21, 23, 25, 27, 30, 32, 34, 36}


def all_splits() -> list[list[int]]:
    out = [[row[i], row[i + 1]] for row in ROWS for i in (0, 1)]
    out += [[ROWS[r][c], ROWS[r + 1][c]] for r in range(11) for c in range(3)]
    return out


def all_corners() -> list[list[int]]:
    return [
        [ROWS[r][c], ROWS[r][c + 1], ROWS[r + 1][c], ROWS[r + 1][c + 1]]
        for r in range(11)
        for c in (0, 1)
    ]


def settle_one(
    bet_type: str, selection: object, number: int, rules: RouletteRules = R, stake: int = 100
) -> dict:
    bets = G.parse_bets(rules, [{"bet_type": bet_type, "selection": selection, "stake": stake}])
    return G.settle(rules, G.parse_outcome(rules, {"number": number}), bets, M).to_json()["bets"][0]


def test_layout_counts_art_6() -> None:
    # 60/2004 art. 6 2)-5): 57 splits, 12 streets, 22 corners, 11 lines on a single-zero layout.
    for s in all_splits():
        G.canonical_selection(R, "split", s)
    for c in all_corners():
        G.canonical_selection(R, "corner", c)
    for row in ROWS:
        G.canonical_selection(R, "street", row)
    for r in range(11):
        G.canonical_selection(R, "line", ROWS[r] + ROWS[r + 1])
    assert len(all_splits()) == 57 and len(all_corners()) == 22
    # and nothing else is a split: every other pair of numbers is refused
    valid = {tuple(s) for s in all_splits()}
    refused = 0
    for a, b in itertools.combinations(range(1, 37), 2):
        if (a, b) in valid:
            continue
        with pytest.raises(InvalidSelection):
            G.canonical_selection(R, "split", [a, b])
        refused += 1
    assert refused == 630 - 57


@pytest.mark.parametrize(
    ("bet_type", "selection", "covered", "odds", "article"),
    [
        ("straight", [17], {17}, 35, "art. 7 1)"),
        ("split", [17, 20], {17, 20}, 17, "art. 7 2)"),
        ("street", [16, 17, 18], {16, 17, 18}, 11, "art. 7 3)"),
        ("corner", [17, 18, 20, 21], {17, 18, 20, 21}, 8, "art. 7 4)"),
        ("line", [13, 14, 15, 16, 17, 18], set(range(13, 19)), 5, "art. 7 5)"),
        ("sector9", "A", {32, 15, 19, 4, 21, 2, 25, 17, 34}, 3, "art. 7 6)"),
        ("sector12", 1, {1, 3, 5, 13, 15, 17, 20, 22, 24, 32, 34, 36}, 2, "art. 6 7), art. 7 7)"),
        ("sector12", 2, {2, 4, 6, 14, 16, 18, 19, 21, 23, 31, 33, 35}, 2, "art. 6 7), art. 7 7)"),
        ("column", 2, {2, 5, 8, 11, 14, 17, 20, 23, 26, 29, 32, 35}, 2, "art. 6 8), art. 7 7)"),
        ("dozen", 1, set(range(1, 13)), 2, "art. 6 9) pequeno, art. 7 7)"),
        ("dozen", 2, set(range(13, 25)), 2, "art. 6 10) médio, art. 7 7)"),
        ("dozen", 3, set(range(25, 37)), 2, "art. 6 11) grande, art. 7 7)"),
        ("even", None, set(range(2, 37, 2)), 1, "art. 6 12), art. 7 8)"),
        ("odd", None, set(range(1, 37, 2)), 1, "art. 6 13), art. 7 8)"),
        ("low", None, set(range(1, 19)), 1, "art. 6 14), art. 7 8)"),
        ("high", None, set(range(19, 37)), 1, "art. 6 15), art. 7 8)"),
        ("red", None, RED, 1, "art. 6 16), art. 7 8)"),
        ("black", None, set(range(1, 37)) - RED, 1, "art. 6 17), art. 7 8)"),
    ],
)
def test_every_bet_type_wins_on_its_numbers_only(
    bet_type, selection, covered, odds, article
) -> None:
    """60/2004 art. 6 and art. 7: each chance pays its odds on its numbers, loses elsewhere."""
    for n in range(37):
        r = settle_one(bet_type, selection, n)
        if n in covered and n != 0:
            assert (r["result"], r["payout"], r["net"]) == ("win", 100 * odds, 100 * odds), (
                article,
                n,
            )
        else:
            assert (r["result"], r["net"]) == ("lose", -100), (article, n)


def test_zero_only_straight_on_zero_wins_art_8() -> None:
    # 60/2004 art. 8: on zero the bet on zero wins; every other bet loses.
    assert settle_one("straight", 0, 0)["net"] == 3500
    for bt, sel in [
        ("red", None),
        ("black", None),
        ("even", None),
        ("low", None),
        ("dozen", 1),
        ("column", 3),
    ]:
        assert settle_one(bt, sel, 0)["result"] == "lose"


def test_zero_combinations_lose_on_zero_by_the_letter_art_8() -> None:
    # Decision (docs/rules/roulette.md): layouts with 0-1 splits etc. lose them on zero.
    for bt, sel in [("split", [0, 1]), ("street", [0, 1, 2]), ("corner", [0, 1, 2, 3])]:
        assert settle_one(bt, sel, 0, ZR)["result"] == "lose"
        assert settle_one(bt, sel, 1, ZR)["result"] == "win"
    with pytest.raises(InvalidSelection, match="not offered"):
        G.canonical_selection(R, "split", [0, 1])


def test_math_every_bet_edge_is_one_in_37() -> None:
    # Art. 7 odds on a 37-pocket wheel (art. 1 2)): every offered chance has edge 1/37.
    report = G.math(R)
    assert report.lines
    for line in report.lines:
        assert line.house_edge == Fraction(1, 37), line.bet
        assert sum(p for _, p in line.outcomes) == 1


def test_math_shows_the_zero_combination_edge() -> None:
    # Split 0-1 at 17:1 wins only on 1: edge = 1 - 18/37.
    lines = {(ln.bet, str(ln.selection)): ln for ln in G.math(ZR).lines}
    assert lines[("split", "[0, 1]")].house_edge == 1 - Fraction(18, 37)
    assert lines[("corner", "[0, 1, 2, 3]")].house_edge == 1 - Fraction(9 * 3, 37)


@pytest.mark.parametrize(
    ("bet_type", "selection"),
    [
        ("straight", 37),
        ("straight", [1, 2]),
        ("split", [1, 5]),
        ("split", [3, 4]),
        ("street", [2, 3, 4]),
        ("corner", [3, 4, 6, 7]),
        ("line", [1, 2, 3, 4, 5, 7]),
        ("sector9", "Z"),
        ("column", 4),
        ("dozen", 0),
        ("red", 1),
        ("straight", True),
        ("straight", "17"),
    ],
)
def test_impossible_selections_are_refused(bet_type, selection) -> None:
    with pytest.raises(InvalidSelection) as exc:
        G.parse_bet(R, {"bet_type": bet_type, "selection": selection, "stake": 10})
    assert exc.value.code == "BET_INVALID_SELECTION"


def test_unknown_bet_type_and_bad_outcome() -> None:
    with pytest.raises(UnknownBetType):
        G.parse_bet(R, {"bet_type": "neighbours", "stake": 10})
    for bad in (37, -1, "17", {"number": 3.0}, {"n": 1}):
        with pytest.raises(OutcomeError):
            G.parse_outcome(R, bad)


@given(n=st.integers(1, 36), stake=st.integers(1, 10**7))
def test_winning_straight_pays_35x(n: int, stake: int) -> None:
    r = settle_one("straight", n, n, stake=stake)
    assert r["payout"] == 35 * stake and r["net"] == 35 * stake


@given(
    bets=st.lists(
        st.sampled_from(
            [
                ("red", None),
                ("odd", None),
                ("split", [17, 20]),
                ("street", [1, 2, 3]),
                ("dozen", 2),
                ("sector12", 1),
                ("line", [31, 32, 33, 34, 35, 36]),
            ]
        ),
        min_size=1,
        max_size=6,
    ),
)
def test_on_zero_every_bet_but_a_zero_straight_loses(bets) -> None:
    raws = [{"bet_type": t, "selection": s, "stake": 10} for t, s in bets] + [
        {"bet_type": "straight", "selection": [0], "stake": 10}
    ]
    out = G.settle(R, G.parse_outcome(R, 0), G.parse_bets(R, raws), M).to_json()
    assert [b["result"] for b in out["bets"]] == ["lose"] * len(bets) + ["win"]
    assert out["totals"]["net"] == 350 - 10 * len(bets)
