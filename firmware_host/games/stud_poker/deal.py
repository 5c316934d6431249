"""The stud poker game as the cards leave the shoe or the shuffler (:class:`StudDeal`,
a :class:`~firmware_host.games.base.Deal`): five cards a place with an ante and five
to the croupier in the order of art. 7, the places' raise or fold (art. 6 5)-7)), a
hand dealt to a place without bets (art. 11 3)), cards exposed by mistake (art. 11
2)); a misdeal voids the game and carries its jackpot bets (art. 11 1))."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from ..base import JSON, Deal, Expect
from ..cards import Card, cards_str, parse_cards
from ..errors import Misdeal, OutcomeError, RoundStateError
from ..jackpot import JackpotState
from .rules import SEATS, StudPokerRules

# -- the deal engine (art. 7, art. 11) --------------------------------------------------

Action = Literal["raise", "fold"]
ACTIONS = ("raise", "fold")


def _misdeal(message: str, *, code: str) -> Misdeal:
    """A card the procedure does not allow (art. 7); by art. 11 1) the game is void
    and its jackpot bets carry to the next game: call :meth:`StudDeal.void`."""
    return Misdeal(
        f"{message}; the game is void, jackpot bets carry to the next game (61/2004 art. 11 1))",
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
    jackpot: JackpotState | None = None


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
