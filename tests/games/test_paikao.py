"""P'ai Kao de 2 pedras, Portaria 195/92/M: the 32-tile set (art. 1 (a)), the annex's
single-tile and combination rankings and points (art. 6), the higher tile on equal
points (art. 7), the banker's advantage (art. 8), the commission (art. 9), eight
places and a set serving two games, dice without add or subtract (art. 2, 3), the
banker's capital and co-banking (art. 5); ``tablectl settle|math|score paikao``.

The annex is transcribed here again, independently of the code, from the clean
transcription of the Portaria's annex (the regulations' README, docs/rules/paikao.md).
"""

import itertools
import json
from collections import Counter
from fractions import Fraction
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from firmware_host.cli import main
from firmware_host.games import MoneyRules, get_game
from firmware_host.games.banker import DiceReshake
from firmware_host.games.errors import Misdeal, OutcomeError, RoundStateError, RulesError
from firmware_host.games.paikao import FULL_SET, PaiKaoDeal, PaiKaoRules, Tile
from firmware_host.games.paikao.tiles import evaluate, hand_key, place_beats_banker

ROOT = Path(__file__).resolve().parents[2]
G = get_game("paikao")
R = PaiKaoRules()
M = MoneyRules()

# Annex, "Valor individual, pela ordem decrescente, das pedras": rank, tiles, copies.
SINGLE = [
    (1, ["6/6"], 2), (2, ["1/1"], 2), (3, ["4/4"], 2), (4, ["1/3"], 2), (5, ["5/5"], 2),
    (6, ["3/3"], 2), (7, ["2/2"], 2), (8, ["5/6"], 2), (9, ["4/6"], 2), (10, ["1/6"], 2),
    (11, ["1/5"], 2), (12, ["4/5", "3/6"], 1), (13, ["3/5", "2/6"], 1),
    (14, ["3/4", "2/5"], 1), (15, ["2/4"], 1), (16, ["1/4", "2/3"], 1), (17, ["1/2"], 1),
]  # fmt: skip
RANK = {t: r for r, ts, _ in SINGLE for t in ts}

# Annex, "Valor das combinações, pela ordem decrescente": rank, name, pairs.
COMBOS = [
    (1, "Chi Chün", [("2/4", "1/2")]),
    (2, "Seong Tin", [("6/6", "6/6")]),
    (3, "Seong Tei", [("1/1", "1/1")]),
    (4, "Seong Ian", [("4/4", "4/4")]),
    (5, "Seong Ngó", [("1/3", "1/3")]),
    (6, "Seong Mui", [("5/5", "5/5")]),
    (7, "Seong Chéong-Sám", [("3/3", "3/3")]),
    (8, "Seong Pán Tang", [("2/2", "2/2")]),
    (9, "Seong Fu T'au", [("5/6", "5/6")]),
    (10, "Seong Hóng T'au-Sap", [("4/6", "4/6")]),
    (11, "Seong Kou-Keók Ch'at", [("1/6", "1/6")]),
    (12, "Seong Ling Lam Lók", [("1/5", "1/5")]),
    (13, "Seong Cháp Káu", [("4/5", "3/6")]),
    (14, "Seong Cháp Pát", [("3/5", "2/6")]),
    (15, "Seong Cháp Ch'at", [("3/4", "2/5")]),
    (16, "Seong Cháp Ng", [("1/4", "2/3")]),
    (17, "Tin Káu Vóng", [("6/6", "4/5"), ("6/6", "3/6")]),
    (18, "Tei Káu Vóng", [("1/1", "4/5"), ("1/1", "3/6")]),
    (19, "Tin Kóng", [("6/6", "3/5"), ("6/6", "2/6"), ("6/6", "4/4")]),
    (20, "Tei Kóng", [("1/1", "3/5"), ("1/1", "2/6"), ("1/1", "4/4")]),
]
PHYSICAL = [t for _, ts, n in SINGLE for t in ts for _ in range(n)]


def pips(t: str) -> int:
    a, b = t.split("/")
    return int(a) + int(b)


