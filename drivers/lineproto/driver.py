"""The line-protocol drivers: a device that speaks text lines over serial, USB serial or
TCP, described by a file (``docs/protocols/line-protocol.md``) instead of coded.

``line-wheel``, ``line-shoe`` and ``line-shaker`` are one driver for three kinds of
device: a ``[devices.<name>]`` section names the file (``protocol = "path"``, relative
to the table file), which must describe a device of the driver's kind::

    [devices.wheel]
    driver = "line-wheel"
    protocol = "protocols/my-wheel.toml"
    port = "/dev/serial/by-id/usb-FTDI_FT232R_USB_UART_A10K0000-if00-port0"

The file is checked with the table (``tablectl check-config``: every problem with the
file's line). The driver reads lines from a reconnecting :class:`~drivers.link.Link`,
reads each with the file's rules (a line no rule reads, or two, or whose fields a
conversion refuses, is garbled: counted, in the frame log, never an event), feeds the
kind's tracker (:mod:`.tracker`) and emits its events, the kind's own. Commands: the
file's, by name (``driver.command(name, **fields)``; a wheel's ``start_game`` and
``restart``, a shaker's ``request_shake`` and ``read_dice``).

The three driver classes derive from :class:`~drivers.common.DriverBase` alone and
hold one :class:`LinePart`: the link, the file's reading, the tracker, the commands
and the health, given what it uses (the driver's ``emit``, ``set_health``, frame log,
counters and clock) through its constructor.

Health: OFFLINE while the port is closed, silent for ``[framing] silence_ms`` or
without a line the rules read for that long; FAULT while the tracker says so (a
warning bit's rule, a fault line); ONLINE otherwise.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import time
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from tablecommon.events.shaker import ShakerEvent
from tablecommon.events.shoe import ShoeEvent
from tablecommon.events.wheel import WheelEvent
from tablecommon.settings import FieldSpec

from ..base import DriverError, FrameLog, HealthState, LinkError
from ..common import DriverBase
from ..link import Backoff, Link, LinkState
from ..transport import Opener, cancel_and_wait, serial_opener
from .desk import CommandDesk, CommandRefused
from .framing import LineSplitter
from .load import load_protocol
from .rules import Matcher, Unmatched
from .spec import Protocol, ProtocolInvalid
from .tracker import Tracker, make_tracker

log = logging.getLogger(__name__)

__all__ = ["CommandRefused", "LinePart", "LineShakerDriver", "LineShoeDriver", "LineWheelDriver"]

_COMMON: dict[str, FieldSpec] = {
    "protocol": FieldSpec(
        "path", required=True,
        doc="the line-protocol file (docs/protocols/line-protocol.md), relative to the table file",
    ),
    "port": FieldSpec(
        "str", required=True,
        doc="serial port URL: /dev/serial/by-id/..., /dev/ttyUSB0, socket://host:port",
    ),
    "baud": FieldSpec("int", 9600, doc="line speed (8N1)", range=(300, 4_000_000)),
    "reply_timeout_ms": FieldSpec(
        "int", 1000, doc="how long to wait for a command's answer", range=(100, 60000)
    ),
    "reconnect_max_ms": FieldSpec(
        "int", 1000, doc="cap of the reconnect backoff", range=(100, 60000)
    ),
}  # fmt: skip


def _check(kind: str, driver: str, values: Mapping[str, Any]) -> list[str]:
    """A section's file read and checked (each problem with the file's line)."""
    try:
        protocol = load_protocol(str(values["protocol"]))
    except ProtocolInvalid as exc:
        return [f"protocol: {problem}" for problem in exc.problems]
    if protocol.kind != kind:
        return [
            f"protocol: {protocol.source}: it describes a {protocol.kind} and {driver} "
            f'serves a {kind} (driver = "line-{protocol.kind}")'
        ]
    return []


def _with_defaults(specs: Mapping[str, FieldSpec], settings: Mapping[str, Any]) -> dict[str, Any]:
    s = {k: spec.default for k, spec in specs.items()}
    s.update(settings)
    return s


class LinePart:
    """What a line-protocol driver does, whatever its kind: the link, the lines read
    with the file's rules, the tracker's events, the commands and the health."""

    def __init__(
        self,
        name: str,
        settings: Mapping[str, Any],
        protocol: Protocol,
        tracker: Tracker,
        *,
        emit: Callable[[Any], None],
        set_health: Callable[..., bool],
        frames: FrameLog,
        counters: collections.Counter[str],
        clock: Callable[[], float],
        opener: Opener | None = None,
    ) -> None:
        self.name = name
        self.protocol = protocol
        self.tracker = tracker
        self.emit = emit
        self.set_health = set_health
        self.frames = frames
        self.counters = counters
        self.clock = clock
        self.port = str(settings["port"] or "")
        self.silence = protocol.framing.silence
        self.splitter = LineSplitter(protocol.framing)
        self.matcher = Matcher(protocol)
        self.link = Link(
            opener or serial_opener(self.port, int(settings["baud"])),
            on_data=self._on_data,
            on_state=self._on_link_state,
            silence_timeout=self.silence,
            backoff=Backoff(0.1, max(0.1, settings["reconnect_max_ms"] / 1000)),
            name=f"{name} ({self.port or 'custom opener'})",
        )
        self.desk = CommandDesk(
            protocol, self.link.write, frames, counters,
            name=name, timeout=settings["reply_timeout_ms"] / 1000,
        )  # fmt: skip
        self.last_line_at: float | None = None
        self._link_up_at = 0.0
        self._tasks: list[asyncio.Task[None]] = []

    async def start(self) -> None:
        """Open the port in the background; returns at once."""
        if self._tasks:
            return
        await self.link.start()
        self._tasks = [
            asyncio.create_task(self._watch(), name=f"{self.name} watchdog"),
            asyncio.create_task(
                self.desk.poll(lambda: self.link.connected), name=f"{self.name} polls"
            ),
        ]

    async def stop(self) -> None:
        """Idempotent."""
        tasks, self._tasks = self._tasks, []
        await cancel_and_wait(*tasks)
        await self.link.stop()
        self.set_health(HealthState.OFFLINE, "STOPPED", "driver stopped")

    def _on_data(self, data: bytes) -> None:
        now = self.clock()
        for piece in self.splitter.feed(data):
            item = piece if isinstance(piece, Unmatched) else self.matcher.match(piece)
            self.frames.rx(item.raw)
            if isinstance(item, Unmatched):
                self.counters["garbled_lines"] += 1
                log.debug("%s: garbled line %r: %s", self.name, item.raw, item.reason)
                continue
            self.last_line_at = now
            self.counters[f"rx.{item.rule.name}"] += 1
            self.desk.on_line(item)
            for event in self.tracker.feed(item, now):
                self.emit(event)
        self._refresh_health()

    def _on_link_state(self, state: LinkState) -> None:
        self.splitter.reset()
        self._link_up_at = self.clock()
        if not state.up:
            self.counters["link_down"] += 1
        self._refresh_health()

    def _refresh_health(self) -> None:
        if not self._tasks:
            return
        ls = self.link.state
        if not ls.up:
            self.set_health(HealthState.OFFLINE, ls.code or LinkError.code, ls.reason)
            return
        ref = self.last_line_at if self.last_line_at is not None else self._link_up_at
        if self.silence is not None and self.clock() - ref > self.silence:
            self.set_health(
                HealthState.OFFLINE, "NO_VALID_LINE",
                f"no line the protocol reads for {self.silence:g} s "
                f"({self.counters['garbled_lines']} garbled lines so far)",
            )  # fmt: skip
            return
        if self.last_line_at is None:
            return  # connected, the first line not in yet
        fault = self.tracker.fault
        if fault is not None:
            self.set_health(HealthState.FAULT, *fault)
            return
        self.set_health(HealthState.ONLINE)

    async def _watch(self) -> None:
        while True:
            await asyncio.sleep(0.25 if self.silence is None else min(0.25, self.silence / 4))
            self._refresh_health()

    async def send_declared(self, name: str, **values: Any) -> None:
        """A command a kind's procedure sends, if the file declares it (else logged)."""
        if not self.desk.has(name):
            self.counters[f"tx.undeclared.{name}"] += 1
            log.info("%s: the protocol declares no %r command: nothing sent", self.name, name)
            return
        try:
            await self.desk.send(name, values)
        except DriverError as exc:
            log.warning("%s: %s failed: %s", self.name, name, exc)
            raise

    def status(self, base: dict[str, Any]) -> dict[str, Any]:
        base.update(
            port=self.port,
            protocol={"file": self.protocol.source, "name": self.protocol.name},
            link={
                "up": self.link.up,
                "reason": self.link.state.reason,
                **self.link.stats.to_json(),
            },
            device=self.tracker.snapshot(),
            lines={"read": self.splitter.lines, "garbled": self.counters["garbled_lines"]},
        )
        return base


