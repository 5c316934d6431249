"""Stud poker with a progressive jackpot: Despacho Regulamentar Externo 61/2004.

One 52-card deck (art. 1 1)); seven player places and the croupier (art. 2 1)).
Each place bets an ante, may add a jackpot bet before the first card (art. 6 2)-3)),
and after seeing its five cards folds (losing the ante, art. 6 7)) or raises exactly
twice the ante (art. 6 6)). The croupier's hand must hold at least ace-king to open
the players' hands (art. 9 1)); otherwise antes are paid 1:1 and raises returned
(art. 9 2)). A qualifying croupier's higher hand takes ante and raise (art. 9 4));
a higher player hand is paid 1:1 on the ante and by the art. 9 5) table on the
raise (royal flush 50 to 100 as authorised, art. 13; four of a kind, straight flush
and royal flush limited by the house's maximum per game).

Hands rank by art. 8 with the art. 4 order of suits (spades > hearts > clubs >
diamonds) deciding what ranks leave equal, so two hands dealt from one deck never
tie. :func:`hand_value` gives every five-card hand a distinct integer consistent
with art. 8; see ``docs/rules/stud-poker.md`` for how the order is completed between
hands that cannot meet in one deal (they share a card).

The progressive jackpot (art. 10, 11) is :mod:`.jackpot`; :meth:`StudPoker.settle`
runs it and reports it in ``Settlement.extras["jackpot"]``.

``math`` is a *simulation* (an exact evaluation of the raise decision against every
croupier hand is ~10^15 comparisons): a seeded SplitMix64 generator written here as
pure code (seed in, numbers out; no ``random``), a near-optimal published strategy,
and a 95% confidence interval. The jackpot line is exact (hand counts).
"""

from __future__ import annotations

import itertools
import math as _math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any, Literal

from .. import jackpot as jp
from ..base import (
    JSON,
    Bet,
    BetResult,
    BetType,
    Deal,
    Expect,
    Game,
    MathLine,
    MathReport,
    Settlement,
    Totals,
    require,
    unit_problems,
)
from ..cards import Card, cards_str, deck, parse_cards
from ..errors import (
    BetError,
    BetNotOffered,
    Misdeal,
    OutcomeError,
    RoundStateError,
    RulesError,
)
from ..money import Amounts, MoneyRules, Verdict, settle_amounts
from ..options import option

# -- five-card hand values (art. 4, art. 8) -------------------------------------------

#: Categories, lowest first (art. 8 10) .. 1)).
CATEGORIES = (
    "high_card",
    "one_pair",
    "two_pairs",
    "three_of_a_kind",
    "straight",
    "flush",
    "full_house",
    "four_of_a_kind",
    "straight_flush",
    "royal_flush",
)
HIGH_CARD, ONE_PAIR, TWO_PAIRS, THREE_OF_A_KIND, STRAIGHT, FLUSH = range(6)
FULL_HOUSE, FOUR_OF_A_KIND, STRAIGHT_FLUSH, ROYAL_FLUSH = range(6, 10)

#: Art. 4 1): suits in increasing order (index = strength).
SUIT_ORDER = "DCHS"
#: Rank index 0..12 is 2..A (art. 4 2)); card code = rank index * 4 + suit index.
RANK_CHARS = "23456789TJQKA"

_M52 = (1 << 52) - 1
_M39 = (1 << 39) - 1
_CAT_SHIFT = 69
_CLASS_SHIFT = 56
# Each card adds: its own bit (the 52-bit hand mask), 1 to its rank's 3-bit count
# (bits 52..90) and 1 to its suit's 3-bit count (bits 91..102).
_V = tuple((1 << c) | (1 << (52 + 3 * (c >> 2))) | (1 << (91 + 3 * (c & 3))) for c in range(52))
_FLUSH5 = frozenset(5 << (3 * s) for s in range(4))


_RANK_BASE = {rank: ((rank - 2) % 13) * 4 for rank in range(1, 14)}
_SUIT_INDEX = {suit: i for i, suit in enumerate(SUIT_ORDER)}


def card_code(card: Card) -> int:
    """0..51: rank index (2 = 0 .. ace = 12) times 4 plus suit index (D C H S)."""
    return _RANK_BASE[card.rank] + _SUIT_INDEX[card.suit]


def code_card(code: int) -> Card:
    return Card(((code >> 2) + 1) % 13 + 1, SUIT_ORDER[code & 3])


def _is_straight(ranks: Sequence[int]) -> int | None:
    """Highest rank index of a straight of five distinct ranks (desc), or None.
    Art. 4 3): in 5-4-3-2-A the ace is the lowest card, so the five is highest."""
    if ranks[0] - ranks[4] == 4:
        return ranks[0]
    if list(ranks) == [12, 3, 2, 1, 0]:
        return 3
    return None