def plain_value(a: str, b: str) -> tuple:
    for rank, _, pairs in COMBOS:
        if (a, b) in pairs or (b, a) in pairs:
            return ("combo", rank)
    # art. 6 (c): 2/4 and 1/2 count 3 or 6 each, at the holder's choice
    va = [3, 6] if a in ("2/4", "1/2") else [pips(a)]
    vb = [3, 6] if b in ("2/4", "1/2") else [pips(b)]
    return ("points", max((x + y) % 10 for x in va for y in vb), min(RANK[a], RANK[b]))


def plain_place_wins(p: tuple[str, str], b: tuple[str, str]) -> bool:
    return plain_wins(plain_value(*p), plain_value(*b))


def plain_wins(vp: tuple, vb: tuple) -> bool:
    if vp[0] == "combo" or vb[0] == "combo":
        if vp[0] == vb[0]:
            return vp[1] < vb[1]  # equal combinations: the banker (art. 8)
        return vp[0] == "combo"
    if vp[1] != vb[1]:
        return vp[1] > vb[1]
    if vp[1] == 0:
        return False  # zero against zero: the banker (art. 8)
    return vp[2] < vb[2]  # the higher single tile (art. 7); the same rank: the banker


def hand(text: str) -> tuple[Tile, Tile]:
    a, b = text.split("+")
    return Tile.parse(a.strip()), Tile.parse(b.strip())


def wins(place: str, banker: str) -> bool:
    return place_beats_banker(hand(place), hand(banker))


# -- the set and the notation, art. 1 (a) and annex ----------------------------------------


def test_set_of_32_tiles_art_1_a() -> None:
    assert len(FULL_SET) == 32
    assert Counter(str(t) for t in FULL_SET) == Counter(PHYSICAL)
    assert len(set(FULL_SET)) == 21  # every tile of two halves 1..6 is in the set


def test_tile_notation() -> None:
    assert str(Tile.parse("4/2")) == "2/4"
    assert Tile.parse(" 6 / 6 ") == Tile(6, 6)
    for bad in ["0/5", "7/1", "66", "6/6/6", "", 66, None]:
        with pytest.raises(OutcomeError) as exc:
            Tile.parse(bad)
        assert exc.value.code == "TILE_INVALID"


# -- art. 6: combinations and points --------------------------------------------------------


def test_every_combination_outranks_the_next_annex() -> None:
    # 195/92/M art. 6 (a) and annex: each combination beats the next one, both ways round,
    # whichever of its forms the place and the banker hold.
    for (r1, n1, pairs1), (r2, n2, pairs2) in itertools.pairwise(COMBOS):
        assert r2 == r1 + 1
        for p in pairs1:
            for b in pairs2:
                assert wins(f"{p[0]}+{p[1]}", f"{b[0]}+{b[1]}"), (n1, n2)
                assert not wins(f"{b[0]}+{b[1]}", f"{p[0]}+{p[1]}"), (n2, n1)
        assert evaluate(*hand(f"{pairs1[0][0]}+{pairs1[0][1]}")).combination == (r1, n1)


def test_last_combination_beats_every_point_hand_art_6_b() -> None:
    # Tei Kóng (the lowest combination) beats the best point hand, 6/6 + 1/6 (nine, Tin).
    assert wins("1/1+3/5", "6/6+1/6")
    assert not wins("6/6+1/6", "1/1+3/5")
    # Tin Kóng 6/6 + 4/4 would count zero as points; as a combination it beats nine
    assert wins("6/6+4/4", "5/6+1/3")


@pytest.mark.parametrize(("tiles", "points"), [
    ("5/6+3/3", 7), ("6/6+1/1", 4), ("5/5+4/6", 0), ("1/3+5/5", 4), ("3/4+2/5", None),
    # art. 6 (c): the Chi Chün tiles count 3 or 6 at the holder's choice
    ("2/4+5/6", 7), ("1/2+6/6", 8), ("1/2+1/3", 7), ("2/4+4/4", 4), ("2/4+1/3", 7),
])  # fmt: skip
def test_points_modulo_ten_art_6_b_c(tiles: str, points: int | None) -> None:
    v = evaluate(*hand(tiles))
    if points is None:
        assert v.combination is not None  # 3/4 + 2/5 is Seong Cháp Ch'at
    else:
        assert v.combination is None and v.points == points


