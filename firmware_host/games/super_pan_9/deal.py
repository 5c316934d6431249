"""A Super Pan 9 game dealt card by card from the shoe (:class:`SuperPan9Deal`, the
banker games' :class:`~firmware_host.games.banker.BankerDeal`), and the dealt game
it settles (:class:`SuperPan9Outcome`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..banker import BankerDeal, BankerHands, RoundSetup
from ..base import JSON
from ..cards import Card
from ..errors import Misdeal, RulesError
from .rules import SuperPan9Rules


@dataclass(frozen=True, slots=True)
class SuperPan9Outcome(BankerHands[Card]):
    """A dealt game: the setup (banker, capital, dice, declaration) and each place's cards."""

    @property
    def deal_order(self) -> tuple[Card, ...]:
        return tuple(c for p in self.setup.service_order for c in self.hand(p))


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