def _part(
    driver: DriverBase[Any],
    kind: str,
    settings: Mapping[str, Any],
    protocol: Protocol | None,
    opener: Opener | None,
    **tracker_options: Any,
) -> LinePart:
    proto = protocol or load_protocol(str(settings["protocol"]))
    if proto.kind != kind:
        raise ProtocolInvalid(proto.source, [f"it describes a {proto.kind}, not a {kind}"])
    return LinePart(
        driver.name, settings, proto, make_tracker(proto, driver.name, **tracker_options),
        emit=driver.emit, set_health=driver.set_health, frames=driver.frames,
        counters=driver.counters, clock=driver.clock, opener=opener,
    )  # fmt: skip


class LineWheelDriver(DriverBase[WheelEvent]):
    """A roulette wheel that speaks text lines (``line-wheel``)."""

    driver_name = "line-wheel"
    SETTINGS: ClassVar[dict[str, FieldSpec]] = {
        **_COMMON,
        "pockets": FieldSpec(
            "int", 37, doc="pockets of the wheel: 37 single zero, 38 double zero",
            choices=(37, 38, 39, 40),
        ),
    }  # fmt: skip

    @classmethod
    def check_settings(cls, values: Mapping[str, Any]) -> list[str]:
        return _check("wheel", cls.driver_name, values)

    def __init__(
        self,
        name: str,
        settings: Mapping[str, Any],
        *,
        pin_factory: Any = None,
        opener: Opener | None = None,
        clock: Callable[[], float] = time.monotonic,
        protocol: Protocol | None = None,
    ) -> None:
        super().__init__(name, clock=clock)
        self.settings = _with_defaults(self.SETTINGS, settings)
        self.line = _part(
            self, "wheel", self.settings, protocol, opener, pockets=int(self.settings["pockets"])
        )

    async def start(self) -> None:
        await self.line.start()

    async def stop(self) -> None:
        await self.line.stop()

    async def command(self, name: str, **values: Any) -> Mapping[str, Any]:
        """The file's command ``name`` with its fields; its answer's fields."""
        return await self.line.desk.send(name, values)

    async def start_game(self, direction: str | None = None) -> None:
        """The file's ``start_game`` command (field ``direction``, if it has one)."""
        cmd = self.line.protocol.commands.get("start_game")
        given = cmd is not None and "direction" in cmd.fields
        await self.line.send_declared("start_game", **({"direction": direction} if given else {}))

    async def restart(self) -> None:
        """The file's ``restart`` command: the round logic sends it after a void that
        needs it (``GameVoided.restart_required``)."""
        await self.line.send_declared("restart")

    def get_status(self) -> dict[str, Any]:
        return self.line.status(super().get_status())