def test_equal_points_higher_tile_wins_art_7() -> None:
    # both five: 1/6 + 4/4 (high tile Ian, rank 3) beats 5/6 + 2/2 (high Pán Tang, rank 7)
    assert wins("1/6+4/4", "5/6+2/2")
    assert not wins("5/6+2/2", "1/6+4/4")
    # every pair of equal-points hands whose high tiles differ in rank, over all 496 hands
    hands = [(PHYSICAL[i], PHYSICAL[j]) for i, j in itertools.combinations(range(32), 2)]
    found: dict[tuple[int, int], tuple[str, str]] = {}
    for h in hands:
        v = plain_value(*h)
        if v[0] == "points" and v[1] != 0:
            found.setdefault((v[1], v[2]), h)
    involved = set()
    for (pts, hi), h in found.items():
        for (pts2, lo), h2 in found.items():
            if pts2 == pts and hi < lo:
                involved |= {hi, lo}
                assert place_beats_banker(hand("+".join(h)), hand("+".join(h2)))
                assert not place_beats_banker(hand("+".join(h2)), hand("+".join(h)))
    # every single-tile rank that can be a hand's high tile is compared with another
    assert involved == {hi for _, hi in found}
    assert len(involved) >= 15


def test_banker_wins_zero_against_zero_and_equal_combinations_art_8() -> None:
    # zero against zero, although the place's high tile (Ngó) is higher than Mui
    assert not wins("3/3+1/3", "5/5+4/6")
    assert not wins("5/5+4/6", "3/3+1/3")
    # equal combinations: two forms of Tin Káu Vóng
    assert not wins("6/6+4/5", "6/6+3/6")
    assert not wins("6/6+3/6", "6/6+4/5")
    # equal points and a high tile of the same rank (4/5 and 3/6 are both Cháp Káu)
    assert not wins("4/5+1/2", "3/6+2/4")
    assert not wins("6/6+1/5", "6/6+3/3")


def test_all_496_hands_have_one_rank_consistent_with_the_rules_art_6_8() -> None:
    hands = [(PHYSICAL[i], PHYSICAL[j]) for i, j in itertools.combinations(range(32), 2)]
    assert len(hands) == 496
    keys = [hand_key(*hand("+".join(h))) for h in hands]
    vals = [plain_value(*h) for h in hands]
    ties = 0
    for i in range(496):
        for j in range(496):
            plain_ij, plain_ji = plain_wins(vals[i], vals[j]), plain_wins(vals[j], vals[i])
            assert (keys[i] > keys[j]) == plain_ij, (hands[i], hands[j])
            if keys[i] == keys[j]:
                # a tie only where the rules make one, and then the banker wins (art. 8)
                assert not plain_ij and not plain_ji
                ties += 1
            else:
                assert plain_ij != plain_ji
    assert ties > 496  # more than each hand with itself: e.g. every zero against zero


def test_place_beats_banker_is_the_key_order() -> None:
    for a, b in [("6/6+6/6", "2/4+1/2"), ("3/3+1/3", "5/5+4/6"), ("1/2+6/6", "5/6+2/2")]:
        assert wins(a, b) == (hand_key(*hand(a)) > hand_key(*hand(b)))


# -- outcome, dice, eight places, a set for two games (art. 2, 3) ---------------------------


HANDS = {
    "1": ["6/6", "1/6"],
    "2": ["2/4", "1/2"],
    "3": ["3/3", "1/3"],
    "4": ["5/5", "4/6"],
    "5": ["1/1", "3/5"],
    "6": ["4/5", "2/3"],
    "7": ["2/2", "5/6"],
    "8": ["1/5", "3/4"],
}