def _classes() -> tuple[dict[int, tuple[int, int]], dict[int, tuple[int, int]]]:
    """Build the lookup tables: rank-count key -> (value base, shift of the nibble
    whose suits decide first), for non-flush and flush hands."""
    entries: list[tuple[int, tuple[int, ...], bool, int, int]] = []
    for combo in itertools.combinations_with_replacement(range(12, -1, -1), 5):
        counts: dict[int, int] = {}
        for r in combo:
            counts[r] = counts.get(r, 0) + 1
        if max(counts.values()) > 4:
            continue
        key = sum(1 << (3 * r) for r in combo)
        groups = sorted(counts.items(), key=lambda rc: (-rc[1], -rc[0]))
        order = tuple(r for r, _ in groups)
        shape = tuple(n for _, n in groups)
        if len(shape) == 5:  # five ranks, already in decreasing order
            high = _is_straight(combo)
            if high is not None:
                entries.append((STRAIGHT, (high,), False, key, high))
                sf = ROYAL_FLUSH if high == 12 else STRAIGHT_FLUSH
                entries.append((sf, (high,), True, key, high))
            else:
                entries.append((HIGH_CARD, order, False, key, order[0]))
                entries.append((FLUSH, order, True, key, order[0]))
            continue
        cat = {
            (4, 1): FOUR_OF_A_KIND,
            (3, 2): FULL_HOUSE,
            (3, 1, 1): THREE_OF_A_KIND,
            (2, 2, 1): TWO_PAIRS,
            (2, 1, 1, 1): ONE_PAIR,
        }[shape]
        entries.append((cat, order, False, key, order[0]))
    entries.sort(key=lambda e: (e[0], e[1]))
    plain: dict[int, tuple[int, int]] = {}
    flush: dict[int, tuple[int, int]] = {}
    for index, (cat, _order, is_flush, key, first) in enumerate(entries):
        base = (cat << _CAT_SHIFT) | (index << _CLASS_SHIFT)
        (flush if is_flush else plain)[key] = (base, 4 * first)
    return plain, flush


_PLAIN, _FLUSH = _classes()


def hand_value_codes(a: int, b: int, c: int, d: int, e: int) -> int:
    """The value of five distinct card codes: higher is better, never equal for two
    different hands. Bits: category (69+), rank class (56..68), the suits of the
    deciding card or group (52..55), then the hand's card mask (0..51)."""
    s = _V[a] + _V[b] + _V[c] + _V[d] + _V[e]
    mask = s & _M52
    if (s >> 91) in _FLUSH5:
        base, sh = _FLUSH[(s >> 52) & _M39]
    else:
        base, sh = _PLAIN[(s >> 52) & _M39]
    return base | (((mask >> sh) & 15) << 52) | mask


def hand_value(cards: Sequence[Card]) -> int:
    """Value of a five-card hand (art. 8), see :func:`hand_value_codes`."""
    if len(cards) == 5:
        a, b, c, d, e = (_RANK_BASE[x.rank] + _SUIT_INDEX[x.suit] for x in cards)
        if len({a, b, c, d, e}) == 5:
            return hand_value_codes(a, b, c, d, e)
    raise OutcomeError(
        f"a stud hand is five different cards, got {cards_str(cards)}", code="HAND_INVALID"
    )


def category(value: int) -> int:
    return value >> _CAT_SHIFT


def category_name(value: int) -> str:
    return CATEGORIES[value >> _CAT_SHIFT]


def compare(a: Sequence[Card], b: Sequence[Card]) -> int:
    """1 if hand ``a`` beats ``b``, -1 if it loses, 0 only for the same cards."""
    va, vb = hand_value(a), hand_value(b)
    return (va > vb) - (va < vb)


#: Art. 9 1): the croupier opens with at least ace-king (A-K-4-3-2 is the lowest).
QUALIFY = _PLAIN[(1 << 36) + (1 << 33) + (1 << 6) + (1 << 3) + 1][0]


def qualifies(value: int) -> bool:
    return value >= QUALIFY


def describe(cards: Sequence[Card]) -> str:
    v = hand_value(cards)
    return f"{category_name(v).replace('_', ' ')} ({' '.join(cards_str(cards))})"


# -- pay table and options (art. 9, 10, 13) --------------------------------------------

#: Art. 9 5): the raise pays, by the player's hand (royal flush: the rules option).
RAISE_ODDS = {
    HIGH_CARD: 1,
    ONE_PAIR: 1,
    TWO_PAIRS: 2,
    THREE_OF_A_KIND: 3,
    STRAIGHT: 4,
    FLUSH: 5,
    FULL_HOUSE: 7,
    FOUR_OF_A_KIND: 20,
    STRAIGHT_FLUSH: 50,
}
#: Art. 9 5) (7)-(9): prizes limited by the house's maximum per game.
CAPPED = frozenset({FOUR_OF_A_KIND, STRAIGHT_FLUSH, ROYAL_FLUSH})
SEATS = tuple(range(1, 8))


def _rate(v: Fraction) -> str | None:
    return None if 0 <= v <= 1 else f"the contribution rate must be between 0 and 1, got {v}"


