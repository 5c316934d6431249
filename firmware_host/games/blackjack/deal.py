"""The blackjack round as a pure, immutable state machine (:class:`BlackjackDeal`, a
:class:`~firmware_host.games.base.Deal`) fed the cards in the order they leave the shoe
and the players' decisions in the order they are announced.

At every step :meth:`BlackjackDeal.expect` says what is due: a card (to a seat's hand,
to the dealer, or to the discard as a burn card), a decision (from which seat and hand,
with the actions the rules allow, :func:`refusal`), or nothing (complete). A card dealt
against the procedure raises :class:`~firmware_host.games.errors.Misdeal`; an illegal
decision raises :class:`~firmware_host.games.errors.RoundStateError`; both with stable
codes. :func:`replay` feeds a recorded round (its journal and outcome form) through it.

Procedures (``rules.blackjack.procedure``, art. 5 2)):

- ``shoe`` (first procedure with a shoe or shuffler, art. 5 2) 1) (1)) and
  ``face_up`` (second procedure, art. 5 2) 2)): each seat receives two cards, the
  dealer one; the dealer's second card comes after every seat has played.
- ``metal_box`` (art. 5 2) 1) (2)): one deck (art. 1 3), art. 2 2) 3)); the dealer
  receives his second card (the hole card) right after the seats' second cards.

The dealer never looks at his hole card before the players play: art. 12 2) checks
the dealer's blackjack "after all players have taken or declined cards", and then
the dealer collects every bet of the players without a blackjack (doubles and
splits included, save the art. 10 7) option).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from ..base import JSON, Deal, Expect
from ..cards import Card, cards_str, parse_cards
from ..errors import Misdeal, OutcomeError, RoundStateError, RulesError
from .rules import ACTIONS, PLAY_ACTIONS, BlackjackRules, hand_total, is_natural, is_special


@dataclass(frozen=True, slots=True)
class Hand:
    """One hand of a place. A split makes two hands of one card each."""

    cards: tuple[Card, ...] = ()
    #: Formed by a split: never a blackjack (art. 10 6)).
    split: bool = False
    #: A split ace: one card only (art. 16 3), art. 6 4) (3)).
    aces: bool = False
    doubled: bool = False
    status: str = "open"
    #: The next card of the shoe belongs to this hand (after hit, double, split).
    need_card: bool = False

    @property
    def total(self) -> int:
        return hand_total(self.cards)[0]

    @property
    def blackjack(self) -> bool:
        return not self.split and is_natural(self.cards)

    def to_json(self) -> dict[str, JSON]:
        return {
            "cards": cards_str(self.cards),
            "total": self.total,
            "status": self.status,
            "blackjack": self.blackjack,
            "doubled": self.doubled,
            "split": self.split,
        }


@dataclass(frozen=True, slots=True)
class Insurance:
    """An insurance bet taken by a place (art. 12): its amount and, when several
    bettors share the place (art. 20), whose main bet it insures."""

    amount: int
    bet_id: str | None = None


@dataclass(frozen=True, slots=True)
class Place:
    """A seat with a main bet: its hands, and what its side bets look at."""

    seat: int
    hands: tuple[Hand, ...] = (Hand(),)
    #: Every card this place received, in order (sevens, over/under 13 look here).
    dealt: tuple[Card, ...] = ()
    #: Pairs formed so far: the first two cards, then each split hand's first two (art. 13 1)).
    pairs: int = 0
    #: The first two cards were split (for three sevens, art. 13 2) (2)).
    opening_split: bool = False
    #: The place declined a split it could make (no later resplit, art. 16 5)).
    declined_split: bool = False
    #: The place made a decision other than insurance (insurance closes, art. 12 1)).
    acted: bool = False
    insurance: tuple[Insurance, ...] = ()

    def to_json(self) -> dict[str, JSON]:
        out: dict[str, JSON] = {
            "seat": self.seat,
            "hands": [h.to_json() for h in self.hands],
            "pairs": self.pairs,
        }
        if self.insurance:
            out["insurance"] = [
                {"amount": i.amount, **({"bet_id": i.bet_id} if i.bet_id is not None else {})}
                for i in self.insurance
            ]
        return out


@dataclass(frozen=True, slots=True)
class Decision:
    """One announced decision (art. 6 3), 5)) as recorded and replayed."""

    seat: int
    hand: int
    action: str
    amount: int | None = None
    bet_id: str | None = None

    def to_json(self) -> dict[str, JSON]:
        out: dict[str, JSON] = {"seat": self.seat, "hand": self.hand, "action": self.action}
        if self.amount is not None:
            out["amount"] = self.amount
        if self.bet_id is not None:
            out["bet_id"] = self.bet_id
        return out


def refusal(
    rules: BlackjackRules,
    up: Card,
    h: Hand,
    hands_in_place: int,
    acted: bool,
    declined_split: bool,
    action: str,
) -> tuple[str, str] | None:
    """Why ``action`` is not allowed on hand ``h`` (or None): (error code, message).

    ``up`` is the dealer's face-up card, ``hands_in_place`` how many hands the place
    holds, ``acted`` whether the place made a decision (other than insurance) and
    ``declined_split`` whether it declined a split it could make. Pure: the deal
    and the simulator both ask it.
    """
    cards = h.cards
    total = hand_total(cards)[0]
    bj = h.blackjack
    if action == "stand":
        return None
    if action == "hit":
        if h.aces:
            return (
                "HIT_SPLIT_ACES",
                "a split ace receives one card only (56/2004 art. 16 3), art. 6 4) (3))",
            )
        if total >= 21:
            return (
                "HIT_ON_21",
                f"no card on a blackjack or 21 (56/2004 art. 6 4) (1)); total {total}",
            )
        return None
    if action == "double":
        if len(cards) != 2 or h.aces:
            return "DOUBLE_NOT_TWO_CARDS", (
                "a double is on the first two cards of a hand or of a split pair, "
                "not on a split ace (56/2004 art. 17 1), art. 16 3))"
            )
        if total >= 21:
            return "DOUBLE_ON_21", "no card on a blackjack or 21 (56/2004 art. 6 4) (1))"
        if rules.double == "eleven" and total != 11:
            return "DOUBLE_ELEVEN_ONLY", (
                f"this table doubles only on a first two cards totalling 11 "
                f"(56/2004 art. 17 2)); total {total}"
            )
        return None
    if action == "split":
        if len(cards) != 2:
            return (
                "SPLIT_NOT_TWO_CARDS",
                "only the first two cards of a hand split (56/2004 art. 16 1))",
            )
        if cards[0].rank != cards[1].rank:
            return "SPLIT_NOT_PAIR", (
                f"{cards[0]} and {cards[1]} are not a pair: a pair is two cards of the same "
                "rank (56/2004 art. 16 1), art. 13 1) (1))"
            )
        if bj or total >= 21:  # pragma: no cover - a pair never makes 21
            return "SPLIT_NOT_PAIR", "no split on 21"
        if hands_in_place >= rules.max_split_hands:
            return "SPLIT_MAX_HANDS", (
                f"a place holds at most {rules.max_split_hands} hands (56/2004 art. 16 1))"
            )
        if h.split:
            if cards[0].rank == 1:
                if not rules.resplit_aces:
                    return "RESPLIT_ACES_NOT_ALLOWED", (
                        "this table splits aces only once (56/2004 art. 16 3), art. 21)"
                    )
            else:
                if not rules.resplit:
                    return (
                        "RESPLIT_NOT_ALLOWED",
                        "this table does not resplit (56/2004 art. 16 5), art. 21)",
                    )
                if declined_split:
                    return "SPLIT_DECLINED_EARLIER", (
                        "the player already declined a split this round (56/2004 art. 16 5))"
                    )
        return None
    if action == "surrender":
        if up.rank == 1:
            return (
                "SURRENDER_AGAINST_ACE",
                "no surrender when the dealer shows an ace (56/2004 art. 18 1))",
            )
        if h.split or len(cards) != 2 or acted:
            return "SURRENDER_TOO_LATE", (
                "surrender is decided on the first two cards, before any other card "
                "(56/2004 art. 18 2))"
            )
        if bj:
            return "SURRENDER_BLACKJACK", "a blackjack takes no card and does not surrender"
        return None
    if action == "even_money":
        if not bj:
            return "EVEN_MONEY_NOT_BLACKJACK", "even money is for a blackjack (56/2004 art. 10 3))"
        if not (up.rank == 1 or up.rank >= 10):
            return "EVEN_MONEY_DEALER_CARD", (
                f"even money only against an ace, ten or face (56/2004 art. 10 3)); dealer shows {up}"
            )
        return None
    if action == "five_card":
        if not rules.five_card:
            return (
                "FIVE_CARD_NOT_OFFERED",
                "this table does not pay five cards (56/2004 art. 19, art. 21)",
            )
        if len(cards) != 5 or total > 21:
            return (
                "FIVE_CARD_NOT_FIVE",
                f"the hand holds {len(cards)} cards, not five (56/2004 art. 19 1))",
            )
        if up.rank == 1:
            return (
                "FIVE_CARD_AGAINST_ACE",
                "no five-card payment when the dealer shows an ace (56/2004 art. 19 2))",
            )
        return None
    if action == "insurance":
        if up.rank != 1:
            return (
                "INSURANCE_NOT_ACE",
                f"insurance only when the dealer shows an ace (56/2004 art. 12 1)); {up}",
            )
        if acted:
            return "INSURANCE_TOO_LATE", "insurance is taken before the place's first decision"
        return None
    return "ACTION_UNKNOWN", f"unknown action {action!r}; actions: {', '.join(ACTIONS)}"


def auto_status(
    rules: BlackjackRules, up: Card, h: Hand, hands_in_place: int, acted: bool, declined_split: bool
) -> str | None:
    """The status a hand takes without a decision (bust, special prize, doubled, 21...), or None
    when its player must decide."""
    total = hand_total(h.cards)[0]
    if total > 21:
        return "bust"  # art. 6 2), art. 7 2)
    if rules.special_prize and is_special(h.cards):
        return "special"  # art. 15: paid at once
    if h.doubled:
        return "stood"  # art. 17: one card only
    for a in PLAY_ACTIONS:
        if refusal(rules, up, h, hands_in_place, acted, declined_split, a) is None:
            return None
    return "stood"  # 21, a blackjack with no even money to offer, a split ace


_COMPLETE = Expect("complete")
_BURN = Expect("card", "burn")
_DEALER = Expect("card", "dealer")


# -- the deal --------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class BlackjackDeal(Deal):
    """The state of one round. Every method returns a new state; none mutates."""

    rules: BlackjackRules
    places: tuple[Place, ...]
    dealer: tuple[Card, ...] = ()
    #: Every card of the round in the order it left the shoe, burn cards included.
    cards: tuple[Card, ...] = ()
    decisions: tuple[Decision, ...] = ()
    #: Burn cards due at the start of the round.
    burn_start: int = 0
    #: Cards dealt so far in the initial deal (burn cards included).
    initial_dealt: int = 0
    dealer_burnt: bool = False
    phase: str = "initial"  # initial | play | dealer | complete

    # -- construction --------------------------------------------------------------
    @staticmethod
    def start(
        rules: BlackjackRules, seats: Iterable[int], burn: int | None = None
    ) -> BlackjackDeal:
        """A new round for the seats with a main bet (art. 5 1)).

        Seats are served in increasing number (the seat served first has the
        lowest number). ``burn`` is the number of burn cards expected before the
        first card: by default one when ``rules.burn`` burns at each round
        (art. 4 2)), else none; the round engine passes the art. 4 1) count for the
        first round of a shoe.
        """
        seat_list = list(seats)
        if not seat_list:
            raise RoundStateError(
                "a round needs at least one seat with a bet", code="SEATS_INVALID"
            )
        for s in seat_list:
            if isinstance(s, bool) or not isinstance(s, int) or not 0 <= s <= 99:
                raise RoundStateError(
                    f"a seat is an integer 0..99, got {s!r}", code="SEATS_INVALID"
                )
        if len(set(seat_list)) != len(seat_list):
            raise RoundStateError(f"seats repeated in {seat_list}", code="SEATS_INVALID")
        if burn is None:
            burn = 0 if rules.burn == "none" else 1
        if isinstance(burn, bool) or not isinstance(burn, int) or not 0 <= burn <= 12:
            raise RoundStateError(f"burn must be 0..12 cards, got {burn!r}", code="BURN_INVALID")
        if burn and rules.procedure == "metal_box":
            raise RoundStateError(
                "no burn card inside a metal-box round (56/2004 art. 4 2))", code="BURN_INVALID"
            )
        places = tuple(Place(s) for s in sorted(seat_list))
        return BlackjackDeal(rules, places, burn_start=burn)

    @property
    def seats(self) -> tuple[int, ...]:
        return tuple(p.seat for p in self.places)

    @property
    def up_card(self) -> Card | None:
        """The dealer's first (face-up) card."""
        return self.dealer[0] if self.dealer else None

    @property
    def dealer_blackjack(self) -> bool:
        return is_natural(self.dealer)

    def place(self, seat: int) -> Place:
        for p in self.places:
            if p.seat == seat:
                return p
        raise RoundStateError(f"seat {seat} has no bet in this round", code="SEAT_NOT_IN_ROUND")

    # -- what is due --------------------------------------------------------------
    def _initial_target(self) -> Expect | None:
        """Art. 5 1), 2): one card at a time from the left, the dealer last in each pass."""
        i = self.initial_dealt
        if i < self.burn_start:
            return _BURN
        i -= self.burn_start
        n = len(self.places)
        if i < n:
            return Expect("card", "player", self.places[i].seat, 0)
        if i == n:
            return _DEALER
        i -= n + 1
        if i < n:
            return Expect("card", "player", self.places[i].seat, 0)
        if i == n and self.rules.procedure == "metal_box":
            return _DEALER
        return None

    def _current(self) -> tuple[int, int] | None:
        for pi, p in enumerate(self.places):
            for hi, h in enumerate(p.hands):
                if h.status == "open":
                    return pi, hi
        return None

    def _live_hands(self) -> bool:
        """A hand still waiting for the dealer's total: stood, not a blackjack."""
        return any(h.status == "stood" and not h.blackjack for p in self.places for h in p.hands)

    def _dealer_target(self) -> Expect | None:
        if len(self.dealer) < 2:
            if self.rules.burn == "round_and_dealer" and not self.dealer_burnt:
                return _BURN  # art. 4 2)
            return _DEALER  # art. 5 2) 1) (1), 2) (2); art. 7 1)
        if self.dealer_blackjack:
            return None
        if hand_total(self.dealer)[0] >= 17:
            return None  # art. 6 1): stands on 17 or more
        # Art. 6 1): "A banca é obrigada a tomar cartas quando o total dos seus pontos
        # for 16 ou inferior" -- with no exception, even when no hand is left to beat
        # (every one busted, surrendered or paid): no bet settles differently, but a
        # dealer who follows the text must not be refused.
        return _DEALER

    def expect(self) -> Expect:
        """What the round needs next."""
        if self.phase == "initial":
            return self._initial_target() or _COMPLETE  # pragma: no branch
        if self.phase == "play":
            cur = self._current()
            assert cur is not None
            pi, hi = cur
            p = self.places[pi]
            h = p.hands[hi]
            if h.need_card:
                return Expect("card", "player", p.seat, hi)
            return Expect("decision", None, p.seat, hi, self._allowed(pi, hi))
        if self.phase == "dealer":
            return self._dealer_target() or _COMPLETE  # pragma: no branch
        return _COMPLETE

    @property
    def complete(self) -> bool:
        return self.phase == "complete"

    @property
    def decided(self) -> bool:
        """Every bet's result is known: the round is complete, or all that remains is
        the dealer's draw to 17 while no hand is left to beat. Art. 6 1) obliges that
        draw and the live round waits for it (:meth:`expect`), but it changes no bet:
        an outcome recorded without it (before issue 12, or by hand) still settles."""
        return self.complete or (
            self.phase == "dealer" and len(self.dealer) >= 2 and not self._live_hands()
        )

    # -- decisions ---------------------------------------------------------------
    def _refusal(
        self, pi: int, hi: int, action: str, amount: int | None = None, bet_id: str | None = None
    ) -> tuple[str, str] | None:
        """Why ``action`` is not allowed on hand ``hi`` of place ``pi`` now (or None)."""
        p = self.places[pi]
        why = refusal(
            self.rules, self.dealer[0], p.hands[hi], len(p.hands), p.acted, p.declined_split, action
        )
        if why is not None or action != "insurance":
            return why
        if amount is not None and (
            isinstance(amount, bool) or not isinstance(amount, int) or amount <= 0
        ):
            return (
                "INSURANCE_AMOUNT",
                f"insurance amount must be a positive integer, got {amount!r}",
            )
        if any(i.bet_id == bet_id for i in p.insurance):
            return "INSURANCE_ALREADY", "this bet is already insured"
        return None

    def _allowed(self, pi: int, hi: int) -> tuple[str, ...]:
        return tuple(a for a in ACTIONS if self._refusal(pi, hi, a) is None)

    def can(self, seat: int, action: str) -> bool:
        e = self.expect()
        return e.kind == "decision" and e.seat == seat and action in e.allowed

    def decide(
        self,
        seat: int,
        action: str,
        *,
        hand: int | None = None,
        amount: int | None = None,
        bet_id: str | None = None,
    ) -> BlackjackDeal:
        """Apply a decision of ``seat`` (the place due to decide, art. 6 3))."""
        e = self.expect()
        if e.kind != "decision":
            what = "the round is complete" if e.kind == "complete" else f"a card to {e.to} is due"
            raise RoundStateError(f"no decision is due: {what}", code="DECISION_NOT_DUE")
        if seat != e.seat or (hand is not None and hand != e.hand):
            raise RoundStateError(
                f"seat {e.seat} hand {e.hand} decides now, not seat {seat} hand {hand} "
                "(56/2004 art. 6 3))",
                code="NOT_YOUR_TURN",
            )
        if action == "insurance":
            if amount is None:
                raise RoundStateError("insurance needs an amount", code="INSURANCE_AMOUNT")
        elif amount is not None or bet_id is not None:
            raise RoundStateError(f"{action} takes no amount or bet_id", code="DECISION_MALFORMED")
        if bet_id is not None and (not isinstance(bet_id, str) or not bet_id or len(bet_id) > 64):
            raise RoundStateError(
                f"bet_id must be a short string, got {bet_id!r}", code="DECISION_MALFORMED"
            )
        cur = self._current()
        assert cur is not None
        pi, hi = cur
        why = self._refusal(pi, hi, action, amount, bet_id)
        if why is not None:
            raise RoundStateError(why[1], code=why[0])
        p = self.places[pi]
        h = p.hands[hi]
        record = Decision(p.seat, hi, action, amount, bet_id)
        if action == "insurance":
            assert amount is not None
            p = dataclasses.replace(p, insurance=(*p.insurance, Insurance(amount, bet_id)))
            return self._with_place(pi, p, record)
        declined = p.declined_split or (
            action != "split" and self._refusal(pi, hi, "split") is None
        )
        p = dataclasses.replace(p, acted=True, declined_split=declined)
        if action == "split":
            c0, c1 = h.cards
            aces = c0.rank == 1
            new = (
                Hand((c0,), split=True, aces=aces, need_card=True),
                Hand((c1,), split=True, aces=aces, need_card=True),
            )
            p = dataclasses.replace(
                p,
                hands=(*p.hands[:hi], *new, *p.hands[hi + 1 :]),
                opening_split=p.opening_split or not h.split,
            )
            return self._with_place(pi, p, record)
        if action == "hit":
            h = dataclasses.replace(h, need_card=True)
        elif action == "double":
            h = dataclasses.replace(h, doubled=True, need_card=True)
        elif action == "stand":
            h = dataclasses.replace(h, status="stood")
        else:  # surrender, even_money, five_card end the hand at once
            h = dataclasses.replace(h, status={"surrender": "surrendered"}.get(action, action))
        p = dataclasses.replace(p, hands=(*p.hands[:hi], h, *p.hands[hi + 1 :]))
        return self._with_place(pi, p, record)

    def _with_place(self, pi: int, p: Place, record: Decision) -> BlackjackDeal:
        places = (*self.places[:pi], p, *self.places[pi + 1 :])
        return dataclasses.replace(
            self, places=places, decisions=(*self.decisions, record)
        )._advance()

    # -- cards --------------------------------------------------------------------
    def deal(self, card: Card | str) -> BlackjackDeal:
        """The next card out of the shoe."""
        if isinstance(card, str):
            card = Card.parse(card)
        if not isinstance(card, Card):
            raise Misdeal(f"not a card: {card!r}", code="CARD_INVALID")
        e = self.expect()
        if e.kind == "complete":
            if len(self.dealer) >= 2 and hand_total(self.dealer)[0] >= 17:
                raise Misdeal(
                    f"the dealer stands on {hand_total(self.dealer)[0]}: {card} is invalid "
                    "and is withdrawn (56/2004 art. 6 1))",
                    code="MISDEAL_DEALER_STANDS",
                )
            raise Misdeal(
                f"the round is complete; {card} is not part of it", code="MISDEAL_ROUND_COMPLETE"
            )
        if e.kind == "decision":
            raise Misdeal(
                f"seat {e.seat} hand {e.hand} must decide first ({', '.join(e.allowed)}); "
                f"{card} dealt out of turn (56/2004 art. 5 1) 2), art. 6 3))",
                code="MISDEAL_DECISION_DUE",
            )
        if sum(1 for c in self.cards if c == card) >= self.rules.decks:
            raise Misdeal(
                f"{card} seen more than {self.rules.decks} time(s) in a {self.rules.decks}-deck "
                "round: misread or foreign card",
                code="MISDEAL_CARD_COUNT",
            )
        new = dataclasses.replace(self, cards=(*self.cards, card))
        if self.phase == "initial":
            new = dataclasses.replace(new, initial_dealt=self.initial_dealt + 1)
        if e.to == "burn":
            if self.phase == "dealer":
                new = dataclasses.replace(new, dealer_burnt=True)
            return new._advance()
        if e.to == "dealer":
            return dataclasses.replace(new, dealer=(*self.dealer, card))._advance()
        assert e.seat is not None and e.hand is not None
        pi = self.seats.index(e.seat)
        return new._give(pi, e.hand, card)._advance()

    def _give(self, pi: int, hi: int, card: Card) -> BlackjackDeal:
        p = self.places[pi]
        h = p.hands[hi]
        cards = (*h.cards, card)
        pairs = p.pairs + (1 if len(cards) == 2 and cards[0].rank == cards[1].rank else 0)
        h = dataclasses.replace(h, cards=cards, need_card=False)
        p = dataclasses.replace(
            p, hands=(*p.hands[:hi], h, *p.hands[hi + 1 :]), dealt=(*p.dealt, card), pairs=pairs
        )
        return dataclasses.replace(self, places=(*self.places[:pi], p, *self.places[pi + 1 :]))

    # -- automatic steps -------------------------------------------------------------
    def _auto_status(self, pi: int, hi: int) -> str | None:
        p = self.places[pi]
        return auto_status(
            self.rules, self.dealer[0], p.hands[hi], len(p.hands), p.acted, p.declined_split
        )

    def _advance(self) -> BlackjackDeal:
        d = self
        if d.phase == "initial":
            if d._initial_target() is not None:
                return d
            d = dataclasses.replace(d, phase="play")
        if d.phase == "play":
            while True:
                cur = d._current()
                if cur is None:
                    d = dataclasses.replace(d, phase="dealer")
                    break
                pi, hi = cur
                h = d.places[pi].hands[hi]
                if h.need_card:
                    return d
                status = d._auto_status(pi, hi)
                if status is None:
                    return d
                p = d.places[pi]
                h = dataclasses.replace(h, status=status)
                p = dataclasses.replace(p, hands=(*p.hands[:hi], h, *p.hands[hi + 1 :]))
                d = dataclasses.replace(d, places=(*d.places[:pi], p, *d.places[pi + 1 :]))
        if d.phase == "dealer" and d._dealer_target() is None:
            d = dataclasses.replace(d, phase="complete")
        return d

    # -- results and persistence -------------------------------------------------------
    def outcome(self) -> BlackjackDeal:
        """The finished round (what :meth:`Blackjack.settle` takes): complete, or
        decided (:attr:`decided`)."""
        if not self.decided:
            raise RoundStateError(
                f"the round is not complete: {self.expect().to_json()}", code="ROUND_INCOMPLETE"
            )
        return self

    def to_json(self) -> dict[str, JSON]:
        """The round as its inputs (seats, cards, decisions): replayed by :meth:`from_json`."""
        out: dict[str, JSON] = {
            "seats": list(self.seats),
            "cards": cards_str(self.cards),
            "decisions": [d.to_json() for d in self.decisions],
        }
        default_burn = 0 if self.rules.burn == "none" else 1
        if self.burn_start != default_burn:
            out["burn"] = self.burn_start
        return out

    @staticmethod
    def from_json(rules: BlackjackRules, data: JSON) -> BlackjackDeal:
        """Rebuild a round (complete or not) by replaying its inputs under ``rules``."""
        return replay(rules, data, require_complete=False)

    def summary_json(self) -> dict[str, JSON]:
        """The derived state: every place's hands and the dealer's hand."""
        return {
            "places": [p.to_json() for p in self.places],
            "dealer": {
                "cards": cards_str(self.dealer),
                "total": hand_total(self.dealer)[0] if self.dealer else 0,
                "blackjack": self.dealer_blackjack,
            },
        }


