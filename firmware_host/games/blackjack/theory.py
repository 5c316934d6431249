"""Blackjack's house edges for the theoretical win (issue 34): the expectation of each
bet under a stated strategy, computed (not simulated), so that every settled round
carries the same exact fraction for the same rules.

**The model** (``docs/rules/blackjack.md``, "Theoretical win"):

- the player plays :func:`~.simulate.basic_strategy` (the strategy the seeded
  simulation of ``tablectl math`` plays): never insurance, never even money, five
  cards taken below 20;
- the place's first two cards and the dealer's face-up card come from a fresh shoe of
  the table's ``decks`` (exactly: without replacement, by rank and suit); every later
  card (hits, doubles, the second card of a split hand, the dealer's second and later
  cards) from an infinite shoe, each rank 1/13 and each suit 1/4. (Counting the removal
  of every card exactly would follow each hand's whole history; the first three cards
  carry most of it: a pair as the first two cards is 23/311 from six decks, 1/13 from
  an infinite shoe);
- everything the rules say, through the rules core's own functions: what a hand may do
  (:func:`~.deal.refusal`, :func:`~.deal.auto_status`), what it wins
  (:func:`~.verdicts.hand_verdicts` and the side bets' verdicts), the dealer drawing to
  17 (56/2004 art. 6 1)) without a hole card (a dealer's blackjack takes the doubles and
  splits, art. 12 2), unless ``double_loss_limited``).

A main bet's edge is per initial unit, doubles and splits included (their stakes are
the player's choice, and their expectation is in the main bet's); the side bets'
(any pair with the pairs its splits form, sevens, over/under 13) and insurance's are
verdicts with their probabilities, settled at each bet's stake
(:class:`~..edges.Verdicts`).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache

from ..cards import SUITS, Card
from ..edges import Verdicts, Weighted, merge_verdicts
from .deal import Hand, Place, auto_status, refusal
from .rules import BlackjackRules, hand_total, is_natural, is_special
from .simulate import basic_strategy
from .verdicts import (
    hand_verdicts,
    insurance_verdict,
    over_under_verdict,
    pair_verdict,
    sevens_verdict,
)

#: The decisions a strategy chooses among (insurance is never taken).
_ACTIONS = ("hit", "stand", "double", "split", "surrender", "even_money", "five_card")
_STATUS_OF = {"stand": "stood", "surrender": "surrendered"}
_THIRTEENTH = Fraction(1, 13)
_SPECIAL_RANKS = frozenset({6, 7, 8})
#: A dealer's final hand of each kind, as cards (``hand_verdicts`` reads its total and
#: whether it is a blackjack).
_DEALER_HANDS: Mapping[str, tuple[Card, ...]] = {
    "bj": (Card(1, "S"), Card(13, "S")),
    "17": (Card(10, "S"), Card(7, "S")),
    "18": (Card(10, "S"), Card(8, "S")),
    "19": (Card(10, "S"), Card(9, "S")),
    "20": (Card(10, "S"), Card(10, "H")),
    "21": (Card(10, "S"), Card(5, "S"), Card(6, "S")),
    "bust": (Card(10, "S"), Card(6, "S"), Card(10, "H")),
}

Strategy = Callable[[Sequence[Card], Card, Collection[str]], str]
#: Pairs formed on split hands -> probability.
PairsDist = Mapping[int, Fraction]


@dataclass(frozen=True)
class BlackjackEdges:
    """A table's blackjack edges under the model (module docstring)."""

    #: House edge of a main bet per initial unit (doubles and splits included).
    main: Fraction
    #: The side bets and insurance: ``pair``, ``sevens``, ``over``, ``under``,
    #: ``insurance``.
    side: Mapping[str, Verdicts]


@lru_cache(maxsize=8)
def blackjack_edges(rules: BlackjackRules) -> BlackjackEdges:
    """The edges of a table of ``rules`` (cached: the same rules, the same fractions)."""
    return _Model(rules, basic_strategy).edges()