@dataclass(frozen=True, slots=True)
class StudPokerRules:
    royal_flush: int = option(
        100,
        section="pay_table",
        range=(50, 100),
        doc="Raise odds for a royal flush (x to 1)",
        cite="61/2004 art. 9 5) (9), art. 13",
    )
    max_payout: int = option(
        0,
        section="pay_table",
        range=(0, 10**12),
        doc="House maximum paid on one hand's raise for four of a kind, straight flush and "
        "royal flush in a game, minor units; 0 = no maximum set",
        cite="61/2004 art. 9 5) (7)-(9)",
    )
    jackpot_offered: bool = option(
        True,
        section="pay_table",
        doc="The table runs the progressive jackpot",
        cite="61/2004 art. 1 4), art. 5 2)",
    )
    jackpot_stake: int = option(
        1000,
        section="pay_table",
        range=(1, 10**9),
        doc="The jackpot bet's stake, minor units (one amount per table)",
        cite="61/2004 art. 10 1)",
    )
    jackpot_contribution_rate: Fraction = option(
        Fraction(1, 2),
        section="pay_table",
        check=_rate,
        doc="Part of each jackpot stake credited to the pool (exact fraction)",
        cite="61/2004 art. 10",
    )
    jackpot_seed: int = option(
        10_000_000,
        section="pay_table",
        range=(0, 10**12),
        doc="Minimum the pool restarts from after it is paid out, minor units",
        cite="61/2004 art. 10 8)",
    )
    jackpot_royal_flush_fixed: int = option(
        10_000_000,
        section="pay_table",
        range=(1, 10**12),
        doc="Fixed sum for a royal flush (paid if larger than the pool)",
        cite="61/2004 art. 10 2) (1)",
    )
    jackpot_straight_flush_fixed: int = option(
        500_000,
        section="pay_table",
        range=(1, 10**12),
        doc="Fixed sum for a straight flush (paid if larger than 10% of the pool)",
        cite="61/2004 art. 10 2) (2)",
    )
    jackpot_four_of_a_kind_fixed: int = option(
        100_000,
        section="pay_table",
        range=(1, 10**12),
        doc="Fixed sum for four of a kind",
        cite="61/2004 art. 10 2) (3)",
    )
    jackpot_full_house_fixed: int = option(
        75_000,
        section="pay_table",
        range=(1, 10**12),
        doc="Fixed sum for a full house",
        cite="61/2004 art. 10 2) (4)",
    )
    jackpot_flush_fixed: int = option(
        50_000,
        section="pay_table",
        range=(1, 10**12),
        doc="Fixed sum for a flush",
        cite="61/2004 art. 10 2) (5)",
    )
    jackpot_reset: str = option(
        "exhausted",
        choices=jp.RESET_RULES,
        doc="exhausted: the pool restarts at the seed when a payment empties it (the letter of "
        "art. 10 8)); below_seed: also topped up to the seed whenever a payment leaves less",
        cite="61/2004 art. 10 8)",
    )
    jackpot_on_fold: bool = option(
        False,
        doc="A folded hand still wins its jackpot prize (default: no, a folded hand is lost and "
        "its cards collected, art. 6 7))",
        cite="61/2004 art. 6 7), art. 10 2)",
    )
    dealing: str = option(
        "shoe",
        choices=("shoe", "shuffler"),
        doc="shoe: one card at a time to each place, croupier last, five rounds; shuffler: five "
        "cards at a time to each place, croupier last",
        cite="61/2004 art. 3, art. 7",
    )

    def __post_init__(self) -> None:
        self.jackpot_params()  # cross-field checks (fixed sums at least the stake...)

    def jackpot_params(self) -> jp.JackpotParams:
        return jp.JackpotParams(
            stake=self.jackpot_stake,
            contribution_rate=self.jackpot_contribution_rate,
            seed=self.jackpot_seed,
            royal_flush_fixed=self.jackpot_royal_flush_fixed,
            straight_flush_fixed=self.jackpot_straight_flush_fixed,
            four_of_a_kind_fixed=self.jackpot_four_of_a_kind_fixed,
            full_house_fixed=self.jackpot_full_house_fixed,
            flush_fixed=self.jackpot_flush_fixed,
            reset_rule=self.jackpot_reset,
        )

    def raise_odds(self, cat: int) -> int:
        return self.royal_flush if cat == ROYAL_FLUSH else RAISE_ODDS[cat]


# -- the deal engine (art. 7, art. 11) --------------------------------------------------

Action = Literal["raise", "fold"]
ACTIONS = ("raise", "fold")


def _misdeal(message: str, *, code: str) -> Misdeal:
    """A card the procedure does not allow (art. 7); by art. 11 1) the game is void
    and its jackpot bets carry to the next game: call :meth:`StudDeal.void`."""
    return Misdeal(
        f"{message}; the game is void, jackpot bets carry to the next game "
        "(61/2004 art. 11 1))",
        code=code,
        correctable=False,
    )


@dataclass(frozen=True, slots=True)
class SeatHand:
    seat: int
    cards: tuple[Card, ...]
    action: Action


@dataclass(frozen=True, slots=True)
class StudOutcome:
    dealer: tuple[Card, ...]
    hands: tuple[SeatHand, ...]
    #: The jackpot before the round, when the caller supplies it (else the seed).
    jackpot: jp.JackpotState | None = None


