"""Card games card by card from the shoe, in the order the cards leave it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tablecommon.events.base import DeviceEvent
from tablecommon.events.shoe import CardDealt, ShoeFault, ShuffleFinished

from ...games.base import Deal
from ...games.cards import Card
from ...games.errors import RulesError
from ...jsonio import JSON
from ..phase import Phase
from .base import Device, Procedure, ProcedureContext


class ShoeProcedure(Procedure):
    """Card games card by card from the shoe, in the order the cards leave it.

    Betting closes at the first card. The game's pure deal state
    (:meth:`~firmware_host.games.base.Game.start_deal`) says what is due next; a card
    the rules do not allow (a misdeal, 55/2004 art. 10) is refused and published as a
    fault, and the deal stays as it was for the dealer to correct or void. Player
    decisions (blackjack, stud poker) arrive as ``decide`` commands and go to the game
    (:meth:`~firmware_host.games.base.Game.decide`), with the bets they create
    (:meth:`~firmware_host.games.base.Game.decision_bets`). A game whose deal needs a
    setup before its first card (Super Pan 9) takes it as ``deal_setup``. When the
    deal is complete its outcome is the round's result.
    """

    manual_results = True

    def __init__(self, ctx: ProcedureContext, device: Device) -> None:
        super().__init__(ctx, device)
        self.shoe = device.name
        self.game = self.engine.game
        self.deal: Deal | None = None
        self._round_id: str | None = None
        #: The deal setup of the round in flight (``Game.deal_setup_keys``), if any.
        self.setup: dict[str, JSON] | None = None

    def _start_deal(self) -> Deal:
        e = self.engine
        return self.game.start_deal(e.rules, e.desk.bets(), self.setup)

    def _ensure_deal(self) -> Deal | None:
        cur = self.engine.current
        if cur is None:
            return None
        if self.deal is None or self._round_id != cur.round_id:
            self.deal = self._start_deal()
            self._round_id = cur.round_id
        return self.deal

    def _finish_if_complete(self, source: str) -> None:
        d = self.deal
        if d is not None and d.expect().kind == "complete":
            self.try_result(self.game.outcome_json(d.outcome()), source)
            if self.engine.current is None or self.engine.current.round_id != self._round_id:
                self.deal = None

    async def on_device_event(self, device: str, event: DeviceEvent) -> None:
        await super().on_device_event(device, event)
        if not self.is_mine(device):
            return
        match event:
            case CardDealt():
                self._card(device, event)
            case ShuffleFinished():
                self.engine.new_shoe(source=f"{device}:shuffle", shuffle=event.shuffle)
            case ShoeFault():
                self.fault(
                    "device_problem",
                    {
                        "device": device,
                        "kind": event.kind,
                        "fault": event.fault,
                        "message": event.message,
                    },
                )

    def _card(self, device: str, event: CardDealt) -> None:
        e = self.engine
        if e.phase is Phase.OPEN:
            self.try_close(f"{device}:first card")
        if e.phase is not Phase.CLOSED:
            self.fault(
                "card_refused",
                {
                    "card": event.card,
                    "seq": event.seq,
                    "reason": f"card dealt in phase {e.phase.value}",
                },
            )
            return
        try:
            d = self._ensure_deal()
            assert d is not None  # betting is closed: a round is in flight
            self.deal = d.deal(Card.parse(event.card))
        except RulesError as exc:
            self.fault(
                "misdeal",
                {"card": event.card, "seq": event.seq, "code": exc.code, "message": exc.message},
            )
            return
        self._finish_if_complete(f"{device}:card {event.seq}")

    def deal_setup(self, args: Mapping[str, JSON], source: str) -> JSON:
        """The setup the game's deal needs before its first card (Super Pan 9,
        261/96/M art. 2, 5: the banker's place, capital and declared add/subtract, and
        the four dice)."""
        e = self.engine
        if not self.game.deal_setup_keys:
            raise RulesError(f"{self.game.title} takes no deal setup", code="NOT_SUPPORTED")
        if e.phase not in (Phase.OPEN, Phase.CLOSED) or (
            self.deal is not None and self._round_id == getattr(e.current, "round_id", None)
        ):
            raise RulesError(
                "deal_setup comes once per round, before the first card", code="WRONG_PHASE"
            )
        previous, self.setup = self.setup, dict(args)
        try:
            self._start_deal()  # validates the setup
        except Exception:
            self.setup = previous
            raise
        return {"setup": self.setup, "source": source}

    def decide(self, args: Mapping[str, JSON], source: str) -> JSON:
        """A player's decision (blackjack: hit, stand, double, split...; stud: raise/fold)."""
        e = self.engine
        if e.phase is not Phase.CLOSED:
            raise RulesError(f"no decision in phase {e.phase.value}", code="WRONG_PHASE")
        before = self._ensure_deal()
        assert before is not None  # betting is closed: a round is in flight
        amount = args.get("amount")  # a decision that stakes an amount (insurance)
        if isinstance(amount, int) and not isinstance(amount, bool):
            e.cfg.limits.check_payable(str(args.get("action")), amount)
        new = self.game.decide(e.rules, before, args)
        seat: Any = args.get("seat")
        action: Any = args.get("action")
        for raw in self.game.decision_bets(e.rules, before, seat, action, e.desk.bets()):
            e.desk.add_decision(raw)
        self.deal = new
        self._finish_if_complete(source)
        return {"expect": new.expect().to_json()}