class _Model:
    """One table's computation (memoised by what each function reads)."""

    def __init__(self, rules: BlackjackRules, strategy: Strategy) -> None:
        self.rules = rules
        self.strategy = strategy
        self._dealer: dict[int, tuple[tuple[str, Fraction], ...]] = {}
        self._final: dict[tuple[object, ...], Fraction] = {}
        self._place: dict[tuple[object, ...], tuple[Fraction, PairsDist]] = {}

    # -- the dealer ------------------------------------------------------------------
    def dealer(self, up: Card) -> tuple[tuple[str, Fraction], ...]:
        """The dealer's final hand by kind, with its probability, showing ``up``."""
        k = min(up.rank, 10)
        got = self._dealer.get(k)
        if got is None:
            dist: dict[str, Fraction] = {}
            memo: dict[tuple[int, bool, int], dict[str, Fraction]] = {}
            for kind, p in self._dealer_from((up,), memo).items():
                dist[kind] = dist.get(kind, Fraction(0)) + p
            got = self._dealer[k] = tuple(sorted(dist.items()))
        return got

    def _dealer_from(
        self, cards: tuple[Card, ...], memo: dict[tuple[int, bool, int], dict[str, Fraction]]
    ) -> dict[str, Fraction]:
        total, soft = hand_total(cards)
        key = (total, soft, min(len(cards), 3))
        got = memo.get(key)
        if got is not None:
            return got
        out: dict[str, Fraction]
        if is_natural(cards):
            out = {"bj": Fraction(1)}
        elif len(cards) >= 2 and total >= 17:  # 56/2004 art. 6 1): stands from 17
            out = {"bust" if total > 21 else str(total): Fraction(1)}
        else:
            out = {}
            for card, p in _by_points():
                for kind, q in self._dealer_from((*cards, card), memo).items():
                    out[kind] = out.get(kind, Fraction(0)) + p * q
        memo[key] = out
        return out

    def final(self, hand: Hand, up: Card) -> Fraction:
        """A finished hand's expected net per base unit (its doubled stake included)."""
        key = (hand.status, hand.total, hand.blackjack, hand.doubled, min(up.rank, 10))
        got = self._final.get(key)
        if got is None:
            got = Fraction(0)
            for kind, p in self.dealer(up):
                base, dbl = hand_verdicts(self.rules, _DEALER_HANDS[kind], hand)
                net = base.net_per_unit() + (dbl.net_per_unit() if hand.doubled else 0)
                got += p * net
            self._final[key] = got
        return got

    # -- a place, hand after hand ----------------------------------------------------------
    def allowed(
        self, hand: Hand, up: Card, n_hands: int, acted: bool, declined: bool
    ) -> tuple[str, ...]:
        return tuple(
            a
            for a in _ACTIONS
            if refusal(self.rules, up, hand, n_hands, acted, declined, a) is None
        )

    def place(
        self,
        hand: Hand,
        up: Card,
        n_hands: int,
        acted: bool,
        declined: bool,
        pending: int,
        pair_rank: int,
    ) -> tuple[Fraction, PairsDist]:
        """From ``hand`` on (then the ``pending`` split hands of ``pair_rank`` waiting
        for their second card): the expected main net (per initial unit), and the
        distribution of the pairs the split hands form."""
        key = (_hand_key(hand.cards), hand.split, hand.aces, hand.doubled, min(up.rank, 10),
               n_hands, acted, declined, pending, pair_rank)  # fmt: skip
        got = self._place.get(key)
        if got is None:
            got = self._place[key] = self._play(
                hand, up, n_hands, acted, declined, pending, pair_rank
            )
        return got

    def _play(
        self,
        hand: Hand,
        up: Card,
        n_hands: int,
        acted: bool,
        declined: bool,
        pending: int,
        pair_rank: int,
    ) -> tuple[Fraction, PairsDist]:
        rules = self.rules
        status = auto_status(rules, up, hand, n_hands, acted, declined)
        if status is not None:
            return self._then(dataclasses.replace(hand, status=status), up, n_hands, acted,
                              declined, pending, pair_rank)  # fmt: skip
        allowed = self.allowed(hand, up, n_hands, acted, declined)
        action = self.strategy(hand.cards, up, allowed)
        if action not in allowed:  # pragma: no cover - a strategy bug
            raise AssertionError(f"strategy chose {action} outside {allowed}")
        declined = declined or (action != "split" and "split" in allowed)
        if action == "split":
            a = hand.cards[0]
            first = Hand((a,), True, a.rank == 1)
            # ``first`` is dealt now; the other hand of the pair waits (both count in
            # ``pending`` until their second card)
            return self._split_card(first, up, n_hands + 1, True, declined, pending + 2, a.rank)
        if action in ("hit", "double"):
            doubled = hand.doubled or action == "double"
            parts = []
            for card, p in _draws(hand.cards):
                nxt = Hand((*hand.cards, card), hand.split, hand.aces, doubled)
                parts.append((p, self.place(nxt, up, n_hands, True, declined, pending, pair_rank)))
            return _mix(parts)
        done = dataclasses.replace(hand, status=_STATUS_OF.get(action, action))
        return self._then(done, up, n_hands, True, declined, pending, pair_rank)

    def _then(
        self,
        done: Hand,
        up: Card,
        n_hands: int,
        acted: bool,
        declined: bool,
        pending: int,
        pair_rank: int,
    ) -> tuple[Fraction, PairsDist]:
        """``done`` settled against the dealer, then the next split hand, if any."""
        ev = self.final(done, up)
        if not pending:
            return ev, _NO_PAIRS
        nxt = Hand((Card(pair_rank, "S"),), True, pair_rank == 1)
        rest, pairs = self._split_card(nxt, up, n_hands, acted, declined, pending, pair_rank)
        return ev + rest, pairs

    def _split_card(
        self,
        one: Hand,
        up: Card,
        n_hands: int,
        acted: bool,
        declined: bool,
        pending: int,
        pair_rank: int,
    ) -> tuple[Fraction, PairsDist]:
        """A split hand of one card (one of ``pending``) takes its second card; a card of
        its rank forms a pair (56/2004 art. 13 1) (2))."""
        parts = []
        for card, p in _draws(one.cards):
            two = Hand((*one.cards, card), True, one.aces)
            ev, pairs = self.place(two, up, n_hands, acted, declined, pending - 1, pair_rank)
            if card.rank == one.cards[0].rank:
                pairs = {k + 1: q for k, q in pairs.items()}
            parts.append((p, (ev, pairs)))
        return _mix(parts)

    def first_action(self, c1: Card, c2: Card, up: Card) -> str:
        hand = Hand((c1, c2))
        if auto_status(self.rules, up, hand, 1, False, False) is not None:
            return "none"
        return self.strategy(hand.cards, up, self.allowed(hand, up, 1, False, False))

    # -- the table ---------------------------------------------------------------------
    def edges(self) -> BlackjackEdges:
        main = Fraction(0)
        pair: list[Weighted] = []
        sevens: list[Weighted] = []
        over: list[Weighted] = []
        under: list[Weighted] = []
        for c1, up, c2, w in _first_cards(self.rules.decks):
            ev, extra = self.place(Hand((c1, c2)), up, 1, False, False, 0, 0)
            main += w * ev
            base = 1 if c1.rank == c2.rank else 0
            for k, q in extra.items():
                pair.append((pair_verdict(Place(1, pairs=base + k)), w * q))
            dealt = Place(1, dealt=(c1, c2))
            over.append((over_under_verdict(dealt, "over"), w))
            under.append((over_under_verdict(dealt, "under"), w))
            if c1.rank == c2.rank == 7 and self.first_action(c1, c2, up) == "split":
                for c3, q in _any_card():
                    sevens.append(
                        (sevens_verdict(Place(1, dealt=(c1, c2, c3), opening_split=True)), w * q)
                    )
            else:
                sevens.append((sevens_verdict(dealt), w))
        insurance = [
            (insurance_verdict(_DEALER_HANDS[kind]), p) for kind, p in self.dealer(Card(1, "S"))
        ]
        side = {
            "pair": merge_verdicts(pair),
            "sevens": merge_verdicts(sevens),
            "over": merge_verdicts(over),
            "under": merge_verdicts(under),
            "insurance": merge_verdicts(insurance),
        }
        return BlackjackEdges(-main, side)


