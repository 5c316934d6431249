"""Seeded simulation of blackjack (56/2004) under a basic strategy: the house edge
that ``tablectl math blackjack`` reports, with its confidence interval.

The rules core holds no randomness: the caller passes the generator that shuffles
the shoes (``rng``: anything with a ``shuffle`` method, e.g. ``random.Random(seed)``);
:meth:`~.game.Blackjack.math` makes it from the seed with the factory its own caller
passes (``rng=random.Random``, what ``tablectl math`` does), so the same seed gives the
same shoes and the same figures.

Two engines play the same rounds from the same shuffled shoe:

- ``"fast"`` (the default): a small mutable loop for one seat that deals in the
  order of the regulation and asks the rules core's pure functions
  (:func:`~.deal.refusal`, :func:`~.deal.auto_status`, :func:`~.verdicts.hand_verdicts`,
  the side-bet verdicts) what is allowed and what each hand wins;
- ``"machine"``: the real :class:`~.deal.BlackjackDeal` state machine and the game's
  ``settle`` (``game=``), round by round (about 20 times slower).

The tests run both on the same seed and require identical results round by round,
so the fast engine's dealing order is checked against the state machine.

Shoe: ``decks`` decks shuffled; a cut card leaves ``max(30, a quarter)`` of the cards
behind it (56/2004 art. 2 1) 1): "among the last 30 cards or more"); the round that
reaches it is the last of the shoe (art. 2 2) 1)). The metal box is one deck shuffled
for every round (art. 2 2) 3)). One seat plays; every round it also holds one unit
on pair, sevens, over 13 and under 13, which does not change its play. Insurance
is never taken by the strategy; its line is the value of a unit of insurance each
time the dealer shows an ace.
"""

from __future__ import annotations

import math as _math
from collections import Counter
from collections.abc import Callable, Collection, MutableSequence, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from functools import partial
from typing import Any, Protocol

from ..base import Game
from ..cards import Card, deck
from ..money import MoneyRules, Verdict
from .deal import BlackjackDeal, Hand, Place, auto_status, refusal
from .rules import BlackjackRules, card_points, hand_total, is_natural, is_special
from .verdicts import (
    hand_verdicts,
    insurance_verdict,
    over_under_verdict,
    pair_verdict,
    sevens_verdict,
)

#: Defaults of the house-edge simulation (``tablectl math blackjack``).
DEFAULT_ROUNDS = 200_000
DEFAULT_SEED = 20040512
#: z for a two-sided 95% interval.
Z95 = 1.959963984540054

_ALL_ACTIONS = ("hit", "stand", "double", "split", "surrender", "even_money", "five_card")
_STATUS_OF = {"stand": "stood", "surrender": "surrendered"}


# -- basic strategy --------------------------------------------------------------------


def basic_strategy(cards: Sequence[Card], up: Card, allowed: Collection[str]) -> str:
    """A basic strategy for a game without hole-card peek, dealer standing on soft 17.

    Doubles and splits lose to a dealer's blackjack (56/2004 art. 12 2)), so the usual
    adjustments apply: no double on 10 or 11 against a ten or ace, no split of aces
    or eights against an ace. Never insurance, never even money; five cards are
    taken below 20. ``allowed`` is what the rules allow now; the answer is always in it.
    """
    u = 11 if up.rank == 1 else card_points(up)
    total, soft = hand_total(cards)
    if "five_card" in allowed:
        return "five_card" if total < 20 else "stand"
    if "surrender" in allowed and not soft:
        pair8 = cards[0].rank == 8 and cards[1].rank == 8
        if (
            (total == 16 and u == 10)
            or (total == 16 and u == 9 and not pair8)
            or (total in (14, 15) and u == 10)
        ):
            return "surrender"
    if "split" in allowed:
        v = card_points(cards[0])
        split = {
            1: u != 11,
            2: u <= 7,
            3: u <= 7,
            4: u in (5, 6),
            5: False,
            6: u <= 6,
            7: u <= 7,
            8: u <= 9,
            9: u in (2, 3, 4, 5, 6, 8, 9),
            10: False,
        }[v]
        if split:
            return "split"
    if "double" in allowed:
        if soft:
            other = total - 11
            dbl = (
                (other in (2, 3) and u in (5, 6))
                or (other in (4, 5) and 4 <= u <= 6)
                or (other in (6, 7) and 3 <= u <= 6)
            )
        else:
            dbl = (total == 9 and 3 <= u <= 6) or (total in (10, 11) and u <= 9)
        if dbl:
            return "double"
    if "hit" not in allowed:
        return "stand"
    if soft:
        if total >= 19 or (total == 18 and u <= 8):
            return "stand"
        return "hit"
    if total >= 17 or (13 <= total <= 16 and u <= 6) or (total == 12 and 4 <= u <= 6):
        return "stand"
    return "hit"


