"""Super Pan 9 (九家樂): Portaria 261/96/M.

One 52-card deck, shuffled for every game (art. 1 1), art. 2 1)). The banker, one of
the players, puts his capital on the table, declares how many points he adds to or
subtracts from the dice, and shakes four dice; counted counter-clockwise from him,
the total (with his declaration) picks the place that receives the first two cards,
and every place then receives two cards in a row, right to left (art. 2 2)-3)).
Each place is compared with the banker's two cards: points are the sum of the card
values modulo 10, picture cards and tens counting zero and the ace one (art. 6);
the higher point wins; equal points go to the hand with the higher card (art. 7 2));
when points and cards are equal the banker wins (art. 8). Winners pay the house 5%
(art. 9). The table part (dice, service order, capital-bounded settlement,
co-banking, banker rotation) is :mod:`.banker`.

Decisions where the text is silent (see ``docs/rules/super-pan-9.md``):

- Equal points and equal highest cards (art. 7 2) Chinese: "以其中最大之一張牌之大小決定
  贏輸", the single largest card decides): with ``rules.super-pan-9.equal_high_card =
  "next-card"`` (default) the other card decides, and only when both cards are of the
  same rank does art. 8 give the game to the banker (the Portuguese text speaks of
  "as cartas de valor mais elevado" and art. 8 of "valor individual das cartas ...
  iguais"); with ``"banker"`` the banker wins as soon as the largest cards are equal.
  Suits never count. The two readings differ only when both hands hold two cards of
  value zero (tens and pictures), e.g. K-Q against K-J.
- Every place of the table (``rules.super-pan-9.places``) receives cards, whether
  anybody bets on it or not (as 195/92/M art. 2 (d) says for P'ai Kao), so the dice
  count is the same whoever plays.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from ..banker import (
    COMMISSION_RATE,
    SETTLEMENT_ORDERS,
    BankerDeal,
    BankerGame,
    BankerHands,
    DiceReshake,
    PlaceVerdict,
    RoundSetup,
    one_place_lines,
    parse_hands_outcome,
)
from ..base import JSON, Bet, MathLine, MathReport
from ..cards import Card, cards_str
from ..errors import Misdeal, OutcomeError, RulesError
from ..money import fraction_str
from ..options import option

REGULATION = "261/96/M"
#: Decks in play: "um baralho normal de 52 cartas" (art. 1 1)).
DECKS = 1
EQUAL_HIGH_CARD = ("next-card", "banker")

__all__ = ["DiceReshake", "SuperPan9Deal", "SuperPan9Outcome", "SuperPan9Rules"]


@dataclass(frozen=True, slots=True)
class SuperPan9Rules:
    places: int = option(
        9,
        range=(2, 26),
        doc="Places at the table, the banker's included; every place receives two cards",
        cite="261/96/M art. 3 1) (at least two), art. 1 1) (one 52-card deck: at most 26 hands)",
    )
    equal_high_card: str = option(
        "next-card",
        choices=EQUAL_HIGH_CARD,
        doc="Equal points and equal highest cards: 'next-card' compares the other card and the "
        "banker wins only when both ranks are equal; 'banker' gives it to the banker at once",
        cite="261/96/M art. 7 2), art. 8 (gap: the largest cards tie)",
    )
    settlement_order: str = option(
        "served",
        choices=SETTLEMENT_ORDERS,
        doc="Order bets are paid or collected within the banker's capital: 'served' place by "
        "place from the first place served, right to left, each place's bets in the order "
        "placed; 'placed' strictly in the order placed",
        cite="261/96/M art. 2 3), art. 5 3) and 5)",
    )
    casino_co_bank: int = option(
        0,
        range=(0, 10**12),
        doc="Capital (minor units) the casino co-banks behind the banker and the co-banking "
        "players in each game when the outcome does not say; 0: none",
        cite="261/96/M art. 5 5)",
    )


# -- hands: art. 6-8 ------------------------------------------------------------------------


def card_points(card: Card) -> int:
    """Ace 1, two to nine their face, ten and pictures 0 (art. 6 1))."""
    return card.rank if card.rank <= 9 else 0


def hand_points(cards: Sequence[Card]) -> int:
    """Sum of the two cards' points, only the last digit counting (art. 6 2))."""
    return sum(card_points(c) for c in cards) % 10


