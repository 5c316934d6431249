"""Sic bo and fish-prawn-crab by the shaker, the bell and the dome (57/2004 and 59/2004
art. 2-3)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from tablecommon.events.base import DeviceEvent
from tablecommon.events.shaker import (
    Bell,
    DiceRead,
    DiceUnreadable,
    DomeOpened,
    NoShake,
    ShakeFinished,
    ShakerFault,
)

from ...journal import RoundRecord
from ..extension import TableExtension
from ..phase import Phase
from .base import Device, Procedure, ProcedureContext, problem_data


class DiceProcedure(Procedure, TableExtension):
    """Sic bo and fish-prawn-crab by the shaker, the bell and the dome (57/2004 and
    59/2004 art. 2-3).

    - the dice shaken under the dome (art. 2 1)) open betting; the shaker reads them at
      once, but that reading stays sealed in the controller (not journaled as a result,
      not published) until betting closes;
    - the croupier's bell (or a close command) closes betting (art. 3 1)); the sealed
      reading, or a reading taken when the dome is lifted, is then the result (art. 3 2));
    - a die stacked or tilted voids the throw (art. 3 3)): the bets stay, new bets may be
      added (art. 3 4)) and the dice are shaken again.

    It follows the phases (a close command comes from the floor, not from the shaker)
    as a table extension.
    """

    manual_results = False
    name = "dice-procedure"

    def __init__(self, ctx: ProcedureContext, device: Device) -> None:
        super().__init__(ctx, device)
        self.shaker = device.name
        self._request_shake: Callable[[], Awaitable[None]] | None = getattr(
            device.driver, "request_shake", None
        )
        self._read_dice: Callable[[], Awaitable[None]] | None = getattr(
            device.driver, "read_dice", None
        )
        self.sealed: DiceRead | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        ctx.extensions.add(self)

    def phase_changed(self, phase: Phase, rnd: RoundRecord | None) -> None:
        if phase is Phase.CLOSED and self.sealed is not None:
            reading, self.sealed = self.sealed, None
            task = asyncio.get_running_loop().create_task(self._take(reading))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _take(self, event: DiceRead) -> None:
        """A reading while betting is closed: the result, or a void throw."""
        e = self.engine
        if e.phase is not Phase.CLOSED:
            return
        if event.valid:
            self.try_result({"dice": list(event.dice)}, f"{self.shaker}:shake {event.shake}")
            return
        lie = ", ".join(f"die {i + 1} {f}" for i, f in enumerate(event.flags) if f != "flat")
        e.reopen_betting(f"dice not flat ({lie}): throw void, shaken again", source=self.shaker)
        if self._request_shake is not None:
            await self._request_shake()

    async def on_device_event(self, device: str, event: DeviceEvent) -> None:
        await super().on_device_event(device, event)
        if not self.is_mine(device):
            return
        e = self.engine
        match event:
            case ShakeFinished():
                self.sealed = None
                if e.phase is Phase.IDLE:
                    self.try_open(f"{device}:shaken")
            case Bell():
                self.try_close(f"{device}:bell")
            case DomeOpened(initial=False):
                if e.phase is Phase.CLOSED and self._read_dice is not None:
                    await self._read_dice()
            case DiceRead():
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
            case NoShake() | DiceUnreadable() | ShakerFault():
                self.fault("device_problem", problem_data(device, event))