# -- tallies ------------------------------------------------------------------------


@dataclass
class Tally:
    """Histogram of one bet's net results (integers in units of ``1/scale`` stake)."""

    bet: str
    selection: Any
    scale: int = 1
    note: str = ""
    hist: Counter[int] = field(default_factory=Counter)

    @property
    def count(self) -> int:
        return sum(self.hist.values())

    @property
    def total(self) -> int:
        return sum(net * c for net, c in self.hist.items())

    @property
    def mean(self) -> Fraction:
        """Mean net per unit staked (exact, of this sample)."""
        n = self.count
        return Fraction(self.total, n * self.scale) if n else Fraction(0)

    def interval(self) -> tuple[float, float]:
        """95% confidence interval of the mean net per unit (normal approximation)."""
        n = self.count
        if n < 2:
            return (float("-inf"), float("inf"))
        total = self.total
        total_sq = sum(net * net * c for net, c in self.hist.items())
        var = (total_sq - total * total / n) / (n - 1)
        half = Z95 * _math.sqrt(max(var, 0.0) / n) / self.scale
        m = total / (n * self.scale)
        return (m - half, m + half)

    def distribution(self) -> tuple[tuple[Fraction, Fraction], ...]:
        n = self.count
        return tuple(
            (Fraction(net, self.scale), Fraction(c, n))
            for net, c in sorted(self.hist.items(), reverse=True)
        )


@dataclass(frozen=True)
class SimResult:
    lines: tuple[Tally, ...]
    shoe_note: str
    #: Per round (main x2, pair, sevens, over, under) when ``keep_rounds``.
    rounds: tuple[tuple[int, ...], ...] = ()
    #: Per round (seats, cards, decisions) JSON when ``keep_rounds``.
    records: tuple[dict[str, Any], ...] = ()


class _ShoeEmpty(Exception):
    pass


class Shuffler(Protocol):
    """What the simulation asks of its random number generator (``random.Random`` has it)."""

    def shuffle(self, x: MutableSequence[Any], /) -> None: ...


