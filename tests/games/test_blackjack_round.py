"""Blackjack, 56/2004: a full round driven card by card, the same round from the
command line (the example of docs/rules/blackjack.md), and the seeded simulation."""

from __future__ import annotations

import json
import random
import re
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from firmware_host.cli import main as tablectl
from firmware_host.games import MoneyRules, get_game
from firmware_host.games.blackjack import BlackjackDeal, BlackjackRules
from firmware_host.games.blackjack.deal import replay
from firmware_host.games.blackjack.simulate import basic_strategy, simulate
from firmware_host.games.errors import RulesError

ROOT = Path(__file__).resolve().parents[2]
G = get_game("blackjack")
R = BlackjackRules()

BETS: list[dict[str, Any]] = [
    {"bet_id": "s1", "seat": 1, "bet_type": "main", "stake": 1000},
    {"bet_id": "s1p", "seat": 1, "bet_type": "pair", "stake": 200},
    {"bet_id": "s1s", "seat": 1, "bet_type": "sevens", "stake": 100},
    {"bet_id": "s2", "seat": 2, "bet_type": "main", "stake": 500},
    {"bet_id": "s2o", "seat": 2, "bet_type": "over_under_13", "selection": "over", "stake": 300},
    {"bet_id": "s4", "seat": 4, "bet_type": "main", "stake": 250},
    {"bet_id": "s4p", "seat": 4, "bet_type": "pair", "stake": 100},
]

#: Worked by hand from the articles (see the table in docs/rules/blackjack.md).
EXPECTED = {
    "s1": 1000,  # 21 (doubled) against the dealer's 23: 1:1 (art. 9)
    "s1.h0.double": 1000,
    "s1.h1": 1000,  # 15 (doubled) against a bust, art. 16 2) stake
    "s1.h1.double": 1000,
    "s1.h2": 1000,  # 18 against a bust
    "s1p": 2 * 11 * 200,  # two pairs, art. 13 1) (1) and (2), 11:1 each (art. 14 1))
    "s1s": -100,  # no sevens (art. 13 2))
    "s2": 500,  # 19 against a bust
    "s2o": 300,  # T + 9 = 19 over 13 (art. 14 3))
    "s4": 375,  # blackjack 3:2 on 250 (art. 10 2))
    "s4p": -100,  # A-K is not a pair
}


def test_a_full_round_with_splits_doubles_and_side_bets_card_by_card() -> None:
    """The acceptance round: every card and decision, with what the machine asks for."""
    d = BlackjackDeal.start(R, [4, 1, 2])
    script: list[tuple[dict[str, Any], str | tuple[int, str]]] = [
        # the initial deal: one card at a time from the left, the dealer last (art. 5)
        ({"kind": "card", "to": "player", "seat": 1, "hand": 0}, "8S"),
        ({"kind": "card", "to": "player", "seat": 2, "hand": 0}, "TH"),
        ({"kind": "card", "to": "player", "seat": 4, "hand": 0}, "AC"),
        ({"kind": "card", "to": "dealer"}, "6D"),
        ({"kind": "card", "to": "player", "seat": 1, "hand": 0}, "8H"),
        ({"kind": "card", "to": "player", "seat": 2, "hand": 0}, "9C"),
        ({"kind": "card", "to": "player", "seat": 4, "hand": 0}, "KS"),
        # seat 1 splits its eights (art. 16 1))
        ({"kind": "decision", "seat": 1, "hand": 0,
          "allowed": ["hit", "stand", "double", "split", "surrender"]}, (1, "split")),
        ({"kind": "card", "to": "player", "seat": 1, "hand": 0}, "3D"),
        # 8-3: double after a split (art. 17 1)), one card only
        ({"kind": "decision", "seat": 1, "hand": 0, "allowed": ["hit", "stand", "double"]},
         (1, "double")),
        ({"kind": "card", "to": "player", "seat": 1, "hand": 0}, "TC"),
        ({"kind": "card", "to": "player", "seat": 1, "hand": 1}, "8C"),
        # 8-8 again: a resplit (art. 16 5)); no surrender after a split (art. 18 2))
        ({"kind": "decision", "seat": 1, "hand": 1, "allowed": ["hit", "stand", "double", "split"]},
         (1, "split")),
        ({"kind": "card", "to": "player", "seat": 1, "hand": 1}, "2S"),
        ({"kind": "decision", "seat": 1, "hand": 1, "allowed": ["hit", "stand", "double"]},
         (1, "double")),
        ({"kind": "card", "to": "player", "seat": 1, "hand": 1}, "5H"),
        ({"kind": "card", "to": "player", "seat": 1, "hand": 2}, "JD"),
        ({"kind": "decision", "seat": 1, "hand": 2, "allowed": ["hit", "stand", "double"]},
         (1, "stand")),
        ({"kind": "decision", "seat": 2, "hand": 0,
          "allowed": ["hit", "stand", "double", "surrender"]}, (2, "stand")),
        # seat 4's blackjack against a 6 needs no decision; the dealer's second card
        ({"kind": "card", "to": "dealer"}, "TD"),
        ({"kind": "card", "to": "dealer"}, "7S"),  # 16: draws (art. 6 1))
    ]  # fmt: skip
    for want, step in script:
        assert d.expect().to_json() == want
        d = d.deal(step) if isinstance(step, str) else d.decide(*step)
    assert d.expect().to_json() == {"kind": "complete"}
    assert [h.total for h in d.place(1).hands] == [21, 15, 18]
    settlement = G.settle(R, d.outcome(), G.parse_bets(R, BETS), MoneyRules())
    got = {r.bet.bet_id: r.amounts.net for r in settlement.results}
    assert got == EXPECTED
    assert settlement.totals.net == sum(EXPECTED.values()) == 10375
    # the stakes at risk include the splits and the doubles (art. 16 2), art. 17)
    assert settlement.totals.stakes == 5 * 1000 + 200 + 100 + 500 + 300 + 250 + 100
    # the journal form replays to the same state
    assert BlackjackDeal.from_json(R, json.loads(json.dumps(d.to_json()))) == d


