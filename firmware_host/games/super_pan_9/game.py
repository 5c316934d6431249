"""The Super Pan 9 game: the outcome's JSON, each place against the banker (art. 7,
8), the player-banked settlement of :mod:`firmware_host.games.banker`, and the exact
house edge of one place against the banker."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

from ..banker import (
    COMMISSION_RATE,
    DEMO_CAPITAL,
    DEMO_TABLE,
    BankerGame,
    PlaceVerdict,
    declared_round,
    hands_words,
    one_place_lines,
    parse_hands_outcome,
)
from ..base import JSON, Bet, MathLine, MathReport
from ..cards import Card, cards_str, deck
from ..describe import Demo, DemoRound, Display, Rng
from ..errors import OutcomeError, RulesError
from ..money import fraction_str
from .deal import SuperPan9Deal, SuperPan9Outcome
from .rules import DECKS, REGULATION, SuperPan9Rules, hand_key, hand_points


def _why(place: Sequence[Card], banker: Sequence[Card], rule: str) -> tuple[bool, str]:
    kp, kb = hand_key(place, rule), hand_key(banker, rule)
    wins = kp > kb
    who = "place" if wins else "banker"
    if kp[0] != kb[0]:
        return wins, f"{kp[0]} points against the banker's {kb[0]}: {who} wins (261/96/M art. 7 1))"
    if kp != kb:
        return wins, (
            f"equal points ({kp[0]}): the higher card decides, {who} wins (261/96/M art. 7 2))"
        )
    return False, f"equal points ({kp[0]}) and equal cards: the banker wins (261/96/M art. 8)"


def _check_one_deck(cards: Sequence[Card], what: str) -> None:
    dup = sorted(str(c) for c, n in Counter(cards).items() if n > DECKS)
    if dup:
        raise OutcomeError(
            f"{what}: card(s) {dup} appear twice; a game is dealt from one 52-card deck "
            "(261/96/M art. 1 1), art. 2 1))",
            code="CARD_DUPLICATE",
        )


def parse_outcome_json(rules: SuperPan9Rules, raw: JSON) -> SuperPan9Outcome:
    what = "super-pan-9 outcome"
    _, setup, hands = parse_hands_outcome(
        raw,
        what=what,
        places=rules.places,
        default_casino_capital=rules.casino_co_bank,
        declaration_allowed=True,
        key="cards",
        noun="card",
        parse_items=_parse_cards,
        article="261/96/M art. 2 3)",
    )
    _check_one_deck([c for cs in hands for c in cs], what)
    return SuperPan9Outcome(setup, hands)


def _parse_cards(raw: JSON, what: str) -> list[Card]:
    if not isinstance(raw, list):
        raise OutcomeError(f"{what}: expected a list of cards such as ['9S', 'KD'], got {raw!r}")
    try:
        return [Card.parse(c) for c in raw]
    except OutcomeError as exc:
        raise OutcomeError(f"{what}: {exc.message}", code=exc.code) from exc


# -- the game ---------------------------------------------------------------------------------


def demo_declared(
    rules: SuperPan9Rules, rng: Rng, rnd: DemoRound
) -> tuple[list[dict[str, JSON]], JSON]:
    """A game dealt by hand from a shuffled deck and declared (no card reader in the
    demo), through the game's own deal: the banker's setup and dice first (art. 2, 5)."""

    def start(banker: int, bets: list[Bet], dice: list[int]) -> SuperPan9Deal:
        setup: dict[str, JSON] = {
            "banker": banker,
            "banker_capital": DEMO_CAPITAL,
            "casino_capital": 0,
            "declared": 0,
            "dice": list(dice),
        }
        return GAME.start_deal(rules, bets, setup)

    return declared_round(GAME, rules, rng, rnd, deck(), start)


class SuperPan9(BankerGame[SuperPan9Rules, SuperPan9Outcome]):
    game_id = "super-pan-9"
    math_options = frozenset({"decks"})
    result_device = "shoe"
    device_kinds = frozenset({"shoe", "board"})
    title = "Super Pan 9"
    regulation = REGULATION
    rules_type = SuperPan9Rules
    display = Display(words=hands_words)
    demo = Demo(table=DEMO_TABLE, declared=demo_declared)
    place_article = "261/96/M art. 5 3), art. 7, art. 8, art. 9"
    co_bank_article = "261/96/M art. 5 5), art. 9"

    deal_setup_keys = frozenset({"banker", "banker_capital", "casino_capital", "declared", "dice"})

    def places(self, rules: SuperPan9Rules) -> int:
        return rules.places

    def fresh_deck_each_round(self, rules: SuperPan9Rules) -> bool:
        """A freshly shuffled deck for every game (261/96/M art. 2 1))."""
        return True

    def start_deal(
        self, rules: SuperPan9Rules, bets: Sequence[Bet], setup: Mapping[str, JSON] | None = None
    ) -> SuperPan9Deal:
        """The banker's place, capital and declared add/subtract, and the four dice,
        fixed before the first card (261/96/M art. 2, 5)."""
        if setup is None:
            raise RulesError(
                "Super Pan 9: send deal_setup (banker, capital, declaration, dice) before the cards",
                code="SETUP_REQUIRED",
            )
        deal = SuperPan9Deal.start(
            rules,
            banker=setup["banker"],
            banker_capital=setup["banker_capital"],
            declared=setup.get("declared", 0),
            casino_capital=setup.get("casino_capital"),
        )
        return deal.shake(setup["dice"])

    def parse_outcome(self, rules: SuperPan9Rules, raw: JSON) -> SuperPan9Outcome:
        return parse_outcome_json(rules, raw)

    def sample_outcomes(self, rules: Any) -> list[SuperPan9Outcome]:
        """The documented example (docs/rules), for the contract tests."""
        example = {
            "banker": 1,
            "banker_capital": 100000,
            "casino_capital": 0,
            "declared": -1,
            "dice": [1, 2, 3, 4],
            "hands": {
                "1": ["5S", "4H"],
                "2": ["9S", "KD"],
                "3": ["2S", "3D"],
                "4": ["KS", "QD"],
                "5": ["AS", "AD"],
                "6": ["7S", "2D"],
                "7": ["6S", "3C"],
                "8": ["8S", "AH"],
                "9": ["9H", "JC"],
            },
        }
        return [self.parse_outcome(rules, example)]

    def outcome_json(self, outcome: SuperPan9Outcome) -> JSON:
        out = outcome.setup.to_json()
        out["hands"] = {str(p): cards_str(h) for p, h in enumerate(outcome.hands, start=1)}
        return out

    def _detail(self, rules: SuperPan9Rules, cards: Sequence[Card]) -> dict[str, JSON]:
        return {"cards": cards_str(cards), "points": hand_points(cards)}

    def place_verdicts(
        self, rules: SuperPan9Rules, outcome: SuperPan9Outcome
    ) -> Sequence[PlaceVerdict]:
        b = outcome.hand(outcome.setup.banker)
        out = []
        for p in range(1, rules.places + 1):
            if p == outcome.setup.banker:
                continue
            wins, why = _why(outcome.hand(p), b, rules.equal_high_card)
            out.append(PlaceVerdict(p, wins, why, self._detail(rules, outcome.hand(p))))
        return out

    def banker_detail(self, rules: SuperPan9Rules, outcome: SuperPan9Outcome) -> Mapping[str, JSON]:
        return self._detail(rules, outcome.hand(outcome.setup.banker))

    def math(self, rules: SuperPan9Rules, **options: Any) -> MathReport:
        unknown = sorted(set(options) - {"decks"})
        if unknown:
            raise RulesError(
                f"super-pan-9 math is an exact enumeration; it takes --decks only, not {unknown}",
                code="MATH_OPTION_UNSUPPORTED",
            )
        decks = options.get("decks") or DECKS
        if not 1 <= decks <= 12:
            raise RulesError(f"--decks must be 1..12, got {decks}", code="MATH_OPTION_INVALID")
        dist = exact_place_vs_banker(decks, rules.equal_high_card)
        (pe, pd), (be, bd) = one_place_lines(dist["place"])
        lines = (
            MathLine("place", None, pe, pd,
                     note="a unit on one place against the banker, capital not reached"),
            MathLine("banker", None, be, bd,
                     note="the banker against a unit on one place"),
        )  # fmt: skip
        details: dict[str, JSON] = {
            "enumeration": (
                f"every ordered deal of 2 cards to one place and 2 to the banker from "
                f"{decks} x 52 cards ({_falling(52 * decks, 4)} deals), by rank counts"
            ),
            "decks": decks,
            "note": "261/96/M art. 1 1): one deck; other deck counts are what-ifs"
            if decks != DECKS
            else "one 52-card deck, fresh for each game (261/96/M art. 1 1), art. 2 1))",
            "p_place_wins": fraction_str(dist["place"]),
            "p_banker_wins": fraction_str(1 - dist["place"]),
            "p_equal_hands_banker_wins": fraction_str(dist["equal"]),
            "commission_rate": fraction_str(COMMISSION_RATE),
        }
        return MathReport(self.game_id, self.rules_json(rules), "exact", lines, details)


def _falling(n: int, k: int) -> int:
    out = 1
    for i in range(k):
        out *= n - i
    return out


def exact_place_vs_banker(decks: int, equal_high_card: str) -> dict[str, Fraction]:
    """P(place beats banker) and P(equal hands) over every deal from ``decks`` decks.

    The two hands of one place and of the banker are, whatever the other places hold,
    four cards drawn without replacement from the fresh deck (art. 2 1)); suits do not
    matter, so the enumeration is over ranks weighted by how many cards of each rank
    remain.
    """
    counts = [0] + [4 * decks] * 13  # index by rank 1..13
    ranks = range(1, 14)
    keys: dict[tuple[int, int], tuple[int, ...]] = {}
    for a in ranks:
        for b in ranks:
            keys[a, b] = hand_key((Card(a, "S"), Card(b, "H")), equal_high_card)
    win = eq = 0
    for p1 in ranks:
        w1 = counts[p1]
        counts[p1] -= 1
        for p2 in ranks:
            w2 = w1 * counts[p2]
            if not w2:
                continue
            counts[p2] -= 1
            kp = keys[p1, p2]
            for b1 in ranks:
                w3 = w2 * counts[b1]
                if not w3:
                    continue
                counts[b1] -= 1
                for b2 in ranks:
                    w4 = w3 * counts[b2]
                    if not w4:
                        continue
                    kb = keys[b1, b2]
                    if kp > kb:
                        win += w4
                    elif kp == kb:
                        eq += w4
                counts[b1] += 1
            counts[p2] += 1
        counts[p1] += 1
    total = _falling(52 * decks, 4)
    return {"place": Fraction(win, total), "equal": Fraction(eq, total)}


GAME = SuperPan9()