def outcome(**kw: object) -> dict:
    out: dict = {"banker": 1, "banker_capital": 100000, "dice": [1, 2, 3, 4], "hands": HANDS}
    out.update(kw)
    return out


def test_no_add_or_subtract_to_the_dice_art_2_c() -> None:
    with pytest.raises(OutcomeError) as exc:
        G.parse_outcome(R, outcome(declared=1))
    assert exc.value.code == "DECLARATION_NOT_ALLOWED"


def test_dice_counted_from_the_banker_art_2_b() -> None:
    # banker 3, dice 2+2+3+4 = 11: 3 is one, ..., counter-clockwise: 10 steps round 8 -> 5
    o = G.parse_outcome(R, outcome(banker=3, dice=[2, 2, 3, 4]))
    assert o.setup.first_place == 5
    assert o.setup.service_order == (5, 6, 7, 8, 1, 2, 3, 4)


def test_stacked_dice_reshake_art_2_e() -> None:
    with pytest.raises(DiceReshake) as exc:
        G.parse_outcome(R, outcome(dice=[1, 2, "out", 4]))
    assert exc.value.code == "DICE_RESHAKE"


def test_eight_places_always_dealt_art_2_d() -> None:
    raw = outcome(hands={k: v for k, v in HANDS.items() if k != "8"})
    with pytest.raises(OutcomeError) as exc:
        G.parse_outcome(R, raw)
    assert exc.value.code == "HAND_MISSING"


def test_tiles_in_dealing_order_art_2_c_d() -> None:
    tiles = [str(t) for t in FULL_SET[:16]]
    o = G.parse_outcome(
        R, {"banker": 8, "banker_capital": 10, "dice": [1, 1, 1, 2], "tiles": tiles}
    )
    assert o.setup.first_place == 4  # 8, 1, 2, 3, 4
    assert [str(t) for t in o.hand(4)] == tiles[:2]
    assert [str(t) for t in o.hand(3)] == tiles[14:16]
    assert G.parse_outcome(R, G.outcome_json(o)) == o


def test_no_more_copies_than_the_set_art_1_a() -> None:
    raw = outcome(hands={**HANDS, "8": ["6/6", "6/6"]})  # a third Tin
    with pytest.raises(OutcomeError) as exc:
        G.parse_outcome(R, raw)
    assert exc.value.code == "TILE_EXCESS"
    # the second game of a set: with the first game's tiles, 32 tiles at most
    first = [t for ts in HANDS.values() for t in ts]
    rest = list((Counter(PHYSICAL) - Counter(first)).elements())
    ok = {str(p): rest[2 * (p - 1) : 2 * p] for p in range(1, 9)}
    G.parse_outcome(R, outcome(set_game=2, first_game_tiles=first, hands=ok))
    with pytest.raises(OutcomeError) as exc:
        G.parse_outcome(R, outcome(set_game=2, first_game_tiles=first, hands=HANDS))
    assert exc.value.code == "TILE_EXCESS"


def test_deal_engine_and_the_second_game_of_a_set_art_2_a() -> None:
    d = PaiKaoDeal.start(R, banker=2, banker_capital=5000)
    assert d.expect().kind == "dice"
    with pytest.raises(Misdeal):
        d.deal("6/6")
    with pytest.raises(DiceReshake):
        d.shake(["stacked", 1, 1, 1])
    d = d.shake([1, 1, 1, 1])  # 4 from place 2: 2, 3, 4, 5
    assert d.expect().to_json() == {"kind": "tile", "to": 5}
    order = [
        "6/6",
        "6/6",
        "1/1",
        "1/1",
        "4/4",
        "4/4",
        "1/3",
        "1/3",
        "5/5",
        "5/5",
        "3/3",
        "3/3",
        "2/2",
        "2/2",
        "5/6",
        "5/6",
    ]
    for i, t in enumerate(order):
        if i == 2:
            with pytest.raises(Misdeal) as exc:
                d.deal("6/6")  # no third Tin in a set
            assert exc.value.code == "MISDEAL_TILE_EXCESS"
        d = d.deal(t)
    assert d.expect().kind == "complete"
    with pytest.raises(Misdeal) as exc:
        d.deal("1/2")
    assert exc.value.code == "MISDEAL_EXTRA_TILE"
    assert d.outcome().hand(5) == hand("6/6+6/6")
    # the second game is dealt from the 16 tiles left: no Tin, Tei... remain
    d2 = d.second_game(R, banker=3, banker_capital=2000).shake([6, 6, 6, 6])
    with pytest.raises(Misdeal):
        d2.deal("6/6")
    assert sum(d2.remaining().values()) == 16
    with pytest.raises(RoundStateError):
        d2.second_game(R, banker=3, banker_capital=1)
    with pytest.raises(RoundStateError):
        PaiKaoDeal.start(R, banker=1, banker_capital=1, set_game=2)