def _doc_example() -> tuple[str, str]:
    text = (ROOT / "docs" / "rules" / "blackjack.md").read_text()
    section = text.split("## Example: a full round from the command line", 1)[1]
    blocks = re.findall(r"```json\n(.*?)```", section, re.S)
    return blocks[0], blocks[1]


def test_the_docs_example_settles_exactly_from_the_command_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    outcome, bets = _doc_example()
    assert json.loads(bets) == BETS
    rc = tablectl(["settle", "blackjack", "--outcome", outcome, "--bets", bets])
    out = capsys.readouterr()
    assert rc == 0, out.err
    data = json.loads(out.out)
    assert {b["bet_id"]: b["net"] for b in data["bets"]} == EXPECTED
    assert data["totals"]["net"] == 10375 and data["totals"]["house_net"] == -10375
    assert data["outcome"]["dealer"] == {
        "cards": ["6D", "TD", "7S"],
        "total": 23,
        "blackjack": False,
    }
    assert data["deciders"] == {"1": "s1", "2": "s2", "4": "s4"}
    # the published outcome is itself a valid --outcome
    rc = tablectl(["settle", "blackjack", "--outcome", json.dumps(data["outcome"]), "--bets", bets])
    again = json.loads(capsys.readouterr().out)
    assert rc == 0 and again["bets"] == data["bets"]