@dataclass(frozen=True, slots=True)
class StudDeal(Deal):
    """One game as the cards leave the shoe or the shuffler (immutable).

    ``seats`` are the places with an ante, ascending from the croupier's left.
    ``dead`` holds cards dealt to a place without bets (art. 11 3): that hand is
    void, the game goes on); ``exposed`` the cards exposed by mistake (art. 11 2)).
    """

    seats: tuple[int, ...]
    procedure: str = "shoe"
    hands: tuple[tuple[Card, ...], ...] = ()
    dealer: tuple[Card, ...] = ()
    actions: tuple[Action | None, ...] = ()
    dead: tuple[tuple[int, Card], ...] = ()
    exposed: tuple[Card, ...] = ()
    void_reason: str | None = None

    @staticmethod
    def start(rules: StudPokerRules, seats: Sequence[int]) -> StudDeal:
        s = tuple(sorted(seats))
        if not s or len(set(s)) != len(s) or any(x not in SEATS for x in s):
            raise RoundStateError(
                f"seats in play must be different places 1..7, got {list(seats)}",
                code="SEATS_INVALID",
            )
        return StudDeal(s, rules.dealing, tuple(() for _ in s), (), tuple(None for _ in s))

    # -- queries
    def _next(self) -> tuple[int | None, str]:
        """Index of the hand due a card (len(seats) = the croupier), None if dealt."""
        n = len(self.seats)
        k = sum(len(h) for h in self.hands) + len(self.dealer)
        if k >= 5 * (n + 1):
            return None, "every hand has five cards"
        if self.procedure == "shoe":
            return k % (
                n + 1
            ), "one card at a time, left to right, croupier last (61/2004 art. 7 1))"
        return k // 5, "five cards at a time, left to right, croupier last (61/2004 art. 7 2))"

    @property
    def up_card(self) -> Card | None:
        """The croupier's exposed card: the last one dealt to the croupier (art. 7)."""
        return self.dealer[4] if len(self.dealer) == 5 else None

    def expect(self) -> Expect:
        if self.void_reason is not None:
            return Expect("void", reason=self.void_reason)
        i, why = self._next()
        if i is not None:
            if i == len(self.seats):
                return Expect("card", "dealer", reason=why)
            return Expect("card", "seat", self.seats[i], reason=why)
        for seat, act in zip(self.seats, self.actions, strict=True):
            if act is None:
                return Expect(
                    "decision",
                    seat=seat,
                    allowed=ACTIONS,
                    reason="raise twice the ante or fold (61/2004 art. 6 5)-7))",
                )
        return Expect("complete", reason="every place has raised or folded")

    def _live(self) -> None:
        if self.void_reason is not None:
            raise RoundStateError(f"the game is void: {self.void_reason}", code="ROUND_VOID")

    # -- transitions
    def deal(self, card: Card, to: Literal["dealer"] | int | None = None) -> StudDeal:
        """The next card; ``to`` is where it went if known ("dealer" or a place)."""
        self._live()
        seen = {c for h in self.hands for c in h} | set(self.dealer) | {c for _, c in self.dead}
        if card in seen:
            raise _misdeal(
                f"{card} was already dealt: one deck (61/2004 art. 1 1))",
                code="MISDEAL_DUPLICATE_CARD",
            )
        i, why = self._next()
        if i is None:
            raise _misdeal(f"{card} is one card too many ({why})", code="MISDEAL_EXTRA_CARD")
        if isinstance(to, int) and not isinstance(to, bool) and to not in self.seats:
            if to not in SEATS:
                raise RoundStateError(f"no place {to} at this table", code="SEATS_INVALID")
            # Art. 11 3): a hand dealt to a place without bets is void; play goes on.
            return replace(self, dead=(*self.dead, (to, card)))
        due: Literal["dealer"] | int = "dealer" if i == len(self.seats) else self.seats[i]
        if to is not None and to != due:
            raise _misdeal(
                f"{card} went to {to!r} but the next card is for {due!r} ({why})",
                code="MISDEAL_WRONG_HAND",
            )
        if due == "dealer":
            return replace(self, dealer=(*self.dealer, card))
        hands = list(self.hands)
        hands[i] = (*hands[i], card)
        return replace(self, hands=tuple(hands))

    def expose(self, card: Card) -> StudDeal:
        """A card exposed by mistake: the game goes on after one (a croupier's card
        stays face up, art. 11 2)); a second makes the game void (art. 11 1))."""
        self._live()
        dealt = {c for h in self.hands for c in h} | set(self.dealer)
        if card not in dealt:
            raise RoundStateError(f"{card} has not been dealt", code="CARD_NOT_DEALT")
        exposed = (*self.exposed, card) if card not in self.exposed else self.exposed
        state = replace(self, exposed=exposed)
        if len(exposed) >= 2:
            return state.void("two or more cards exposed by mistake (61/2004 art. 11 1))")
        return state

    def decide(self, seat: int, action: str) -> StudDeal:
        """A place raises or folds after seeing its cards (art. 6 5)-7))."""
        self._live()
        if seat not in self.seats:
            raise RoundStateError(f"place {seat} has no hand in this game", code="SEAT_NOT_IN_PLAY")
        if action not in ACTIONS:
            raise RoundStateError(f"a place raises or folds, not {action!r}", code="ACTION_INVALID")
        if self._next()[0] is not None:
            raise RoundStateError(
                "decisions come after every hand has its five cards (61/2004 art. 6 5))",
                code="DECISION_TOO_EARLY",
            )
        i = self.seats.index(seat)
        if self.actions[i] is not None:
            raise RoundStateError(
                f"place {seat} has already decided ({self.actions[i]})", code="ALREADY_DECIDED"
            )
        actions = list(self.actions)
        actions[i] = "raise" if action == "raise" else "fold"
        return replace(self, actions=tuple(actions))

    def void(self, reason: str) -> StudDeal:
        """Art. 11 1), 4): the game is void, bets are void, jackpot bets carry over."""
        return replace(self, void_reason=reason or "void (61/2004 art. 11)")

    def outcome(self) -> StudOutcome:
        self._live()
        exp = self.expect()
        if exp.kind != "complete":
            raise RoundStateError(
                f"the game is not complete: next is a {exp.kind} ({exp.reason})",
                code="ROUND_NOT_COMPLETE",
            )
        hands = tuple(
            SeatHand(s, h, a)  # type: ignore[arg-type]
            for s, h, a in zip(self.seats, self.hands, self.actions, strict=True)
        )
        return StudOutcome(self.dealer, hands)

    def to_json(self) -> dict[str, JSON]:
        return {
            "seats": list(self.seats),
            "procedure": self.procedure,
            "hands": {str(s): cards_str(h) for s, h in zip(self.seats, self.hands, strict=True)},
            "dealer": cards_str(self.dealer),
            "actions": {str(s): a for s, a in zip(self.seats, self.actions, strict=True)},
            "dead": [[s, str(c)] for s, c in self.dead],
            "exposed": cards_str(self.exposed),
            "void": self.void_reason,
        }

    @staticmethod
    def from_json(rules: StudPokerRules, data: Mapping[str, Any]) -> StudDeal:
        """Rebuild a journalled game by replaying it through the engine."""
        if not isinstance(data, Mapping):
            raise OutcomeError(f"a stud deal is a JSON object, got {data!r}")
        proc = data.get("procedure", rules.dealing)
        deal = StudDeal.start(replace(rules, dealing=proc), data["seats"])
        hands = {int(k): list(parse_cards(v)) for k, v in data.get("hands", {}).items()}
        dealer = list(parse_cards(data.get("dealer", [])))
        dead = [(int(s), Card.parse(c)) for s, c in data.get("dead", [])]
        for s, c in dead:
            deal = replace(deal, dead=(*deal.dead, (s, c)))
        while True:
            exp = deal.expect()
            if exp.kind != "card":
                break
            src = dealer if exp.to == "dealer" else hands.get(exp.seat or 0, [])
            if not src:
                break
            deal = deal.deal(src.pop(0))
        if dealer or any(hands.values()):
            raise OutcomeError(
                "the journalled cards do not follow the dealing order (61/2004 art. 7)"
            )
        for c in parse_cards(data.get("exposed", [])):
            deal = deal.expose(c)
        for k, a in data.get("actions", {}).items():
            if a is not None:
                deal = deal.decide(int(k), a)
        if data.get("void") is not None:
            deal = deal.void(str(data["void"]))
        return deal