class LineShoeDriver(DriverBase[ShoeEvent]):
    """A card shoe that speaks text lines (``line-shoe``)."""

    driver_name = "line-shoe"
    SETTINGS: ClassVar[dict[str, FieldSpec]] = {
        **_COMMON,
        "decks": FieldSpec(
            "int", 8, doc="decks the shoe holds (when its lines do not say)", range=(1, 12)
        ),
    }

    @classmethod
    def check_settings(cls, values: Mapping[str, Any]) -> list[str]:
        return _check("shoe", cls.driver_name, values)

    def __init__(
        self,
        name: str,
        settings: Mapping[str, Any],
        *,
        pin_factory: Any = None,
        opener: Opener | None = None,
        clock: Callable[[], float] = time.monotonic,
        protocol: Protocol | None = None,
    ) -> None:
        super().__init__(name, clock=clock)
        self.settings = _with_defaults(self.SETTINGS, settings)
        self.line = _part(
            self, "shoe", self.settings, protocol, opener, decks=int(self.settings["decks"])
        )

    async def start(self) -> None:
        await self.line.start()

    async def stop(self) -> None:
        await self.line.stop()

    async def command(self, name: str, **values: Any) -> Mapping[str, Any]:
        """The file's command ``name`` with its fields; its answer's fields."""
        return await self.line.desk.send(name, values)

    def get_status(self) -> dict[str, Any]:
        return self.line.status(super().get_status())


class LineShakerDriver(DriverBase[ShakerEvent]):
    """A dice shaker that speaks text lines (``line-shaker``)."""

    driver_name = "line-shaker"
    SETTINGS: ClassVar[dict[str, FieldSpec]] = {
        **_COMMON,
        "dice": FieldSpec(
            "int", 3, doc="dice in the shaker: a reading of another count is a fault",
            choices=(3, 4),
        ),
    }  # fmt: skip

    @classmethod
    def check_settings(cls, values: Mapping[str, Any]) -> list[str]:
        return _check("shaker", cls.driver_name, values)

    def __init__(
        self,
        name: str,
        settings: Mapping[str, Any],
        *,
        pin_factory: Any = None,
        opener: Opener | None = None,
        clock: Callable[[], float] = time.monotonic,
        protocol: Protocol | None = None,
    ) -> None:
        super().__init__(name, clock=clock)
        self.settings = _with_defaults(self.SETTINGS, settings)
        self.line = _part(
            self, "shaker", self.settings, protocol, opener, dice=int(self.settings["dice"])
        )

    async def start(self) -> None:
        await self.line.start()

    async def stop(self) -> None:
        await self.line.stop()

    async def command(self, name: str, **values: Any) -> Mapping[str, Any]:
        """The file's command ``name`` with its fields; its answer's fields."""
        return await self.line.desk.send(name, values)

    async def request_shake(self) -> None:
        """The file's ``shake`` command (the dice procedure asks after a void throw)."""
        await self.line.send_declared("shake")

    async def read_dice(self) -> None:
        """The file's ``read_dice`` command (the dome lifted with betting closed)."""
        await self.line.send_declared("read_dice")

    def get_status(self) -> dict[str, Any]:
        return self.line.status(super().get_status())