@settings(max_examples=60, deadline=None)
@given(st.permutations(list(FULL_SET)), st.integers(0, 16), st.integers(1, 8), st.booleans())
def test_deal_state_json_round_trip(tiles: list[Tile], n: int, banker: int, second: bool) -> None:
    if second:
        d = PaiKaoDeal.start(
            R, banker=banker, banker_capital=10, set_game=2, first_game_tiles=tiles[16:]
        )
    else:
        d = PaiKaoDeal.start(R, banker=banker, banker_capital=10)
    d = d.shake([2, 5, 3, 1])
    for t in tiles[:n]:
        d = d.deal(t)
    assert PaiKaoDeal.from_json(R, json.loads(json.dumps(d.to_json()))) == d


# -- settlement (art. 5, 9) -------------------------------------------------------------------


def settle(raw: dict, bets: list[dict], rules: PaiKaoRules = R, money: MoneyRules = M) -> dict:
    return G.settle(rules, G.parse_outcome(rules, raw), G.parse_bets(rules, bets), money).to_json()


def test_settlement_art_5_c_and_9() -> None:
    # Banker (place 1) holds 6/6 + 1/6: nine points with Tin. Place 2 holds Chi Chün and
    # wins; place 5 holds Tei Kóng and wins; place 3 (zero) loses. Dice 10 from place 1:
    # place 2 is served first. Capital 1500.
    bets = [
        {"bet_id": "a", "seat": 11, "bet_type": "place", "selection": 5, "stake": 1000},
        {"bet_id": "b", "seat": 12, "bet_type": "place", "selection": 3, "stake": 400},
        {"bet_id": "c", "seat": 13, "bet_type": "place", "selection": 2, "stake": 1000},
    ]
    s = settle(outcome(banker_capital=1500, dice=[1, 2, 3, 3]), bets)
    assert s["outcome"]["first_place"] == 1
    assert s["settlement_order"] == ["c", "b", "a"]
    by = {b["bet_id"]: b for b in s["bets"]}
    assert (by["c"]["payout"], by["c"]["commission"], by["c"]["net"]) == (1000, 50, 950)
    assert by["b"]["net"] == -400
    assert (by["a"]["payout"], by["a"]["net"]) == (900, 855)  # 1500 - 1000 + 400 left
    assert s["banker"]["gross"] == -1500
    assert s["places"][0]["combination"] == "Chi Chün"


tile_bets = st.lists(
    st.tuples(
        st.sampled_from(["place", "place", "co_bank"]),
        st.integers(1, 8),
        st.integers(1, 30).map(lambda x: 50 * x),
        st.integers(0, 6),
    ),
    max_size=10,
)