class _Shoe:
    """A shuffled shoe with a cut card; the metal box is reshuffled every round."""

    def __init__(self, rules: BlackjackRules, rng: Shuffler) -> None:
        self.rng = rng
        self.cards: list[Card] = [c for c in deck() for _ in range(rules.decks)]
        n = len(self.cards)
        self.every_round = rules.procedure == "metal_box"
        self.cut = n - max(30, n // 4)
        self.pos = n  # forces a shuffle before the first round

    def shuffle(self) -> None:
        self.rng.shuffle(self.cards)
        self.pos = 0

    def begin_round(self) -> int:
        if self.every_round or self.pos >= self.cut:
            self.shuffle()
        return self.pos

    def draw(self) -> Card:
        if self.pos >= len(self.cards):
            raise _ShoeEmpty
        c = self.cards[self.pos]
        self.pos += 1
        return c


# -- the fast engine -------------------------------------------------------------------


class _H:
    __slots__ = ("aces", "cards", "doubled", "split", "status")

    def __init__(self, cards: list[Card], split: bool = False, aces: bool = False) -> None:
        self.cards = cards
        self.split = split
        self.aces = aces
        self.doubled = False
        self.status = "open"

    def frozen(self) -> Hand:
        return Hand(tuple(self.cards), self.split, self.aces, self.doubled, self.status)


Strategy = Callable[[Sequence[Card], Card, Collection[str]], str]


class _Memo:
    """Memoised answers of the rules core's pure functions, keyed by exactly the
    inputs each one reads (so a memoised answer is the function's own answer).

    The verdicts build fractions and reason texts; asking each of them once per
    distinct situation makes the fast engine several times faster.
    """

    def __init__(self, rules: BlackjackRules) -> None:
        self.rules = rules
        self.play: dict[tuple[Any, ...], tuple[str | None, tuple[str, ...]]] = {}
        self.hand: dict[tuple[Any, ...], tuple[int, int]] = {}
        self.side: dict[tuple[Any, ...], int] = {}

    def status_and_allowed(
        self, h: _H, up: Card, n_hands: int, acted: bool, declined: bool
    ) -> tuple[str | None, tuple[str, ...]]:
        # refusal() reads the ranks only; auto_status() also reads is_special().
        special = len(h.cards) == 3 and is_special(h.cards)
        key = (tuple(c.rank for c in h.cards), special, h.split, h.aces, h.doubled,
               up.rank, n_hands, acted, declined)  # fmt: skip
        got = self.play.get(key)
        if got is None:
            fz = h.frozen()
            status = auto_status(self.rules, up, fz, n_hands, acted, declined)
            allowed = tuple(
                a for a in _ALL_ACTIONS
                if refusal(self.rules, up, fz, n_hands, acted, declined, a) is None
            )  # fmt: skip
            got = self.play[key] = (status, allowed)
        return got

    def hand_nets(self, h: _H, dealer: Sequence[Card]) -> tuple[int, int]:
        """Twice the net per unit of the hand's base and doubled stakes (integers)."""
        # hand_verdicts() reads the status, total and blackjack of the hand and the
        # dealer's total and blackjack.
        bj = not h.split and is_natural(h.cards)
        key = (h.status, hand_total(h.cards)[0], bj, hand_total(dealer)[0], is_natural(dealer))
        got = self.hand.get(key)
        if got is None:
            base, dbl = hand_verdicts(self.rules, dealer, h.frozen())
            b2, d2 = 2 * base.net_per_unit(), 2 * dbl.net_per_unit()
            assert b2.denominator == 1 and d2.denominator == 1
            got = self.hand[key] = (int(b2), int(d2))
        return got

    def side_net(self, kind: str, key: tuple[Any, ...], verdict: Callable[[], Verdict]) -> int:
        k = (kind, *key)
        got = self.side.get(k)
        if got is None:
            got = self.side[k] = int(verdict().net_per_unit())
        return got


def _fast_round(
    rules: BlackjackRules,
    shoe: _Shoe,
    strategy: Strategy,
    record: list[dict[str, Any]] | None,
    memo: _Memo,
) -> tuple[tuple[int, ...], int | None]:
    """One round for one seat; returns ((main x2, pair, sevens, over, under), insurance or None)."""
    start = shoe.pos
    decisions: list[dict[str, Any]] = []
    burn = 0 if rules.burn == "none" else 1
    for _ in range(burn):
        shoe.draw()
    c1 = shoe.draw()
    up = shoe.draw()
    c2 = shoe.draw()
    dealer = [up]
    if rules.procedure == "metal_box":
        dealer.append(shoe.draw())
    dealt = [c1, c2]
    pairs = 1 if c1.rank == c2.rank else 0
    opening_split = False
    acted = False
    declined = False
    hands = [_H([c1, c2])]
    i = 0
    while i < len(hands):
        h = hands[i]
        if len(h.cards) == 1:
            c = shoe.draw()
            h.cards.append(c)
            dealt.append(c)
            if h.cards[0].rank == c.rank:
                pairs += 1
        while True:
            status, allowed = memo.status_and_allowed(h, up, len(hands), acted, declined)
            if status is not None:
                h.status = status
                break
            action = strategy(h.cards, up, allowed)
            if action not in allowed:  # pragma: no cover - a strategy bug
                raise AssertionError(f"strategy chose {action} outside {allowed}")
            decisions.append({"seat": 1, "hand": i, "action": action})
            if action != "split" and "split" in allowed:
                declined = True
            acted = True
            if action == "split":
                a, b = h.cards
                aces = a.rank == 1
                opening_split = opening_split or not h.split
                hands[i : i + 1] = [_H([a], True, aces), _H([b], True, aces)]
                h = hands[i]
                c = shoe.draw()
                h.cards.append(c)
                dealt.append(c)
                if h.cards[0].rank == c.rank:
                    pairs += 1
                continue
            if action in ("hit", "double"):
                if action == "double":
                    h.doubled = True
                c = shoe.draw()
                h.cards.append(c)
                dealt.append(c)
                continue
            h.status = _STATUS_OF.get(action, action)
            break
        i += 1
    if rules.procedure != "metal_box":
        if rules.burn == "round_and_dealer":
            shoe.draw()
        dealer.append(shoe.draw())
    # 56/2004 art. 6 1): the dealer draws on 16 or less even when no hand is left to beat
    while not is_natural(dealer) and hand_total(dealer)[0] < 17:
        dealer.append(shoe.draw())
    main2 = 0
    for h in hands:
        base, dbl = memo.hand_nets(h, dealer)
        main2 += base
        if h.doubled:
            main2 += dbl
    place = Place(1, dealt=tuple(dealt), pairs=pairs, opening_split=opening_split)
    sevens_key: tuple[Any, ...] = ()
    if c1.rank == 7 and c2.rank == 7:
        third = dealt[2] if opening_split and len(dealt) > 2 else None
        sevens_key = (c1, c2, third)
    ou = c1.rank if c1.rank < 10 else 10, c2.rank if c2.rank < 10 else 10
    nets = (
        main2,
        memo.side_net("pair", (pairs,), lambda: pair_verdict(place)),
        memo.side_net("sevens", sevens_key, lambda: sevens_verdict(place)),
        memo.side_net("over", ou, lambda: over_under_verdict(place, "over")),
        memo.side_net("under", ou, lambda: over_under_verdict(place, "under")),
    )
    ins = None
    if up.rank == 1:
        ins = memo.side_net("insurance", (is_natural(dealer),), lambda: insurance_verdict(dealer))
    if record is not None:
        record.append(
            {
                "seats": [1],
                "cards": [str(c) for c in shoe.cards[start : shoe.pos]],
                "decisions": decisions,
            }
        )
    return nets, ins


# -- the machine engine ----------------------------------------------------------------

_MONEY = MoneyRules()


def _machine_round(
    rules: BlackjackRules,
    shoe: _Shoe,
    strategy: Strategy,
    record: list[dict[str, Any]] | None,
    memo: _Memo,
    *,
    game: Game[BlackjackRules, BlackjackDeal],
) -> tuple[tuple[int, ...], int | None]:
    deal = BlackjackDeal.start(rules, [1])
    while not deal.complete:
        e = deal.expect()
        if e.kind == "card":
            deal = deal.deal(shoe.draw())
        else:
            assert e.hand is not None and deal.up_card is not None
            h = deal.place(1).hands[e.hand]
            deal = deal.decide(1, strategy(h.cards, deal.up_card, e.allowed))
    bets = game.parse_bets(
        rules,
        [
            {"bet_id": "m", "seat": 1, "bet_type": "main", "stake": 2},
            {"bet_id": "p", "seat": 1, "bet_type": "pair", "stake": 1},
            {"bet_id": "s", "seat": 1, "bet_type": "sevens", "stake": 1},
            {
                "bet_id": "o",
                "seat": 1,
                "bet_type": "over_under_13",
                "selection": "over",
                "stake": 1,
            },
            {
                "bet_id": "u",
                "seat": 1,
                "bet_type": "over_under_13",
                "selection": "under",
                "stake": 1,
            },
        ],
    )
    st = game.settle(rules, deal, bets, _MONEY)
    by: Counter[str] = Counter()
    for r in st.results:
        by[r.bet.bet_id.split(".")[0]] += r.amounts.net
    ins = None
    if deal.up_card is not None and deal.up_card.rank == 1:
        ins = int(insurance_verdict(deal.dealer).net_per_unit())
    if record is not None:
        record.append(deal.to_json())
    return (by["m"], by["p"], by["s"], by["o"], by["u"]), ins


# -- driver ---------------------------------------------------------------------------


def simulate(
    rules: BlackjackRules,
    *,
    rng: Shuffler,
    rounds: int = DEFAULT_ROUNDS,
    engine: str = "fast",
    strategy: Strategy = basic_strategy,
    keep_rounds: bool = False,
    game: Game[BlackjackRules, BlackjackDeal] | None = None,
) -> SimResult:
    """Play ``rounds`` rounds for one seat from shoes shuffled by ``rng``; tally every
    bet. The ``"machine"`` engine settles with ``game`` (the blackjack game)."""
    play: Callable[..., tuple[tuple[int, ...], int | None]]
    if engine == "fast":
        play = _fast_round
    elif engine == "machine":
        if game is None:
            raise ValueError("the machine engine settles with the game: pass game=")
        play = partial(_machine_round, game=game)
    else:
        raise ValueError(f"engine must be 'fast' or 'machine', not {engine!r}")
    shoe = _Shoe(rules, rng)
    memo = _Memo(rules)
    main = Tally("main", None, scale=2, note="per initial unit, doubles and splits included")
    pair = Tally("pair", None)
    sevens = Tally("sevens", None)
    over = Tally("over_under_13", "over")
    under = Tally("over_under_13", "under")
    insurance = Tally(
        "insurance", None, note="a unit of insurance whenever the dealer shows an ace"
    )
    main_h, pair_h, sevens_h = main.hist, pair.hist, sevens.hist
    over_h, under_h = over.hist, under.hist
    per_round: list[tuple[int, ...]] = []
    records: list[dict[str, Any]] | None = [] if keep_rounds else None
    restarts = 0
    done = 0
    while done < rounds:
        shoe.begin_round()
        try:
            nets, ins = play(rules, shoe, strategy, records, memo)
        except _ShoeEmpty:
            # The round outran the shoe (never seen in practice: 30 cards stay behind
            # the cut card): reshuffle and play a fresh round instead.
            restarts += 1
            shoe.shuffle()
            continue
        done += 1
        main_h[nets[0]] += 1
        pair_h[nets[1]] += 1
        sevens_h[nets[2]] += 1
        over_h[nets[3]] += 1
        under_h[nets[4]] += 1
        if ins is not None:
            insurance.hist[ins] += 1
        if keep_rounds:
            per_round.append(nets)
    lines = [main]
    if rules.any_pair:
        lines.append(pair)
    if rules.sevens:
        lines.append(sevens)
    if rules.over_under_13:
        lines += [over, under]
    lines.append(insurance)
    note = (
        "one deck, reshuffled every round (metal box)"
        if rules.procedure == "metal_box"
        else f"{rules.decks} deck(s), cut card with max(30, 1/4) of the cards behind it"
    )
    if restarts:
        note += f"; {restarts} round(s) outran the shoe and were replayed from a fresh shoe"
    return SimResult(tuple(lines), note, tuple(per_round), tuple(records or ()))