_NO_PAIRS: PairsDist = {0: Fraction(1)}


def _mix(
    parts: Sequence[tuple[Fraction, tuple[Fraction, PairsDist]]],
) -> tuple[Fraction, PairsDist]:
    """The mixture of ``parts`` (probability, (expected net, pairs)): one ``Fraction``
    per sum, the terms added as integers over their common denominator."""
    ev = _weighted_sum([(p, e) for p, (e, _) in parts])
    if all(d is _NO_PAIRS for _, (_, d) in parts):
        return ev, _NO_PAIRS
    by_k: dict[int, list[tuple[Fraction, Fraction]]] = {}
    for p, (_, d) in parts:
        for k, q in d.items():
            by_k.setdefault(k, []).append((p, q))
    return ev, {k: _weighted_sum(terms) for k, terms in sorted(by_k.items())}


def _weighted_sum(terms: Sequence[tuple[Fraction, Fraction]]) -> Fraction:
    """``sum(p * x)`` exactly, with one ``Fraction`` made at the end."""
    den = 1
    for p, x in terms:
        den = math.lcm(den, p.denominator * x.denominator)
    num = 0
    for p, x in terms:
        num += p.numerator * x.numerator * (den // (p.denominator * x.denominator))
    return Fraction(num, den)


@lru_cache(maxsize=1)
def _by_points() -> tuple[tuple[Card, Fraction], ...]:
    """A card from the infinite shoe by its points (the dealer's draws, a hand's hits):
    ace to nine 1/13 each, a ten-valued card 4/13."""
    return (*((Card(r, "S"), _THIRTEENTH) for r in range(1, 10)), (Card(10, "S"), Fraction(4, 13)))


@lru_cache(maxsize=1)
def _any_card() -> tuple[tuple[Card, Fraction], ...]:
    """A card from the infinite shoe, by rank and suit: 1/52 each."""
    return tuple((Card(r, s), Fraction(1, 52)) for r in range(1, 14) for s in SUITS)


def _draws(cards: tuple[Card, ...]) -> tuple[tuple[Card, Fraction], ...]:
    """The next card of a hand holding ``cards``, from the infinite shoe, told apart as
    far as the rules can tell: by rank for a hand of one card (a pair may form), by
    points otherwise; and by suit (the same as the hand's, 1/4) where a suited 6-7-8
    may form (56/2004 art. 15)."""
    suit = cards[0].suit
    one_suit = all(c.suit == suit for c in cards)
    ranks = frozenset(c.rank for c in cards)
    key = (
        min(len(cards), 3),
        suit,
        one_suit,
        ranks if len(cards) <= 2 and ranks <= _SPECIAL_RANKS else None,
    )
    got = _DRAWS.get(key)
    if got is None:
        got = _DRAWS[key] = tuple(_draws_of(cards))
    return got


_DRAWS: dict[tuple[object, ...], tuple[tuple[Card, Fraction], ...]] = {}


def _draws_of(cards: tuple[Card, ...]) -> list[tuple[Card, Fraction]]:
    singles = len(cards) == 1
    out: list[tuple[Card, Fraction]] = []
    options = [(Card(r, "S"), _THIRTEENTH) for r in range(1, 14)] if singles else list(_by_points())
    suit = cards[0].suit
    one_suit = all(c.suit == suit for c in cards)
    for card, p in options:
        ranks = {c.rank for c in cards} | {card.rank}
        if len(cards) <= 2 and ranks <= _SPECIAL_RANKS and card.rank in _SPECIAL_RANKS:
            other = next(s for s in SUITS if s != suit)
            if one_suit:
                out.append((Card(card.rank, suit), p / 4))
                out.append((Card(card.rank, other), p * 3 / 4))
            else:
                out.append((Card(card.rank, other), p))
        else:
            out.append((Card(card.rank, "D" if suit != "D" else "C"), p))
    return out


def _hand_key(cards: tuple[Card, ...]) -> tuple[object, ...]:
    """What the rules and the strategy read of a hand's cards: its points, whether it
    is soft, how many cards (five-card payment: 56/2004 art. 19), the ranks of two cards
    (pairs, blackjack, surrender), and whether three are the special prize's."""
    n = len(cards)
    total, soft = hand_total(cards)
    if n == 1:
        return (1, cards[0].rank)
    if n == 2:
        ranks = tuple(sorted(c.rank for c in cards))
        suited = set(ranks) <= _SPECIAL_RANKS and cards[0].suit == cards[1].suit
        return (2, ranks, suited)
    return (min(n, 6), total, soft, n == 3 and is_special(cards))


def _first_cards(decks: int) -> list[tuple[Card, Card, Card, Fraction]]:
    """The place's first card, the dealer's face-up card and the place's second card
    (56/2004 art. 5: in that order) from a fresh shoe of ``decks``, with their exact
    probabilities: by rank, and by suit too where suits can matter (both of the
    place's cards a 6, 7 or 8: a suited 6-7-8, sevens of one suit)."""
    n = 52 * decks
    per_rank = 4 * decks
    denom = n * (n - 1) * (n - 2)
    out: list[tuple[Card, Card, Card, Fraction]] = []
    for r1 in range(1, 14):
        for ru in range(1, 14):
            for r2 in range(1, 14):
                if r1 in _SPECIAL_RANKS and r2 in _SPECIAL_RANKS:
                    out.extend(_suited_first(r1, ru, r2, decks, denom))
                    continue
                n_up = per_rank - (ru == r1)
                n2 = per_rank - (r2 == r1) - (r2 == ru)
                w = Fraction(per_rank * n_up * n2, denom)
                if w:
                    out.append((Card(r1, "S"), Card(ru, "D"), Card(r2, "H"), w))
    assert sum(w for *_, w in out) == 1
    return out


def _suited_first(
    r1: int, ru: int, r2: int, decks: int, denom: int
) -> Iterable[tuple[Card, Card, Card, Fraction]]:
    """:func:`_first_cards` by suit, for two of the place's cards among 6, 7, 8."""
    for s1 in SUITS:
        for su in SUITS:
            for s2 in SUITS:
                c1, up, c2 = Card(r1, s1), Card(ru, su), Card(r2, s2)
                n_up = decks - (up == c1)
                n2 = decks - (c2 == c1) - (c2 == up)
                w = Fraction(decks * n_up * n2, denom)
                if w:
                    yield c1, up, c2, w