# -- strategy and simulation (used by math) ---------------------------------------------

STRATEGY = (
    "raise with a pair or better; fold below ace-king; with ace-king raise if (a) the "
    "croupier's card is 2 to Q and matches one of the player's cards, or (b) it is an A or K "
    "and the player holds a Q or J, or (c) it is lower than the player's fourth-highest card "
    "and the player holds a Q; else fold (after M. Shackleford's Caribbean Stud strategy)"
)
_PAIR_BASE = ONE_PAIR << _CAT_SHIFT


def raises(value: int, up_code: int) -> bool:
    """The simulation's decision for a hand of value ``value`` against the
    croupier's exposed card: see :data:`STRATEGY`."""
    if value >= _PAIR_BASE:
        return True
    mask = value & _M52
    if not (mask >> 48) or not (mask >> 44) & 15:  # no ace, or no king
        return False
    ranks = [r for r in range(12, -1, -1) if (mask >> (4 * r)) & 15]
    up = up_code >> 2
    if up <= 10 and up in ranks:
        return True
    if up >= 11 and (10 in ranks or 9 in ranks):
        return True
    return up < ranks[3] and ranks[2] == 10


_M64 = (1 << 64) - 1


def splitmix64(state: int) -> tuple[int, int]:
    """One step of SplitMix64 (Steele, Lea, Flood 2014): (next state, 64-bit output).
    Pure: the caller threads the state; the seed is the first state."""
    state = (state + 0x9E3779B97F4A7C15) & _M64
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _M64
    return state, z ^ (z >> 31)


@dataclass(frozen=True, slots=True)
class SimulationResult:
    rounds: int
    seed: int
    #: Sum of the player's net per unit of ante, and of its square.
    total: int
    total_sq: int
    raises: int
    #: net per unit of ante -> count
    counts: Mapping[int, int]

    @property
    def mean(self) -> Fraction:
        return Fraction(self.total, self.rounds)

    def ci95(self) -> tuple[float, float]:
        """95% interval of the mean net per ante (normal approximation; display only)."""
        n = self.rounds
        mean = self.total / n
        var = (self.total_sq - self.total * self.total / n) / (n - 1)
        half = 1.959964 * _math.sqrt(var / n)
        return mean - half, mean + half


def simulate(rules: StudPokerRules, rounds: int, seed: int) -> SimulationResult:
    """Play ``rounds`` one-place games: five cards to the place, five to the croupier
    (the last one exposed) from a deck shuffled by SplitMix64 from ``seed``; the
    place follows :data:`STRATEGY`. Returns the player's results per unit of ante
    (the house maximum ``max_payout`` depends on the stake and is not applied)."""
    deck = list(range(52))
    state = seed & _M64
    total = total_sq = n_raise = 0
    counts: dict[int, int] = {}
    raise_net = {cat: 1 + 2 * rules.raise_odds(cat) for cat in range(10)}
    hv = hand_value_codes
    for _ in range(rounds):
        # Partial Fisher-Yates for ten cards; each SplitMix64 output gives five
        # draws by mixed-radix digits (bias < 52*51*50*49*48 / 2**64 < 2e-11).
        for start in (0, 5):
            state, x = splitmix64(state)
            for i in range(start, start + 5):
                x, r = divmod(x, 52 - i)
                j = i + r
                deck[i], deck[j] = deck[j], deck[i]
        a, b, c, d, e, f, g, h, k, up = deck[:10]
        pv = hv(a, b, c, d, e)
        if not raises(pv, up):
            net = -1
        else:
            n_raise += 1
            dv = hv(f, g, h, k, up)
            if dv < QUALIFY:
                net = 1
            elif dv > pv:
                net = -3
            else:
                net = raise_net[pv >> _CAT_SHIFT]
        total += net
        total_sq += net * net
        counts[net] = counts.get(net, 0) + 1
    return SimulationResult(rounds, seed, total, total_sq, n_raise, counts)


def hand_counts() -> dict[str, int]:
    """Exact number of five-card hands of each jackpot category out of C(52, 5)."""
    c = _math.comb
    straights = 10
    return {
        "royal_flush": 4,
        "straight_flush": 4 * (straights - 1),
        "four_of_a_kind": 13 * 48,
        "full_house": 13 * c(4, 3) * 12 * c(4, 2),
        "flush": 4 * c(13, 5) - 4 * straights,
    }


DEFAULT_ROUNDS = 300_000
DEFAULT_SEED = 612004


# -- the game --------------------------------------------------------------------------

_BET_TYPES = (
    BetType("ante", "Aposta inicial (ante)", "61/2004 art. 5 1), art. 6 2), art. 9", "1:1"),
    BetType("raise", "Aposta adicional (raise, twice the ante)", "61/2004 art. 5 3), art. 6 5)-6), art. 9 5)",
            "1:1 to 100:1 by the player's hand"),
    BetType("jackpot", "Jackpot progressivo", "61/2004 art. 5 2), art. 6 3), art. 10",
            "fixed sums or a share of the pool"),
)  # fmt: skip

_SEAT_DERIVED = frozenset({"hand", "beats_dealer"})
_TOP_DERIVED = frozenset({"dealer_hand", "dealer_qualifies", "up_card"})


