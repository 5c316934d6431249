"""Electronic dice shaker driver: reference protocol on a serial port, plus the
dome-lock sensor and the croupier's bell on GPIO (gpiozero, any pin factory).

Registry name: ``shaker-ref``. Events: :mod:`tablecommon.events.shaker`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any, ClassVar

from tablecommon.events.shaker import (
    Bell,
    DiceRead,
    DomeClosed,
    DomeOpened,
    InputStuck,
    ShakerEvent,
    ShakerFault,
)
from tablecommon.settings import FieldSpec

from ..common import DriverBase
from ..gpio import DebouncedInput, require_pin_factory
from ..link import Backoff
from ..reflink.driver import SERIAL_SETTINGS, RefSession, resolve_settings
from ..reflink.messages import Message
from ..transport import Opener
from .codec import PROFILE, ShakerTracker

_PIN = (0, 27)

_SHAKER_SETTINGS: dict[str, FieldSpec] = {
    "dice": FieldSpec(
        "int", 3, doc="dice in the shaker: 3 (sic bo, fish-prawn-crab) or 4", choices=(3, 4)
    ),
    "dome_pin": FieldSpec(
        "int", None, doc="BCM pin of the dome-lock sensor (active = dome open)", range=_PIN
    ),
    "bell_pin": FieldSpec(
        "int", None, doc="BCM pin of the croupier's bell button (active = pressed)", range=_PIN
    ),
    "pull": FieldSpec(
        "str",
        "up",
        choices=("up", "down", "none"),
        doc="up: switches to ground, internal pull-up (active low); down: switches to 3.3 V, "
        "internal pull-down (active high); none: external pull-up (active low)",
    ),
    "debounce_ms": FieldSpec(
        "int", 20, doc="a level counts once stable this long", range=(0, 1000)
    ),
    "bell_stuck_s": FieldSpec(
        "int", 10, doc="the bell held this long is reported stuck", range=(1, 3600)
    ),
}


class ShakerDriver(DriverBase[ShakerEvent]):
    """The shaker: its reflink session (``ref``), the dome sensor and the bell."""

    driver_name = "shaker-ref"
    profile = PROFILE
    SETTINGS: ClassVar[dict[str, FieldSpec]] = {**SERIAL_SETTINGS, **_SHAKER_SETTINGS}
    FAULT_CONDITIONS = frozenset({"MOTOR_FAULT", "CAMERA_FAULT"})

    def __init__(
        self,
        name: str,
        settings: Mapping[str, Any],
        *,
        opener: Opener | None = None,
        pin_factory: Any = None,
        clock: Callable[[], float] = time.monotonic,
        backoff: Backoff | None = None,
    ) -> None:
        super().__init__(name, clock=clock)
        self.settings = resolve_settings(self.SETTINGS, settings, f"devices.{name}")
        self.pin_factory = pin_factory
        self.ref = RefSession(
            self,
            PROFILE,
            self.settings,
            fault_conditions=self.FAULT_CONDITIONS,
            on_message=self.on_message,
            opener=opener,
            backoff=backoff,
        )
        self.tracker = ShakerTracker(name, self.settings["dice"])
        self.dome: DebouncedInput | None = None
        self.bell: DebouncedInput | None = None
        self.dome_open: bool | None = None

    @classmethod
    def used_pins(cls, settings: Mapping[str, Any]) -> Iterable[tuple[str, int]]:
        return [(k, settings[k]) for k in ("dome_pin", "bell_pin") if settings.get(k) is not None]

    async def start(self) -> None:
        await self.ref.start()
        if self.dome is None and self.bell is None:
            self._start_gpio()

    async def stop(self) -> None:
        for inp in (self.dome, self.bell):
            if inp is not None:
                inp.close()
        self.dome = self.bell = None
        await self.ref.stop()

    def _start_gpio(self) -> None:
        s = self.settings
        if s["dome_pin"] is not None or s["bell_pin"] is not None:
            require_pin_factory(self.pin_factory, self.name)
        debounce = s["debounce_ms"] / 1000
        pull_up, active_state = {"up": (True, None), "down": (False, None), "none": (None, False)}[
            s["pull"]
        ]
        if s["dome_pin"] is not None:
            # A level sensor, not a button: with stuck_after=0 every accepted "open" is
            # at once "stuck", so its release (including one held since start) arrives
            # as on_unstuck: that is "dome closed".
            self.dome = DebouncedInput(
                s["dome_pin"],
                pin_factory=self.pin_factory,
                label="dome",
                pull_up=pull_up,
                active_state=active_state,
                debounce=debounce,
                stuck_after=0.0,
                on_press=self._dome_opened,
                on_unstuck=self._dome_closed,
            )
            self.dome.start()
            self.dome_open = self.dome.active
            if self.dome.active:
                self.emit(DomeOpened(device=self.name, initial=True))
        if s["bell_pin"] is not None:
            self.bell = DebouncedInput(
                s["bell_pin"],
                pin_factory=self.pin_factory,
                label="bell",
                pull_up=pull_up,
                active_state=active_state,
                debounce=debounce,
                stuck_after=float(s["bell_stuck_s"]),
                on_press=self._bell,
                on_stuck=self._bell_stuck,
                on_unstuck=self._bell_unstuck,
            )
            self.bell.start()

    # -- GPIO callbacks (on the loop) -----------------------------------------------------
    def _dome_opened(self, ts: float) -> None:
        self.dome_open = True
        self.emit(DomeOpened(device=self.name, monotonic=ts))

    def _dome_closed(self, ts: float, held: float) -> None:
        self.dome_open = False
        self.emit(DomeClosed(device=self.name, monotonic=ts))

    def _bell(self, ts: float) -> None:
        self.emit(Bell(device=self.name, monotonic=ts))

    def _bell_stuck(self, ts: float) -> None:
        self.emit(InputStuck(device=self.name, monotonic=ts, input="bell"))
        self.ref.latch_fault("BELL_STUCK", "the bell button is held down")

    def _bell_unstuck(self, ts: float, held: float) -> None:
        self.emit(InputStuck(device=self.name, monotonic=ts, input="bell", stuck=False))
        self.ref.clear_latched("BELL_STUCK")

    # -- commands ---------------------------------------------------------------------
    async def request_shake(self) -> None:
        """Ask for a shake; ShakeRequested, ShakeStarted, ShakeFinished and DiceRead follow."""
        await self.ref.command("SHAKE")

    async def read_dice(self) -> None:
        """Ask for the dice to be read again (no shake)."""
        await self.ref.command("READ")

    # -- events -------------------------------------------------------------------------
    def on_message(self, msg: Message, wire: bytes) -> None:
        """A message the shaker sent on its own: its events."""
        for ev in self.tracker.apply(msg, wire):
            if isinstance(ev, ShakerFault):
                self.counters[f"fault.{ev.fault}"] += 1
            self.emit(ev)

    def get_status(self) -> dict[str, Any]:
        last: DiceRead | None = self.tracker.last
        return {
            **super().get_status(),
            **self.ref.get_status(),
            "shaker": {
                "dice": self.tracker.dice,
                "dome_open": self.dome_open,
                "last": None
                if last is None
                else {
                    "shake": last.shake,
                    "dice": list(last.dice),
                    "flags": list(last.flags),
                    "valid": last.valid,
                },
            }
        }
