"""Game procedures: the regulation's own sequence, driven by devices and dealer inputs.

A procedure receives every typed device event of the table and calls the round
engine: open betting, close, result, void. One procedure per way of running a game:

- :class:`ManualProcedure`: everything from dealer/floor commands (``commands/request``
  and the console); mah-jong and P'ai Kao results are declared by the inspector.
- :class:`WheelProcedure`: roulette driven by the wheel (Cammegh SS2 states, or the
  GPIO wheel), 60/2004 art. 2-4.
- :class:`DiceProcedure`: sic bo and fish-prawn-crab by the shaker, bell and dome
  (57/2004 and 59/2004 art. 2-3).
- :class:`KeypadProcedure`: fantan by the dealer's keypad (58/2004 art. 4-5).
- :class:`ShoeProcedure`: card games card by card from the shoe.

A result that arrives in the wrong phase is refused by the engine and raised here as
a ``result_refused`` fault event; it is never settled.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from ...games.errors import RulesError
from ...journal import OutboxMessage, iso_utc, utc_now
from ..engine import SCHEMA_VERSION, Phase

if TYPE_CHECKING:
    from ...daemon import TableDaemon

log = logging.getLogger(__name__)

JSON = Any
#: A raw device frame: (device, direction, data).
Frame = tuple[str, Literal["rx", "tx"], bytes]


class Procedure:
    """Base: manual operation; subclasses react to device events."""

    #: Whether a result may be entered by command (no device reads it).
    manual_results = True

    def __init__(self, daemon: TableDaemon) -> None:
        self.daemon = daemon
        assert daemon.engine is not None
        self.engine = daemon.engine

    async def run(self) -> None:
        """Background work of the procedure (polling, timers). Default: none."""

    async def stop(self) -> None:
        return None

    def carries_result(self, event: Any) -> bool:
        """Whether ``event`` is a result this procedure settles: its raw frames are then
        journaled with the settlement (one transaction), not on their own before it."""
        return False

    async def on_device_event(self, device: str, event: Any) -> None:
        raw = getattr(event, "raw", b"")
        if raw and not self.carries_result(event):
            self.engine.record_frames([(device, "rx", raw)])

    # -- helpers -----------------------------------------------------------------
    def fault(self, kind: str, data: Mapping[str, JSON]) -> None:
        """Publish a fault on ``events`` and write it to the event log."""
        journal = self.engine.journal
        payload: dict[str, JSON] = {
            "schema_version": SCHEMA_VERSION,
            "table_id": self.engine.cfg.table_id,
            "event": kind,
            "at": iso_utc(utc_now()),
            "data": dict(data),
        }
        cur = self.engine.current
        if cur is not None:
            payload["round_id"] = cur.round_id
        journal.enqueue(OutboxMessage("events", payload, round_id=cur.round_id if cur else None))
        journal.append_event(kind, dict(data))
        log.warning("%s: %s", kind, data)

    def try_result(
        self, outcome: JSON, source: str, frames: Sequence[Frame] = ()
    ) -> Mapping[str, JSON] | None:
        try:
            return self.engine.submit_result(outcome, source=source, frames=frames)
        except RulesError as exc:
            self.engine.record_frames(frames)
            self.fault(
                "result_refused",
                {"source": source, "outcome": outcome, "code": exc.code, "message": exc.message},
            )
            return None

    def try_open(self, source: str) -> None:
        if self.engine.phase is Phase.IDLE:
            try:
                self.engine.open_betting(source=source)
            except RulesError as exc:
                self.fault(
                    "open_refused", {"source": source, "code": exc.code, "message": exc.message}
                )

    def try_close(self, source: str) -> None:
        if self.engine.phase is Phase.OPEN:
            self.engine.close_betting(source=source)


class ManualProcedure(Procedure):
    """Every phase from commands (floor MQTT ``commands/request`` or the console)."""


def _kind(event: Any) -> str:
    return type(event).__name__


class WheelProcedure(Procedure):
    """Roulette driven by the wheel's game states (Cammegh SS2, 60/2004).

    - state 2 (place your bets) with no round in flight: betting opens (art. 3 1):
      after the previous round has been paid);
    - betting closes at the first state 4 (no more bets), or already at state 3 (the
      ball is launched) under betting procedure 1 (art. 3 2) 1));
    - the winning number (emitted once per spin by the driver, only from a valid
      state-5 line) is the result (art. 4);
    - a voided spin (miss-spin: a chip or object in the wheel, 60/2004 art. 2 2)-3))
      keeps the bets locked and the ball is launched again; a wheel that stops or
      faults before the result voids the round and refunds every bet;
    - a round belongs to the spin the wheel showed when it opened: if the wheel is
      seen on another spin before that spin's result was read (the link was down
      through state 5), the round is voided and every bet refunded; a later spin's
      number never settles it.
    """

    manual_results = False

    def carries_result(self, event: Any) -> bool:
        return _kind(event) == "WinningNumber"

    def __init__(self, daemon: TableDaemon, wheel: str) -> None:
        super().__init__(daemon)
        self.wheel = wheel
        self.procedure = getattr(self.engine.rules, "betting_procedure", 2)
        self.auto_open = True
        #: (round_id, spin number) of the round in flight.
        self.round_spin: tuple[str, int] | None = None

    def _same_spin(self, spin: int, device: str) -> bool:
        """Whether the round in flight (if any) is played on ``spin``; if not, its own
        spin ended unseen: void it (bets refunded) and return False."""
        cur = self.engine.current
        if cur is None:
            return True
        if self.round_spin is None or self.round_spin[0] != cur.round_id:
            self.round_spin = (cur.round_id, spin)  # first spin seen for this round
            return True
        known = self.round_spin[1]
        if known == spin:
            return True
        self.engine.void_round(
            f"the result of spin {known} was not read (the wheel is at spin {spin}): "
            "every bet refunded",
            source=device,
        )
        return False

    async def on_device_event(self, device: str, event: Any) -> None:
        await super().on_device_event(device, event)
        if device != self.wheel:
            return
        kind = _kind(event)
        e = self.engine
        if kind == "GameStateChanged":
            state = event.state
            if state in (2, 3, 4, 5):
                self._same_spin(event.spin, device)
            if state == 2 and e.phase is Phase.IDLE and self.auto_open:
                self.try_open(f"{device}:state 2")
                if e.current is not None:
                    self.round_spin = (e.current.round_id, event.spin)
            elif state == 3 and self.procedure == 1:
                self.try_close(f"{device}:state 3 (ball launched)")
            elif state == 4:
                self.try_close(f"{device}:state 4 (no more bets)")
            elif state in (1, 6) and e.phase is Phase.CLOSED and event.previous in (3, 4):
                e.void_round(
                    f"the wheel left the game (state {event.previous} -> {state}) before a result",
                    source=device,
                )
        elif kind == "WinningNumber":
            frames: list[Frame] = [(device, "rx", event.raw)] if event.raw else []
            rid = e.current.round_id if e.current else None
            refused = None
            if event.void_reason:
                refused = f"spin already void: {event.void_reason}"
            elif not self._same_spin(event.spin, device):
                refused = f"spin {event.spin} is not the spin of the round (voided)"
            elif event.number > 36:
                refused = "not a single-zero pocket"
            if refused is not None:
                e.record_frames(frames, rid)
                self.fault(
                    "result_refused", {"source": device, "number": event.number, "reason": refused}
                )
                return
            if e.phase is Phase.OPEN:  # state 4 lost on the line: the ball has settled
                self.try_close(f"{device}:winning number")
            self.try_result({"number": event.number}, f"{device}:spin {event.spin}", frames)
        elif kind == "GameVoided" and e.phase in (Phase.OPEN, Phase.CLOSED):
            if event.restart_required:
                e.void_spin(f"{event.reason}: {event.message}", source=device)
                restart = getattr(self.daemon.drivers.get(device), "restart", None)
                if restart is not None:
                    await restart()
            else:
                e.void_round(f"{event.reason}: {event.message}", source=device)


class DiceProcedure(Procedure):
    """Sic bo and fish-prawn-crab by the shaker, the bell and the dome (57/2004 and
    59/2004 art. 2-3).

    - the dice shaken under the dome (art. 2 1)) open betting; the shaker reads them at
      once, but that reading stays sealed in the controller (not journaled as a result,
      not published) until betting closes;
    - the croupier's bell (or a close command) closes betting (art. 3 1)); the sealed
      reading, or a reading taken when the dome is lifted, is then the result (art. 3 2));
    - a die stacked or tilted voids the throw (art. 3 3)): the bets stay, new bets may be
      added (art. 3 4)) and the dice are shaken again.
    """

    manual_results = False

    def __init__(self, daemon: TableDaemon, shaker: str) -> None:
        super().__init__(daemon)
        self.shaker = shaker
        self.sealed: Any = None
        self._tasks: set[asyncio.Task[None]] = set()
        self.engine.on_phase.append(self._phase_changed)

    @property
    def driver(self) -> Any:
        return self.daemon.drivers.get(self.shaker)

    def _phase_changed(self, phase: Phase, rnd: Any) -> None:
        if phase is Phase.CLOSED and self.sealed is not None:
            reading, self.sealed = self.sealed, None
            task = asyncio.get_running_loop().create_task(self._take(reading))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _take(self, event: Any) -> None:
        """A reading while betting is closed: the result, or a void throw."""
        e = self.engine
        if e.phase is not Phase.CLOSED:
            return
        if event.valid:
            self.try_result({"dice": list(event.dice)}, f"{self.shaker}:shake {event.shake}")
            return
        lie = ", ".join(f"die {i + 1} {f}" for i, f in enumerate(event.flags) if f != "flat")
        e.reopen_betting(f"dice not flat ({lie}): throw void, shaken again", source=self.shaker)
        if self.driver is not None:
            await self.driver.request_shake()

    async def on_device_event(self, device: str, event: Any) -> None:
        await super().on_device_event(device, event)
        if device != self.shaker:
            return
        kind = _kind(event)
        e = self.engine
        if kind == "ShakeFinished":
            self.sealed = None
            if e.phase is Phase.IDLE:
                self.try_open(f"{device}:shaken")
        elif kind == "Bell":
            self.try_close(f"{device}:bell")
        elif kind == "DomeOpened" and not getattr(event, "initial", False):
            if e.phase is Phase.CLOSED and self.driver is not None:
                await self.driver.read_dice()
        elif kind == "DiceRead":
            if e.phase is Phase.OPEN:
                self.sealed = event  # the throw under the dome: taken when betting closes
            elif e.phase is Phase.CLOSED:
                await self._take(event)
            else:
                self.fault(
                    "result_refused",
                    {
                        "source": device,
                        "dice": list(event.dice),
                        "reason": f"dice read in phase {e.phase.value}",
                    },
                )
        elif kind in ("NoShake", "DiceUnreadable", "ShakerFault"):
            self.fault(
                "device_problem",
                {
                    "device": device,
                    "kind": kind,
                    **{k: v for k, v in event.to_json().items() if k not in ("raw", "device")},
                },
            )


class KeypadProcedure(Procedure):
    """Fantan by the dealer's keypad (58/2004 art. 4-5).

    - ``confirm`` alone with no round in flight opens betting (after the croupier has
      set the buttons apart under the cup, art. 2 and art. 4);
    - the bell closes it (art. 4: the croupier rings and announces the count);
    - a number key then ``confirm`` (the driver's ``KeypadResult``, 1..4, art. 3 2):
      a remainder of zero is entered as 4) is the result;
    - ``void`` asks for a void: published and logged; a logged-in operator voids the
      round from the console (a keypad has no operator identity).
    """

    manual_results = True

    def __init__(self, daemon: TableDaemon, keypad: str) -> None:
        super().__init__(daemon)
        self.keypad = keypad

    async def on_device_event(self, device: str, event: Any) -> None:
        await super().on_device_event(device, event)
        if device != self.keypad:
            return
        kind = _kind(event)
        e = self.engine
        if kind == "Bell":
            self.try_close(f"{device}:bell")
        elif kind == "KeypadConfirm" and event.value is None:
            if e.phase is Phase.IDLE:
                self.try_open(f"{device}:confirm")
        elif kind == "KeypadResult":
            self.try_result({"number": event.value}, f"{device}:keypad")
        elif kind == "KeypadVoidRequest":
            self.fault(
                "void_requested",
                {"device": device, "round_id": e.current.round_id if e.current else None},
            )
        elif kind in ("KeypadRejected", "ButtonStuck"):
            self.fault(
                "device_problem",
                {
                    "device": device,
                    "kind": kind,
                    **{k: v for k, v in event.to_json().items() if k not in ("raw", "device")},
                },
            )


class ShoeProcedure(Procedure):
    """Card games card by card from the shoe, in the order the cards leave it.

    Betting closes at the first card. The game's pure deal state says what is due
    next; a card the rules do not allow (a misdeal, 55/2004 art. 10) is refused and
    published as a fault, and the deal stays as it was for the dealer to correct or
    void. Player decisions (blackjack, stud poker) arrive as ``decide`` commands.
    When the deal is complete its outcome is the round's result.
    """

    manual_results = True

    def __init__(self, daemon: TableDaemon, shoe: str) -> None:
        super().__init__(daemon)
        self.shoe = shoe
        self.deal: Any = None
        self._round_id: str | None = None
        #: Super Pan 9: the banker, capital, declaration and dice of the round in flight.
        self.setup: dict[str, JSON] | None = None

    def _start_deal(self) -> Any:
        from ...games import baccarat, blackjack, stud_poker

        e = self.engine
        gid = e.cfg.game_id
        bets = e.bets()  # one read of the journal
        seats = sorted({b.seat for b in bets})
        if gid == "baccarat":
            return baccarat.BaccaratDeal.start(e.rules)
        if gid == "blackjack":
            return blackjack.BlackjackDeal.start(
                e.rules, sorted({b.seat for b in bets if b.bet_type == "main"})
            )
        if gid == "stud-poker":
            return stud_poker.StudDeal.start(e.rules, seats)
        if gid == "super-pan-9":
            from ...games import super_pan_9

            st = self.setup
            if st is None:
                raise RulesError(
                    "Super Pan 9: send deal_setup (banker, capital, declaration, dice) before the cards",
                    code="SETUP_REQUIRED",
                )
            deal = super_pan_9.SuperPan9Deal.start(
                e.rules,
                banker=st["banker"],
                banker_capital=st["banker_capital"],
                declared=st.get("declared", 0),
                casino_capital=st.get("casino_capital"),
            )
            return deal.shake(st["dice"])
        raise RulesError(
            f"{gid} is not dealt from a shoe here; enter its result by command",
            code="NOT_SUPPORTED",
        )

    def _ensure_deal(self) -> Any:
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
            self.try_result(self.engine.game.outcome_json(d.outcome()), source)
            if self.engine.current is None or self.engine.current.round_id != self._round_id:
                self.deal = None

    async def on_device_event(self, device: str, event: Any) -> None:
        await super().on_device_event(device, event)
        if device != self.shoe:
            return
        kind = _kind(event)
        e = self.engine
        if kind == "CardDealt":
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
            from ...games.cards import Card

            try:
                d = self._ensure_deal()
                self.deal = d.deal(Card.parse(event.card))
            except RulesError as exc:
                self.fault(
                    "misdeal",
                    {
                        "card": event.card,
                        "seq": event.seq,
                        "code": exc.code,
                        "message": exc.message,
                    },
                )
                return
            self._finish_if_complete(f"{device}:card {event.seq}")
        elif hasattr(event, "fault"):
            self.fault(
                "device_problem",
                {
                    "device": device,
                    "kind": kind,
                    "fault": event.fault,
                    "message": getattr(event, "message", ""),
                },
            )

    def deal_setup(self, args: Mapping[str, JSON], source: str) -> JSON:
        """Super Pan 9 (261/96/M art. 2, 5): the banker's place, capital and declared
        add/subtract, and the four dice, fixed before the first card."""
        e = self.engine
        if e.cfg.game_id != "super-pan-9":
            raise RulesError("deal_setup is for Super Pan 9", code="NOT_SUPPORTED")
        if e.phase not in (Phase.OPEN, Phase.CLOSED) or (
            self.deal is not None and self._round_id == getattr(e.current, "round_id", None)
        ):
            raise RulesError(
                "deal_setup comes once per round, before the first card", code="WRONG_PHASE"
            )
        previous, self.setup = self.setup, dict(args)
        try:
            self._start_deal()  # validates the banker, capital, declaration and dice
        except Exception:
            self.setup = previous
            raise
        return {"setup": self.setup, "source": source}

    def decide(self, args: Mapping[str, JSON], source: str) -> JSON:
        """A player's decision (blackjack: hit, stand, double, split...; stud: raise/fold)."""
        e = self.engine
        if e.phase is not Phase.CLOSED:
            raise RulesError(f"no decision in phase {e.phase.value}", code="WRONG_PHASE")
        d = self._ensure_deal()
        seat = args.get("seat")
        action = args.get("action")
        if e.cfg.game_id == "stud-poker":
            new = d.decide(seat, action)
            if action == "raise":
                ante = next(b for b in e.bets() if b.seat == seat and b.bet_type == "ante")
                e.add_decision_bet(
                    {
                        "bet_id": f"{ante.bet_id}.raise",
                        "seat": seat,
                        "bet_type": "raise",
                        "stake": 2 * ante.stake,
                    }
                )
        else:
            extra = {k: args[k] for k in ("hand", "amount", "bet_id") if k in args}
            new = d.decide(seat, action, **extra)
        self.deal = new
        self._finish_if_complete(source)
        return {"expect": new.expect().to_json()}


def make_procedure(daemon: TableDaemon) -> Procedure:
    """The procedure for the table's game and the devices it has.

    A table without the device its game reads results from runs the manual
    procedure (results entered by command); so do mah-jong and P'ai Kao, whose
    results are declared by the inspector (no tile reader).
    """
    kinds = {name: daemon._device_kinds.get(name, "") for name in daemon.drivers}

    def device_of(*drivers: str) -> str | None:
        return next((n for n, k in kinds.items() if k in drivers), None)

    gid = daemon.cfg.game_id
    if gid == "roulette":
        wheel = device_of("cammegh-ss2", "gpio-wheel")
        if wheel:
            return WheelProcedure(daemon, wheel)
    elif gid in ("sicbo", "fish-prawn-crab"):
        shaker = device_of("shaker-ref")
        if shaker:
            return DiceProcedure(daemon, shaker)
    elif gid == "fantan":
        keypad = device_of("keypad-gpio")
        if keypad:
            return KeypadProcedure(daemon, keypad)
    elif gid in ("baccarat", "blackjack", "stud-poker", "super-pan-9"):
        shoe = device_of("shoe-ref", "shoe-ref-usb")
        if shoe:
            return ShoeProcedure(daemon, shoe)
    return ManualProcedure(daemon)
