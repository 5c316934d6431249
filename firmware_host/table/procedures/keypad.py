"""Fantan by the dealer's keypad (58/2004 art. 4-5)."""

from __future__ import annotations

from tablecommon.events.base import DeviceEvent
from tablecommon.events.keypad import (
    Bell,
    ButtonStuck,
    KeypadConfirm,
    KeypadRejected,
    KeypadResult,
    KeypadVoidRequest,
)

from ..phase import Phase
from .base import Device, Procedure, ProcedureContext, problem_data


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

    def __init__(self, ctx: ProcedureContext, device: Device) -> None:
        super().__init__(ctx, device)
        self.keypad = device.name

    async def on_device_event(self, device: str, event: DeviceEvent) -> None:
        await super().on_device_event(device, event)
        if not self.is_mine(device):
            return
        e = self.engine
        match event:
            case Bell():
                self.try_close(f"{device}:bell")
            case KeypadConfirm(value=None):
                if e.phase is Phase.IDLE:
                    self.try_open(f"{device}:confirm")
            case KeypadResult():
                self.try_result({"number": event.value}, f"{device}:keypad")
            case KeypadVoidRequest():
                self.fault(
                    "void_requested",
                    {"device": device, "round_id": e.current.round_id if e.current else None},
                )
            case KeypadRejected() | ButtonStuck():
                self.fault("device_problem", problem_data(device, event))