@settings(max_examples=120, deadline=None)
@given(
    st.permutations(list(FULL_SET)),
    st.integers(1, 8),
    st.integers(1, 40),
    st.integers(0, 1),
    tile_bets,
    st.sampled_from([1, 50]),
)
def test_settlement_conserves_money_art_5_9(
    tiles: list[Tile], banker: int, capital: int, casino: int, raw_bets: list, unit: int
) -> None:
    raw = {
        "banker": banker,
        "banker_capital": 50 * capital,
        "casino_capital": 700 * casino,
        "dice": [6, 5, 4, 3],
        "tiles": [str(t) for t in tiles[:16]],
    }
    bets = []
    for i, (bt, place, stake, seat) in enumerate(raw_bets):
        if bt == "place" and place == banker:
            continue
        bets.append(
            {
                "bet_id": f"b{i}",
                "seat": 50 + i if bt == "co_bank" else seat,
                "bet_type": bt,
                "stake": stake,
                **({"selection": place} if bt == "place" else {}),
            }
        )
    s = settle(raw, bets, money=MoneyRules(payable_unit=unit))
    nets = sum(b["net"] for b in s["bets"]) + s["banker"]["net"] + s["bank"]["casino_net"]
    exact, breakage = Fraction(s["commission_exact"]), Fraction(s["totals"]["breakage"])
    # art. 9: the commission is 5% of each win; the payable unit's rounding is breakage,
    # kept by the house besides the commission; nothing is lost
    assert nets + exact + breakage == 0
    assert abs(s["totals"]["commission"] - exact) < len(s["bets"]) + 1
    assert abs(s["banker"]["gross"]) <= 50 * capital
    assert breakage >= 0
    for b in s["bets"]:
        if b["bet_type"] == "place":
            place_hand = tuple(s["outcome"]["hands"][str(b["selection"])])
            bank_hand = tuple(s["outcome"]["hands"][str(banker)])
            if plain_place_wins(place_hand, bank_hand):
                assert 0 <= b["net"] < b["stake"] or b["net"] == 0
            else:
                assert -b["stake"] <= b["net"] <= 0


# -- math: exact, by enumeration --------------------------------------------------------------


def test_math_exact_enumeration_of_every_deal_art_6_9() -> None:
    # All ways to deal two tiles to one place and two to the banker from the 32 tiles,
    # counted with the plain transcription above.
    pairs = list(itertools.combinations(range(32), 2))
    values = {(i, j): plain_value(PHYSICAL[i], PHYSICAL[j]) for i, j in pairs}
    wins_n = deals = 0
    for p in pairs:
        vp = values[p]
        for b in pairs:
            if b[0] in p or b[1] in p:
                continue
            deals += 1
            wins_n += plain_wins(vp, values[b])
    assert deals == 496 * 435
    p_place = Fraction(wins_n, deals)
    rep = G.math(R)
    assert rep.method == "exact"
    lines = {ln.bet: ln for ln in rep.lines}
    # the place wins 95% of its stake (art. 9) or loses it; no pushes (art. 8)
    assert lines["place"].house_edge == (1 - p_place) - p_place * Fraction(95, 100)
    assert lines["banker"].house_edge == p_place - (1 - p_place) * Fraction(95, 100)
    assert rep.details["p_place_wins"] == f"{p_place.numerator}/{p_place.denominator}"
    with pytest.raises(RulesError):
        G.math(R, decks=2)


# -- tablectl ---------------------------------------------------------------------------------


def test_tablectl_settle_math_score(capsys: pytest.CaptureFixture[str]) -> None:
    cfg = str(ROOT / "config" / "paikao.toml")
    assert main(["check-config", cfg]) == 0
    capsys.readouterr()
    bets = [
        {"seat": 3, "bet_type": "place", "selection": 2, "stake": 100000},
        {"seat": 9, "bet_type": "co_bank", "stake": 50000},
    ]
    rc = main(
        [
            "settle",
            "paikao",
            "--outcome",
            json.dumps(outcome()),
            "--bets",
            json.dumps(bets),
            "--config",
            cfg,
        ]
    )
    data = json.loads(capsys.readouterr().out)
    assert rc == 0
    assert data["bets"][0]["net"] == 95000
    assert data["bank"]["layers"][1]["gross"] == 0  # the banker's 100000 paid it all
    rc = main(["math", "paikao", "--config", cfg])
    text = capsys.readouterr().out
    assert rc == 0 and "exact" in text and "215760 deals" in text
    rc = main(["score", "paikao", "--hand", '["6/6", "3/5"]'])
    assert rc == 0 and "Tin Kóng" in capsys.readouterr().out
