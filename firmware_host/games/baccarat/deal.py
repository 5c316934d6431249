"""The baccarat coup card by card (:class:`BaccaratDeal`, a
:class:`~firmware_host.games.base.Deal`): card values (art. 5), the drawing rules of
art. 9, and the order the cards go to the player and the banker (art. 7 1)).

``expect()`` says which side the next card goes to, or that the coup is complete; a
card the rules do not allow raises :class:`~firmware_host.games.errors.Misdeal` with
a stable code and the correction art. 10 calls for (see ``docs/rules/baccarat.md``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from ..base import JSON, Deal, Expect
from ..cards import Card, cards_str, parse_cards
from ..errors import Misdeal, OutcomeError, RoundStateError

if TYPE_CHECKING:
    from .rules import BaccaratRules


Side = Literal["player", "banker"]


# -- card values and the drawing rules (art. 5, art. 9) ---------------------------


def card_value(card: Card) -> int:
    """Art. 5: 10, J, Q, K count 0; the others their face value (the ace 1)."""
    return card.rank if card.rank <= 9 else 0


def total(cards: Iterable[Card]) -> int:
    """Art. 5 1): combinations totalling ten count zero, i.e. the total modulo 10."""
    return sum(card_value(c) for c in cards) % 10


def player_draws(player_total: int, banker_total: int) -> bool:
    """Art. 9 1)-2): the player draws on 0-5 unless the banker has a natural (8, 9)."""
    return player_total <= 5 and banker_total <= 7


def banker_draws(banker_total: int, player_total: int, player_third: int | None) -> bool:
    """Art. 9 3)-4): does the banker draw? ``player_third`` is the *value* of the
    player's third card (0 for 10/J/Q/K, which art. 9 writes as "10"), or None when
    the player did not draw. Totals are of the first two cards."""
    if player_total >= 8 or banker_total >= 8:  # art. 9 2), 4) (5)-(6): naturals
        return False
    if player_third is None:  # art. 9 3) (6), 4) (4)-(5)
        return banker_total <= 5
    if banker_total <= 2:  # art. 9 3) (1)
        return True
    if banker_total == 3:  # art. 9 3) (2), 4) (1)
        return player_third != 8
    if banker_total == 4:  # art. 9 3) (3), 4) (2)
        return 2 <= player_third <= 7
    if banker_total == 5:  # art. 9 3) (4), 4) (3)
        return 4 <= player_third <= 7
    if banker_total == 6:  # art. 9 3) (5), 4) (4)
        return player_third in (6, 7)
    return False  # art. 9 4) (5): 7


# -- the deal engine ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class BaccaratOutcome:
    """A finished coup: each side's cards in dealing order."""

    player: tuple[Card, ...]
    banker: tuple[Card, ...]

    @property
    def player_total(self) -> int:
        return total(self.player)

    @property
    def banker_total(self) -> int:
        return total(self.banker)

    @property
    def winner(self) -> Literal["player", "banker", "tie"]:
        """Art. 11, 12."""
        p, b = self.player_total, self.banker_total
        return "player" if p > b else "banker" if b > p else "tie"

    @property
    def player_pair(self) -> bool:
        """Art. 13 4): the first two cards have the same rank (suits irrelevant)."""
        return self.player[0].rank == self.player[1].rank

    @property
    def banker_pair(self) -> bool:
        return self.banker[0].rank == self.banker[1].rank

    @property
    def natural(self) -> bool:
        return total(self.player[:2]) >= 8 or total(self.banker[:2]) >= 8


def _due(player: tuple[Card, ...], banker: tuple[Card, ...]) -> tuple[Side | None, str]:
    """Which side the next card goes to (None: complete), and why."""
    n_p, n_b = len(player), len(banker)
    if n_p + n_b < 4:
        side: Side = "player" if n_p == n_b else "banker"
        return side, "initial cards, one at a time, player first (55/2004 art. 7 1))"
    pt, bt = total(player[:2]), total(banker[:2])
    if n_p == 2 and n_b == 2:
        if pt >= 8 or bt >= 8:
            return None, "a natural: neither side draws (55/2004 art. 9 2), 4) (6))"
        if player_draws(pt, bt):
            return "player", f"player draws on {pt} (55/2004 art. 9 1))"
        if banker_draws(bt, pt, None):
            return "banker", f"player stands on {pt}; banker draws on {bt} (55/2004 art. 9 3) (6))"
        return None, f"player stands on {pt}, banker stands on {bt} (55/2004 art. 9 2), 4) (4)-(5))"
    if n_p == 3 and n_b == 2:
        third = card_value(player[2])
        if banker_draws(bt, pt, third):
            return (
                "banker",
                f"banker draws on {bt} against a player third card of {third} (55/2004 art. 9 3))",
            )
        return (
            None,
            f"banker stands on {bt} against a player third card of {third} (55/2004 art. 9 4))",
        )
    return None, "both sides have drawn (55/2004 art. 9: one additional card at most)"


