"""Blackjack, 56/2004: properties of the deal state machine over random shoes and
random legal (and illegal) decisions."""

from __future__ import annotations

import itertools
import json
import random
import re
from collections.abc import Sequence
from fractions import Fraction
from pathlib import Path

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import firmware_host.games.blackjack as bj
from firmware_host.games import MoneyRules, get_game
from firmware_host.games.blackjack import BlackjackDeal, BlackjackRules
from firmware_host.games.blackjack.deal import Hand
from firmware_host.games.blackjack.rules import ACTIONS, hand_total
from firmware_host.games.cards import Card, deck
from firmware_host.games.errors import RoundStateError

G = get_game("blackjack")
M = MoneyRules()

VARIANTS = (
    BlackjackRules(),
    BlackjackRules(procedure="metal_box", decks=1),
    BlackjackRules(double="eleven", resplit=False, resplit_aces=False, decks=4),
    BlackjackRules(burn="round_and_dealer", five_card=False, special_prize=False,
                   max_split_hands=6, decks=2),
    BlackjackRules(procedure="face_up", double_loss_limited=True, decks=8, burn="round"),
)  # fmt: skip


def shoe_for(rules: BlackjackRules, rnd: random.Random, favour: Sequence[int]) -> list[Card]:
    """A shuffled shoe; the cards of the ``favour`` ranks come first (more pairs,
    splits, sevens, five-card hands)."""
    cards = [c for c in deck() for _ in range(rules.decks)]
    rnd.shuffle(cards)
    front = [c for c in cards if c.rank in favour]
    back = [c for c in cards if c.rank not in favour]
    return front + back


# -- an independent, plain transcription of the articles -----------------------------------


def best_total(cards: Sequence[Card]) -> int:
    """Art. 8: every ace 1 or 11; the best total not over 21, else the smallest."""
    base = [10 if c.rank >= 10 else c.rank for c in cards]
    aces = sum(1 for c in cards if c.rank == 1)
    totals = {sum(base) + 10 * k for k in range(aces + 1)}
    under = [t for t in totals if t <= 21]
    return max(under) if under else min(totals)


def natural(cards: Sequence[Card]) -> bool:
    """Art. 10 1)."""
    ranks = sorted(c.rank for c in cards)
    return len(ranks) == 2 and ranks[0] == 1 and ranks[1] >= 10


def unit_nets(rules: BlackjackRules, hand: Hand, dealer: Sequence[Card]) -> list[Fraction]:
    """Net per unit of each stake of the hand (base, then the double if any)."""
    parts = 2 if hand.doubled else 1
    t, d = best_total(hand.cards), best_total(dealer)
    bj = natural(hand.cards) and not hand.split
    dbj = natural(dealer)
    fixed = {"special": Fraction(3), "even_money": Fraction(1), "five_card": Fraction(1, 2),
             "surrendered": Fraction(-1, 2)}  # art. 15, 10 3), 19 1), 18 1)  # fmt: skip
    if hand.status in fixed:
        return [fixed[hand.status]] * parts
    if t > 21:
        return [Fraction(-1)] * parts  # art. 7 2)
    if bj:
        return [Fraction(0) if dbj else Fraction(3, 2)]  # art. 11 1), 10 2)
    if dbj:  # art. 12 2), 10 7)
        return [Fraction(-1)] + (
            [Fraction(0) if rules.double_loss_limited else Fraction(-1)] if hand.doubled else []
        )
    if d > 21 or t > d:
        return [Fraction(1)] * parts
    return [Fraction(0) if t == d else Fraction(-1)] * parts


# -- the property --------------------------------------------------------------------------


@st.composite
def rounds(draw: st.DrawFn) -> tuple[BlackjackRules, list[int], list[Card]]:
    rules = draw(st.sampled_from(VARIANTS))
    seats = draw(st.lists(st.integers(0, 9), min_size=1, max_size=4, unique=True))
    favour = draw(st.sampled_from([(), (7, 8), (1, 8), (2, 3), (6, 7, 8), (1, 10)]))
    rnd = random.Random(draw(st.integers(0, 2**32)))
    return rules, seats, shoe_for(rules, rnd, favour)


def hands_of(d: BlackjackDeal) -> dict[tuple[int, int], Hand]:
    return {(p.seat, i): h for p in d.places for i, h in enumerate(p.hands)}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rounds(), st.data())