class StudPoker(Game[StudPokerRules, StudOutcome]):
    game_id = "stud-poker"
    result_device = "shoe"
    device_kinds = frozenset({"shoe", "board", "sign"})
    title = "Stud poker"
    regulation = "61/2004"
    rules_type = StudPokerRules

    def bet_types(self, rules: StudPokerRules) -> Sequence[BetType]:
        return _BET_TYPES if rules.jackpot_offered else _BET_TYPES[:2]

    def money_problems(self, rules: StudPokerRules, money: MoneyRules) -> list[str]:
        """The jackpot bet's fixed stake and the fixed sums announced on the table
        (61/2004 art. 10 1)-3)) and the house maximum (art. 9 5) (7)-(9)) must be
        whole numbers of the payable unit: the table takes and pays them as they are."""
        path = "pay_table.stud-poker."
        amounts = [(path + "max_payout", rules.max_payout)]
        if rules.jackpot_offered:
            amounts.append((path + "jackpot_stake", rules.jackpot_stake))
            amounts += [
                (f"{path}jackpot_{h}_fixed", rules.jackpot_params().fixed(h))
                for h in jp.JACKPOT_HANDS
            ]
        return unit_problems(amounts, money, "the table could not take or pay it exactly")

    # -- the deal
    def start_deal(
        self, rules: StudPokerRules, bets: Sequence[Bet], setup: Mapping[str, JSON] | None = None
    ) -> StudDeal:
        """Every place with a bet is dealt (art. 6)."""
        return StudDeal.start(rules, sorted({b.seat for b in bets}))

    def decide(self, rules: StudPokerRules, deal: Any, decision: Mapping[str, JSON]) -> StudDeal:
        """A place raises or folds (art. 6 5)-7))."""
        new: StudDeal = deal.decide(decision.get("seat"), decision.get("action"))
        return new

    def decision_bets(
        self, rules: StudPokerRules, deal_before: Any, seat: int, action: str, bets: Sequence[Bet]
    ) -> list[dict[str, JSON]]:
        """A raise is a bet of exactly twice the place's ante (art. 6 6))."""
        if action != "raise":
            return []
        ante = next(b for b in bets if b.seat == seat and b.bet_type == "ante")
        return [
            {
                "bet_id": f"{ante.bet_id}.raise",
                "seat": seat,
                "bet_type": "raise",
                "stake": 2 * ante.stake,
            }
        ]

    def jackpot_params(self, rules: StudPokerRules) -> jp.JackpotParams | None:
        """The progressive jackpot, if the table offers it (art. 10)."""
        return rules.jackpot_params() if rules.jackpot_offered else None

    def canonical_selection(self, rules: StudPokerRules, bet_type: str, selection: JSON) -> JSON:
        require(
            selection is None,
            f"{bet_type}: takes no selection (the seat is the bet's 'seat'), got {selection!r}",
        )
        return None

    # -- outcomes
    def parse_outcome(self, rules: StudPokerRules, raw: JSON) -> StudOutcome:
        """``{"dealer": [5 cards], "seats": {"1": {"cards": [5 cards], "action":
        "raise"|"fold"}, ...}, "jackpot": {"pool": N, ...}?}``; all cards different."""
        if not isinstance(raw, Mapping) or "dealer" not in raw or "seats" not in raw:
            raise OutcomeError(
                'stud poker outcome is {"dealer": [5 cards], "seats": {"1": {"cards": [...], '
                f'"action": "raise"}}}}, got {raw!r}'
            )
        unknown = set(raw) - {"dealer", "seats", "jackpot"} - _TOP_DERIVED
        if unknown:
            raise OutcomeError(
                f"unknown key(s) in stud poker outcome: {', '.join(sorted(unknown))}"
            )
        dealer = parse_cards(raw["dealer"])
        seats_raw = raw["seats"]
        if not isinstance(seats_raw, Mapping) or not seats_raw:
            raise OutcomeError(f"seats: a table of place -> hand, got {seats_raw!r}")
        hands = []
        for key, entry in seats_raw.items():
            try:
                seat = int(key)
            except (TypeError, ValueError):
                raise OutcomeError(f"seats: {key!r} is not a place number 1..7") from None
            if seat not in SEATS:
                raise OutcomeError(f"seats: place {seat} is not 1..7 (61/2004 art. 2 1))")
            if not isinstance(entry, Mapping) or not {"cards", "action"} <= set(entry):
                raise OutcomeError(f'seats.{key}: {{"cards": [...], "action": "raise"|"fold"}}')
            extra = set(entry) - {"cards", "action"} - _SEAT_DERIVED
            if extra:
                raise OutcomeError(f"seats.{key}: unknown key(s) {', '.join(sorted(extra))}")
            if entry["action"] not in ACTIONS:
                raise OutcomeError(f"seats.{key}.action: raise or fold, got {entry['action']!r}")
            hands.append(SeatHand(seat, parse_cards(entry["cards"]), entry["action"]))
        hands.sort(key=lambda h: h.seat)
        every = [*dealer, *(c for h in hands for c in h.cards)]
        if len(dealer) != 5 or any(len(h.cards) != 5 for h in hands):
            raise OutcomeError("every hand, the croupier's too, has five cards (61/2004 art. 7)")
        if len(set(every)) != len(every):
            dup = sorted({str(c) for c in every if every.count(c) > 1})
            raise OutcomeError(
                f"cards dealt twice from one deck (61/2004 art. 1 1)): {dup}",
                code="OUTCOME_DUPLICATE_CARD",
            )
        state = None
        if raw.get("jackpot") is not None:
            state = jp.JackpotState.from_json(raw["jackpot"], rules.jackpot_params())
        return StudOutcome(dealer, tuple(hands), state)

    def outcome_json(self, outcome: StudOutcome) -> JSON:
        dv = hand_value(outcome.dealer)
        out: dict[str, JSON] = {
            "dealer": cards_str(outcome.dealer),
            "dealer_hand": category_name(dv),
            "dealer_qualifies": qualifies(dv),
            "up_card": str(outcome.dealer[4]),
            "seats": {
                str(h.seat): {
                    "cards": cards_str(h.cards),
                    "action": h.action,
                    "hand": category_name(hand_value(h.cards)),
                    "beats_dealer": hand_value(h.cards) > dv,
                }
                for h in outcome.hands
            },
        }
        if outcome.jackpot is not None:
            out["jackpot"] = outcome.jackpot.to_json()
        return out

    def sample_outcomes(self, rules: StudPokerRules) -> list[StudOutcome]:
        """Games dealt from one deck in its fixed order, rotated (for contract tests)."""
        cards, out = deck(), []
        for k in range(8):
            c = cards[7 * k :] + cards[: 7 * k]
            hands = (SeatHand(1, c[5:10], "raise"), SeatHand(4, c[10:15], "fold"))
            out.append(StudOutcome(c[0:5], hands))
        return out

    # -- settlement
    def verdict(self, rules: StudPokerRules, outcome: StudOutcome, bet: Bet) -> Verdict:
        """What art. 6 7) and art. 9 say of an ``ante`` or ``raise`` bet (jackpot bets
        are settled by :mod:`.jackpot`, see :meth:`settle_with_jackpot`)."""
        if bet.bet_type not in ("ante", "raise"):
            raise BetError(f"{bet.bet_type} is not settled by the hand", code="BET_UNKNOWN_TYPE")
        dv = hand_value(outcome.dealer)
        h = next(x for x in outcome.hands if x.seat == bet.seat)
        pv = hand_value(h.cards)
        cat = category(pv)
        if h.action == "fold":
            return Verdict.lose("fold: the hand and the ante are lost (61/2004 art. 6 7))")
        if not qualifies(dv):
            if bet.bet_type == "ante":
                return Verdict.win(
                    1, reason="croupier below ace-king: ante 1:1 (61/2004 art. 9 2))"
                )
            return Verdict.push("croupier below ace-king: raise returned (61/2004 art. 9 2))")
        if dv > pv:
            return Verdict.lose(
                f"croupier's {category_name(dv)} beats the player's "
                f"{category_name(pv)} (61/2004 art. 8, art. 9 4))"
            )
        if bet.bet_type == "ante":
            return Verdict.win(1, reason="player beats the croupier: ante 1:1 (61/2004 art. 9 5))")
        odds = Fraction(rules.raise_odds(cat))
        reason = f"{category_name(pv)} pays {odds}:1 on the raise (61/2004 art. 9 5))"
        if cat in CAPPED and rules.max_payout and bet.stake * odds > rules.max_payout:
            odds = Fraction(rules.max_payout, bet.stake)
            reason += f", limited to the house maximum of {rules.max_payout} per game"
        return Verdict.win(odds, reason=reason)

    def settle(
        self, rules: StudPokerRules, outcome: StudOutcome, bets: Sequence[Bet], money: MoneyRules
    ) -> Settlement:
        state = outcome.jackpot or jp.initial_state(rules.jackpot_params())
        return self.settle_with_jackpot(rules, outcome, bets, money, state)[0]

    def settle_with_jackpot(
        self,
        rules: StudPokerRules,
        outcome: StudOutcome,
        bets: Sequence[Bet],
        money: MoneyRules,
        state: jp.JackpotState,
    ) -> tuple[Settlement, jp.JackpotState]:
        """Settle a game and run the jackpot from ``state``; returns the settlement
        (jackpot itemised in ``extras["jackpot"]``) and the state to persist."""
        _check_bets(rules, outcome, bets)
        results: list[BetResult] = []
        jackpot_bets = [b for b in bets if b.bet_type == "jackpot"]
        for bet in bets:
            if bet.bet_type != "jackpot":
                v = self.verdict(rules, outcome, bet)
                results.append(BetResult(bet, settle_amounts(bet.stake, v, money), v.reason))
        extras: dict[str, JSON] = {}
        dealt = [h.seat for h in outcome.hands]
        if jackpot_bets or state.carried:
            new = [jp.JackpotBet(b.seat, b.stake, b.bet_id) for b in jackpot_bets]
            playing, _still = jp.round_bets(state, new, dealt)
            eligible = {
                h.seat: category_name(hand_value(h.cards))
                for h in outcome.hands
                if h.action == "raise" or rules.jackpot_on_fold
            }
            jr = jp.settle_round(state, playing, eligible)
            own = {b.bet_id: b for b in jackpot_bets}
            for jb in playing:
                placed = own.get(jb.bet_id) if jb in new else None
                if placed is None:  # carried from a void game (art. 11 1), 4))
                    placed = Bet(jb.bet_id, jb.seat, "jackpot", None, jb.stake)
                results.append(_jackpot_result(placed, jr))
            extras["jackpot"] = jr.to_json()
            state = jr.state
        order = {id(b): i for i, b in enumerate(bets)}
        results.sort(key=lambda r: order.get(id(r.bet), len(order)))
        settlement = Settlement(
            self.game_id,
            self.outcome_json(replace(outcome, jackpot=None)),
            tuple(results),
            Totals.of(results),
            extras,
        )
        return settlement, state

    # -- math
    def math(self, rules: StudPokerRules, **options: Any) -> MathReport:
        unknown = set(options) - {"rounds", "seed"}
        if unknown:
            raise RulesError(
                f"stud poker is dealt from one deck (61/2004 art. 1 1)) and simulated: it takes "
                f"--rounds and --seed, not {', '.join(sorted(unknown))}",
                code="MATH_OPTION",
            )
        rounds = options.get("rounds") or DEFAULT_ROUNDS
        seed = options.get("seed")
        seed = DEFAULT_SEED if seed is None else seed
        if not isinstance(rounds, int) or rounds < 2:
            raise RulesError(f"--rounds must be at least 2, got {rounds!r}", code="MATH_OPTION")
        sim = simulate(rules, rounds, seed)
        lo, hi = sim.ci95()
        dist = tuple(
            sorted(
                ((Fraction(net), Fraction(n, rounds)) for net, n in sim.counts.items()),
                reverse=True,
            )
        )
        raise_rate = Fraction(sim.raises, rounds)
        lines = [
            MathLine(
                "ante",
                None,
                -sim.mean,
                dist,
                f"simulation, per unit of ante with the raise; 95% CI {-hi:.3%} .. {-lo:.3%}",
            ),
        ]
        details: dict[str, JSON] = {
            "rounds": rounds,
            "seed": seed,
            "prng": "SplitMix64, pure (firmware_host.games.stud_poker.splitmix64)",
            "strategy": STRATEGY,
            "ci95_house_edge_per_ante": [round(-hi, 6), round(-lo, 6)],
            "raise_rate": round(float(raise_rate), 6),  # display only
            "house_edge_per_total_bet": round(float(-sim.mean / (1 + 2 * raise_rate)), 6),
            "suit_tie_break": "no ties: suits decide equal ranks (61/2004 art. 4 1), art. 8)",
            "max_payout": "not applied in the simulation (it depends on the stake)",
        }
        if rules.jackpot_offered:
            lines.append(self._jackpot_line(rules))
        return MathReport(self.game_id, self.rules_json(rules), "simulation", tuple(lines), details)

    def _jackpot_line(self, rules: StudPokerRules) -> MathLine:
        params = rules.jackpot_params()
        total = _math.comb(52, 5)
        counts = hand_counts()
        probs = {h: Fraction(n, total) for h, n in counts.items()}
        pool = params.seed
        outcomes: list[tuple[Fraction, Fraction]] = []
        for h in jp.JACKPOT_HANDS:
            prize = jp.prize_for(params, h, pool)
            outcomes.append((Fraction(prize - params.stake, params.stake), probs[h]))
        outcomes.append((Fraction(-1), 1 - sum(probs.values(), Fraction(0))))
        ret = jp.fixed_return(params, probs, pool)
        edge = 1 - ret / params.stake
        slope = probs["royal_flush"] + probs["straight_flush"] / 10
        per_million = slope * 1_000_000 / params.stake
        return MathLine(
            "jackpot",
            None,
            edge,
            tuple(sorted(outcomes, reverse=True)),
            f"exact at the pool = seed ({pool}); each further 1,000,000 in the pool (above the fixed "
            f"sums) returns {per_million.numerator / per_million.denominator:.4f} more per unit "
            "of stake (display)",
        )