def hand_key(cards: Sequence[Card], equal_high_card: str = "next-card") -> tuple[int, ...]:
    """A key whose order is the order of hands: the higher key wins, equal keys go to
    the banker (art. 7-8). Cards rank K > Q > J > 10 > 9 ... > 2 > A (art. 6 1)).
    """
    hi, lo = sorted((c.rank for c in cards), reverse=True)
    if equal_high_card == "banker":
        return (hand_points(cards), hi)
    return (hand_points(cards), hi, lo)


def place_beats_banker(
    place: Sequence[Card], banker: Sequence[Card], equal_high_card: str = "next-card"
) -> bool:
    return hand_key(place, equal_high_card) > hand_key(banker, equal_high_card)


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


# -- outcome ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SuperPan9Outcome(BankerHands[Card]):
    """A dealt game: the setup (banker, capital, dice, declaration) and each place's cards."""

    @property
    def deal_order(self) -> tuple[Card, ...]:
        return tuple(c for p in self.setup.service_order for c in self.hand(p))


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


# -- the deal, card by card (CARD-GAMES contract) ---------------------------------------------


@dataclass(frozen=True, slots=True)
class SuperPan9Deal(BankerDeal[Card, SuperPan9Outcome]):
    """A game being dealt from the shoe, card by card (:class:`~..banker.BankerDeal`):
    the banker's place, capital and declaration fixed (art. 2 3), art. 5 3)), the dice
    shaken, two cards a place in the service order (art. 2 2)-3))."""

    noun = "card"
    game_id = "super-pan-9"
    before_dice = "art. 2 2)"
    all_dealt = "every place has its two cards (art. 2 3))"

    @staticmethod
    def start(
        rules: SuperPan9Rules,
        *,
        banker: int,
        banker_capital: int,
        declared: int = 0,
        casino_capital: int | None = None,
    ) -> SuperPan9Deal:
        cc = rules.casino_co_bank if casino_capital is None else casino_capital
        # Validate through RoundSetup with dummy dice.
        RoundSetup(rules.places, banker, banker_capital, cc, (1, 1, 1, 1), declared)
        return SuperPan9Deal(rules.places, banker, banker_capital, cc, declared)

    @property
    def cards(self) -> tuple[Card, ...]:
        return self.dealt

    def parse_item(self, raw: object) -> Card:
        return raw if isinstance(raw, Card) else Card.parse(raw)

    def refusal(self, item: Card) -> Misdeal | None:
        if item in self.dealt:
            return Misdeal(
                f"card {item} dealt twice from one 52-card deck (art. 1 1))",
                code="MISDEAL_DUPLICATE_CARD",
            )
        return None

    def make_outcome(
        self, setup: RoundSetup, hands: tuple[tuple[Card, Card], ...]
    ) -> SuperPan9Outcome:
        return SuperPan9Outcome(setup, hands)

    def to_json(self) -> dict[str, JSON]:
        return {**BankerDeal.to_json(self), "places": self.places, "declared": self.declared}

    @staticmethod
    def from_json(rules: SuperPan9Rules, data: Mapping[str, Any]) -> SuperPan9Deal:
        if data.get("places") != rules.places:
            raise RulesError(
                f"journalled deal has {data.get('places')!r} places, the table has {rules.places}",
                code="DEAL_STATE_INVALID",
            )
        return SuperPan9Deal.start(
            rules,
            banker=data["banker"],
            banker_capital=data["banker_capital"],
            declared=data.get("declared", 0),
            casino_capital=data.get("casino_capital"),
        ).replayed(data)


# -- the game ---------------------------------------------------------------------------------


class SuperPan9(BankerGame[SuperPan9Rules, SuperPan9Outcome]):
    game_id = "super-pan-9"
    result_device = "shoe"
    device_kinds = frozenset({"shoe", "board"})
    title = "Super Pan 9"
    regulation = REGULATION
    rules_type = SuperPan9Rules
    place_article = "261/96/M art. 5 3), art. 7, art. 8, art. 9"
    co_bank_article = "261/96/M art. 5 5), art. 9"

    deal_setup_keys = frozenset({"banker", "banker_capital", "casino_capital", "declared", "dice"})

    def places(self, rules: SuperPan9Rules) -> int:
        return rules.places

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
