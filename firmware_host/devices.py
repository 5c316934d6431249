"""The table's devices: their drivers built from ``[devices.<name>]``, started, their
events pumped to the procedure, their health mirrored on ``devices/<name>`` and in the
event log.

Every GPIO driver gets the one pin factory the daemon made (:func:`pin_factory_for`):
real pins (lgpio) on a Raspberry Pi, gpiozero's mock pins only when the configuration
says the table is simulated (``[daemon] simulated = true``). A table that needs GPIO on
a machine without it is a configuration error (:func:`gpio_problems`), never a silent
fallback to mock pins.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from typing import Any, Protocol

from drivers.base import DeviceEvent, Health, HealthChanged
from drivers.common import Subscription
from drivers.registry import DeviceConfig, create_driver, driver_class

from .journal import STORAGE_CODES
from .jsonio import JSON
from .table.procedures import Device

log = logging.getLogger(__name__)


class Driver(Protocol):
    """What the table uses of every driver (``drivers.common.DriverBase`` and its kinds)."""

    name: str
    health: Health

    async def start(self) -> None: ...

    async def stop(self) -> None: ...

    def events(self) -> Subscription[DeviceEvent]: ...

    def get_status(self) -> dict[str, Any]: ...


class HealthSink(Protocol):
    """Where device health goes: the floor link's retained ``devices/<name>``."""

    def set_device(self, name: str, payload: Mapping[str, JSON]) -> None: ...


class EventLog(Protocol):
    """The journal's event log."""

    def append_event(self, kind: str, data: Mapping[str, JSON]) -> Any: ...


def needs_gpio(cfg: DeviceConfig) -> bool:
    """Whether the device uses GPIO pins (its driver's ``used_pins`` names any)."""
    used = getattr(driver_class(cfg.driver), "used_pins", None)
    return callable(used) and any(True for _ in used(cfg.settings))


def gpio_problems(
    devices: Sequence[DeviceConfig], *, simulated: bool, injected: bool = False
) -> list[str]:
    """Why this table cannot have its GPIO pins here (one line per device), or nothing.

    ``simulated``: ``[daemon] simulated`` (mock pins); ``injected``: the caller passes its
    own pin factory (tests)."""
    from drivers.gpio import gpio_unavailable

    if simulated or injected:
        return []
    gpio = [d for d in devices if d.enabled and needs_gpio(d)]
    why = gpio_unavailable() if gpio else None
    if why is None:
        return []
    return [
        f"devices.{d.name}: driver {d.driver!r} needs GPIO pins, and this machine has none "
        f"({why}); only a simulated table ([daemon] simulated = true) runs on mock pins"
        for d in gpio
    ]


def pin_factory_for(
    devices: Sequence[DeviceConfig], *, simulated: bool, switches: bool = False
) -> Any:
    """The one pin factory of the table: None if no enabled device uses GPIO (nor, with
    ``switches``, the table's switches); mock pins for a simulated table; else the
    Raspberry Pi's (lgpio)."""
    if not switches and not any(d.enabled and needs_gpio(d) for d in devices):
        return None
    from drivers.gpio import make_pin_factory

    return make_pin_factory("mock" if simulated else "lgpio")


class TableDevices:
    """The drivers of a table's enabled devices (built at once, started by :meth:`start`)."""

    def __init__(self, configs: Sequence[DeviceConfig], *, pin_factory: Any = None) -> None:
        self.configs = [c for c in configs if c.enabled]
        self.drivers: dict[str, Driver] = {
            c.name: create_driver(c.name, c, pin_factory=pin_factory) for c in self.configs
        }
        self._tasks: list[asyncio.Task[None]] = []

    def __iter__(self) -> Iterator[Device]:
        for c in self.configs:
            yield Device(c.name, c.kind, self.drivers[c.name])

    def get(self, name: str) -> Driver | None:
        return self.drivers.get(name)

    async def start(
        self,
        on_event: Callable[[str, DeviceEvent], Awaitable[None]],
        health: HealthSink,
        log_events: EventLog,
    ) -> None:
        """Start every driver; hand each event to ``on_event(device, event)``, mirror
        health on ``health`` and journal its changes in ``log_events``."""
        for c in self.configs:
            drv = self.drivers[c.name]
            await drv.start()
            self._tasks.append(
                asyncio.create_task(
                    self._pump(c, drv, on_event, health, log_events), name=f"device-{c.name}"
                )
            )
            self._snapshot(c, drv, health)

    async def stop(self) -> None:
        for t in self._tasks:
            t.cancel()
        for t in self._tasks:
            with contextlib.suppress(BaseException):
                await t
        for drv in self.drivers.values():
            with contextlib.suppress(Exception):
                await drv.stop()

    @staticmethod
    def _snapshot(c: DeviceConfig, drv: Driver, health: HealthSink) -> None:
        """The driver's health on the retained ``devices/<name>`` topic (device.json)."""
        health.set_device(c.name, {**drv.health.to_json(), "kind": c.kind})

    async def _pump(
        self,
        c: DeviceConfig,
        drv: Driver,
        on_event: Callable[[str, DeviceEvent], Awaitable[None]],
        health: HealthSink,
        log_events: EventLog,
    ) -> None:
        async for event in drv.events():
            try:
                if isinstance(event, HealthChanged):
                    self._snapshot(c, drv, health)
                    h = event.health
                    log_events.append_event(
                        "device_recovered" if h.state.value == "online" else "device_fault",
                        {
                            "device": c.name,
                            "state": h.state.value,
                            "code": h.code,
                            "message": h.message,
                        },
                    )
                await on_event(c.name, event)
            except Exception as exc:
                if getattr(exc, "code", None) in STORAGE_CODES:
                    continue  # the journal cannot write: its guard has logged that once
                log.exception("device event from %s failed", c.name)
