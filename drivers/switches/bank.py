"""The table's switches on GPIO through gpiozero: each contact's edges, timestamped in
gpiozero's thread and handed to the event loop (:class:`~drivers.gpio.LoopHandoff`),
fed to its :class:`~.contact.ContactTracker`, whose decisions become events.

A switch whose pin cannot be opened is a fault (``SWITCH_UNREADABLE``), never a silent
gap. ``at_rest`` (a simulated table's mock pins only): each switch is driven to its
closed level when opened, so a simulated table starts with every door shut and quiet.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from tablecommon.events.base import Health, HealthState

from ..gpio import LoopHandoff, require_pin_factory
from .contact import Change, ContactTracker, Reading
from .events import SwitchChanged, SwitchEvent, SwitchFault, SwitchRecovered
from .settings import SwitchConfig

__all__ = ["GpioSwitch", "SwitchBank"]

log = logging.getLogger(__name__)

SWITCH_UNREADABLE = "SWITCH_UNREADABLE"

Emit = Callable[[SwitchEvent], None]


class GpioSwitch:
    """One switch: its contact(s) on GPIO, its tracker, its health."""

    def __init__(self, cfg: SwitchConfig, *, pin_factory: Any, at_rest: bool = False) -> None:
        self.cfg = cfg
        self.name = cfg.name
        self.pin_factory = pin_factory
        self.at_rest = at_rest
        self.tracker = ContactTracker(
            bounce=cfg.bounce_ms / 1000,
            chatter=cfg.chatter_ms / 1000,
            chatter_changes=cfg.chatter_changes,
        )
        self.health = Health(HealthState.OFFLINE, "NOT_STARTED", "not started", time.time())
        self._devices: list[Any] = []
        self._levels: list[bool] = []
        self._timer: asyncio.TimerHandle | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._emit: Emit = lambda event: None
        #: pull-up wiring (and an external pull-up): gpiozero's "active" is the low level
        self._active_low = cfg.pull != "down"

    @property
    def state(self) -> str:
        """``open``, ``closed``, or ``unknown`` (not started, or faulted)."""
        if self.tracker.fault or self.tracker.reported is None:
            return "unknown"
        return self.tracker.reported.value

    def start(self, emit: Emit) -> None:
        """Open the pin(s) and report the state read (on the event loop)."""
        from gpiozero import DigitalInputDevice

        self._emit = emit
        self._loop = loop = asyncio.get_running_loop()
        factory = require_pin_factory(self.pin_factory, f"switches.{self.name}")
        pins = [p for _, p in self.cfg.used_pins()]
        pull_up: bool | None = {"up": True, "down": False, "none": None}[self.cfg.pull]
        try:
            for pin in pins:
                self._devices.append(
                    DigitalInputDevice(
                        pin,
                        pull_up=pull_up,
                        active_state=None if pull_up is not None else False,
                        bounce_time=None,
                        pin_factory=factory,
                    )
                )
        except Exception as exc:  # gpiozero's PinInUse, GPIOPinMissing, a driver error...
            self.close()
            self.tracker.fault = SWITCH_UNREADABLE
            message = f"GPIO{pins} cannot be read: {type(exc).__name__}: {exc}"
            self._set_health(HealthState.FAULT, SWITCH_UNREADABLE, message)
            self._emit_one(Change("fault", loop.time(), SWITCH_UNREADABLE, message))
            return
        if self.at_rest:
            self._rest_closed()
        self._levels = [self._level(d) for d in self._devices]
        now = loop.time()
        changes = self.tracker.start(now, self._reading())
        handoff = LoopHandoff(loop)
        for i, d in enumerate(self._devices):
            d.when_activated = handoff.wrap(self._edge, i, not self._active_low)
            d.when_deactivated = handoff.wrap(self._edge, i, self._active_low)
        if not changes:
            self._set_health(HealthState.ONLINE)
            self._send(
                SwitchChanged(
                    device=self.name,
                    switch_kind=self.cfg.kind,
                    state=self.state,
                    initial=True,
                    monotonic=now,
                )
            )
        for c in changes:
            self._emit_one(c)

    def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        for d in self._devices:
            d.when_activated = None
            d.when_deactivated = None
            d.close()
        self._devices = []

    def get_status(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": self.cfg.kind,
            "state": self.state,
            "health": self.health.to_json(),
            "raw": self.tracker.raw.value,
            "raw_changes": self.tracker.raw_changes,
            "bounces": self.tracker.bounces,
        }

    # -- the loop side ---------------------------------------------------------------
    def _level(self, device: Any) -> bool:
        """The pin's level (True: high)."""
        return bool(device.is_active) != self._active_low

    def _reading(self) -> Reading:
        open_high = self.cfg.open_level == "high"
        a = self._levels[0]
        if len(self._levels) > 1 and self._levels[1] == a:
            return Reading.INVALID  # a changeover switch's contacts read the opposite
        return Reading.OPEN if a == open_high else Reading.CLOSED

    def _rest_closed(self) -> None:
        """Mock pins: the contact at its closed level (the other contact, the opposite)."""
        closed_high = self.cfg.open_level == "low"
        for i, d in enumerate(self._devices):
            high = closed_high if i == 0 else not closed_high
            pin = d.pin
            pin.drive_high() if high else pin.drive_low()

    def _edge(self, ts: float, index: int, level: bool) -> None:
        if not self._devices:
            return  # closed meanwhile
        self._levels[index] = level
        for c in self.tracker.reading(ts, self._reading()):
            self._emit_one(c)
        self._schedule()

    def _poll(self, when: float) -> None:
        self._timer = None
        assert self._loop is not None
        # asyncio may run a timer up to its clock's resolution early: poll at its time
        for c in self.tracker.poll(max(self._loop.time(), when)):
            self._emit_one(c)
        self._schedule()

    def _schedule(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        when = self.tracker.deadline()
        if when is not None and self._loop is not None:
            self._timer = self._loop.call_at(when, self._poll, when)

    def _emit_one(self, c: Change) -> None:
        name, kind = self.name, self.cfg.kind
        event: SwitchEvent
        if c.what == "fault":
            self._set_health(HealthState.FAULT, c.code, c.message)
            event = SwitchFault(
                device=name, switch_kind=kind, monotonic=c.at, code=c.code, message=c.message
            )
        elif c.what == "recovered":
            self._set_health(HealthState.ONLINE)
            event = SwitchRecovered(device=name, switch_kind=kind, monotonic=c.at, code=c.code)
        else:
            event = SwitchChanged(
                device=name,
                switch_kind=kind,
                monotonic=c.at,
                state="open" if c.what == "opened" else "closed",
                after_fault=c.after_fault,
                bounces=c.bounces,
            )
        self._send(event)

    def _send(self, event: SwitchEvent) -> None:
        try:
            self._emit(event)
        except Exception:  # the table's handler must never stop the switch
            log.exception("switch %s: event %s not handled", self.name, event.kind)

    def _set_health(self, state: HealthState, code: str = "", message: str = "") -> None:
        self.health = Health(state, code, message, time.time())


class SwitchBank:
    """The table's enabled switches (``[switches.<name>]``), read with one pin factory."""

    def __init__(
        self, configs: Sequence[SwitchConfig], *, pin_factory: Any, at_rest: bool = False
    ) -> None:
        self.switches: dict[str, GpioSwitch] = {
            c.name: GpioSwitch(c, pin_factory=pin_factory, at_rest=at_rest)
            for c in configs
            if c.enabled
        }

    def __iter__(self) -> Iterator[GpioSwitch]:
        return iter(self.switches.values())

    def __len__(self) -> int:
        return len(self.switches)

    def get(self, name: str) -> GpioSwitch | None:
        return self.switches.get(name)

    def start(self, emit: Emit) -> None:
        """Open every switch and report each state read (on the event loop)."""
        for sw in self.switches.values():
            sw.start(emit)

    def stop(self) -> None:
        for sw in self.switches.values():
            sw.close()

    def get_status(self) -> dict[str, Any]:
        return {name: sw.get_status() for name, sw in self.switches.items()}
