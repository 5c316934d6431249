"""Roulette driven by the wheel's game states (60/2004 art. 2-4)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from tablecommon.events.base import DeviceEvent
from tablecommon.events.wheel import GameStateChanged, GameVoided, WinningNumber

from ...journal import RoundRecord
from ..engine import Frame
from ..extension import TableExtension
from ..phase import Phase
from .base import Device, Procedure, ProcedureContext


class WheelProcedure(Procedure, TableExtension):
    """Roulette driven by the wheel's game states (Cammegh SS2 or the GPIO wheel, which
    emit the same events; 60/2004).

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
      number never settles it. A round opened by hand (console, floor) takes its spin
      from the wheel's next state 2, 3 or 4; a state 5 or a winning number of a spin it
      never saw voids it instead (its bets may have been placed after that ball
      landed: the driver may complete a result on the next game's first line, after a
      link loss);
    - while the round's result is held (a table with a witness, ``docs/witness.md``) the
      wheel's next game is not a round: its states are ignored, its number refused; when
      the held round ends (settled or voided) on a wheel waiting at state 2, betting
      opens on that spin.
    """

    manual_results = False
    name = "wheel-procedure"

    def __init__(self, ctx: ProcedureContext, device: Device) -> None:
        super().__init__(ctx, device)
        ctx.extensions.add(self)
        self.wheel = device.name
        #: The wheel's last state seen while a result was held: acted on when it ends.
        self._while_held: GameStateChanged | None = None
        #: The roulette rules' betting procedure (60/2004 art. 3 2)): 1 or 2.
        self.betting_procedure: int = getattr(self.engine.rules, "betting_procedure", 2)
        restart = getattr(device.driver, "restart", None)
        #: The wheel's restart after a void miss-spin (``*R``), if the driver has one.
        self._restart: Callable[[], Awaitable[None]] | None = restart
        #: (round_id, spin number) of the round in flight.
        self.round_spin: tuple[str, int] | None = None

    def carries_result(self, event: DeviceEvent) -> bool:
        return isinstance(event, WinningNumber)

    def _same_spin(self, spin: int, device: str, *, adopt: bool = True) -> bool:
        """Whether the round in flight (if any) is played on ``spin``; if not, its own
        spin ended unseen: void it (bets refunded) and return False. A round that has
        not seen a spin yet takes ``spin`` if ``adopt`` (states 2-4: the ball is not in
        a pocket); otherwise (state 5, a winning number) it is voided too."""
        cur = self.engine.current
        if cur is None:
            return True
        if self.round_spin is None or self.round_spin[0] != cur.round_id:
            if adopt:
                self.round_spin = (cur.round_id, spin)  # first spin seen for this round
                return True
            reason = (
                f"the round never saw spin {spin} in play before its result (opened "
                "during that game): every bet refunded"
            )
        elif self.round_spin[1] == spin:
            return True
        else:
            reason = (
                f"the result of spin {self.round_spin[1]} was not read (the wheel is at "
                f"spin {spin}): every bet refunded"
            )
        self.engine.void_round(reason, source=device)
        return False

    async def on_device_event(self, device: str, event: DeviceEvent) -> None:
        await super().on_device_event(device, event)
        if not self.is_mine(device):
            return
        if self.holding():  # the result is held (docs/witness.md): the next game waits
            if isinstance(event, GameStateChanged):
                self._while_held = event
            if isinstance(event, WinningNumber):
                self.engine.record_frames([(device, "rx", event.raw)] if event.raw else [])
                self.fault(
                    "result_refused",
                    {"source": device, "number": event.number, "reason": "a result is held"},
                )
            return
        match event:
            case GameStateChanged():
                self._state(device, event)
            case WinningNumber():
                self._number(device, event)
            case GameVoided() if self.engine.phase in (Phase.OPEN, Phase.CLOSED):
                await self._voided(device, event)

    def phase_changed(self, phase: Phase, rnd: RoundRecord | None) -> None:
        """The held round ended: a wheel that waits at state 2 opens the next round."""
        seen, self._while_held = self._while_held, None
        if phase is Phase.IDLE and seen is not None and seen.state == 2:
            asyncio.get_running_loop().call_soon(self._held_ended, seen)

    def _held_ended(self, seen: GameStateChanged) -> None:
        if self.engine.phase is Phase.IDLE and not self.holding():
            self._state(self.wheel, seen)

    def _state(self, device: str, event: GameStateChanged) -> None:
        e = self.engine
        state = event.state
        if state in (2, 3, 4, 5):
            self._same_spin(event.spin, device, adopt=state != 5)
        if state == 2 and e.phase is Phase.IDLE:
            self.try_open(f"{device}:state 2")
            if e.current is not None:
                self.round_spin = (e.current.round_id, event.spin)
        elif state == 3 and self.betting_procedure == 1:
            self.try_close(f"{device}:state 3 (ball launched)")
        elif state == 4:
            self.try_close(f"{device}:state 4 (no more bets)")
        elif state in (1, 6) and e.phase is Phase.CLOSED and event.previous in (3, 4):
            e.void_round(
                f"the wheel left the game (state {event.previous} -> {state}) before a result",
                source=device,
            )

    def _number(self, device: str, event: WinningNumber) -> None:
        e = self.engine
        frames: list[Frame] = [(device, "rx", event.raw)] if event.raw else []
        rid = e.current.round_id if e.current else None
        refused = None
        if event.void_reason:
            refused = f"spin already void: {event.void_reason}"
        elif not self._same_spin(event.spin, device, adopt=False):
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

    async def _voided(self, device: str, event: GameVoided) -> None:
        if event.restart_required:
            self.engine.void_spin(f"{event.reason}: {event.message}", source=device)
            if self._restart is not None:
                await self._restart()
        else:
            self.engine.void_round(f"{event.reason}: {event.message}", source=device)