@dataclass(frozen=True, slots=True)
class BaccaratDeal(Deal):
    """The immutable state of one coup as the cards leave the shoe.

    ``set_aside`` holds cards withdrawn as an art. 10 correction (an extra card
    drawn after the coup was complete); ``void_reason`` is set when the error could
    not be corrected and the coup is null (art. 10).
    """

    player: tuple[Card, ...] = ()
    banker: tuple[Card, ...] = ()
    set_aside: tuple[Card, ...] = ()
    void_reason: str | None = None

    @staticmethod
    def start(rules: BaccaratRules | None = None) -> BaccaratDeal:
        return BaccaratDeal()

    @property
    def complete(self) -> bool:
        return self.void_reason is None and _due(self.player, self.banker)[0] is None

    def expect(self) -> Expect:
        if self.void_reason is not None:
            return Expect("void", reason=self.void_reason)
        side, reason = _due(self.player, self.banker)
        if side is None:
            return Expect("complete", reason=reason)
        return Expect("card", side, reason=reason)

    def deal(self, card: Card, to: Side | None = None) -> BaccaratDeal:
        """The next card out of the shoe; ``to`` is where the dealer placed it, if
        the shoe or the layout reports it (a mismatch is a misdeal)."""
        if self.void_reason is not None:
            raise RoundStateError(f"the coup is void: {self.void_reason}", code="ROUND_VOID")
        side, reason = _due(self.player, self.banker)
        if side is None:
            raise Misdeal(
                f"{card} dealt after the coup was complete ({reason})",
                code="MISDEAL_EXTRA_CARD",
                due=None,
                correction="withdraw the card (set_aside); the coup stands (55/2004 art. 10)",
            )
        if to is not None and to != side:
            raise Misdeal(
                f"{card} placed on the {to} side but the next card is the {side}'s ({reason})",
                code="MISDEAL_WRONG_HAND",
                due=side,
                correction=f"move the card to the {side} side: it is the {side}'s card in shoe "
                "order (55/2004 art. 10)",
            )
        if side == "player":
            return BaccaratDeal((*self.player, card), self.banker, self.set_aside)
        return BaccaratDeal(self.player, (*self.banker, card), self.set_aside)

    def set_aside_card(self, card: Card) -> BaccaratDeal:
        """Art. 10 correction: a card drawn in error is withdrawn from the coup."""
        if self.void_reason is not None:
            raise RoundStateError(f"the coup is void: {self.void_reason}", code="ROUND_VOID")
        return BaccaratDeal(self.player, self.banker, (*self.set_aside, card))

    def void(self, reason: str) -> BaccaratDeal:
        """Art. 10: the error cannot be corrected; the coup is null, every bet returned."""
        return BaccaratDeal(
            self.player, self.banker, self.set_aside, reason or "void (55/2004 art. 10)"
        )

    def outcome(self) -> BaccaratOutcome:
        if self.void_reason is not None:
            raise RoundStateError(f"the coup is void: {self.void_reason}", code="ROUND_VOID")
        if not self.complete:
            exp = self.expect()
            raise RoundStateError(
                f"the coup is not complete: the next card goes to the {exp.to} ({exp.reason})",
                code="ROUND_NOT_COMPLETE",
            )
        return BaccaratOutcome(self.player, self.banker)

    def to_json(self) -> dict[str, JSON]:
        return {
            "player": cards_str(self.player),
            "banker": cards_str(self.banker),
            "set_aside": cards_str(self.set_aside),
            "void": self.void_reason,
        }

    @staticmethod
    def from_json(rules: BaccaratRules | None, data: Mapping[str, Any]) -> BaccaratDeal:
        """Rebuild a journalled state, checking it against the rules on the way."""
        if not isinstance(data, Mapping):
            raise OutcomeError(f"a baccarat deal is a JSON object, got {data!r}")
        deal = replay(
            parse_cards(data.get("player", [])), parse_cards(data.get("banker", [])), complete=False
        )
        deal = BaccaratDeal(deal.player, deal.banker, parse_cards(data.get("set_aside", [])))
        reason = data.get("void")
        if reason is not None:
            if not isinstance(reason, str):
                raise OutcomeError(f"void must be a reason string or null, got {reason!r}")
            deal = deal.void(reason)
        return deal


def replay(
    player: Sequence[Card], banker: Sequence[Card], *, complete: bool = True
) -> BaccaratDeal:
    """Deal ``player`` and ``banker`` (each in dealing order) through the engine.

    Raises OutcomeError ``OUTCOME_DRAW_RULES`` when the cards could not have been
    dealt by art. 7 and art. 9 (a third card where the rules say stand, a missing
    one where they say draw); with ``complete`` the coup must be finished.
    """
    deal = BaccaratDeal()
    p, b = list(player), list(banker)
    while p or b:
        side, reason = _due(deal.player, deal.banker)
        src = p if side == "player" else b
        if side is None or not src:
            why = reason if side is None else f"the next card must go to the {side}"
            raise OutcomeError(
                f"player {cards_str(player)} / banker {cards_str(banker)} cannot be dealt by the "
                f"rules: {why}",
                code="OUTCOME_DRAW_RULES",
            )
        deal = deal.deal(src.pop(0), side)
    if complete and not deal.complete:
        exp = deal.expect()
        raise OutcomeError(
            f"player {cards_str(player)} / banker {cards_str(banker)} is not a finished coup: "
            f"the {exp.to} must draw ({exp.reason})",
            code="OUTCOME_DRAW_RULES",
        )
    return deal


def deal_coup(cards: Sequence[Card], start: int = 0) -> tuple[BaccaratOutcome, int]:
    """Deal one coup from ``cards`` (shoe order) from index ``start``; returns the
    outcome and the index of the next card. Raises OutcomeError if the shoe runs out."""
    deal, i = BaccaratDeal(), start
    while not deal.complete:
        if i >= len(cards):
            raise OutcomeError("the shoe ran out in the middle of a coup", code="SHOE_EMPTY")
        deal = deal.deal(cards[i])
        i += 1
    return deal.outcome(), i