# -- replay ------------------------------------------------------------------------

_ROUND_KEYS = {"seats", "cards", "decisions", "burn"}
_DERIVED_KEYS = {"places", "dealer"}
_DECISION_KEYS = {"seat", "hand", "action", "amount", "bet_id"}


def _parse_decision(raw: JSON, i: int) -> Decision:
    if not isinstance(raw, Mapping):
        raise OutcomeError(
            f"decision #{i}: expected an object, got {raw!r}", code="OUTCOME_MALFORMED"
        )
    unknown = set(raw) - _DECISION_KEYS
    if unknown:
        raise OutcomeError(
            f"decision #{i}: unknown field(s) {sorted(unknown)}; fields: {sorted(_DECISION_KEYS)}",
            code="OUTCOME_MALFORMED",
        )
    seat, action = raw.get("seat"), raw.get("action")
    hand = raw.get("hand", -1)
    if isinstance(seat, bool) or not isinstance(seat, int):
        raise OutcomeError(
            f"decision #{i}: seat must be an integer, got {seat!r}", code="OUTCOME_MALFORMED"
        )
    if isinstance(hand, bool) or not isinstance(hand, int):
        raise OutcomeError(
            f"decision #{i}: hand must be an integer, got {hand!r}", code="OUTCOME_MALFORMED"
        )
    if not isinstance(action, str):
        raise OutcomeError(
            f"decision #{i}: action must be a string, got {action!r}", code="OUTCOME_MALFORMED"
        )
    return Decision(seat, hand, action, raw.get("amount"), raw.get("bet_id"))