def test_random_legal_rounds_complete_and_keep_every_invariant(
    rnd: tuple[BlackjackRules, list[int], list[Card]], data: st.DataObject
) -> None:
    rules, seats, shoe = rnd
    d = BlackjackDeal.start(rules, seats)
    cards = iter(shoe)
    steps = 0
    while not d.complete:
        steps += 1
        assert steps < 500, "the round never completes"
        e = d.expect()
        before = hands_of(d)
        if e.kind == "card":
            card = next(cards)
            if e.to == "player":
                assert e.seat is not None and e.hand is not None
                h = before[(e.seat, e.hand)]
                # a hand never receives a card after standing, busting or ending
                assert h.status == "open"
                assert d.phase == "initial" or h.need_card
            if e.to == "dealer" and len(d.dealer) >= 2:
                # 56/2004 art. 6 1): the dealer never draws on 17 or more
                assert hand_total(d.dealer)[0] <= 16
            d = d.deal(card)
            after = hands_of(d)
            for key, h in before.items():
                if e.to == "player" and key == (e.seat, e.hand):
                    assert after[key].cards == (*h.cards, card)
                else:
                    assert after[key].cards == h.cards
        else:
            assert e.kind == "decision" and e.allowed
            assert "stand" in e.allowed
            wrong = [a for a in ACTIONS if a not in e.allowed]
            if wrong and data.draw(st.booleans()):
                bad = data.draw(st.sampled_from(wrong))
                try:
                    d.decide(e.seat, bad, amount=50 if bad == "insurance" else None)
                except RoundStateError as exc:
                    assert exc.code.isupper() and exc.code != "ROUND_STATE"
                else:  # pragma: no cover
                    raise AssertionError(f"{bad} was not in {e.allowed} but was accepted")
            action = data.draw(st.sampled_from(e.allowed))
            amount = data.draw(st.integers(1, 400)) if action == "insurance" else None
            assert e.seat is not None
            d = d.decide(e.seat, action, amount=amount)
            event(action)
        # the journal form round-trips at every step, through JSON text
        again = BlackjackDeal.from_json(rules, json.loads(json.dumps(d.to_json())))
        assert again == d

    # the dealer's hand: drew on 16 or less only, stopped on 17+ or a blackjack
    for k in range(2, len(d.dealer)):
        assert best_total(d.dealer[:k]) <= 16 and not natural(d.dealer[:k])
    live = [
        h
        for h in hands_of(d).values()
        if h.status == "stood" and not (natural(h.cards) and not h.split)
    ]
    if live and not natural(d.dealer):
        assert best_total(d.dealer) >= 17
    for h in hands_of(d).values():
        assert h.status != "open"
        assert (h.status == "bust") == (best_total(h.cards) > 21)
        if h.doubled:
            assert len(h.cards) == 3
        if h.aces and h.status != "bust":
            assert len(h.cards) == 2
        if h.status == "five_card":
            assert len(h.cards) == 5
        assert len(hands_of(d)) <= len(d.places) * rules.max_split_hands

    # settlement: every main stake against the plain transcription; totals add up
    stakes = {s: data.draw(st.integers(1, 10_000)) for s in seats}
    bets = [{"bet_id": f"m{s}", "seat": s, "bet_type": "main", "stake": stakes[s]} for s in seats]
    bets += [{"bet_id": f"p{s}", "seat": s, "bet_type": "pair", "stake": 100} for s in seats]
    bets += [{"bet_id": f"o{s}", "seat": s, "bet_type": "over_under_13", "selection": "over", "stake": 100}
             for s in seats]  # fmt: skip
    insurance_ok = all(
        rules.insurance_min * stakes[p.seat] <= i.amount <= rules.insurance_max * stakes[p.seat]
        for p in d.places
        for i in p.insurance
    )
    if not insurance_ok:
        return  # refused by settle (tested in test_blackjack_rules)
    outcome = G.parse_outcome(rules, G.outcome_json(d))
    st_ = G.settle(rules, outcome, G.parse_bets(rules, bets), M)
    assert st_.totals.net == sum(r.amounts.net for r in st_.results)
    assert st_.totals.stakes == sum(r.bet.stake for r in st_.results)
    for p in d.places:
        want = Fraction(0)
        for h in p.hands:
            want += sum(unit_nets(rules, h, d.dealer)) * stakes[p.seat]
        got = [
            r
            for r in st_.results
            if r.bet.seat == p.seat and r.bet.bet_type in ("main", "split", "double")
        ]
        exact = sum((r.amounts.net + r.amounts.breakage for r in got), Fraction(0))
        assert exact == want
        for r in got:
            assert r.amounts.breakage >= 0  # the house never overpays (FLOOR)
        ins = [r for r in st_.results if r.bet.seat == p.seat and r.bet.bet_type == "insurance"]
        for r in ins:
            assert r.amounts.net == (
                2 * r.bet.stake if natural(d.dealer) else -r.bet.stake
            )  # art. 12


@given(st.lists(st.sampled_from(deck()), min_size=1, max_size=8))
def test_hand_total_is_the_best_count_of_art_8(cards: list[Card]) -> None:
    # 56/2004 art. 8: an ace is 1 or 11 at the player's choice.
    assert hand_total(cards)[0] == best_total(cards)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32), st.sampled_from(VARIANTS))
def test_a_replayed_outcome_settles_like_the_original(seed: int, rules: BlackjackRules) -> None:
    rnd = random.Random(seed)
    shoe = iter(shoe_for(rules, rnd, (1, 8)))
    d = BlackjackDeal.start(rules, [1, 2])
    while not d.complete:
        e = d.expect()
        if e.kind == "card":
            d = d.deal(next(shoe))
        else:
            allowed = [a for a in e.allowed if a != "insurance"]
            assert e.seat is not None
            d = d.decide(e.seat, rnd.choice(allowed))
    bets = G.parse_bets(rules, [{"seat": s, "bet_type": "main", "stake": 125} for s in (1, 2)])
    a = G.settle(rules, d, bets, M).to_json()
    text = json.dumps(G.outcome_json(d))
    b = G.settle(rules, G.parse_outcome(rules, json.loads(text)), bets, M).to_json()
    assert a == b


def test_every_refusal_code_is_stable_and_documented() -> None:
    """Every error code the blackjack modules can raise appears in docs/rules/blackjack.md."""
    text = (Path(__file__).resolve().parents[2] / "docs" / "rules" / "blackjack.md").read_text()
    src = "".join(p.read_text() for p in sorted(Path(bj.__file__).parent.glob("*.py")))
    codes = set(re.findall(r'"([A-Z][A-Z0-9_]{3,})"', src)) - set(bj.__all__)
    for code in sorted(codes):
        assert f"`{code}`" in text, f"{code} is not documented"


def test_favoured_shoes_hold_every_card_of_the_decks() -> None:
    for rules in VARIANTS:
        shoe = shoe_for(rules, random.Random(1), (7, 8))
        assert len(shoe) == 52 * rules.decks
        assert all(n == rules.decks for n in
                   (sum(1 for _ in g) for _, g in itertools.groupby(sorted(shoe))))  # fmt: skip