def test_settle_from_the_command_line_with_the_example_table(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # config/blackjack.toml burns one card per round (art. 4 2)): 5C is burnt, then
    # AS (seat 3), 9H (dealer), KD (seat 3): a blackjack, 3:2 on MOP 100 is MOP 150.
    outcome = {"seats": [3], "cards": ["5C", "AS", "9H", "KD", "7C"], "decisions": []}
    bets = [{"seat": 3, "bet_type": "main", "stake": 10000}]
    rc = tablectl(["settle", "blackjack", "--config", str(ROOT / "config" / "blackjack.toml"),
                   "--outcome", json.dumps(outcome), "--bets", json.dumps(bets)])  # fmt: skip
    out = capsys.readouterr()
    assert rc == 0, out.err
    assert json.loads(out.out)["bets"][0]["net"] == 15000
    rc = tablectl(
        ["settle", "blackjack", "--outcome", json.dumps(outcome), "--bets", json.dumps(bets)]
    )
    err = capsys.readouterr().err
    # without the burn card, 5C-9H is the seat's 14 against the dealer's ace: it must
    # decide before KD comes (art. 6 3))
    assert rc == 2 and "MISDEAL_DECISION_DUE" in err


# -- the simulation --------------------------------------------------------------------------

ENGINE_VARIANTS = (
    BlackjackRules(),
    BlackjackRules(procedure="metal_box", decks=1),
    BlackjackRules(double="eleven", resplit=False, burn="round_and_dealer", decks=2),
    BlackjackRules(
        double_loss_limited=True, five_card=False, resplit_aces=False, max_split_hands=5
    ),
)


@pytest.mark.parametrize("rules", ENGINE_VARIANTS)
def test_fast_simulator_agrees_with_the_state_machine_round_by_round(rules: BlackjackRules) -> None:
    fast = simulate(rules, rounds=1200, rng=random.Random(99), engine="fast", keep_rounds=True)
    slow = simulate(
        rules, rounds=1200, rng=random.Random(99), engine="machine", keep_rounds=True, game=G
    )
    assert fast.records == slow.records  # the same cards and decisions
    assert fast.rounds == slow.rounds  # the same money, bet by bet
    kinds = {d["action"] for r in fast.records for d in r["decisions"]}
    assert {"split", "double", "hit", "stand"} <= kinds
    # and each fast record replays through the machine
    for rec in fast.records[:200]:
        assert replay(rules, rec).complete


def test_basic_strategy_always_answers_an_allowed_action() -> None:
    for rules in ENGINE_VARIANTS:
        sim = simulate(
            rules, rounds=300, rng=random.Random(5), engine="machine", keep_rounds=True, game=G
        )
        assert len(sim.records) == 300
    from firmware_host.games.cards import parse_cards

    assert (
        basic_strategy(parse_cards("TS 6D"), parse_cards("TH")[0], ("hit", "stand", "surrender"))
        == "surrender"
    )
    assert basic_strategy(parse_cards("TS 6D"), parse_cards("TH")[0], ("hit", "stand")) == "hit"
    assert (
        basic_strategy(parse_cards("5S 6D"), parse_cards("TH")[0], ("hit", "stand", "double"))
        == "hit"
    )
    assert (
        basic_strategy(parse_cards("5S 6D"), parse_cards("6H")[0], ("hit", "stand", "double"))
        == "double"
    )


def _fresh_shoe_over_under(decks: int) -> tuple[Fraction, Fraction]:
    """Exact edges of over / under 13 (ace = 1) for the first two cards of a fresh shoe."""
    counts = {v: 4 * decks for v in range(1, 10)}
    counts[10] = 16 * decks
    n = 52 * decks
    p_over = p_under = Fraction(0)
    for a, ca in counts.items():
        for b, cb in counts.items():
            p = Fraction(ca, n) * Fraction(cb - (a == b), n - 1)
            if a + b > 13:
                p_over += p
            elif a + b < 13:
                p_under += p
    return 1 - 2 * p_over, 1 - 2 * p_under


def test_math_is_a_seeded_simulation_with_intervals_that_cover_the_exact_side_bets() -> None:
    report = G.math(R, rounds=25_000, seed=7, rng=random.Random)
    assert report.method == "simulation"
    again = G.math(R, rounds=25_000, seed=7, rng=random.Random)
    assert report.to_json() == again.to_json()  # seeded: reproducible
    lines = {(ln.bet, ln.selection): ln for ln in report.lines}
    assert set(lines) == {("main", None), ("pair", None), ("sevens", None),
                          ("over_under_13", "over"), ("over_under_13", "under"), ("insurance", None)}  # fmt: skip
    over, under = _fresh_shoe_over_under(6)
    iv = report.details["intervals"]
    # any two cards of a shuffled shoe are distributed as two cards of a fresh shoe
    for label, exact in (("over_under_13 over", over), ("over_under_13 under", under)):
        lo, hi = iv[label]["ci95"]
        half = (hi - lo) / 2
        assert abs(iv[label]["house_edge"] - float(exact)) < 2 * half
    ins_exact = 1 - 3 * Fraction(96, 311)  # dealer ten under the ace: 2:1 (art. 12 2))
    lo, hi = iv["insurance"]["ci95"]
    assert lo - (hi - lo) / 2 < float(ins_exact) < hi + (hi - lo) / 2
    main_lo, main_hi = iv["main"]["ci95"]
    assert main_lo < float(lines[("main", None)].house_edge) < main_hi
    assert main_lo > -0.03 and main_hi < 0.03
    assert sum(p for _, p in lines[("main", None)].outcomes) == 1


def test_math_options() -> None:
    with pytest.raises(RulesError) as exc:
        G.math(R, rounds=10, wheel=3)
    assert exc.value.code == "MATH_OPTION_UNSUPPORTED"
    with pytest.raises(RulesError) as exc:
        G.math(R, decks=13)
    assert exc.value.code == "MATH_OPTION_INVALID"
    with pytest.raises(RulesError) as exc:
        G.math(BlackjackRules(procedure="metal_box", decks=1), decks=6)
    assert exc.value.code == "MATH_OPTION_INVALID"
    small = G.math(R, rounds=2_000, seed=1, decks=1, rng=random.Random)
    assert small.details["simulation"]["decks"] == 1


def test_tablectl_math_blackjack_prints_a_simulation(capsys: pytest.CaptureFixture[str]) -> None:
    rc = tablectl(["math", "blackjack", "--rounds", "3000", "--seed", "4"])
    out = capsys.readouterr().out
    assert rc == 0 and "simulation" in out and "95% CI" in out


def test_math_takes_its_random_number_generator_from_the_caller() -> None:
    # The rules core holds no random number generator: without one the house edge
    # cannot be simulated, and the refusal says what to pass.
    with pytest.raises(RulesError) as exc:
        G.math(R, rounds=10)
    assert exc.value.code == "MATH_NEEDS_RNG"
    assert "random.Random" in exc.value.message