def replay(rules: BlackjackRules, data: JSON, *, require_complete: bool = True) -> BlackjackDeal:
    """Feed a recorded round (``{"seats", "cards", "decisions"}``) through the machine.

    The machine says at each step whether a card or a decision is due, so the two
    lists are merged without ambiguity. Raises :class:`OutcomeError` (keeping the
    machine's code) on a card or decision the rules refuse, on leftovers, or, with
    ``require_complete``, when the round stops before every bet is decided (a round
    may stop before the dealer's draws that no hand is left to beat: they change
    nothing, and rounds recorded before issue 12 stop there).
    """
    if not isinstance(data, Mapping):
        raise OutcomeError(
            'blackjack outcome must be {"seats": [...], "cards": [...], "decisions": [...]}',
            code="OUTCOME_MALFORMED",
        )
    unknown = set(data) - _ROUND_KEYS - _DERIVED_KEYS
    if unknown:
        raise OutcomeError(
            f"unknown outcome field(s) {sorted(unknown)}; fields: {sorted(_ROUND_KEYS | _DERIVED_KEYS)}",
            code="OUTCOME_MALFORMED",
        )
    for key in ("seats", "cards"):
        if key not in data:
            raise OutcomeError(f"outcome is missing {key!r}", code="OUTCOME_MISSING_FIELD")
    seats = data["seats"]
    if not isinstance(seats, list):
        raise OutcomeError(
            f"seats must be a list of integers, got {seats!r}", code="OUTCOME_MALFORMED"
        )
    raw_cards = data["cards"]
    if not isinstance(raw_cards, (list, str)):
        raise OutcomeError(
            f"cards must be a list such as ['AS', 'TD'], got {raw_cards!r}",
            code="OUTCOME_MALFORMED",
        )
    cards = parse_cards(raw_cards)
    raw_decisions = data.get("decisions", [])
    if not isinstance(raw_decisions, list):
        raise OutcomeError(
            f"decisions must be a list, got {raw_decisions!r}", code="OUTCOME_MALFORMED"
        )
    decisions = [_parse_decision(d, i) for i, d in enumerate(raw_decisions)]
    try:
        deal = BlackjackDeal.start(rules, seats, data.get("burn"))
    except RoundStateError as exc:
        raise OutcomeError(exc.message, code=exc.code) from exc
    ci = di = 0
    while True:
        e = deal.expect()
        if e.kind == "complete":
            break
        try:
            if e.kind == "card":
                if ci == len(cards):
                    break
                deal = deal.deal(cards[ci])
                ci += 1
            else:
                if di == len(decisions):
                    break
                d = decisions[di]
                deal = deal.decide(
                    d.seat,
                    d.action,
                    hand=None if d.hand < 0 else d.hand,
                    amount=d.amount,
                    bet_id=d.bet_id,
                )
                di += 1
        except RulesError as exc:
            where = f"card #{ci} ({cards[ci]})" if e.kind == "card" else f"decision #{di}"
            raise OutcomeError(f"{where}: {exc.message}", code=exc.code) from exc
    if ci < len(cards):
        try:
            deal.deal(cards[ci])
        except RulesError as exc:
            raise OutcomeError(f"card #{ci} ({cards[ci]}): {exc.message}", code=exc.code) from exc
        raise OutcomeError(  # pragma: no cover - deal() always refuses here
            f"card #{ci} left over", code="OUTCOME_EXTRA_CARDS"
        )
    if di < len(decisions):
        raise OutcomeError(
            f"decision #{di} ({decisions[di].to_json()}) left over: {deal.expect().to_json()} is due",
            code="OUTCOME_EXTRA_DECISIONS",
        )
    if require_complete and not deal.decided:
        raise OutcomeError(
            f"the round stops before it is complete: {deal.expect().to_json()} is due",
            code="ROUND_INCOMPLETE",
        )
    summary = deal.summary_json()
    for key in _DERIVED_KEYS & set(data):
        if data[key] != summary[key]:
            raise OutcomeError(
                f"outcome {key!r} does not match the replay of its cards and decisions",
                code="OUTCOME_MISMATCH",
            )
    return deal