def _check_bets(rules: StudPokerRules, outcome: StudOutcome, bets: Sequence[Bet]) -> None:
    """Art. 6: one ante per dealt place, a raise exactly twice it iff the place
    raised, a jackpot bet only with an ante (art. 10 1))."""
    hands = {h.seat: h for h in outcome.hands}
    antes: dict[int, Bet] = {}
    raises_: dict[int, Bet] = {}
    jackpots: dict[int, Bet] = {}
    for bet in bets:
        if bet.seat not in hands:
            raise BetError(
                f"bet {bet.bet_id}: place {bet.seat} was not dealt a hand",
                code="BET_SEAT_NOT_DEALT",
            )
        book = {"ante": antes, "raise": raises_, "jackpot": jackpots}[bet.bet_type]
        if bet.seat in book:
            raise BetError(
                f"bet {bet.bet_id}: place {bet.seat} already has a {bet.bet_type} "
                "(one hand per player, 61/2004 art. 6 1))",
                code="BET_DUPLICATE",
            )
        book[bet.seat] = bet
    for seat, h in hands.items():
        ante = antes.get(seat)
        if ante is None:
            raise BetError(
                f"place {seat} was dealt without an ante (61/2004 art. 6 2), art. 11 3))",
                code="ANTE_REQUIRED",
            )
        r = raises_.get(seat)
        if h.action == "raise":
            if r is None:
                raise BetError(f"place {seat} raised but has no raise bet", code="RAISE_MISSING")
            if r.stake != 2 * ante.stake:
                raise BetError(
                    f"place {seat}: the raise must be exactly twice the ante "
                    f"({2 * ante.stake}), got {r.stake} (61/2004 art. 6 6))",
                    code="RAISE_NOT_TWICE_ANTE",
                )
        elif r is not None:
            raise BetError(
                f"place {seat} folded but has a raise bet (61/2004 art. 6 7))",
                code="RAISE_AFTER_FOLD",
            )
    if jackpots and not rules.jackpot_offered:
        raise BetNotOffered("this table does not run the progressive jackpot")


def _jackpot_result(bet: Bet, jr: jp.JackpotRound) -> BetResult:
    """A jackpot bet is collected; a prize is what the player receives for it
    (``payout = prize - stake`` on top of the stake handed back, net the same)."""
    prize = sum(p.prize for p in jr.payments if p.seat == bet.seat)
    if prize:
        hand = next(p.hand for p in jr.payments if p.seat == bet.seat)
        a = Amounts("win", prize - bet.stake, 0, prize - bet.stake, Fraction(0))
        return BetResult(
            bet, a, f"jackpot: {hand.replace('_', ' ')} receives {prize} (61/2004 art. 10)"
        )
    return BetResult(
        bet,
        Amounts("lose", 0, 0, -bet.stake, Fraction(0)),
        "no jackpot hand; the stake feeds the pool (61/2004 art. 10)",
    )


GAME = StudPoker()
